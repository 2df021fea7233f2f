"""POST /api/v1/check: the script checker as the page runs it, for scripts and editors: its
findings worst first, the #SBATCH options, the fixed script; bad input in the API's one shape."""

import pytest

from guidance.engine import sources
from guidance.engine.script_check import MAX_CHARS, Severity
from tests.script_check_helpers import GOOD
from tests.test_api import _bearer, _check, _documented, _errors

URL = "/api/v1/check"
NO_ACCOUNT = GOOD.replace("#SBATCH --account=def-someuser\n", "")
BAD = """\
#!/bin/bash
#SBATCH --gres=gpu:h100:4
#SBATCH --time=10-00:00
python train.py --data /project/def-me/imagenet
#SBATCH --mem=1G
"""


def _post(client, secret: str | None, **body):
    headers = _bearer(secret) if secret else {}
    return client.post(URL, body, content_type="application/json", headers=headers)


def _answer(client, secret: str, **body) -> dict:
    response = _post(client, secret, **body)
    assert response.status_code == 200, response.content
    return response.json()


def test_it_answers_the_finding_its_fix_and_the_fixed_script(client, seeded, secret):
    body = _answer(client, secret, cluster="narval", script=NO_ACCOUNT)
    assert body["cluster"] == "narval"
    (finding,) = body["findings"]
    assert finding["code"] == "no_account"
    assert (finding["severity"], finding["severity_label"]) == ("fails", "Would fail")
    assert "No --account" in finding["message"]
    assert finding["fix"].startswith("Add #SBATCH --account=def-yourgroup")
    assert finding["source"] == {
        "document": sources.SBATCH_ELEMENTS.document,
        "section": sources.SBATCH_ELEMENTS.section,
    }
    assert "#SBATCH --account=def-yourgroup\n" in body["fixed_script"]
    assert "\n+#SBATCH --account=def-yourgroup\n" in body["diff"]
    assert {"line": 5, "option": "time", "value": "0-03:00"} in body["directives"]
    assert body["truncated"] is False


def test_the_account_given_goes_into_the_fixed_script(client, seeded, secret):
    body = _answer(client, secret, cluster="narval", script=NO_ACCOUNT, account="def-alice")
    assert "#SBATCH --account=def-alice\n" in body["fixed_script"]
    assert "def-yourgroup" not in body["findings"][0]["fix"]


def test_the_worst_findings_come_first(client, seeded, secret):
    findings = _answer(client, secret, cluster="narval", script=BAD)["findings"]
    ranks = [Severity(f["severity"]).rank for f in findings]
    assert len(ranks) >= 4 and ranks == sorted(ranks)
    assert {f["severity_label"] for f in findings} <= {s.label for s in Severity}


def test_a_good_script_has_nothing_to_say_or_fix(client, seeded, secret):
    body = _answer(client, secret, cluster="narval", script=GOOD)
    assert body["findings"] == []
    assert (body["fixed_script"], body["diff"]) == (None, "")


def test_a_cluster_without_slurm_answers_as_the_page_does(client, seeded, secret):
    body = _answer(client, secret, cluster="dgx", script=GOOD)
    assert [f["code"] for f in body["findings"]] == ["not_slurm"]
    assert "Run:ai" in body["findings"][0]["message"]


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"cluster": "summit", "script": GOOD}, "cluster", "unknown_cluster"),
        ({"cluster": "narval", "script": ""}, "script", "empty_script"),
        ({"cluster": "narval", "script": " \n\t"}, "script", "empty_script"),
        ({"cluster": "narval", "script": "#!/bin/bash\n\x00"}, "script", "null_characters"),
        ({"cluster": "narval", "script": "#" * (MAX_CHARS + 1)}, "script", "string_too_long"),
        ({"cluster": "narval", "script": GOOD, "account": "a\nrm -rf ~"}, "account", None),
        ({"cluster": "narval", "script": GOOD, "acount": "def-x"}, "acount", None),
    ],
)
def test_bad_input_is_422_naming_its_field(client, seeded, secret, body, field, code):
    response = _post(client, secret, **body)
    errors = _errors(response)
    assert field in errors
    if code:
        assert code in {e["code"] for e in response.json()["detail"]}


def test_an_empty_body_names_both_fields(client, seeded, secret):
    assert set(_errors(_post(client, secret))) == {"cluster", "script"}


def test_it_wants_a_token(client, seeded):
    response = _post(client, None, cluster="narval", script=GOOD)
    assert response.status_code == 401


def test_it_counts_against_the_tokens_rate(client, seeded, secret, settings):
    settings.API_RATE_LIMIT = "2/min"
    codes = [_post(client, secret, cluster="narval", script=GOOD).status_code for _ in range(3)]
    assert codes == [200, 200, 429]


def test_the_schema_lists_it_and_its_answers_match(client, seeded, secret):
    spec = client.get("/api/v1/openapi.json").json()
    assert "post" in spec["paths"][URL]
    for script, cluster in ((NO_ACCOUNT, "narval"), (BAD, "narval"), (GOOD, "dgx")):
        answer = _post(client, secret, cluster=cluster, script=script)
        _check(answer.json(), _documented(spec, URL, "post", "200"), spec, cluster)
    refused = _post(client, secret, cluster="summit", script=GOOD)
    _check(refused.json(), _documented(spec, URL, "post", "422"), spec, "422")


FOUR_GPUS = """\
#!/bin/bash
#SBATCH --account=def-someuser
#SBATCH --time=0-03:00
#SBATCH --gres=gpu:4 --cpus-per-task=48 --mem=498000M
python train.py
"""


def _gpu_finding(body: dict) -> dict:
    (finding,) = [f for f in body["findings"] if f["code"] == "multi_gpu_without_launcher"]
    return finding


def test_without_the_program_whether_it_uses_four_gpus_is_a_question(client, seeded, secret):
    body = _answer(client, secret, cluster="narval", script=FOUR_GPUS)
    finding = _gpu_finding(body)
    assert (finding["basis"], finding["severity"]) == ("question", "advice")
    assert body["fixed_script"] is None


def test_the_program_given_settles_it(client, seeded, secret):
    one = {"train.py": "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n"}
    body = _answer(client, secret, cluster="narval", script=FOUR_GPUS, files=one)
    finding = _gpu_finding(body)
    assert (finding["basis"], finding["severity"]) == ("program", "wastes")
    assert "--gres=gpu:1" in body["fixed_script"]
    trainer = {"train.py": "from transformers import Trainer\nTrainer(model=m).train()\n"}
    body = _answer(client, secret, cluster="narval", script=FOUR_GPUS, files=trainer)
    assert body["findings"] == []


def test_program_files_are_refused_as_check_code_refuses_them(client, seeded, secret):
    response = _post(client, secret, cluster="narval", script=FOUR_GPUS, files={"../x.py": "1"})
    (field,) = _errors(response)
    assert field.startswith("files")


def test_a_hydra_trainer_over_four_devices_in_its_yaml_uses_the_four_gpus(client, seeded, secret):
    from tests.test_api_check_code import HYDRA_FILES

    body = _answer(client, secret, cluster="narval", script=FOUR_GPUS, files=HYDRA_FILES)
    assert not [f for f in body["findings"] if f["code"] == "multi_gpu_without_launcher"]
    one = FOUR_GPUS.replace("python train.py", "python train.py trainer.devices=1")
    body = _answer(client, secret, cluster="narval", script=one, files=HYDRA_FILES)
    assert _gpu_finding(body)["basis"] == "program"
