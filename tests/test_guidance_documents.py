"""The guidance documents in the portal: their sections read from each markup, the import, the
pages, and every source of the engine resolving to a heading of its document."""

import importlib
import io
import pkgutil
import re

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

import guidance.engine
from guidance.doc_import import import_documents
from guidance.doc_outline import Markup, outline
from guidance.engine.sources import Source
from guidance.models import Cluster, Document
from tests.services import service_missing

RST = """\
=========
The title
=========

Opening words.

First part
----------

Text one.

A deeper one
~~~~~~~~~~~~

Text two.

Second part
-----------
"""

MEDIAWIKI = """\
<languages />
Opening words.
== Managing your datasets ==
=== Choosing the right <tt>storage</tt> ===
Some '''bold''' text.
== Long running computations ==
"""

MARKDOWN = """\
# Notes
## Data
### Folders/Filesystem
```
# a comment in code, not a heading
```
Text with ```cp``` inline.
## Access
### Folders/Filesystem
"""


def test_it_reads_restructuredtext_titles_and_levels():
    parsed = outline(RST)
    assert parsed.markup == Markup.RST and parsed.title == "The title"
    paths = [h.path for h in parsed.headings]
    assert paths == [
        ("The title",),
        ("The title", "First part"),
        ("The title", "First part", "A deeper one"),
        ("The title", "Second part"),
    ]
    assert parsed.parts[1].body.strip() == "Text one."


def test_it_reads_mediawiki_headings_without_their_markup():
    parsed = outline(MEDIAWIKI)
    assert parsed.markup == Markup.MEDIAWIKI and parsed.title is None
    assert parsed.anchor("Managing your datasets / Choosing the right storage") == (
        "choosing-the-right-storage"
    )
    assert parsed.parts[0].heading is None and "Opening words." in parsed.parts[0].body


def test_it_reads_markdown_headings_outside_code():
    parsed = outline(MARKDOWN)
    assert parsed.markup == Markup.MARKDOWN
    assert [h.text for h in parsed.headings] == [
        "Notes", "Data", "Folders/Filesystem", "Access", "Folders/Filesystem",
    ]  # fmt: skip
    # The same words twice: the later heading gets its own anchor, and the path tells them apart.
    assert parsed.anchor("Data / Folders/Filesystem") == "folders-filesystem"
    assert parsed.anchor("Access / Folders/Filesystem") == "folders-filesystem-2"


def test_a_section_must_name_headings_in_their_order():
    parsed = outline(MARKDOWN)
    assert parsed.anchor("Folders/Filesystem / Data") is None
    assert parsed.anchor("Data / Nothing of the sort") is None
    assert parsed.anchor("notes / data / folders/filesystem") == "folders-filesystem"


@pytest.fixture
def docs_dir():
    folder = settings.GUIDANCE_DOCS_DIR
    if not folder.is_dir():
        service_missing(f"no guidance documents at {folder} (GUIDANCE_DOCS_DIR)")
    return folder


@pytest.fixture
def documents(db, docs_dir):
    import_documents(docs_dir)
    return {doc.file_name: doc for doc in Document.objects.all()}


def _engine_sources() -> dict[str, Source]:
    found = {}
    for module_info in pkgutil.walk_packages(guidance.engine.__path__, "guidance.engine."):
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if isinstance(value, Source):
                found[f"{module_info.name}.{name}"] = value
    return found


def test_every_source_of_the_engine_names_a_heading_of_its_document(documents):
    checked = 0
    for name, source in _engine_sources().items():
        if source.document not in documents:
            continue  # Slurm's manual, the clusters' public pages: not among the documents
        parsed = outline(documents[source.document].text)
        assert parsed.anchor(source.section), f"{name}: no heading {source.section!r}"
        checked += 1
    assert checked >= 25  # every document-backed rule, not a handful


def test_every_anchor_a_source_leads_to_is_on_the_document_page(user_client, documents):
    pages: dict[str, str] = {}
    for source in _engine_sources().values():
        if source.document not in documents:
            continue
        doc = documents[source.document]
        if doc.file_name not in pages:
            pages[doc.file_name] = user_client.get(doc.get_absolute_url()).content.decode()
        anchor = outline(doc.text).anchor(source.section)
        assert f'id="{anchor}"' in pages[doc.file_name], (doc.file_name, source.section)


def test_titles_come_from_the_documents_or_their_index(documents):
    titles = {name: doc.title for name, doc in documents.items()}
    # Their own headings...
    assert titles["000_6e5e8c8484f3c234.txt"] == "Training/ Inference on Cluster Best Practices"
    assert titles["003_c24777732a429f30.txt"] == "DGX cluster guidelines"
    # ...and for the wiki pages and the notes, which have none, the folder's README.
    assert titles["001_5f2bc19f2ff4af17.txt"] == "AI and Machine Learning"
    assert titles["002_7837a9bf9505db0f.txt"] == "Machine learning tutorial"
    assert titles["004_95f926fd92fa5250.txt"] == "A user's notes on the federation's clusters"


def test_the_text_comes_from_the_folder(documents, docs_dir):
    for name, doc in documents.items():
        assert doc.text == (docs_dir / name).read_text(encoding="utf-8")


def test_seeding_imports_the_documents(seeded, docs_dir):
    assert Document.objects.count() == len(list(docs_dir.glob("0*.txt")))


def test_a_changed_document_is_updated_and_the_others_kept(db, tmp_path):
    (tmp_path / "README.md").write_text('| file | what |\n|---|---|\n| a.txt | A page "Alpha" |\n')
    (tmp_path / "a.txt").write_text("== Old heading ==\nText.\n")
    assert import_documents(tmp_path).created == 1
    (tmp_path / "a.txt").write_text("== New heading ==\nText.\n")
    done = import_documents(tmp_path)
    assert (done.created, done.updated) == (0, 1)
    doc = Document.objects.get(file_name="a.txt")
    assert doc.title == "Alpha"
    assert doc.sections == [{"path": ["New heading"], "anchor": "new-heading"}]
    assert import_documents(tmp_path).unchanged == 1


def test_the_command_imports_a_folder_and_refuses_a_missing_one(db, tmp_path):
    (tmp_path / "notes.md").write_text("# My notes\n\nText.\n")
    out = io.StringIO()
    call_command("import_guidance_documents", "--dir", str(tmp_path), stdout=out)
    assert "1 created" in out.getvalue()
    assert Document.objects.get(slug="notes").title == "My notes"
    with pytest.raises(CommandError, match="No folder of guidance documents"):
        call_command("import_guidance_documents", "--dir", str(tmp_path / "gone"))


def test_the_list_links_every_document(user_client, documents):
    page = user_client.get("/guidance/documents/").content.decode()
    for doc in documents.values():
        assert f'<a href="/guidance/documents/{doc.slug}/">' in page
    assert "AI and Machine Learning" in page


def test_a_document_page_shows_its_text_with_anchored_headings(user_client, documents):
    page = user_client.get("/guidance/documents/002_7837a9bf9505db0f/").content.decode()
    assert "<h1>Machine learning tutorial</h1>" in page
    assert '<h2 id="step-2-archiving-a-data-set" class="doc-heading">' in page
    assert '<h3 id="important-elements-of-a-sbatch-script" class="doc-heading">' in page
    assert "<code>tar</code>" in page and "<tt>" not in page  # MediaWiki markup made readable
    assert "#SBATCH --gres=gpu:1" in page  # the {{File}} template's script, as code


def test_html_in_a_document_is_not_run(user_client, db, tmp_path):
    (tmp_path / "x.md").write_text("# X\n\n<script>alert(1)</script>\n\n## <b onclick=x>Y</b>\n")
    (tmp_path / "y.rst").write_text("Y\n===\n\n<script>alert(2)</script>\n")
    import_documents(tmp_path)
    for slug in ("x", "y"):
        page = user_client.get(f"/guidance/documents/{slug}/").content.decode()
        assert "<script>alert" not in page and "onclick" not in page
    assert "&lt;script&gt;alert(2)" in user_client.get("/guidance/documents/y/").content.decode()


def test_an_unknown_document_is_404(user_client, db):
    assert user_client.get("/guidance/documents/no-such-document/").status_code == 404
    assert user_client.get("/guidance/documents/..%2Fsecrets/").status_code == 404


def test_the_documents_need_a_login(client, db):
    response = client.get("/guidance/documents/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_no_cluster_can_take_the_documents_address(db):
    with pytest.raises(ValidationError, match="taken by a page of the portal"):
        Cluster(slug="documents", name="Documents").full_clean()


def test_the_documents_own_title_is_the_pages_heading_and_keeps_its_anchor(user_client, documents):
    page = user_client.get("/guidance/documents/000_6e5e8c8484f3c234/").content.decode()
    title = "Training/ Inference on Cluster Best Practices"
    assert f'<h1 id="training-inference-on-cluster-best-practices">{title}</h1>' in page
    assert page.count(f"{title} <a") == 0  # not repeated as a section heading
    assert ".. _practices:" not in page  # reStructuredText's link target is not text
    assert '<h2 id="introduction" class="doc-heading">' in page


def test_no_link_in_a_document_page_leads_nowhere(user_client, documents):
    # Links to files beside the document where it was written (assets/x.png, ../scripts/a.sh)
    # would be 404s here: their words stay, unlinked.
    for doc in documents.values():
        page = user_client.get(f"/guidance/documents/{doc.slug}/").content.decode()
        body = page.split('class="doc-heading"', 1)[-1]
        hrefs = re.findall(r'<a href="([^"]*)"', body)
        assert all(h.startswith(("https://", "http://", "mailto:", "#", "/")) for h in hrefs), (
            doc.file_name,
            [h for h in hrefs if not h.startswith(("https://", "http://", "mailto:", "#", "/"))],
        )
    notes = user_client.get("/guidance/documents/004_95f926fd92fa5250/").content.decode()
    assert "../tools/cloudcomputing" not in notes
