"""How a page shows a source: the document's title and section where the document is imported
(as seeded imports them), else the source as written."""

from guidance.engine.sources import Source
from guidance.models import Document


def shown(source: Source) -> str:
    """The source as the page's HTML has it: a link's text, or plain text."""
    document = Document.objects.filter(file_name=source.document).first()
    if document is None:
        return f"Source: {source}"
    return f">{document.title} — {source.section}</a>"


def link_to(document_file: str) -> str:
    """The start of a link into a document's page, whichever section it names."""
    return f'href="/guidance/documents/{document_file.removesuffix(".txt")}/#'
