"""The "Check my script" page: paste or upload a script, choose a cluster, read the findings."""

import html
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from guidance.engine import sources
from guidance.engine.script_check import MAX_CHARS
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
        (BAD, "over_max_duration", "maximum job duration of 7 days", sources.SBATCH_ELEMENTS),
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
