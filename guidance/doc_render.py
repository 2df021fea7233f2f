"""A guidance document's sections as HTML that reads well, each heading with its anchor.

Markdown documents go through the portal's Markdown renderer (which removes unsafe HTML).
MediaWiki pages are first turned into the Markdown they mean: bold, code, links, lists, the
{{File}} template's script, preformatted lines. reStructuredText reads well as it is, so its
text is shown as written, escaped.
"""

import re
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from guidance import markdown
from guidance.doc_outline import Heading, Markup, Outline

_RST_TARGET = re.compile(r"^\.\. _[^:]*:\s*$")
_WIKI_LINK = re.compile(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]")
_WEB_LINK = re.compile(r"\[(https?://[^\s\]]+)\s+([^\]]+)\]")
# A link or image to a file beside the document where it was written (assets/x.png,
# ../scripts/job.sh): the portal has no such file, so the words stay and the link goes.
_RELATIVE_LINK = re.compile(r"!?\[([^\]]*)\]\((?!https?://|mailto:|#)[^)]*\)")
_WIKI_DROPPED = re.compile(r"^\s*(<languages\s*/>|\[\[Category:[^\]]*\]\])\s*$")
_WIKI_INLINE = [
    (re.compile(r"'''(.+?)'''"), r"**\1**"),
    (re.compile(r"''(.+?)''"), r"*\1*"),
    (re.compile(r"</?(tt|code)>"), "`"),
    (re.compile(r"</?b>"), "**"),
    (re.compile(r"</?i>"), "*"),
]


@dataclass(frozen=True)
class RenderedPart:
    heading: Heading | None
    tag: str  # h2 for the outermost sections under the page's title, down to h6
    html: SafeString


@dataclass(frozen=True)
class RenderedDocument:
    title_anchor: str  # the anchor of the heading the page's title stands for, if any
    parts: list[RenderedPart]


def render_document(parsed: Outline) -> RenderedDocument:
    """The parts under the page's title. The document's own title heading is that title, so it
    is not shown again: its anchor goes to the page's heading, its text stays."""
    headings = parsed.headings
    title = headings[0] if headings and headings[0].text == parsed.title else None
    top = min((h.level for h in headings if h is not title), default=1)
    parts = []
    for part in parsed.parts:
        shown = part.heading if part.heading is not title else None
        tag = f"h{min(max(shown.level - top + 2, 2), 6)}" if shown else ""
        parts.append(RenderedPart(shown, tag, _body_html(parsed.markup, part.body)))
    return RenderedDocument(title.anchor if title else "", parts)


def _body_html(markup: Markup, body: str) -> SafeString:
    if markup == Markup.RST:
        # ".. _name:" lines are link targets for Sphinx, not words for readers.
        text = "\n".join(line for line in body.splitlines() if not _RST_TARGET.match(line))
        if not text.strip():
            return mark_safe("")
        return mark_safe(f'<div class="doc-plain">{escape(text.strip())}</div>')
    text = mediawiki_as_markdown(body) if markup == Markup.MEDIAWIKI else body
    text = _RELATIVE_LINK.sub(lambda link: link.group(1), text)
    return mark_safe(markdown.render(text))  # sanitized by nh3


def mediawiki_as_markdown(text: str) -> str:
    out: list[str] = []
    in_file = in_code = False
    for line in text.splitlines():
        if _WIKI_DROPPED.match(line):
            continue
        if line.startswith("{{File"):
            in_file = True
            continue
        if in_file:  # {{File |name=... |contents=<the file> }}: the contents as a code block
            if line.strip().startswith("|contents="):
                in_code = True
                out.extend(["", "```"])
                line = line.split("=", 1)[1]
                if not line.strip():
                    continue
            elif line.strip() == "}}":
                in_file = in_code = False
                out.extend(["```", ""])
                continue
            elif not in_code:
                continue
            out.append(line)
            continue
        out.append(_wiki_line(line, out))
    return "\n".join(out)


def _wiki_line(line: str, before: list[str]) -> str:
    if line.startswith(" ") and line.strip():  # preformatted text
        lead = "" if before and before[-1].startswith("    ") else "\n"
        return f"{lead}    {line.strip()}"
    if match := re.match(r"^([*#]+)\s*(.*)$", line):
        marks, rest = match.groups()
        bullet = "1." if marks[-1] == "#" else "*"
        line = "    " * (len(marks) - 1) + f"{bullet} {rest}"
    line = _WEB_LINK.sub(r"[\2](\1)", _WIKI_LINK.sub(r"\1", line))
    for pattern, replacement in _WIKI_INLINE:
        line = pattern.sub(replacement, line)
    return line
