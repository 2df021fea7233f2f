"""A guidance document's own structure, read from its text: its title and its section headings.

The documents keep the markup they were written in: reStructuredText (a title over- and
underlined, sections underlined), MediaWiki (`== Section ==`) or Markdown (`# Section`). Sources
name a section by its heading, and a nested one as "Outer / Inner" (Inner anywhere below Outer),
so each heading gets a stable anchor made from its own words.

Pure Python: no Django, so the parser is tested on plain strings.
"""

import re
from dataclasses import dataclass
from enum import StrEnum


class Markup(StrEnum):
    RST = "rst"
    MEDIAWIKI = "mediawiki"
    MARKDOWN = "markdown"


@dataclass(frozen=True)
class Heading:
    level: int  # 1 is the outermost
    text: str
    anchor: str
    path: tuple[str, ...]  # the headings it sits under, outermost first, then its own text


@dataclass(frozen=True)
class Part:
    """A heading and the text under it, up to the next heading (no heading: the opening text)."""

    heading: Heading | None
    body: str


@dataclass(frozen=True)
class Outline:
    markup: Markup
    title: str | None  # the document's own title, where its text gives one
    parts: tuple[Part, ...]

    @property
    def headings(self) -> tuple[Heading, ...]:
        return tuple(part.heading for part in self.parts if part.heading)

    def anchor(self, section: str) -> str | None:
        return find_anchor([(h.path, h.anchor) for h in self.headings], section)


# A source names a nested section as "Outer / Inner"; a heading may hold "/" itself
# ("Folders/Filesystem"), so only " / " separates.
SECTION_SEPARATOR = " / "

_MEDIAWIKI_HEADING = re.compile(r"^(={1,6})\s*([^=].*?)\s*\1\s*$")
_MARKDOWN_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
# A fence opens or closes a code block only on a line of its own: "```cp```" is inline code.
_FENCE = re.compile(r"^\s*(>\s*)?(```|~~~)[\w+-]*\s*$")
_MARKDOWN_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")


def outline(text: str) -> Outline:
    lines = text.splitlines()
    markup = detect_markup(lines)
    found = {
        Markup.RST: _rst_headings,
        Markup.MEDIAWIKI: _mediawiki_headings,
        Markup.MARKDOWN: _markdown_headings,
    }[markup](lines)
    title = _title(markup, found)
    return Outline(markup, title, _parts(lines, found))


def detect_markup(lines: list[str]) -> Markup:
    if any(_MEDIAWIKI_HEADING.match(line) for line in lines):
        return Markup.MEDIAWIKI
    if any(_rst_underlined(lines, i) for i in range(len(lines) - 1)):
        return Markup.RST
    return Markup.MARKDOWN


def find_anchor(headings: list[tuple[tuple[str, ...], str]], section: str) -> str | None:
    """The anchor of the heading a source's section names: its last part is the heading's own
    text, and any parts before it are headings above it, in order (not necessarily the next one
    up). Case and spacing aside, the words must be the document's."""
    wanted = [_comparable(part) for part in section.split(SECTION_SEPARATOR)]
    for path, anchor in headings:
        own = [_comparable(part) for part in path]
        if own[-1] == wanted[-1] and _in_order(wanted[:-1], own[:-1]):
            return anchor
    return None


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def heading_text(raw: str) -> str:
    """A heading's words without its inline markup: a Markdown link keeps its label, HTML tags
    (MediaWiki's <tt>) go, and so do emphasis marks."""
    text = _MARKDOWN_LINK.sub(r"\1", raw)
    text = _HTML_TAG.sub("", text)
    text = text.replace("'''", "").replace("**", "")
    return " ".join(text.split())


# (line index where the heading starts, lines it takes, level, text)
_Found = tuple[int, int, int, str]


def _rst_underlined(lines: list[str], i: int) -> bool:
    # reStructuredText's rule: the underline is at least as long as the title above it.
    text, under = lines[i].rstrip(), lines[i + 1].rstrip()
    return bool(
        text.strip()
        and not _RST_ADORNMENT.match(text)
        and _RST_ADORNMENT.match(under)
        and len(under) >= len(text)
    )


def _rst_headings(lines: list[str]) -> list[_Found]:
    styles: list[tuple[str, bool]] = []  # levels follow the order in which styles first appear
    found = []
    i = 0
    while i < len(lines) - 1:
        overlined = (
            i + 2 < len(lines)
            and _RST_ADORNMENT.match(lines[i])
            and _rst_underlined(lines, i + 1)
            and lines[i + 2].rstrip() == lines[i].rstrip()
        )
        if overlined or _rst_underlined(lines, i):
            start, text_line = (i, i + 1) if overlined else (i, i)
            style = (lines[text_line + 1].strip()[0], bool(overlined))
            if style not in styles:
                styles.append(style)
            size = 3 if overlined else 2
            found.append((start, size, styles.index(style) + 1, lines[text_line]))
            i += size
        else:
            i += 1
    return found


def _mediawiki_headings(lines: list[str]) -> list[_Found]:
    found = []
    for i, line in enumerate(lines):
        if match := _MEDIAWIKI_HEADING.match(line):
            found.append((i, 1, len(match[1]), match[2]))
    return found


def _markdown_headings(lines: list[str]) -> list[_Found]:
    found, in_code = [], False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_code = not in_code
        elif not in_code and (match := _MARKDOWN_HEADING.match(line)):
            found.append((i, 1, len(match[1]), match[2]))
    return found


def _title(markup: Markup, found: list[_Found]) -> str | None:
    """The title the text gives itself: a first heading whose level no other heading shares
    (a reStructuredText title, a Markdown document's only `#` heading). MediaWiki pages keep
    their title outside the text."""
    if markup == Markup.MEDIAWIKI or not found:
        return None
    first_level = found[0][2]
    if sum(1 for f in found if f[2] == first_level) == 1 and first_level == min(
        f[2] for f in found
    ):
        return heading_text(found[0][3])
    return None


def _parts(lines: list[str], found: list[_Found]) -> tuple[Part, ...]:
    parts = []
    used: dict[str, int] = {}
    above: list[tuple[int, str]] = []  # (level, text) of the headings the next one sits under
    opening = "\n".join(lines[: found[0][0]] if found else lines).strip("\n")
    if opening.strip():
        parts.append(Part(None, opening))
    for n, (start, size, level, raw) in enumerate(found):
        text = heading_text(raw)
        while above and above[-1][0] >= level:
            above.pop()
        above.append((level, text))
        anchor = slug(text)
        used[anchor] = used.get(anchor, 0) + 1
        if used[anchor] > 1:  # the same words twice in a document: the later ones numbered
            anchor = f"{anchor}-{used[anchor]}"
        end = found[n + 1][0] if n + 1 < len(found) else len(lines)
        body = "\n".join(lines[start + size : end]).strip("\n")
        heading = Heading(level, text, anchor, tuple(t for _, t in above))
        parts.append(Part(heading, body))
    return tuple(parts)


def _comparable(text: str) -> str:
    return " ".join(heading_text(text).casefold().split())


def _in_order(wanted: list[str], path: list[str]) -> bool:
    remaining = iter(path)
    return all(any(step == part for step in remaining) for part in wanted)
