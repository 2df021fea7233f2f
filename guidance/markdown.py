"""Admins write Markdown; users get HTML with anything unsafe removed."""

import markdown as md
import nh3

ALLOWED_TAGS = {
    "a", "p", "br", "hr", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li",
    "h2", "h3", "h4", "table", "thead", "tbody", "tr", "th", "td", "mark",
}  # fmt: skip
# The one class kept: articles mark a placeholder they name but the portal does not know.
PLACEHOLDER_ERROR = "placeholder-error"


def render(text: str) -> str:
    html = md.markdown(text, extensions=["tables", "fenced_code", "sane_lists"])
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes={"a": {"href", "title"}, "th": {"align"}, "td": {"align"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        tag_attribute_values={"mark": {"class": {PLACEHOLDER_ERROR}}},
    )
