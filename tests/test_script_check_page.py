"""The "Check my script" page: paste or upload a script, choose a cluster, read the findings."""

import html
import re
import subprocess
from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import QueryDict

from guidance.engine import sources
from guidance.engine.script_check import MAX_CHARS, Finding, Severity
from jobs.compose.check_form import ScriptCheckForm
from jobs.compose.forms import ComposeForm
from tests.script_check_helpers import GOOD
from tests.source_helpers import shown

URL = "/jobs/check/"


def _check(client, script=GOOD, cluster="narval", **extra):
    return client.post(URL, {"cluster": cluster, "script": script, **extra})


def _page(response) -> str:
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def _textarea(page: str) -> str:
    # Django writes a newline after <textarea> so that one the script starts with survives.
    return re.search(r'<textarea name="script"[^>]*>\n(.*?)</textarea>', page, re.S).group(1)


def test_it_requires_login(client, seeded):
    assert client.get(URL).status_code == 302
    response = _check(client)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_it_shows_the_form(user_client, seeded):
    page = _page(user_client.get(URL))
    assert 'enctype="multipart/form-data"' in page
    assert '<option value="narval"' in page
    assert 'name="script"' in page
    assert 'name="script_file"' in page
    assert "csrfmiddlewaretoken" in page


def test_the_cluster_can_be_chosen_by_link(user_client, seeded):
    page = _page(user_client.get(URL, {"cluster": "cedar"}))
    assert '<option value="cedar" selected>' in page


def test_it_rejects_other_methods(user_client, seeded):
    assert user_client.put(URL).status_code == 405


def test_a_post_without_the_csrf_token_is_refused(django_user_model, seeded):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(django_user_model.objects.create_user("bob", password="bob-password"))
    assert _check(client).status_code == 403


def test_a_good_script_shows_no_problems_and_keeps_the_text(user_client, seeded):
    page = _page(_check(user_client))
    assert "No problems found" in page
    assert 'data-code="none"' in page
    assert _textarea(page) == GOOD
    assert "--time=0-03:00" in page  # what sbatch reads


BAD = """\
#!/bin/bash
#SBATCH --gres=gpu:h100:4
#SBATCH --time=10-00:00
DATA=/project/def-me/imagenet
python train.py --data $DATA
"""


LONG = GOOD.replace("--time=0-03:00", "--time=2-00:00")
NO_TIME = GOOD.replace("#SBATCH --time=0-03:00", "")
LATE = GOOD + "#SBATCH --mem=1G\n"


@pytest.mark.parametrize(
    ("script", "code", "words", "source"),
    [
        (
            BAD,
            "over_max_duration",
            "maximum job duration of 7 days",
            sources.NOTES_SBATCH_ELEMENTS,
        ),
        (BAD, "multi_gpu_without_launcher", "asks for 4 GPUs", sources.SBATCH_ELEMENTS),
        (BAD, "training_from_network", "training data from /project", sources.DATASET_SIZE_TIERS),
        (BAD, "no_account", "No --account", sources.SBATCH_ELEMENTS),
        (BAD, "gres_type_unknown", "Its GPU types: a100", sources.PUBLIC_HARDWARE),
        (LONG, "long_without_checkpoints", "longer than 24 h", sources.LONG_RUNNING),
        (NO_TIME, "missing_time", "No --time", sources.SBATCH_ELEMENTS),
        (LATE, "ignored_directive", "sbatch ignores", sources.SBATCH_SCRIPT_RULES),
    ],
)
def test_each_problem_shows_with_its_source(user_client, seeded, script, code, words, source):
    page = _page(_check(user_client, script))
    assert f'data-code="{code}"' in page
    assert words in page
    assert shown(source) in page
    assert "No problems found" not in page
    assert _textarea(page) == script  # the text stays in the box


def test_the_processing_cluster_wants_its_own_scratch(user_client, seeded):
    script = GOOD.replace("$SLURM_TMPDIR", "/project/me")
    page = _page(_check(user_client, script, cluster="processing"))
    assert 'data-code="training_from_network"' in page
    assert "$SCRATCH" in page
    assert ">Training/ Inference on Cluster Best Practices — 2. Training Process</a>" in page


def test_the_dgx_cluster_takes_no_scripts(user_client, seeded):
    page = _page(_check(user_client, cluster="dgx"))
    assert 'data-code="not_slurm"' in page
    assert "Run:ai" in page


def test_an_uploaded_script_is_checked_and_shown(user_client, seeded):
    upload = SimpleUploadedFile("job.sh", BAD.encode(), content_type="text/x-shellscript")
    page = _page(user_client.post(URL, {"cluster": "narval", "script": "", "script_file": upload}))
    assert 'data-code="over_max_duration"' in page
    assert _textarea(page) == BAD


def test_an_uploaded_windows_script_is_told_about_its_line_breaks(user_client, seeded):
    upload = SimpleUploadedFile("job.sh", GOOD.replace("\n", "\r\n").encode())
    page = _page(user_client.post(URL, {"cluster": "narval", "script_file": upload}))
    assert 'data-code="dos_line_breaks"' in page


def test_pasted_text_is_not_blamed_for_the_browsers_line_breaks(user_client, seeded):
    page = _page(_check(user_client, GOOD.replace("\n", "\r\n")))
    assert "No problems found" in page


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"script": ""}, "Paste a job script into the box or upload one"),
        ({"script": "  \n\t\n"}, "Paste a job script into the box or upload one"),
        ({"cluster": "summit"}, "There is no cluster “summit”: choose one from the list."),
        ({"cluster": ""}, "Choose the cluster the script is for."),
        (
            {"script_file": SimpleUploadedFile("model.pt", b"\x80\x02\x8a\nl\xfc\x9cF\xf9")},
            "model.pt is not a text file",
        ),
        (
            {"script_file": SimpleUploadedFile("a.bin", b"#!/bin/bash\n\x00\x00")},
            "a.bin is not a text file",
        ),
        (
            {"script_file": SimpleUploadedFile("big.sh", b"#" * (MAX_CHARS + 1))},
            "big.sh is 201 kB: upload a job script of at most 200 kB.",
        ),
        ({"script_file": SimpleUploadedFile("empty.sh", b"")}, "The uploaded file is empty"),
    ],
)
def test_bad_input_gets_a_clear_message(user_client, seeded, data, message):
    response = user_client.post(URL, {"cluster": "narval", "script": "#!/bin/bash\n"} | data)
    page = _page(response)
    assert message in page
    assert 'role="alert"' in page
    assert "No problems found" not in page


def test_the_text_is_kept_when_the_form_has_errors(user_client, seeded):
    page = _page(_check(user_client, GOOD, cluster="summit"))
    assert _textarea(page) == GOOD


@pytest.mark.parametrize(
    "script",
    [
        "\x7fELF\x02\x01\x01",
        "#!/bin/bash\n# only comments\n",
        "<script>alert(1)</script>",
        "#SBATCH --time=" + "9" * 5000,
        "x" * (MAX_CHARS + 10),
    ],
)
def test_odd_scripts_never_fail(user_client, seeded, script):
    response = _check(user_client, script)
    assert response.status_code == 200
    assert "<script>alert(1)</script>" not in response.content.decode()


# --- Each finding's weight, lines and fix; the script listed; the fixed script --------------

NO_ACCOUNT = GOOD.replace("#SBATCH --account=def-someuser\n", "")


def _finding(page: str, code: str) -> str:
    return re.search(rf'<div class="finding [^"]*" data-code="{code}".*?\n</div>', page, re.S)[0]


def _hidden(raw: str, action: str) -> dict[str, str]:
    """The hidden fields of the page's form that posts to `action`, as a browser sends them."""
    form = re.search(rf'<form method="post" action="{action}">(.*?)</form>', raw, re.S)[1]
    fields = re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form)
    return {name: html.unescape(value) for name, value in fields}


def test_a_finding_shows_its_weight_its_fix_and_its_source(user_client, seeded):
    finding = _finding(_page(_check(user_client, NO_ACCOUNT)), "no_account")
    assert '<span class="severity-badge severity-fails">Would fail</span>' in finding
    assert "No --account" in finding
    assert re.search(r"<strong>Fix:</strong> Add #SBATCH --account=def-yourgroup", finding)
    assert shown(sources.SBATCH_ELEMENTS) in finding


def test_the_worst_findings_come_first(user_client, seeded):
    page = _page(_check(user_client, BAD + "#SBATCH --mem=1G\n"))
    weights = re.findall(r'<div class="finding [^"]*" data-code="\w+" data-severity="(\w+)"', page)
    ranks = [Severity(w).rank for w in weights]
    assert len(ranks) >= 4 and ranks == sorted(ranks)


def _with_finding_on_lines(monkeypatch, *lines: int) -> None:
    """The check as the rules will answer it once each finding names its lines."""
    finding = Finding(
        "memory_over_share",
        "More memory than the GPUs' share.",
        sources.SBATCH_ELEMENTS,
        "memory",
        severity=Severity.WASTES,
        lines=lines,
        fix="Ask for 32000M.",
    )
    checked = ScriptCheckForm.check
    monkeypatch.setattr(
        ScriptCheckForm,
        "check",
        lambda form, program=None: replace(checked(form, program), notes=(finding,)),
    )


def test_a_finding_links_the_lines_it_is_about(user_client, seeded, monkeypatch):
    _with_finding_on_lines(monkeypatch, 4, 5)
    finding = _finding(_page(_check(user_client)), "memory_over_share")
    assert '<span class="severity-badge severity-wastes">Wastes resources</span>' in finding
    assert 'Lines <a href="#line-4">4</a>, <a href="#line-5">5</a>' in finding
    assert "<strong>Fix:</strong> Ask for 32000M." in finding


def test_the_script_is_listed_with_the_lines_findings_name_marked(user_client, seeded, monkeypatch):
    _with_finding_on_lines(monkeypatch, 4)
    page = _page(_check(user_client))
    rows = re.findall(r'<div id="line-(\d+)" data-line="(\d+)" class="([^"]*)"', page)
    assert [int(number) for number, _, _ in rows] == list(range(1, GOOD.count("\n") + 1))
    marked = {number: classes for number, _, classes in rows if "flagged" in classes}
    assert marked == {"4": "listing-line flagged severity-wastes"}
    assert "<code>#SBATCH --mem=32000M       # Memory proportional to GPUs" in page


def test_an_sbatch_line_after_a_command_is_marked_where_it_is(user_client, seeded):
    page = _page(_check(user_client, LATE))
    late = LATE.count("\n")  # the last line
    assert f'<a href="#line-{late}">{late}</a>' in _finding(page, "ignored_directive")
    assert re.search(rf'<div id="line-{late}" data-line="{late}" class="[^"]*flagged', page)


def test_the_fixed_script_shows_as_a_diff(user_client, seeded):
    page = _page(_check(user_client, NO_ACCOUNT))
    assert '<h3 id="fixed-script-title">Fixed script</h3>' in page
    assert "<ins>+#SBATCH --account=def-yourgroup</ins>" in page
    assert '<span class="diff-same"> #SBATCH --time=0-03:00     # DD-HH:MM:SS</span>' in page
    assert "replace a placeholder such as <code>def-yourgroup</code>" in page


def test_a_removed_line_shows_as_removed(user_client, seeded, monkeypatch):
    checked = ScriptCheckForm.check
    diff = (
        "--- job.sh (as pasted)\n+++ job.sh (fixed)\n@@ -4 +4 @@\n"
        "-#SBATCH --mem=1T\n+#SBATCH --mem=32000M\n"
    )
    monkeypatch.setattr(
        ScriptCheckForm,
        "check",
        lambda form, program=None: replace(checked(form, program), fixed=GOOD, diff=diff),
    )
    page = _page(_check(user_client))
    assert "<del>-#SBATCH --mem=1T</del><ins>+#SBATCH --mem=32000M</ins>" in page


def test_a_script_with_nothing_to_fix_offers_no_fixed_script(user_client, seeded):
    page = _page(_check(user_client))
    assert "Fixed script" not in page
    assert "Download the fixed script" not in page


def test_the_fixed_script_downloads_as_a_file_that_checks_clean_of_the_finding(user_client, seeded):
    raw = _check(user_client, NO_ACCOUNT).content.decode()
    response = user_client.post("/jobs/check/fixed/", _hidden(raw, "/jobs/check/fixed/"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/x-shellscript")
    assert response["Content-Disposition"] == 'attachment; filename="job-fixed.sh"'
    fixed = response.content.decode()
    assert "#SBATCH --account=def-yourgroup\n" in fixed
    assert subprocess.run(["bash", "-n"], input=fixed.encode(), check=False).returncode == 0
    again = _page(_check(user_client, fixed))
    assert 'data-code="no_account"' not in again


def test_put_it_in_the_box_checks_the_fixed_script_without_javascript(user_client, seeded):
    raw = _check(user_client, NO_ACCOUNT).content.decode()
    page = _page(user_client.post(URL, _hidden(raw, URL)))
    assert "#SBATCH --account=def-yourgroup\n" in _textarea(page)
    assert 'data-code="no_account"' not in page
    assert "Fixed script" not in page  # nothing left to fix


def test_a_download_with_nothing_left_to_fix_is_the_script_as_sent(user_client, seeded):
    response = user_client.post("/jobs/check/fixed/", {"cluster": "narval", "script": GOOD})
    assert response["Content-Disposition"] == 'attachment; filename="job-fixed.sh"'
    assert response.content.decode() == GOOD


def test_a_download_without_a_script_says_what_is_missing(user_client, seeded):
    page = _page(user_client.post("/jobs/check/fixed/", {"cluster": "narval", "script": ""}))
    assert "Paste a job script into the box or upload one" in page


def test_the_download_wants_a_login_and_a_post(client, user_client, seeded):
    assert user_client.get("/jobs/check/fixed/").status_code == 405
    user_client.logout()
    response = client.post("/jobs/check/fixed/", {"cluster": "narval", "script": NO_ACCOUNT})
    assert response.status_code == 302


# --- Open in the composer ---------------------------------------------------------------------


def _composer_link(page: str) -> str:
    return re.search(r'<a class="button secondary" href="([^"]+)">Open in the composer</a>', page)[
        1
    ]


def test_open_in_the_composer_fills_its_form_with_the_scripts_values(user_client, seeded):
    script = GOOD.replace("--gres=gpu:1", "--gres=gpu:a100:2\n#SBATCH --job-name=resnet")
    raw = _check(user_client, script).content.decode()
    link = html.unescape(_composer_link(raw))
    assert link.startswith("/jobs/new/?")
    assert set(QueryDict(link.partition("?")[2])) <= set(ComposeForm.base_fields)
    composer = _page(user_client.get(link))
    assert 'name="job_name" value="resnet"' in composer
    assert 'name="account" value="def-someuser"' in composer
    assert 'name="gpu_count" value="2"' in composer
    assert '<option value="a100" selected>' in composer
    assert 'name="hours" value="3"' in composer
    assert 'name="memory" value="32000M"' in composer
    assert 'name="cpus_per_task" value="6"' in composer
    assert 'name="modules" value="python/3.6 cuda cudnn"' in composer
    assert "python $SOURCEDIR/train.py $SLURM_TMPDIR/data</textarea>" in composer
    assert re.search(r'<input type="checkbox" name="multi_gpu"[^>]* checked>', composer)


def test_what_the_composer_does_not_get_is_named_beside_the_link(user_client, seeded):
    page = _page(_check(user_client))
    assert "Not carried over:" in page
    assert "SOURCEDIR=~/ml-test, which the command uses" in page
    assert "tar xf ~/projects/def-xxxx/data.tar" in page


def test_a_cluster_without_slurm_gets_no_listing_fix_or_composer(user_client, seeded):
    page = _page(_check(user_client, NO_ACCOUNT, cluster="dgx"))
    assert 'data-code="not_slurm"' in page
    assert "Open in the composer" not in page
    assert 'id="line-1"' not in page


# --- The program beside the script ----------------------------------------------------------

FOUR_GPUS = GOOD.replace("#SBATCH --gres=gpu:1", "#SBATCH --gres=gpu:4")
ONE_GPU = "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"


def _with_program(client, program: str, script: str = FOUR_GPUS):
    return client.post(
        URL,
        {"cluster": "narval", "script": script, "code-program": program, "code-file_name": "t.py"},
    )


def test_without_the_program_a_finding_that_hangs_on_it_is_a_question(user_client, seeded):
    page = _page(_check(user_client, FOUR_GPUS))
    finding = re.search(
        r'<div class="finding[^"]*" data-code="multi_gpu_without_launcher"[^>]*>', page
    )
    assert 'data-basis="question"' in finding.group(0)
    assert "A question: give the program to settle it" in page
    assert "--gres=gpu:1" not in page  # the GPUs asked for are kept


def test_the_program_beside_the_script_settles_it_and_the_download_follows(user_client, seeded):
    raw = _with_program(user_client, ONE_GPU).content.decode()
    page = html.unescape(raw)
    assert 'data-basis="program"' in page
    assert "From your program" in page
    assert "Read with the training program below (t.py)" in page
    download = user_client.post("/jobs/check/fixed/", _hidden(raw, "/jobs/check/fixed/"))
    assert "#SBATCH --gres=gpu:1" in download.content.decode()
    trainer = "from transformers import Trainer\nTrainer(model=m).train()\n"
    assert 'data-code="multi_gpu_without_launcher"' not in _page(
        _with_program(user_client, trainer)
    )


def test_a_program_not_named_as_the_script_runs_it_is_said_to_be_read_all_the_same(
    user_client, seeded
):
    page = _page(_with_program(user_client, ONE_GPU))  # t.py, beside `python .../train.py`
    assert "The script runs train.py, and no file below has that name" in re.sub(
        r"<[^>]+>", "", page
    )
    named = {"cluster": "narval", "script": FOUR_GPUS, "code-program": ONE_GPU}
    page = _page(user_client.post(URL, named | {"code-file_name": "train.py"}))
    assert "data-program-read" in page and "data-program-other" not in page


def test_configs_uploaded_beside_the_script_say_the_program_uses_the_four_gpus(user_client, seeded):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.test_api_check_code import HYDRA_FILES

    uploads = [
        SimpleUploadedFile(name.rsplit("/", 1)[-1], text.encode())
        for name, text in HYDRA_FILES.items()
    ]
    fields = {"cluster": "narval", "script": FOUR_GPUS, "code-uploads": uploads}
    page = _page(user_client.post(URL, fields))
    assert "Read with the training program below" in page
    assert 'data-code="multi_gpu_without_launcher"' not in page
