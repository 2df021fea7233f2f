"""Each source shown as its document's title and section, linked to that section in the portal's
copy of the document; sources that name no known document stay plain text."""

import html

import pytest

from guidance import published
from guidance.citations import Citation, KnownDocument, as_source, cite
from guidance.engine import sources
from guidance.engine.sources import Source
from guidance.models import Cluster, Document, Policy
from tests.script_check_helpers import GOOD
from tests.test_compose_page import GOOD as JOB
from tests.test_guidance_documents import docs_dir  # noqa: F401  (a fixture)

DOCS = {
    "a.txt": KnownDocument(
        "Alpha", "/guidance/documents/a/", ((("Data", "Storage"), "storage"), (("Alpha",), "alpha"))
    )
}


def test_a_known_section_links_to_its_anchor():
    assert cite(Source("a.txt", "Data / Storage"), DOCS) == Citation(
        "Alpha — Data / Storage", "/guidance/documents/a/#storage"
    )


def test_the_title_as_section_reads_once():
    assert cite(Source("a.txt", "Alpha"), DOCS) == Citation("Alpha", "/guidance/documents/a/#alpha")


def test_a_section_the_document_lacks_still_leads_to_the_document():
    assert cite(Source("a.txt", "Elsewhere"), DOCS) == Citation(
        "Alpha — Elsewhere", "/guidance/documents/a/"
    )


def test_an_unknown_document_stays_plain_text():
    assert cite(sources.SBATCH_TIME, DOCS) == Citation(
        "Slurm's sbatch manual (man sbatch), -t, --time"
    )
    assert cite(sources.PUBLIC_HARDWARE, DOCS).url == ""


def test_a_web_address_links_there_and_nothing_else_does():
    assert cite(Source("https://docs.example.org/GPUs", ""), DOCS).url == (
        "https://docs.example.org/GPUs"
    )
    assert cite(Source("javascript:alert(1)", "x"), DOCS).url == ""


def test_published_rows_and_plain_text_are_sources_too():
    policy = Policy(source_document="a.txt", source_section="Data / Storage")
    assert as_source(policy) == Source("a.txt", "Data / Storage")
    assert as_source(Policy()) is None
    assert as_source("") is None and as_source(None) is None


@pytest.fixture
def linked(seeded, docs_dir):  # noqa: F811  (seeded imports the documents from docs_dir)
    assert Document.objects.exists()


def _link(source: Source) -> str:
    doc = Document.objects.get(file_name=source.document)
    anchor = next(
        s["anchor"] for s in doc.sections if s["path"][-1] == source.section.split(" / ")[-1]
    )
    return f'<a href="/guidance/documents/{doc.slug}/#{anchor}">{doc.title} — {source.section}</a>'


def test_the_advice_page_links_its_sources(user_client, linked):
    page = html.unescape(user_client.get("/guidance/narval/advice/", JOB).content.decode())
    assert "AI and Machine Learning — Managing your datasets" in page
    assert _link(sources.DATASET_SIZE_TIERS) in page
    assert "001_5f2bc19f2ff4af17.txt" not in page  # no file names for users to decode


def test_the_composers_live_advice_links_its_sources(user_client, linked):
    page = user_client.get("/jobs/new/", JOB, headers={"HX-Request": "true"})
    assert _link(sources.DATASET_SIZE_TIERS) in html.unescape(page.content.decode())


def test_the_script_checker_links_its_findings_and_keeps_slurms_manual_plain(user_client, linked):
    script = GOOD.replace("#SBATCH --time=0-03:00", "") + "#SBATCH --mem=1G\n"
    page = html.unescape(
        user_client.post("/jobs/check/", {"cluster": "narval", "script": script}).content.decode()
    )
    assert _link(sources.SBATCH_ELEMENTS) in page
    assert f'<span class="source">Source: {sources.SBATCH_SCRIPT_RULES}</span>' in page


def test_an_admins_source_that_names_a_document_links(user_client, linked):
    cluster = Cluster.objects.get(slug="narval")
    cluster.source_document = "002_7837a9bf9505db0f.txt"
    cluster.source_section = "Step 4: Interactive job (salloc)"
    cluster.save()
    page = html.unescape(user_client.get("/guidance/narval/").content.decode())
    assert _link(Source(cluster.source_document, cluster.source_section)) in page


def test_a_reimport_reaches_pages_at_once(user_client, linked):
    url, data = "/guidance/narval/advice/", JOB
    user_client.get(url, data)  # the process keeps the documents now
    doc = Document.objects.get(file_name=sources.DATASET_SIZE_TIERS.document)
    doc.title = "Renamed by a new import"
    doc.save()
    assert "Renamed by a new import — Managing" in html.unescape(
        user_client.get(url, data).content.decode()
    )


def test_a_guidance_document_not_imported_reads_as_its_title_linked_to_its_public_page():
    # A fresh clone without the documents beside it: no file names, a public link where one is.
    tiers = cite(sources.DATASET_SIZE_TIERS, {})
    assert tiers.label == (
        "Alliance docs: AI and Machine Learning — Managing your datasets / Choosing the right "
        "storage type for your dataset"
    )
    assert tiers.url == (
        "https://docs.alliancecan.ca/wiki/AI_and_Machine_Learning"
        "#Choosing_the_right_storage_type_for_your_dataset"
    )
    chain = cite(sources.CHECKPOINT_CHAIN, {})
    assert chain.url.startswith(
        "https://docs.alliancecan.ca/wiki/Tutoriel_Apprentissage_machine/en#"
    )
    # A site's internal document has no public page: its title alone.
    assert cite(sources.PROCESSING_STAGING, {}) == Citation(
        "Processing cluster: training and inference practices — 1. Data Preparation"
    )


def test_the_advice_page_reads_well_without_the_documents(user_client, seeded):
    Document.objects.all().delete()  # as on a fresh clone without ../shared beside it
    published.bump()
    page = html.unescape(user_client.get("/guidance/narval/advice/", JOB).content.decode())
    assert "_5f2bc19f2ff4af17" not in page and "_7837a9bf9505db0f" not in page
    assert (
        '<a href="https://docs.alliancecan.ca/wiki/AI_and_Machine_Learning'
        '#Choosing_the_right_storage_type_for_your_dataset"'
    ) in page
