"""A source as a user sees it: the document's title and section, linked to the portal's copy of
the document at that section. A guidance document not imported here shows its catalogued title,
linked to its public page where it has one (guidance.document_catalog). Other sources (Slurm's
manual, a cluster's public pages) stay plain text; an admin's source that is a web address links
there.

The engine's Source is pure data; this is the edge that knows the database and the URLs.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from django.urls import reverse

from guidance import published
from guidance.doc_outline import find_anchor
from guidance.document_catalog import CATALOG
from guidance.engine.sources import Source
from guidance.models import Document, Sourced


@dataclass(frozen=True)
class Citation:
    label: str
    url: str = ""


@dataclass(frozen=True)
class KnownDocument:
    title: str
    url: str
    sections: tuple[tuple[tuple[str, ...], str], ...]  # (heading path, anchor)


def known_documents() -> dict[str, KnownDocument]:
    """Every imported document by file name, kept by each process until documents change."""
    return published.documents(_load_known_documents)


def _load_known_documents() -> dict[str, KnownDocument]:
    # One query, without the texts.
    rows = Document.objects.values_list("file_name", "slug", "title", "sections")
    return {
        file_name: KnownDocument(
            title,
            reverse("guidance:document", args=[slug]),
            tuple((tuple(s["path"]), s["anchor"]) for s in sections),
        )
        for file_name, slug, title, sections in rows
    }


def as_source(obj: Source | Sourced | dict | str | None) -> Source | None:
    """The engine's notes carry a Source, published rows their source fields, stored findings
    (a plan's) a {"document", "section"}."""
    if isinstance(obj, dict):
        obj = Source(obj.get("document", ""), obj.get("section", ""))
    if isinstance(obj, Sourced):
        obj = Source(obj.source_document, obj.source_section)
    if isinstance(obj, str):  # a text of its own: nothing to look up
        obj = Source("", obj)
    if obj is None or not (obj.document or obj.section):
        return None
    return obj


def cite(source: Source, documents: dict[str, KnownDocument]) -> Citation:
    known = documents.get(source.document.strip())
    if known is None and (entry := CATALOG.get(source.document.strip())):
        # Not imported here (no copy beside this install): its title, and its public page.
        section = source.section.strip()
        label = entry.title if not section else f"{entry.title} — {section}"
        return Citation(label, entry.section_url(section))
    if known is None:
        label = ", ".join(filter(None, [source.document, source.section]))
        is_web = source.document.startswith(("https://", "http://"))
        return Citation(label, source.document if is_web else "")
    section = source.section.strip()
    if not section:
        return Citation(known.title, known.url)
    # A section the document lacks (an admin's wording) still leads to the document.
    anchor = find_anchor(known.sections, section)
    label = known.title if section == known.title else f"{known.title} — {section}"
    return Citation(label, f"{known.url}#{anchor}" if anchor else known.url)


@dataclass(frozen=True)
class NumberedSources:
    """A table's sources, each listed once and numbered in the order rows first cite it."""

    rows: list[list[tuple[int, str]]]  # per row: (number, the facts it backs)
    citations: list[Citation]  # citations[n - 1] is source number n


def numbered(rows: Iterable[Iterable[tuple[str, Source | None]]]) -> NumberedSources:
    """Each row's (what, source) pairs as numbers into one list of citations."""
    documents = known_documents()
    numbers: dict[Source, int] = {}
    citations: list[Citation] = []
    numbered_rows = []
    for facts in rows:
        backs: dict[int, list[str]] = {}
        for what, source in facts:
            source = as_source(source)
            if source is None:
                continue
            if source not in numbers:
                numbers[source] = len(numbers) + 1
                citations.append(cite(source, documents))
            backs.setdefault(numbers[source], []).append(what)
        numbered_rows.append([(number, ", ".join(whats)) for number, whats in backs.items()])
    return NumberedSources(numbered_rows, citations)
