"""What the portal knows of each guidance document without its text: a title to show and, where
the document is published, its public address. A fresh install that has no copy of the
documents (they are not part of the repository) still shows every source by its title, linked
to the public page where there is one; the in-portal copy, where imported, is linked instead.

Facts about the documents, in our words: no text of theirs.
"""

import re
from dataclasses import dataclass

from guidance.engine import sources

_ALLIANCE_WIKI = "https://docs.alliancecan.ca/wiki/"


@dataclass(frozen=True)
class CatalogEntry:
    title: str
    url: str = ""  # "" for a site's internal document, published nowhere we can link

    def section_url(self, section: str) -> str:
        """The public address of a section: MediaWiki anchors are the heading, spaces as '_'."""
        if not self.url:
            return ""
        if not section or not self.url.startswith(_ALLIANCE_WIKI):
            return self.url
        heading = section.split(" / ")[-1].strip()
        return f"{self.url}#{re.sub(r'\s+', '_', heading)}"


CATALOG = {
    sources.DOC_PROCESSING: CatalogEntry("Processing cluster: training and inference practices"),
    sources.DOC_AI_ML: CatalogEntry(
        "Alliance docs: AI and Machine Learning", f"{_ALLIANCE_WIKI}AI_and_Machine_Learning"
    ),
    sources.DOC_ML_TUTORIAL: CatalogEntry(
        "Alliance docs: Machine learning tutorial",
        f"{_ALLIANCE_WIKI}Tutoriel_Apprentissage_machine/en",
    ),
    sources.DOC_DGX: CatalogEntry("DGX cluster guidelines"),
    sources.DOC_FEDERATION_NOTES: CatalogEntry("Notes on using the federation's clusters"),
}
