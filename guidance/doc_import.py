"""Reads the guidance documents of a folder into the database, with their titles and sections.

The folder's README.md indexes them in a table (file, what it is, ...): a document whose text
gives no title of its own (a MediaWiki page, a page of notes) takes the name quoted there, else
the description.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from django.utils.text import slugify

from guidance.doc_outline import Outline, outline
from guidance.models import Document

INDEX_NAME = "README.md"
DOCUMENT_SUFFIXES = {".txt", ".md", ".rst"}
_QUOTED = re.compile(r"\"([^\"]+)\"")


@dataclass(frozen=True)
class Imported:
    created: int
    updated: int
    unchanged: int


def import_documents(folder: Path) -> Imported:
    """Creates or updates a Document per file; rows whose file has gone stay (links keep
    working until an admin deletes them)."""
    index = _index(folder / INDEX_NAME)
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    for path in sorted(folder.iterdir()):
        if path.name == INDEX_NAME or path.suffix not in DOCUMENT_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        counts[_save(path.name, text, index.get(path.name, ""))] += 1
    return Imported(**counts)


def title_of(file_name: str, parsed: Outline, description: str) -> str:
    if parsed.title:
        return parsed.title
    if quoted := _QUOTED.search(description):
        return quoted[1]
    return description.replace("`", "") or file_name


def _save(file_name: str, text: str, description: str) -> str:
    parsed = outline(text)
    fields = {
        "slug": slugify(Path(file_name).stem) or slugify(file_name),
        "title": title_of(file_name, parsed, description)[:300],
        "text": text,
        "markup": parsed.markup.value,
        "sections": [{"path": list(h.path), "anchor": h.anchor} for h in parsed.headings],
    }
    document = Document.objects.filter(file_name=file_name).first()
    if document is None:
        Document.objects.create(file_name=file_name, **fields)
        return "created"
    if all(getattr(document, name) == value for name, value in fields.items()):
        return "unchanged"
    for name, value in fields.items():
        setattr(document, name, value)
    document.save()
    return "updated"


def _index(readme: Path) -> dict[str, str]:
    """{file name: what it is} from the rows of the README's table."""
    if not readme.is_file():
        return {}
    index = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and Path(cells[0]).suffix in DOCUMENT_SUFFIXES:
            index[cells[0]] = cells[1]
    return index
