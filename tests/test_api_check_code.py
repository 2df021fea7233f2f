"""POST /api/v1/check-code: the training-code checker as the Check page runs it, for scripts and
editors: findings at their file, line and column, changes by impact first; files it cannot read
are a 422 in the API's one shape, naming the file (and the line of a syntax error), never a 500."""

from dataclasses import replace

import pytest

from guidance.engine.code_check import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, Impact, Kind
from guidance.engine.code_check.catalogue import RULES
from guidance.engine.sources import DATALOADER
from tests.test_api import _bearer, _check, _documented, _errors

URL = "/api/v1/check-code"

# A DataLoader without workers (line 6, the call at column 14): the GPU waits for every batch.
LOADER = """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer):
    loader = DataLoader(dataset, batch_size=64, num_workers=0)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
"""
LOADER_LINE, LOADER_COLUMN = 6, LOADER.splitlines()[5].index("DataLoader(") + 1

# The same loop as the guidance asks for it: nothing to change.
CLEAN = """\
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

torch.set_float32_matmul_precision("high")
torch.backends.cudnn.allow_tf32 = True


def train(model, dataset, optimizer):
    model = torch.compile(model.cuda())
    loader = DataLoader(
        dataset,
        batch_size=256,
        num_workers=16,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=4,
    )
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
"""

# A project of two files: the loader lives in a module the entry point imports.
DATA_MODULE = """\
from torch.utils.data import DataLoader


def make_loader(dataset):
    return DataLoader(dataset, batch_size=32)
"""
ENTRY = """\
import torch
from data import make_loader


def main(model, dataset, optimizer):
    for x, y in make_loader(dataset):
        model(x.cuda()).sum().backward()
        optimizer.step()
"""

FIELDS = {
    "file", "line", "column", "end_line", "rule", "kind", "severity", "title", "message", "fix",
    "before", "after", "source",
}  # fmt: skip


def _post(client, secret: str | None, body):
    headers = _bearer(secret) if secret else {}
    return client.post(URL, body, content_type="application/json", headers=headers)


def _answer(client, secret: str, files: dict[str, str], **more) -> dict:
    response = _post(client, secret, {"cluster": "narval", "files": files, **more})
    assert response.status_code == 200, response.content
    return response.json()


def _codes(response) -> dict[str | None, str]:
    _errors(response)  # the one shape, 422
    return {e["field"]: e["code"] for e in response.json()["detail"]}


def test_it_answers_each_finding_at_its_file_line_and_column(client, seeded, secret):
    body = _answer(client, secret, {"train.py": LOADER})
    assert body["cluster"] == "narval"
    assert body["files"] == ["train.py"]
    workers = next(f for f in body["findings"] if f["rule"] == "dataloader_num_workers")
    assert set(workers) == FIELDS
    assert (workers["file"], workers["line"], workers["column"]) == (
        "train.py",
        LOADER_LINE,
        LOADER_COLUMN,
    )
    assert workers["end_line"] >= workers["line"]
    assert (workers["kind"], workers["severity"]) == ("change", "high")
    assert workers["title"] == RULES["dataloader_num_workers"].title
    assert "num_workers" in workers["fix"] + workers["after"]
    assert "num_workers=0" in workers["before"]
    assert workers["source"] == {"document": DATALOADER.document, "section": DATALOADER.section}


def test_changes_come_first_most_impact_first(client, seeded, secret):
    findings = _answer(client, secret, {"train.py": LOADER})["findings"]
    kinds = [Kind(f["kind"]) for f in findings]
    assert kinds == sorted(kinds, key=list(Kind).index)
    changes = [Impact(f["severity"]).rank for f in findings if f["kind"] == "change"]
    assert len(changes) >= 2 and changes == sorted(changes)


def test_a_program_that_follows_the_advice_has_nothing_to_change(client, seeded, secret):
    assert _answer(client, secret, {"train.py": LOADER})["findings"]
    assert _answer(client, secret, {"train.py": CLEAN})["findings"] == []


def test_it_says_whether_anything_trains_or_evaluates(client, seeded, secret, monkeypatch):
    assert _answer(client, secret, {"train.py": CLEAN})["trains_or_evaluates"] is True
    from portal import api_check_code

    real = api_check_code.check_code
    monkeypatch.setattr(
        api_check_code,
        "check_code",
        lambda *args, **kwargs: replace(real(*args, **kwargs), trains_or_evaluates=False),
    )
    body = _answer(client, secret, {"helpers.py": "def scale(x):\n    return 2 * x\n"})
    assert body["findings"] == [] and body["trains_or_evaluates"] is False
    spec = client.get("/api/v1/openapi.json").json()
    documented = spec["components"]["schemas"]["CheckCodeOut"]["properties"]
    assert "need the training loop" in documented["trains_or_evaluates"]["description"]


def test_the_entry_point_comes_first_and_modules_are_checked_too(client, seeded, secret):
    files = {"data.py": DATA_MODULE, "train.py": ENTRY}
    body = _answer(client, secret, files, entry="train.py")
    assert body["files"][0] == "train.py"
    workers = next(f for f in body["findings"] if f["rule"] == "dataloader_num_workers")
    assert (workers["file"], workers["line"]) == ("data.py", 5)


def test_a_rule_switched_off_on_one_cluster_is_still_applied_on_another(client, seeded, secret):
    from guidance.models import Cluster, CodeRuleSetting

    narval = Cluster.objects.get(slug="narval")
    CodeRuleSetting.objects.create(cluster=narval, rule="dataloader_num_workers", enabled=False)
    rules = {f["rule"] for f in _answer(client, secret, {"train.py": LOADER})["findings"]}
    assert "dataloader_num_workers" not in rules
    cedar = _post(client, secret, {"cluster": "cedar", "files": {"train.py": LOADER}}).json()
    assert "dataloader_num_workers" in {f["rule"] for f in cedar["findings"]}


# --- Bad input ---------------------------------------------------------------------------

# Long lines: JSON escapes each line break as two characters, and a body over Django's
# DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) is refused before the API reads it.
NEARLY_FULL = "# " + "a" * (MAX_FILE_BYTES - 100) + "\n"


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"cluster": "summit", "files": {"train.py": LOADER}}, "cluster", "unknown_cluster"),
        ({"cluster": "narval", "files": {}}, "files", "no_files"),
        ({"cluster": "narval", "files": {"../train.py": LOADER}}, "files.../train.py", None),
        ({"cluster": "narval", "files": {"/etc/train.py": LOADER}}, "files./etc/train.py", None),
        ({"cluster": "narval", "files": {"C:/train.py": LOADER}}, "files.C:/train.py", None),
        ({"cluster": "narval", "files": {"train.txt": LOADER}}, "files.train.txt", None),
        ({"cluster": "narval", "files": {"my train.py": LOADER}}, "files.my train.py", None),
        ({"cluster": "narval", "files": {".py": LOADER}}, "files..py", None),
        (
            {"cluster": "narval", "files": {f"m{i}.py": "x = 1\n" for i in range(MAX_FILES + 1)}},
            "files",
            "too_many_files",
        ),
        (
            {"cluster": "narval", "files": {"train.py": "x = 1\n" * (MAX_FILE_BYTES // 6 + 1)}},
            "files.train.py",
            "file_too_large",
        ),
        (
            {
                "cluster": "narval",
                "files": {
                    f"m{i}.py": NEARLY_FULL for i in range(MAX_TOTAL_BYTES // len(NEARLY_FULL) + 1)
                },
            },
            "files",
            "too_large",
        ),
        (
            {"cluster": "narval", "files": {"train.py": "import torch\x00\x01"}},
            "files.train.py",
            "not_text",
        ),
        (
            {"cluster": "narval", "files": {"train.py": "x = '\ud800'\n"}},
            "files.train.py",
            "not_text",
        ),
        (
            {"cluster": "narval", "files": {"train.py": LOADER}, "entry": "main.py"},
            "entry",
            "unknown_entry",
        ),
        ({"cluster": "narval", "files": {"train.py": 42}}, "files.train.py", None),
        ({"cluster": "narval", "files": ["train.py"]}, "files", None),
        ({"cluster": "narval"}, "files", None),
        ({"cluster": "narval", "files": {"train.py": LOADER}, "extra": 1}, "extra", None),
        ({"cluster": "nar\x00val", "files": {"train.py": LOADER}}, "cluster", "null_characters"),
    ],
)
def test_bad_input_is_422_naming_the_file(client, seeded, secret, body, field, code):
    response = _post(client, secret, body)
    codes = _codes(response)
    assert field in codes, codes
    if code:
        assert codes[field] == code
    if code and field.startswith("files."):  # the portal's own words, not the schema's
        said = {e["field"]: e["message"] for e in response.json()["detail"]}[field]
        assert field.removeprefix("files.")[:20] in said or "train.py" in said


def test_a_syntax_error_is_422_with_the_file_and_its_line(client, seeded, secret):
    broken = "import torch\n\ndef train(:\n    pass\n"
    response = _post(client, secret, {"cluster": "narval", "files": {"model.py": broken}})
    (error,) = response.json()["detail"]
    assert response.status_code == 422
    assert (error["field"], error["code"]) == ("files.model.py", "syntax_error")
    assert "model.py" in error["message"] and "3" in error["message"]


def test_a_syntax_error_in_one_module_names_that_module(client, seeded, secret):
    files = {"train.py": ENTRY, "data.py": "def make_loader(:\n"}
    response = _post(client, secret, {"cluster": "narval", "files": files})
    assert _codes(response) == {"files.data.py": "syntax_error"}


def test_it_wants_a_token(client, seeded):
    assert (
        _post(client, None, {"cluster": "narval", "files": {"train.py": LOADER}}).status_code == 401
    )


def test_the_schema_lists_it_and_its_answers_match(client, seeded, secret):
    spec = client.get("/api/v1/openapi.json").json()
    operation = spec["paths"][URL]["post"]
    assert operation["operationId"] == "check_code"
    for files in (
        {"train.py": LOADER},
        {"train.py": CLEAN},
        {"data.py": DATA_MODULE, "train.py": ENTRY},
    ):
        answer = _post(client, secret, {"cluster": "narval", "files": files})
        _check(answer.json(), _documented(spec, URL, "post", "200"), spec, "200")
    refused = _post(client, secret, {"cluster": "narval", "files": {"../x.py": "x = 1\n"}})
    _check(refused.json(), _documented(spec, URL, "post", "422"), spec, "422")


def test_a_body_over_the_upload_limit_is_a_413_in_the_apis_words(client, seeded, secret):
    from django.conf import settings

    huge = "x = 1\n" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 6 + 1000)
    response = _post(client, secret, {"cluster": "narval", "files": {"train.py": huge}})
    assert response.status_code == 413
    assert "over the portal's limit of 2.5 MiB" in response.json()["detail"]


def test_modules_go_in_by_their_path_and_imports_find_them(client, seeded, secret):
    entry = ENTRY.replace(
        "from data import make_loader", "from pipeline.loading import make_loader"
    )
    files = {"train.py": entry, "pipeline/__init__.py": "", "pipeline/loading.py": DATA_MODULE}
    body = _answer(client, secret, files)
    loaders = [f for f in body["findings"] if f["rule"] == "dataloader_num_workers"]
    assert [(f["file"], f["line"]) for f in loaders] == [("pipeline/loading.py", 5)]


def test_a_file_starting_with_a_byte_order_mark_is_checked(client, seeded, secret):
    body = _answer(client, secret, {"train.py": "\ufeff" + LOADER})
    workers = next(f for f in body["findings"] if f["rule"] == "dataloader_num_workers")
    assert (workers["line"], workers["column"]) == (LOADER_LINE, LOADER_COLUMN)


# --- YAML configs beside the program ---------------------------------------------------------

HYDRA_ENTRY = """\
import hydra


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg):
    model = hydra.utils.instantiate(cfg.model)
    trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.fit(model)
"""
HYDRA_FILES = {
    "train.py": HYDRA_ENTRY,
    "configs/train.yaml": "defaults:\n  - trainer: gpu\n\nmodel:\n  _target_: net.Net\n",
    "configs/trainer/gpu.yaml": "_target_: lightning.pytorch.Trainer\ndevices: 4\nprecision: 32\n",
}


def test_a_hydra_trainers_yaml_is_checked_with_the_python(client, seeded, secret):
    body = _answer(client, secret, HYDRA_FILES, entry="train.py")
    assert body["files"][0] == "train.py" and "configs/trainer/gpu.yaml" in body["files"]
    (precision,) = [f for f in body["findings"] if f["rule"] == "mixed_precision"]
    assert (precision["file"], precision["line"], precision["kind"]) == (
        "configs/trainer/gpu.yaml",
        3,
        "change",
    )
    assert (precision["before"], precision["after"]) == ("precision: 32", "precision: bf16-mixed")


def test_yaml_that_does_not_parse_is_422_with_the_file_and_its_line(client, seeded, secret):
    files = {**HYDRA_FILES, "configs/trainer/gpu.yaml": "devices: [4\nprecision: 32\n"}
    response = _post(client, secret, {"cluster": "narval", "files": files})
    (error,) = response.json()["detail"]
    assert (error["field"], error["code"]) == ("files.configs/trainer/gpu.yaml", "syntax_error")
    assert "not a YAML config" in error["message"] and "line 2" in error["message"]


@pytest.mark.parametrize(
    ("files", "entry", "field", "code"),
    [
        ({"configs/train.yaml": "a: 1\n"}, None, "files", "no_files"),
        (HYDRA_FILES, "configs/train.yaml", "entry", "entry_not_python"),
        ({**HYDRA_FILES, "notes.toml": "a = 1\n"}, None, "files.notes.toml", "not_python_file"),
    ],
)
def test_configs_alone_or_as_the_entry_point_are_refused(
    client, seeded, secret, files, entry, field, code
):
    response = _post(client, secret, {"cluster": "narval", "files": files, "entry": entry})
    assert _codes(response) == {field: code}
