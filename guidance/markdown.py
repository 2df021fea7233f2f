"""Admins write Markdown; users get HTML with anything unsafe removed."""

import markdown as md
import nh3

ALLOWED_TAGS = {
    "a", "p", "br", "hr", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li",
    "h2", "h3", "h4", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip


def render(text: str) -> str:
    html = md.markdown(text, extensions=["tables", "fenced_code", "sane_lists"])
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes={"a": {"href", "title"}, "th": {"align"}, "td": {"align"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
