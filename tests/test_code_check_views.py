"""The Check page's training program: pasted under a file name or uploaded as several files,
the entry point among them; findings grouped (changes by impact, questions, what PyTorch already
does) and linked to their marked lines; files it cannot read said on the form, naming the file,
with nothing typed lost. And the composer's hint for a training job."""

import html
import re
from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from guidance.engine.code_check import MAX_FILE_BYTES, MAX_FILES
from guidance.engine.sources import DATALOADER
from tests.source_helpers import shown
from tests.test_api_check_code import (
    CLEAN,
    DATA_MODULE,
    ENTRY,
    LOADER,
    LOADER_COLUMN,
    LOADER_LINE,
)
from tests.test_compose_page import GOOD as COMPOSED

URL = "/jobs/check/code/"
NOTHING_TO_CHANGE = "Nothing to change: this program already follows the cluster's advice."

# num_workers from the command line: the checker cannot know it, so it asks.
ASKED = """\
import argparse

from torch.utils.data import DataLoader


def main(args, model, dataset, optimizer):
    loader = DataLoader(dataset, batch_size=64, num_workers=args.workers)
    for x, y in loader:
        optimizer.zero_grad()
        model(x.cuda()).sum().backward()
        optimizer.step()
"""


def _post(client, cluster="narval", **fields):
    return client.post(URL, {"code-cluster": cluster} | {f"code-{k}": v for k, v in fields.items()})


def _page(response) -> str:
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def _upload(name: str, text: str | bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode() if isinstance(text, str) else text)


def _errors(page: str) -> str:
    found = re.search(r'<section id="code-result".*?</section>', page, re.S).group(0)
    assert 'role="alert"' in found, "no errors shown"
    return found


def _textarea(page: str) -> str:
    return re.search(r'<textarea name="code-program"[^>]*>\n(.*?)</textarea>', page, re.S).group(1)


def _finding(page: str, rule: str) -> str:
    return re.search(
        rf'<div class="finding code-finding[^"]*" data-rule="{rule}".*?\n</div>', page, re.S
    ).group(0)


# --- Who may ---------------------------------------------------------------------------------


def test_a_stranger_is_sent_to_log_in(client, seeded):
    response = _post(client, program=LOADER)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_it_takes_only_posts(user_client, seeded):
    assert user_client.get(URL).status_code == 405


# --- The form --------------------------------------------------------------------------------


def test_the_check_page_has_the_training_program_form(user_client, seeded):
    page = _page(user_client.get("/jobs/check/", {"cluster": "cedar"}))
    form = re.search(r'<section id="training-program".*', page, re.S).group(0)
    assert f'action="{URL}#training-program"' in form
    assert 'enctype="multipart/form-data"' in form
    assert '<option value="" selected>The script\'s cluster</option>' in form
    assert 'name="code-file_name" value="train.py"' in form
    assert re.search(r'<input type="file" name="code-uploads"[^>]* multiple', form)
    assert 'name="code-program"' in form and 'name="code-entry"' in form
    assert '<a href="#training-program">check the training program</a>' in page


# --- Findings --------------------------------------------------------------------------------


def test_a_pasted_program_gets_its_findings_at_their_lines(user_client, seeded):
    page = _page(_post(user_client, program=LOADER, file_name="fit.py"))
    workers = _finding(page, "dataloader_num_workers")
    where = f"fit.py:{LOADER_LINE}:{LOADER_COLUMN}"
    assert (
        f'<a class="finding-where" href="#code-file-1-line-{LOADER_LINE}"><code>{where}</code>'
        in workers
    )
    assert "High impact" in workers
    assert "Fix:" in workers and "num_workers" in workers
    assert '<pre class="snippet before"><code>' in workers
    assert shown(DATALOADER) in workers
    line = re.search(rf'<div id="code-file-1-line-{LOADER_LINE}"[^>]*>', page).group(0)
    assert "flagged impact-high" in line
    assert "dataloader_num_workers" in line
    # The box keeps the program, the name field its name.
    assert _textarea(page) == LOADER
    assert 'name="code-file_name" value="fit.py"' in page


def test_the_programs_own_text_is_escaped_wherever_it_shows(user_client, seeded):
    marked = LOADER.replace("num_workers=0)", "num_workers=0)  # <b>fast</b> `x<y`")
    raw = _post(user_client, program=marked).content.decode()
    assert "<b>fast</b>" not in raw
    assert "&lt;b&gt;fast&lt;/b&gt;" in raw  # in the listing, and the snippets that quote it


def test_changes_come_before_questions_and_what_is_already_the_default(user_client, seeded):
    page = _page(_post(user_client, program=ASKED))
    asked = page.index("<h4>Questions</h4>")
    assert page.index('data-rule="dataloader_num_workers" data-kind="question"') > asked
    default = page.index("<h4>Already the default</h4>")
    assert page.index('data-rule="zero_grad_set_to_none" data-kind="default"') > default
    if "<h4>To change, most impact first</h4>" in page:
        assert page.index("<h4>To change, most impact first</h4>") < asked < default
    assert "<code>args.workers</code>" in _finding(page, "dataloader_num_workers")
    assert NOTHING_TO_CHANGE not in page


def test_changes_are_listed_most_impact_first(user_client, seeded):
    page = _page(_post(user_client, program=LOADER))
    impacts = re.findall(r'data-kind="change" data-impact="(\w+)"', page)
    order = ["high", "medium", "low"]
    assert len(impacts) >= 2 and impacts == sorted(impacts, key=order.index)


def test_a_program_that_follows_the_advice_has_nothing_to_change(user_client, seeded):
    assert NOTHING_TO_CHANGE not in _page(_post(user_client, program=LOADER))
    page = _page(_post(user_client, program=CLEAN))
    assert NOTHING_TO_CHANGE in page
    assert 'class="finding code-finding' not in page
    assert _textarea(page) == CLEAN


def test_several_uploaded_files_are_checked_with_the_entry_point_first(user_client, seeded):
    uploads = [_upload("data.py", DATA_MODULE), _upload("train.py", ENTRY)]
    page = _page(_post(user_client, uploads=uploads, entry="train.py"))
    # The entry point is the first file listed, the module the second.
    names = re.findall(
        r'<details id="code-file-(\d)" [^>]*>\s*<summary><code>([\w.]+)</code>', page
    )
    assert names == [("1", "train.py"), ("2", "data.py")]
    workers = _finding(page, "dataloader_num_workers")
    assert 'href="#code-file-2-line-5"><code>data.py:5:' in workers
    # The next check's entry point can be chosen among the files just sent.
    assert '<option value="data.py"><option value="train.py"></datalist>' in page
    assert "flagged" in re.search(r'<div id="code-file-2-line-5"[^>]*>', page).group(0)


def test_a_pasted_file_and_uploaded_modules_go_together(user_client, seeded):
    page = _page(
        _post(user_client, program=ENTRY, uploads=[_upload("data.py", DATA_MODULE)], entry="")
    )
    assert "data.py:5:" in _finding(page, "dataloader_num_workers")
    assert "2 files on Narval" in page


# --- What it cannot read ----------------------------------------------------------------------

BROKEN = "import torch\n\ndef train(:\n    pass\n"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({}, "There is nothing to check"),
        ({"program": "  \n"}, "There is nothing to check"),
        ({"program": BROKEN}, "train.py"),
        ({"program": LOADER, "file_name": "../train.py"}, "points outside the project"),
        ({"program": LOADER, "file_name": "/home/me/train.py"}, "is an absolute path"),
        ({"program": LOADER, "file_name": "train.ipynb"}, "is not a Python file"),
        (
            {"program": LOADER, "entry": "main.py"},
            "There is no file “main.py” among those sent (train.py)",
        ),
        ({"uploads": [_upload("notes.txt", "x = 1\n")]}, "“notes.txt” is not a Python file"),
        ({"uploads": [_upload("model.pt", b"\x80\x02\x00\xff")]}, "model.pt is not a text file"),
        ({"uploads": [_upload("blob.py", b"x = 1\x00\n")]}, "blob.py is not a text file"),
        ({"uploads": [_upload("empty.py", b"")]}, "empty.py is empty"),
        ({"uploads": [_upload("big.py", "#" * (MAX_FILE_BYTES + 1))]}, "big.py is 501 kB"),
        (
            {"uploads": [_upload(f"m{i}.py", "x = 1\n") for i in range(MAX_FILES + 1)]},
            f"{MAX_FILES + 1} files: the checker reads at most {MAX_FILES}",
        ),
        (
            {"program": LOADER, "uploads": [_upload("train.py", LOADER)]},
            "Two files are named train.py",
        ),
    ],
)
def test_what_it_cannot_read_is_said_on_the_form(user_client, seeded, fields, said):
    page = _page(_post(user_client, **fields))
    assert said in _errors(page)
    assert "code-result-title" not in page  # no findings beside the errors
    if fields.get("program"):
        assert _textarea(page) == fields["program"]
    if fields.get("file_name"):
        assert f'name="code-file_name" value="{fields["file_name"]}"' in page
    if fields.get("entry"):
        assert f'name="code-entry" value="{fields["entry"]}"' in page


def test_a_syntax_error_is_said_with_its_file_and_line(user_client, seeded):
    errors = _errors(_page(_post(user_client, program=BROKEN, file_name="model.py")))
    assert re.search(r"Training program</a>: [^<]*model\.py[^<]*3", errors)


def test_a_syntax_error_in_an_upload_names_that_file(user_client, seeded):
    uploads = [_upload("train.py", ENTRY), _upload("data.py", "def make_loader(:\n")]
    errors = _errors(_page(_post(user_client, uploads=uploads)))
    assert re.search(r"Or upload its files</a>: [^<]*data\.py[^<]*1", errors)
    assert "train.py" not in errors


def test_an_unknown_cluster_is_said(user_client, seeded):
    page = _page(_post(user_client, cluster="summit", program=LOADER))
    assert "There is no cluster “summit”" in _errors(page)
    assert _textarea(page) == LOADER


# --- The composer's hint ------------------------------------------------------------------


def _live(client, data: dict) -> str:
    headers = {"HX-Request": "true"}
    data = data | {"live": "1", "reached": "cluster,workload"}
    return html.unescape(client.post("/jobs/new/", data, headers=headers).content.decode())


def test_the_composer_offers_to_check_a_training_program_as_the_workload_changes(
    user_client, seeded
):
    link = '<a href="/jobs/check/?cluster=narval#training-program">'
    hint = link + "Check your training program first</a>"
    assert hint in _live(user_client, COMPOSED)
    assert "Check your training program first" not in _live(
        user_client, COMPOSED | {"workload": "inference"}
    )
    # A new composition starts as training (the first choice): the hint is there at once.
    page = html.unescape(user_client.get("/jobs/new/").content.decode())
    assert '<a href="/jobs/check/#training-program">Check your training program first</a>' in page


# --- Nothing typed is lost -------------------------------------------------------------------

SCRIPT = "#!/bin/bash\n#SBATCH --gpus-per-node=1\n#SBATCH --time=1:00:00\npython train.py\n"


def _script_box(page: str) -> str:
    return re.search(r'<textarea name="script"[^>]*>\n(.*?)</textarea>', page, re.S).group(1)


def test_both_boxes_are_one_form_with_a_button_each(user_client, seeded):
    page = _page(user_client.get("/jobs/check/"))
    form = re.search(r'<form id="check-form" [^>]*action="/jobs/check/"', page)
    assert form, "the script's form has no id for the program's fields to name"
    program = re.search(r'<section id="training-program".*', page, re.S).group(0)
    for name in ("code-cluster", "code-file_name", "code-program", "code-uploads", "code-entry"):
        assert re.search(rf'name="{name}"[^>]* form="check-form"', program), name
    button = '<button type="submit" form="check-form" formaction="' + URL + '#training-program"'
    assert button in program


def test_the_program_is_checked_on_the_scripts_cluster_unless_another_is_chosen(
    user_client, seeded
):
    page = _page(user_client.get("/jobs/check/?cluster=narval"))
    program = re.search(r'<section id="training-program".*', page, re.S).group(0)
    assert '<option value="" selected>The script\'s cluster</option>' in program
    # The script's box says Narval, the program's box its first choice: Narval it is.
    data = {"cluster": "narval", "script": SCRIPT, "code-cluster": "", "code-program": CLEAN}
    page = _page(user_client.post(URL, data))
    assert re.search(r'id="code-result-title">1 file on Narval<', page), page[-3000:]
    page = _page(user_client.post(URL, data | {"code-cluster": "cedar"}))
    assert re.search(r'id="code-result-title">1 file on Cedar<', page)
    # Checking the script keeps "the script's cluster" chosen for the program.
    page = _page(user_client.post("/jobs/check/", data))
    program = re.search(r'<section id="training-program".*', page, re.S).group(0)
    assert '<option value="" selected>' in program


def test_checking_the_program_keeps_the_script_typed_beside_it(user_client, seeded):
    data = {"cluster": "cedar", "script": SCRIPT, "code-cluster": "narval", "code-program": CLEAN}
    page = _page(user_client.post(URL, data))
    assert NOTHING_TO_CHANGE in page
    assert _script_box(page) == SCRIPT
    script_form = re.search(r'<form id="check-form".*?</form>', page, re.S).group(0)
    assert '<option value="cedar" selected>' in script_form


def test_checking_the_script_keeps_the_program_typed_beside_it(user_client, seeded):
    data = {
        "cluster": "narval",
        "script": SCRIPT,
        "code-cluster": "cedar",
        "code-program": LOADER,
        "code-file_name": "fit.py",
        "code-entry": "fit.py",
    }
    page = _page(user_client.post("/jobs/check/", data))
    assert "On Narval" in page  # the script was checked
    assert "code-result-title" not in page  # and the program was not
    assert _textarea(page) == LOADER
    assert 'name="code-file_name" value="fit.py"' in page
    assert 'name="code-entry" value="fit.py"' in page
    program = re.search(r'<section id="training-program".*', page, re.S).group(0)
    assert '<option value="cedar" selected>' in program


# --- A program that neither trains nor evaluates ----------------------------------------------

NOTHING_CHECKED = (
    "No training or evaluation found in these files. Every line was checked, but the "
    "program-wide advice (mixed precision, TF32, torch.compile) needs the training loop: add "
    "that file (or upload the modules it imports)."
)
HELPER = "def scale(x, factor=2):\n    return x * factor\n"


def _words(page: str) -> str:
    """The check's result as read, without its markup."""
    found = re.search(r'<section id="code-result".*?</section>', page, re.S).group(0)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found))


@pytest.fixture
def nothing_trained(monkeypatch):
    """The checker as it answers files in which nothing trains or evaluates a model."""
    from jobs.compose import code_check_form

    real = code_check_form.check_code
    monkeypatch.setattr(
        code_check_form,
        "check_code",
        lambda *args, **kwargs: replace(real(*args, **kwargs), trains_or_evaluates=False),
    )


def test_files_in_which_nothing_trains_are_not_said_to_need_nothing(
    user_client, seeded, nothing_trained
):
    page = _page(_post(user_client, program=HELPER, file_name="helpers.py"))
    assert NOTHING_CHECKED in _words(page)
    assert NOTHING_TO_CHANGE not in page
    assert "<code>helpers.py</code>" in page  # the file is still listed as read


def test_findings_are_shown_even_where_nothing_was_seen_to_train(
    user_client, seeded, nothing_trained
):
    page = _page(_post(user_client, program=LOADER))
    assert 'data-rule="dataloader_num_workers"' in page
    assert "No training or evaluation found" not in page


def test_a_helper_module_alone_is_not_said_to_need_nothing(user_client, seeded):
    page = _page(_post(user_client, program=HELPER, file_name="helpers.py"))
    assert 'class="finding code-finding' not in page
    assert NOTHING_CHECKED in _words(page) and NOTHING_TO_CHANGE not in page


# --- Packages -------------------------------------------------------------------------------

# The entry point imports its loader from a package, as projects lay theirs out.
PACKAGED_ENTRY = ENTRY.replace(
    "from data import make_loader", "from pipeline.loading import make_loader"
)


def test_the_upload_help_says_files_are_one_folder_and_what_to_do_for_packages(user_client, seeded):
    page = _page(user_client.get("/jobs/check/"))
    help_text = re.search(r'name="code-uploads".*?<small class="help">(.*?)</small>', page, re.S)
    said = " ".join(help_text.group(1).split())
    assert "taken as one folder" in said
    assert "paste a module above under its path (e.g. pipeline/loading.py)" in said
    assert "the API, which takes paths" in said


def test_uploads_with_one_name_in_two_folders_are_told_why_and_what_works(user_client, seeded):
    uploads = [_upload("models/__init__.py", "x = 1\n"), _upload("data/__init__.py", "y = 2\n")]
    errors = _errors(_page(_post(user_client, uploads=uploads)))
    assert "Two files are named __init__.py: uploaded files are taken as one folder" in errors
    assert "paste a module in the box under its path, or use the API" in errors


def test_a_module_pasted_under_its_path_is_found_by_the_import(user_client, seeded):
    page = _page(
        _post(
            user_client,
            program=DATA_MODULE,
            file_name="pipeline/loading.py",
            uploads=[_upload("train.py", PACKAGED_ENTRY)],
            entry="train.py",
        )
    )
    assert "pipeline/loading.py:5:" in _finding(page, "dataloader_num_workers")
    names = re.findall(r"<summary><code>([\w./]+)</code>", page)
    assert names == ["train.py", "pipeline/loading.py"]


# --- Encodings ------------------------------------------------------------------------------

# Saved by an editor in Latin-1, as its coding line says: "é" is the one byte 0xE9.
LATIN_1 = ("# -*- coding: latin-1 -*-\n# Données: the loader below\n" + LOADER).encode("latin-1")


def test_a_pasted_program_starting_with_a_byte_order_mark_is_checked(user_client, seeded):
    page = _page(_post(user_client, program="\ufeff" + LOADER))
    assert f"train.py:{LOADER_LINE}:{LOADER_COLUMN}" in _finding(page, "dataloader_num_workers")
    assert "U+FEFF" not in page


def test_an_upload_in_the_encoding_its_coding_line_names_is_checked(user_client, seeded):
    page = _page(_post(user_client, uploads=[_upload("train.py", LATIN_1)]))
    assert f"train.py:{LOADER_LINE + 2}:" in _finding(page, "dataloader_num_workers")
    assert "# Données: the loader below" in page  # the listing, decoded as the file says


def test_an_upload_not_in_its_encoding_is_still_refused(user_client, seeded):
    no_coding_line = LATIN_1.split(b"\n", 1)[1]  # Latin-1 bytes, read as UTF-8
    page = _page(_post(user_client, uploads=[_upload("train.py", no_coding_line)]))
    assert "train.py is not a text file" in _errors(page)
    unknown = b"# -*- coding: klingon -*-\nx = 1\n"
    page = _page(_post(user_client, uploads=[_upload("train.py", unknown)]))
    assert "train.py is not a text file" in _errors(page)


def test_put_it_in_the_box_keeps_the_program_typed_beside_the_script(user_client, seeded):
    from tests.test_script_check_page import NO_ACCOUNT

    data = {"cluster": "narval", "script": NO_ACCOUNT, "code-cluster": "cedar"}
    page = _page(user_client.post("/jobs/check/", data | {"code-program": LOADER}))
    box = re.search(r'<form method="post" action="/jobs/check/">.*?</form>', page, re.S).group(0)
    assert "Put it in the box" in box
    assert f'name="code-program" value="{LOADER}"' in box
    assert 'name="code-cluster" value="cedar"' in box


# --- YAML configs beside the program ---------------------------------------------------------


def test_the_upload_box_takes_yaml_configs(user_client, seeded):
    page = _page(user_client.get("/jobs/check/", {"cluster": "cedar"}))
    upload = re.search(r'<input type="file" name="code-uploads"[^>]*>', page).group(0)
    assert ".yaml" in upload and ".yml" in upload and ".py" in upload


def test_uploaded_configs_are_checked_with_the_program_at_their_yaml_lines(user_client, seeded):
    from tests.test_api_check_code import HYDRA_FILES

    # Browsers send names without folders: the configs are found by their names.
    uploads = [_upload(name.rsplit("/", 1)[-1], text) for name, text in HYDRA_FILES.items()]
    page = _page(_post(user_client, uploads=uploads, entry="train.py"))
    precision = _finding(page, "mixed_precision")
    assert "gpu.yaml:3:" in precision
    assert "precision: bf16-mixed" in precision


def test_a_config_that_does_not_parse_is_said_on_the_form(user_client, seeded):
    uploads = [_upload("train.py", LOADER), _upload("gpu.yaml", "devices: [4\nprecision: 32\n")]
    errors = _errors(_page(_post(user_client, uploads=uploads)))
    assert "gpu.yaml is not a YAML config" in errors and "line 2" in errors
