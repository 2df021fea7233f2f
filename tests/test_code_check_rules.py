"""The training-code checker's rules, one program that must be flagged and one that must not for
each, the framework and not-knowable cases, and the check's promises: limits, unreadable files,
order, the cluster's settings, what was measured, and that the user's code is never run. Pure:
an engine Cluster, no database."""

import ast
import re
from textwrap import dedent

import pytest

from guidance.engine import Cluster, Policy
from guidance.engine.code_check import Impact, Kind, Measured, check_code
from guidance.engine.code_check.catalogue import RULES
from guidance.engine.sources import Source
from guidance.engine.types import CodeRule
from tests.engine_helpers import note
from tests.script_check_helpers import checked, job

DGX = Cluster(slug="dgx", name="DGX", policy=Policy(cpus_per_gpu=16))
# What makes a program train, for the rules that speak only about programs that do.
TRAINS = """
for x, y in train_loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    optimizer.step()
"""


def text(source: str) -> str:
    """The source with its indentation as written in the test removed (TRAINS is flush left)."""
    if source.endswith(TRAINS):
        return dedent(source[: -len(TRAINS)]) + TRAINS
    return dedent(source)


def check(source: str, cluster: Cluster = DGX, **options):
    return check_code({"train.py": text(source)}, cluster, **options)


def found(result, rule: str):
    return [f for f in result.findings if f.rule == rule]


def one(result, rule: str):
    matches = found(result, rule)
    assert len(matches) == 1, [(f.rule, f.line, f.message) for f in result.findings]
    return matches[0]


# --- DataLoader: num_workers ------------------------------------------------------------------


def test_it_flags_a_dataloader_without_workers_and_gives_the_documents_loader():
    result = check(
        """\
        import torch
        from torch.utils.data import DataLoader

        train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
        """
        + TRAINS
    )
    finding = one(result, "dataloader_num_workers")
    assert (finding.kind, finding.impact, finding.line, finding.column) == (
        Kind.CHANGE,
        Impact.HIGH,
        4,
        16,
    )
    assert "`train_loader = DataLoader(train_set, ...)`" in finding.message
    assert finding.before == "train_loader = DataLoader(train_set, batch_size=64, shuffle=True)"
    assert finding.after == dedent(
        """\
        train_loader = DataLoader(
            train_set,
            batch_size=64,
            shuffle=True,
            num_workers=16,
            pin_memory=True,
            persistent_workers=True,
            prefetch_factor=4,
        )"""
    )
    assert finding.source.section.endswith("torch.utils.data.DataLoader")


def test_it_flags_num_workers_zero_and_keeps_one_argument_per_line():
    result = check(
        """\
        import torch

        loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=32,
            num_workers=0,
            pin_memory=True,
        )
        """
        + TRAINS
    )
    finding = one(result, "dataloader_num_workers")
    assert (finding.line, finding.column, finding.end_line) == (3, 10, 8)
    assert "num_workers=0" in finding.message
    assert finding.after == dedent(
        """\
        loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=32,
            num_workers=16,
            pin_memory=True,
            persistent_workers=True,
            prefetch_factor=4,
        )"""
    )


def test_it_resolves_aliases_positions_and_names_assigned_once():
    result = check(
        """\
        from torch.utils import data as tud
        from torch.utils.data import DataLoader as DL

        WORKERS = 0
        a = tud.DataLoader(ds, 8, True, None, None, 0)
        b = DL(ds, num_workers=WORKERS)
        """
        + TRAINS
    )
    assert [f.line for f in found(result, "dataloader_num_workers")] == [5, 6]
    first = found(result, "dataloader_num_workers")[0]
    assert first.after.startswith("a = tud.DataLoader(\n    ds,\n    8,\n    True,\n")
    assert "    None,\n    16,\n    pin_memory=True,\n" in first.after


def test_it_uses_the_jobs_own_cpus_per_gpu_when_given():
    result = check(
        "from torch.utils.data import DataLoader\nl = DataLoader(d)\n" + TRAINS, cpus_per_gpu=8
    )
    assert "num_workers=8" in one(result, "dataloader_num_workers").after


def test_it_is_quiet_about_a_dataloader_set_as_the_document_says():
    result = check(
        """\
        from torch.utils.data import DataLoader

        train_loader = DataLoader(
            train_set, batch_size=256, num_workers=16, prefetch_factor=4,
            pin_memory=True, persistent_workers=True,
        )
        """
        + TRAINS
    )
    rules = {f.rule for f in result.findings}
    assert not rules & {
        "dataloader_num_workers",
        "dataloader_pin_memory",
        "dataloader_persistent_workers",
        "dataloader_prefetch_factor",
    }


def test_a_class_of_the_programs_own_named_dataloader_is_not_torchs():
    result = check("class DataLoader:\n    pass\n\nl = DataLoader(d)\n" + TRAINS)
    assert not found(result, "dataloader_num_workers")


def test_a_worker_count_from_the_command_line_is_a_question_naming_it():
    result = check(
        "from torch.utils.data import DataLoader\n"
        "l = DataLoader(d, num_workers=args.workers, pin_memory=True)\n" + TRAINS
    )
    finding = one(result, "dataloader_num_workers")
    assert finding.kind is Kind.QUESTION
    assert "`args.workers`" in finding.message and "16 CPUs per GPU" in finding.message
    assert not result.changes or all(f.rule != "dataloader_num_workers" for f in result.changes)
    # Unknown workers: persistent workers and prefetching are not claimed either.
    assert not found(result, "dataloader_persistent_workers")
    assert not found(result, "dataloader_prefetch_factor")


def test_a_function_parameter_is_not_knowable():
    result = check(
        """\
        from torch.utils.data import DataLoader

        def make(ds, workers=0):
            return DataLoader(ds, num_workers=workers, pin_memory=True)
        """
        + TRAINS
    )
    assert one(result, "dataloader_num_workers").kind is Kind.QUESTION


def test_a_literal_dict_spread_is_read_and_a_changed_one_is_asked_about():
    known = check(
        """\
        from torch.utils.data import DataLoader
        kw = dict(num_workers=0, pin_memory=True)
        l = DataLoader(ds, **kw)
        """
        + TRAINS
    )
    finding = one(known, "dataloader_num_workers")
    assert finding.kind is Kind.CHANGE and finding.after == ""  # the dict is the place to fix
    changed = check(
        """\
        from torch.utils.data import DataLoader
        kw = {"num_workers": 0, "pin_memory": True}
        kw.update(extra)
        l = DataLoader(ds, **kw)
        """
        + TRAINS
    )
    question = one(changed, "dataloader_num_workers")
    assert question.kind is Kind.QUESTION and "`**kw`" in question.message
    subscripted = check(
        "from torch.utils.data import DataLoader\nkw = {'num_workers': 0}\n"
        "kw['num_workers'] = n\nl = DataLoader(ds, **kw)\n" + TRAINS
    )
    assert one(subscripted, "dataloader_num_workers").kind is Kind.QUESTION


def test_a_name_assigned_twice_is_not_knowable():
    result = check(
        "from torch.utils.data import DataLoader\nw = 0\nif fast:\n    w = 8\n"
        "l = DataLoader(ds, num_workers=w, pin_memory=True)\n" + TRAINS
    )
    assert one(result, "dataloader_num_workers").kind is Kind.QUESTION


# --- DataLoader: pin_memory, persistent_workers, prefetch_factor ------------------------------


def test_pin_memory_missing_or_false_is_flagged_even_beside_num_workers():
    result = check(
        "from torch.utils.data import DataLoader\n"
        "a = DataLoader(ds)\n"
        "b = DataLoader(ds, num_workers=4, pin_memory=False, persistent_workers=True, "
        "prefetch_factor=4)\n" + TRAINS
    )
    a, b = found(result, "dataloader_pin_memory")
    assert (a.line, a.kind, a.impact) == (2, Kind.CHANGE, Impact.MEDIUM)
    assert b.line == 3 and "pin_memory=True" in b.after and "pin_memory=False" not in b.after
    assert found(result, "dataloader_num_workers")[0].line == 2


def test_pin_memory_from_a_config_is_a_question():
    result = check(
        "from torch.utils.data import DataLoader\n"
        "l = DataLoader(ds, num_workers=8, pin_memory=cfg.pin, persistent_workers=True, "
        "prefetch_factor=4)\n" + TRAINS
    )
    finding = one(result, "dataloader_pin_memory")
    assert finding.kind is Kind.QUESTION and "`cfg.pin`" in finding.message


def test_persistent_workers_only_where_workers_are_known():
    result = check(
        "from torch.utils.data import DataLoader\n"
        "a = DataLoader(ds, num_workers=8, pin_memory=True, prefetch_factor=4)\n"
        "b = DataLoader(ds, pin_memory=True)\n"
        "c = DataLoader(ds, num_workers=args.n, pin_memory=True)\n"
        "d = DataLoader(ds, num_workers=args.n, pin_memory=True, persistent_workers=False)\n"
        + TRAINS
    )
    lines = [(f.line, f.kind) for f in found(result, "dataloader_persistent_workers")]
    assert lines == [(2, Kind.CHANGE), (5, Kind.CHANGE)]
    first = found(result, "dataloader_persistent_workers")[0]
    assert first.after.endswith("prefetch_factor=4, persistent_workers=True)")


def test_prefetch_factor_only_with_known_workers_and_at_most_two():
    result = check(
        "from torch.utils.data import DataLoader\n"
        "a = DataLoader(ds, num_workers=8, pin_memory=True, persistent_workers=True)\n"
        "b = DataLoader(ds, num_workers=8, pin_memory=True, persistent_workers=True, "
        "prefetch_factor=2)\n"
        "c = DataLoader(ds, num_workers=8, pin_memory=True, persistent_workers=True, "
        "prefetch_factor=4)\n"
        "d = DataLoader(ds, num_workers=args.n, pin_memory=True)\n"
        "e = DataLoader(ds, pin_memory=True)\n" + TRAINS
    )
    findings = found(result, "dataloader_prefetch_factor")
    assert [f.line for f in findings] == [2, 3]
    assert "prefetch_factor=4" in findings[1].after and "prefetch_factor=2" not in findings[1].after


# --- batch size --------------------------------------------------------------------------------


def test_batch_size_is_said_only_when_memory_was_measured_half_empty():
    source = (
        "from torch.utils.data import DataLoader\n"
        "l = DataLoader(ds, batch_size=32, num_workers=8, pin_memory=True, "
        "persistent_workers=True, prefetch_factor=4)\n" + TRAINS
    )
    assert not found(check(source), "batch_size")
    roomy = Measured(35, 20, peak_memory_gb=12.0, memory_total_gb=80.0)
    finding = one(check(source, measured=roomy), "batch_size")
    assert (finding.kind, finding.line, finding.column) == (Kind.CHANGE, 2, 20)
    assert "batch_size=64" in finding.after and "12.0 GB of 80 GB" in finding.message
    full = Measured(35, 20, peak_memory_gb=60.0, memory_total_gb=80.0)
    assert not found(check(source, measured=full), "batch_size")


# --- DataParallel -----------------------------------------------------------------------------


def test_data_parallel_is_flagged_with_distributed_data_parallel_in_its_place():
    result = check(
        "import torch\nfrom torch import nn\nmodel = nn.DataParallel(Net()).cuda()\n" + TRAINS
    )
    finding = one(result, "data_parallel")
    assert (finding.kind, finding.impact, finding.line, finding.column) == (
        Kind.CHANGE,
        Impact.HIGH,
        3,
        9,
    )
    assert finding.after == (
        "model = nn.parallel.DistributedDataParallel(Net(), device_ids=[local_rank]).cuda()"
    )
    assert "torchrun" in finding.fix


def test_distributed_data_parallel_is_not_flagged():
    result = check(
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(model, device_ids=[rank])\n" + TRAINS
    )
    assert not found(result, "data_parallel")


# --- debugging APIs ---------------------------------------------------------------------------


def test_debug_apis_left_on_are_flagged_and_turned_off_in_the_fix():
    result = check(
        """\
        import torch
        torch.autograd.set_detect_anomaly(True)
        with torch.autograd.detect_anomaly():
            pass
        with torch.autograd.profiler.profile(use_cuda=True) as prof:
            pass
        with torch.autograd.profiler.emit_nvtx():
            pass
        """
        + TRAINS
    )
    findings = found(result, "debug_apis")
    assert [(f.line, f.column, f.kind) for f in findings] == [
        (2, 1, Kind.CHANGE),
        (3, 6, Kind.CHANGE),
        (5, 6, Kind.CHANGE),
        (7, 6, Kind.CHANGE),
    ]
    assert findings[0].after == "torch.autograd.set_detect_anomaly(False)"
    assert findings[1].after == "with torch.autograd.set_detect_anomaly(False):"
    assert findings[2].after == (
        "with torch.autograd.profiler.profile(use_cuda=True, enabled=False) as prof:"
    )
    assert findings[3].after == "with torch.autograd.profiler.emit_nvtx(enabled=False):"


def test_debug_apis_turned_off_are_quiet_and_unknown_ones_asked_about():
    result = check(
        """\
        import torch
        from torch.autograd import profiler
        torch.autograd.set_detect_anomaly(False)
        with profiler.profile(enabled=False):
            pass
        torch.autograd.set_detect_anomaly(args.debug)
        """
        + TRAINS
    )
    finding = one(result, "debug_apis")
    assert (finding.kind, finding.line) == (Kind.QUESTION, 6)
    assert "`args.debug`" in finding.message


# --- what the checker never does: run the code ------------------------------------------------


def test_the_users_code_is_never_run_or_imported(tmp_path):
    import sys

    marker = tmp_path / "ran"
    evil = f"open({str(marker)!r}, 'w').write('ran')\nimport json\n"
    before = set(sys.modules)
    result = check_code(
        {
            "train.py": "import evil_helper_module\nimport json\n" + evil + TRAINS,
            "evil_helper_module.py": evil,
            "json.py": evil,
        },
        DGX,
    )
    assert result.files == ("train.py", "evil_helper_module.py", "json.py")
    assert not marker.exists()
    assert set(sys.modules) - before == set()


# --- limits and unreadable files --------------------------------------------------------------


def test_a_syntax_error_is_reported_with_its_line_and_the_other_files_still_checked():
    result = check_code(
        {
            "train.py": "from torch.utils.data import DataLoader\nl = DataLoader(d)\n" + TRAINS,
            "model.py": "import torch\n\n\ndef f(:\n    pass\n",
        },
        DGX,
    )
    (bad,) = result.unreadable
    assert bad.file == "model.py" and bad.line == 4
    assert bad.message == "model.py is not Python: invalid syntax (line 4)."
    assert found(result, "dataloader_num_workers") and result.files == ("train.py",)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "binary"),
        ("print('a')\x00", "binary"),
        (b"\xff\xfe not utf-8 \xff", "not UTF-8"),
        (f"x = '{'a' * 500_000}'\n", "over 500 kB"),
        (12, "no text"),
        ("print 'hello'\n", "not Python"),
    ],
)
def test_unreadable_files_say_why_and_never_raise(content, words):
    result = check_code({"train.py": content}, DGX)
    (bad,) = result.unreadable
    assert bad.file == "train.py" and words in bad.message
    assert result.findings == ()


def test_too_many_files_and_too_many_bytes_are_refused_one_by_one():
    files = {f"m{i:02d}.py": "x = 1\n" for i in range(45)}
    result = check_code(files, DGX, entry="m44.py")
    assert result.files[0] == "m44.py" and len(result.files) == 40
    assert len(result.unreadable) == 5
    assert all("at most 40 files" in u.message for u in result.unreadable)
    big = {f"b{i}.py": f"x = '{'a' * 480_000}'\n" for i in range(6)}  # 480 kB each
    result = check_code(big, DGX)
    assert len(result.files) == 4 and "over 2 MB" in result.unreadable[0].message


def test_empty_and_wrong_shaped_input_gives_an_empty_check():
    assert check_code({}, DGX).findings == ()
    assert check_code(None, DGX).files == ()  # type: ignore[arg-type]
    assert check_code({"a.py": ""}, DGX).findings == ()


def test_a_program_that_neither_trains_nor_evaluates_still_has_its_lines_read():
    result = check("from torch.utils.data import DataLoader\nl = DataLoader(ds)\n")
    assert result.trains_or_evaluates is False
    assert {f.rule for f in result.findings} == {"dataloader_num_workers", "dataloader_pin_memory"}


# --- order, the cluster's settings, what was measured -----------------------------------------

ORDERED = (
    """\
    import torch
    from torch import nn
    from torch.utils.data import DataLoader
    model = nn.DataParallel(model)
    l = DataLoader(ds, num_workers=8, pin_memory=True)
    torch.autograd.set_detect_anomaly(args.debug)
    """
    + TRAINS
)


def test_findings_come_changes_by_impact_then_questions_then_defaults():
    result = check_code(
        {
            "helpers.py": "from torch.utils.data import DataLoader\nh = DataLoader(ds)\n",
            "train.py": text(ORDERED),
        },
        DGX,
        entry="train.py",
    )
    kinds = [f.kind for f in result.findings]
    assert kinds == sorted(kinds, key=[Kind.CHANGE, Kind.QUESTION, Kind.DEFAULT].index)
    changes = result.changes
    ranks = [f.impact.rank for f in changes]
    assert ranks == sorted(ranks)
    high = [(f.file, f.rule) for f in changes if f.impact is Impact.HIGH]
    assert high[:2] == [("train.py", "data_parallel"), ("helpers.py", "dataloader_num_workers")]
    assert result.files == ("train.py", "helpers.py")


def test_a_rule_switched_off_reworded_or_resourced_by_the_cluster():
    site = Source("dgx-wiki.md", "Loaders")
    cluster = Cluster(
        slug="dgx",
        name="DGX",
        policy=Policy(cpus_per_gpu=16),
        code_rules=(
            CodeRule("data_parallel", enabled=False),
            CodeRule("dataloader_prefetch_factor", wording="Ask us about prefetching."),
            CodeRule("dataloader_persistent_workers", source=site),
        ),
    )
    result = check(ORDERED, cluster)
    assert not found(result, "data_parallel")
    assert one(result, "dataloader_prefetch_factor").message == "Ask us about prefetching."
    persistent = one(result, "dataloader_persistent_workers")
    assert persistent.source == site and "after every epoch" in persistent.message
    assert found(check(ORDERED), "data_parallel")


def test_a_rule_switched_off_is_not_even_run(monkeypatch):
    from guidance.engine.code_check import check as check_module

    ran = []

    def data_parallel_spy(*args):
        ran.append(args)
        return []

    monkeypatch.setattr(check_module, "LOCATED", (data_parallel_spy, *check_module.LOCATED))
    monkeypatch.setitem(check_module.REPORTS, data_parallel_spy, frozenset({"data_parallel"}))
    off = Cluster(
        slug="dgx",
        name="DGX",
        policy=Policy(cpus_per_gpu=16),
        code_rules=(CodeRule("data_parallel", enabled=False),),
    )
    assert not found(check(ORDERED, off), "data_parallel") and not ran
    check(ORDERED)
    assert ran


def test_each_rule_function_reports_only_the_catalogue_rules_it_is_listed_for():
    from guidance.engine.code_check.context import Project
    from guidance.engine.code_check.program import parse_program
    from guidance.engine.code_check.rules import LOCATED, PROGRAM_WIDE, REPORTS

    assert set(REPORTS) == {*LOCATED, *PROGRAM_WIDE}
    assert set().union(*REPORTS.values()) == set(RULES)
    for source in (ORDERED, BARE_LOOP, CLI, GOOD_LIGHTNING, GOOD_HF):
        program = parse_program("train.py", text(source))
        project = Project([program], 16, Measured(50, 10, peak_memory_gb=5, memory_total_gb=80))
        for rule in LOCATED:
            made = {f.rule for f in rule(project, program, project.values["train.py"])}
            assert made <= REPORTS[rule], rule.__name__
        for rule in PROGRAM_WIDE:
            assert {f.rule for f in rule(project)} <= REPORTS[rule], rule.__name__


def test_every_change_ends_with_what_was_measured_and_no_invented_number():
    measured = Measured(mean_utilization=35, minutes=20)
    result = check(ORDERED, measured=measured)
    assert result.changes
    for finding in result.changes:
        assert finding.message.endswith("Measured on this job: GPU at 35 % for 20 min.")
        assert "%" not in finding.message.replace("35 %", "")
        assert not re.search(r"\d\s*(x|\u00d7|times)\b", finding.message), finding.message
    assert all("Measured" not in f.message for f in result.questions + result.defaults)
    assert all("Measured" not in f.message for f in check(ORDERED).findings)


# --- zero_grad --------------------------------------------------------------------------------


def test_zero_grad_without_argument_is_what_pytorch_already_does():
    result = check("import torch\noptimizer.zero_grad()\n" + TRAINS)
    finding = one(result, "zero_grad_set_to_none")
    assert (finding.kind, finding.line, finding.column) == (Kind.DEFAULT, 2, 1)
    assert "PyTorch 2.0" in finding.message and finding.after == ""
    assert finding in result.defaults


def test_zero_grad_set_to_none_false_is_a_change_and_true_is_quiet():
    result = check(
        "import torch\n"
        "optimizer.zero_grad(set_to_none=False)\n"
        "model.zero_grad(False)\n"
        "opt.zero_grad(set_to_none=True)\n"
        "opt.zero_grad(set_to_none=args.none)\n" + TRAINS
    )
    findings = found(result, "zero_grad_set_to_none")
    assert [(f.line, f.kind) for f in findings] == [
        (2, Kind.CHANGE),
        (3, Kind.CHANGE),
        (5, Kind.QUESTION),
    ]
    assert findings[0].after == "optimizer.zero_grad(set_to_none=True)"
    assert findings[1].after == "model.zero_grad(True)"


# --- conv bias before batch norm --------------------------------------------------------------


def test_a_conv_followed_by_batch_norm_in_sequential_gets_bias_false():
    result = check(
        """\
        import torch.nn as nn

        block = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.Conv2d(64, 10, 1),
        )
        """
        + TRAINS
    )
    finding = one(result, "conv_bias_before_batchnorm")
    assert (finding.kind, finding.impact, finding.line, finding.column) == (
        Kind.CHANGE,
        Impact.LOW,
        4,
        5,
    )
    assert finding.after == "    nn.Conv2d(3, 64, kernel_size=3, padding=1, bias=False),"


def test_a_conv_then_batch_norm_in_forward_is_found_both_ways():
    result = check(
        """\
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(3, 16, 3)
                self.bn1 = nn.BatchNorm2d(16)
                self.conv2 = nn.Conv2d(16, 32, 3)
                self.bn2 = nn.BatchNorm2d(32)
                self.conv3 = nn.Conv2d(32, 32, 3)

            def forward(self, x):
                x = self.bn1(self.conv1(x))
                y = self.conv2(x)
                y = self.bn2(y)
                return self.conv3(torch.relu(y))
        """
        + TRAINS
    )
    assert [f.line for f in found(result, "conv_bias_before_batchnorm")] == [7, 9]


def test_a_conv_not_followed_by_batch_norm_keeps_its_bias():
    result = check(
        "import torch.nn as nn\nhead = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), "
        "nn.BatchNorm2d(8))\n" + TRAINS
    )
    assert not found(result, "conv_bias_before_batchnorm")


# --- tensors created then moved ---------------------------------------------------------------


def test_a_tensor_made_on_the_cpu_then_moved_is_made_on_the_device_instead():
    result = check(
        "import torch\n"
        "noise = torch.randn(8, 3, 32, 32).cuda()\n"
        "mask = torch.zeros((8, 8), dtype=torch.bool).to(device)\n" + TRAINS
    )
    first, second = found(result, "tensor_created_then_moved")
    assert (first.kind, first.line, first.column) == (Kind.CHANGE, 2, 9)
    assert first.after == 'noise = torch.randn(8, 3, 32, 32, device="cuda")'
    assert second.after == "mask = torch.zeros((8, 8), dtype=torch.bool, device=device)"


def test_moving_data_a_model_or_a_dtype_is_not_this_rule():
    result = check(
        "import torch\n"
        "x = batch.to(device)\n"
        "model = Net().cuda()\n"
        "h = torch.zeros(3).to(torch.float16)\n"
        "g = torch.ones(3, device=device).to(device)\n"
        "c = torch.zeros(3).to('cpu')\n" + TRAINS
    )
    assert not found(result, "tensor_created_then_moved")


@pytest.mark.parametrize(
    ("line", "after"),
    [
        (
            "e = torch.exp(torch.arange(n)).to(device)",
            "e = torch.exp(torch.arange(n, device=device))",
        ),
        (
            "y = (torch.ones(n) * i).long().to(device)",
            "y = (torch.ones(n, device=device) * i).long()",
        ),
        (
            "z = (torch.randn(n, d) * std + mean).to(device)",
            "z = torch.randn(n, d, device=device) * std + mean",
        ),
        ("u = (torch.rand(n) * 2 - 1).cuda()", 'u = torch.rand(n, device="cuda") * 2 - 1'),
        (
            "h = torch.arange(n)[None, :].to(device).float()",
            "h = torch.arange(n, device=device)[None, :].float()",
        ),
        (
            "w = torch.cat([torch.zeros(n), torch.ones(n)]).to(device)",
            "w = torch.cat([torch.zeros(n, device=device), torch.ones(n, device=device)])",
        ),
    ],
)
def test_a_tensor_made_then_changed_then_moved_is_made_on_the_device(line, after):
    source = (
        "import torch\n\ndef f(n: int, d: int, device, std=1.0, mean=0.0):\n"
        f"    for i in range(n):\n        {line}\n"
    )
    finding = one(check(source + TRAINS), "tensor_created_then_moved")
    assert (finding.line, finding.after) == (5, f"        {after}")
    ast.parse(source.replace(line, after))


@pytest.mark.parametrize(
    "line",
    [
        "z = (torch.randn(n, d) * scale).to(device)",  # scale may be a CPU tensor
        "z = (torch.randn(n, d) + bias_table[0]).to(device)",
        "g = torch.zeros(3, requires_grad=True).to(device)",  # the leaf would change
        "k = (torch.zeros(3, **options) * 2).to(device)",  # options may name a device
    ],
)
def test_a_move_that_cannot_be_rewritten_safely_is_said_without_an_after(line):
    source = f"import torch\n\ndef f(n, d, scale, bias_table, device):\n    {line}\n"
    finding = one(check(source + TRAINS), "tensor_created_then_moved")
    assert finding.after == "" and finding.before == f"    {line}"


def test_a_helpers_tensor_moved_by_its_caller_is_said_at_the_call():
    result = check(
        """
        import torch

        def make_noise(n):
            return torch.randn(n, 100)

        z = make_noise(8).to(device)
        """
        + TRAINS
    )
    finding = one(result, "tensor_created_then_moved")
    assert (finding.line, finding.after) == (7, "")
    assert "`make_noise` (this file, line 4)" in finding.message
    assert "make_noise(..., device=device)" in finding.fix


def test_a_local_made_then_moved_later_is_said_at_the_move_without_a_rewrite():
    result = check(
        """
        import torch

        def schedule(steps):
            betas = torch.linspace(1e-4, 0.02, steps)
            alphas = 1.0 - betas
            betas = betas.to(device)
            return betas, alphas
        """
        + TRAINS
    )
    finding = one(result, "tensor_created_then_moved")
    # Said at the move, with no mechanical after: `alphas` still uses the CPU tensor.
    assert (finding.line, finding.after) == (7, "")
    assert "`betas` is made with `torch.linspace(...)` in CPU memory (line 5)" in finding.message
    assert "device=device to torch.linspace where `betas` is made" in finding.fix


@pytest.mark.parametrize(
    "body",
    [
        "x = torch.zeros(3)\n    x = torch.ones(3)\n    y = x.to(device)",  # set twice
        "y = x.to(device)\n    x = torch.zeros(3)",  # set after the move
        "x = load()\n    y = x.to(device)",  # not made by a factory
    ],
)
def test_a_local_not_surely_made_by_a_factory_before_the_move_is_not_this_rule(body):
    source = f"import torch\n\ndef f():\n    {body}\n" + TRAINS
    assert not found(check_code({"train.py": source}, DGX), "tensor_created_then_moved")


def test_a_helper_in_another_file_is_followed_one_level():
    files = {
        "train.py": "import torch\nfrom noise import make_noise\nz = make_noise(8).cuda()\n"
        + TRAINS,
        "noise.py": "import torch\n\ndef make_noise(n):\n    return torch.rand(n, 100) * 2 - 1\n",
    }
    finding = one(check_code(files, DGX), "tensor_created_then_moved")
    assert (finding.file, finding.line) == ("train.py", 3)
    assert "noise.py, line 3" in finding.message


@pytest.mark.parametrize(
    "line",
    [
        "x = (batch * 2).to(device)",  # data, not made here
        "x = torch.from_numpy(a).to(device)",  # from_numpy takes no device
        "x = (torch.ones(3, device=device) * 2).to(device)",
        "x = (torch.ones(3).to(device) * 2).to(device)",  # said once, at the inner move
        "x = (torch.ones(3) * 2).to(torch.float16)",
    ],
)
def test_moves_of_what_is_not_made_on_the_cpu_here_are_said_at_most_once(line):
    result = check(f"import torch\n{line}\n" + TRAINS)
    assert len(found(result, "tensor_created_then_moved")) <= ("torch.ones(3).to" in line)


@pytest.mark.parametrize("unit", ["\t", "  "])
def test_fixes_are_indented_as_the_program_is(unit):
    source = (
        "import torch\n\n\ndef evaluate(model, loader):\n\tmodel.eval()\n\tcorrect = 0\n"
        "\tfor x, y in loader:\n\t\tcorrect += (model(x.cuda()).argmax(1) == y.cuda()).sum()\n"
        "\treturn correct\n"
    ).replace("\t", unit)
    finding = one(check(source + TRAINS), "no_grad_evaluation")
    wrapped = "\twith torch.no_grad():\n\t\tcorrect = 0\n\t\tfor".replace("\t", unit)
    assert wrapped in finding.after
    lines = source.split("\n")
    lines[finding.line - 1 : finding.end_line] = [finding.after]
    ast.parse("\n".join(lines))
    if unit == "\t":
        indents = [line[: len(line) - len(line.lstrip())] for line in finding.after.split("\n")]
        assert " " not in "".join(indents)


# --- no_grad for evaluation -------------------------------------------------------------------


def test_evaluation_without_no_grad_gets_a_with_block_on_the_lines_it_names():
    result = check(
        """\
        import torch

        def evaluate(model, loader):
            model.eval()
            total = 0
            for x, y in loader:
                total += (model(x).argmax(1) == y).sum()
            return total
        """
        + TRAINS
    )
    finding = one(result, "no_grad_evaluation")
    assert (finding.kind, finding.impact, finding.line, finding.column) == (
        Kind.CHANGE,
        Impact.MEDIUM,
        4,
        5,
    )
    # The lines from `.eval()` to the function's end, which the after replaces.
    assert finding.end_line == 8
    assert finding.before == (
        "    model.eval()\n    total = 0\n    for x, y in loader:\n"
        "        total += (model(x).argmax(1) == y).sum()\n    return total"
    )
    assert finding.after == (
        "    model.eval()\n    with torch.no_grad():\n        total = 0\n"
        "        for x, y in loader:\n            total += (model(x).argmax(1) == y).sum()\n"
        "        return total"
    )


def test_evaluation_inside_a_training_function_gets_a_with_block():
    result = check(
        """\
        import torch

        def fit(model, train_loader, val_loader, optimizer):
            for epoch in range(10):
                model.train()
                for x, y in train_loader:
                    loss = model(x).sum()
                    loss.backward()
                    optimizer.step()
                model.eval()
                for x, y in val_loader:
                    val = model(x)
        """
    )
    finding = one(result, "no_grad_evaluation")
    assert finding.line == 10
    assert finding.after == (
        "        model.eval()\n"
        "        with torch.no_grad():\n"
        "            for x, y in val_loader:\n"
        "                val = model(x)"
    )


@pytest.mark.parametrize(
    "evaluation",
    [
        "@torch.no_grad()\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n",
        "@torch.inference_mode()\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n",
        "def evaluate(model, x):\n    model.eval()\n    with torch.no_grad():\n"
        "        return model(x)\n",
        "def evaluate(model, x):\n    torch.set_grad_enabled(False)\n    model.eval()\n"
        "    return model(x)\n",
        "def evaluate(model, x):\n    model.eval()\n    return run(model, x)\n",
        "def evaluate(model, x):\n    model.eval()\n    return model(x)\n\n"
        "with torch.no_grad():\n    evaluate(net, batch)\n",
    ],
)
def test_evaluation_without_gradients_is_quiet(evaluation):
    result = check("import torch\n" + evaluation + TRAINS)
    assert not found(result, "no_grad_evaluation")


# --- hand-written attention -------------------------------------------------------------------


ATTENTION = """\
import math
import torch
import torch.nn.functional as F

class Attention(torch.nn.Module):
    def forward(self, q, k, v):
        scores = q @ k.transpose(-2, -1)
        scores = scores / math.sqrt(q.size(-1))
        weights = F.softmax(scores, dim=-1)
        return weights @ v
"""


def test_hand_written_attention_is_flagged_at_the_softmax():
    finding = one(check(ATTENTION + TRAINS), "manual_attention")
    assert (finding.kind, finding.impact, finding.line, finding.column) == (
        Kind.CHANGE,
        Impact.MEDIUM,
        9,
        19,
    )
    assert "F.scaled_dot_product_attention(q, k, v)" in finding.fix


def test_the_attention_fix_says_the_weights_are_no_longer_returned_and_dropout_is_for_training():
    program = """\
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.attn_dropout = nn.Dropout(p)

        def forward(self, q, k, v):
            attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
            attn = self.attn_dropout(attn)
            return attn @ v, attn
    """
    fix = one(check(program), "manual_attention").fix
    assert "returns the attention weights (`attn`)" in fix
    assert "no longer returns them" in fix
    assert "dropout_p=self.attn_dropout.p if self.training else 0.0" in fix


def test_attention_with_a_fused_branch_or_a_plain_softmax_is_quiet():
    fallback = ATTENTION.replace(
        "        scores = q @",
        "        if FLASH:\n"
        "            return F.scaled_dot_product_attention(q, k, v)\n"
        "        scores = q @",
    )
    assert not found(check(fallback + TRAINS), "manual_attention")
    classifier = "import torch\nprobs = torch.softmax(logits @ W, dim=-1)\n"
    assert not found(check(classifier + TRAINS), "manual_attention")


# --- augmentations on the CPU -----------------------------------------------------------------


def test_random_augmentations_are_flagged_once_at_the_first():
    result = check(
        """\
        import torchvision.transforms as T

        train_tf = T.Compose([
            T.RandomResizedCrop(224),
            T.RandomHorizontalFlip(),
            T.ColorJitter(0.4, 0.4, 0.4),
            T.ToTensor(),
        ])
        val_tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(m, s)])
        """
        + TRAINS
    )
    finding = one(result, "cpu_augmentation")
    assert (finding.kind, finding.line, finding.column) == (Kind.CHANGE, 4, 5)
    assert "RandomResizedCrop" in finding.message


def test_deterministic_transforms_or_a_program_that_does_not_train_are_quiet():
    deterministic = (
        "from torchvision import transforms\n"
        "t = transforms.Compose([transforms.Resize(256), transforms.ToTensor()])\n"
    )
    assert not found(check(deterministic + TRAINS), "cpu_augmentation")
    inference = "from torchvision.transforms import v2\nt = v2.RandomCrop(32)\nmodel.eval()\n"
    assert not found(check(inference), "cpu_augmentation")


def test_a_model_file_alone_has_its_conv_bias_flagged():
    model = """\
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1)
            self.bn = nn.BatchNorm2d(c)

        def forward(self, x):
            return self.bn(self.conv(x))
    """
    result = check(model)
    assert result.trains_or_evaluates is False
    assert one(result, "conv_bias_before_batchnorm").line == 6


def test_random_augmentations_in_a_dataset_module_sent_alone_are_flagged():
    dataset = "from torchvision.transforms import v2\nt = v2.RandomCrop(32)\n"
    result = check(dataset)
    assert result.trains_or_evaluates is False
    assert one(result, "cpu_augmentation").line == 2


# --- programs that follow the advice ----------------------------------------------------------

GOOD_LOOP = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return self.fc(x.mean((2, 3)))


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    return sum((model(x.to(device)).argmax(1) == y.to(device)).sum() for x, y in loader)


def main(train_set, val_set):
    device = torch.device("cuda")
    model = Net().to(device, memory_format=torch.channels_last)
    model = torch.compile(model)
    loader = DataLoader(
        train_set,
        batch_size=256,
        shuffle=True,
        num_workers=16,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=4,
    )
    optimizer = torch.optim.AdamW(model.parameters())
    for x, y in loader:
        x = x.to(device, non_blocking=True).to(memory_format=torch.channels_last)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        model.train()
"""

GOOD_LIGHTNING = """\
import lightning as L
import torch
from torch.utils.data import DataLoader


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.compile(torch.nn.Linear(10, 10))

    def training_step(self, batch, batch_idx):
        return self.net(batch).sum()

    def train_dataloader(self):
        return DataLoader(
            self.data, batch_size=64, num_workers=16, pin_memory=True,
            persistent_workers=True, prefetch_factor=4,
        )


torch.set_float32_matmul_precision("high")
model = Model()
trainer = L.Trainer(accelerator="gpu", devices=4, strategy="ddp", precision="bf16-mixed")
trainer.fit(model)
"""

GOOD_HF = """\
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2")
args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=16,
    dataloader_num_workers=16,
    bf16=True,
    tf32=True,
    torch_compile=True,
)
trainer = Trainer(model=model, args=args, train_dataset=train_ds)
trainer.train()
"""


GOOD_ACCELERATE = """\
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader

torch.backends.cuda.matmul.allow_tf32 = True
accelerator = Accelerator(mixed_precision="bf16")
model = torch.compile(Transformer())
loader = DataLoader(
    ds, batch_size=32, num_workers=16, pin_memory=True, persistent_workers=True, prefetch_factor=4
)
optimizer = torch.optim.AdamW(model.parameters())
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    loss = model(batch).loss
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
"""


@pytest.mark.parametrize("program", [GOOD_LOOP, GOOD_LIGHTNING, GOOD_HF, GOOD_ACCELERATE])
def test_a_program_that_follows_all_the_advice_gets_no_finding(program):
    assert check(program).findings == ()


# --- program-wide rules -----------------------------------------------------------------------

BARE_LOOP = """\
import torch
import torchvision

model = torchvision.models.resnet50().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
"""


def test_a_bare_vision_loop_gets_each_program_wide_change_once_at_the_model():
    result = check(BARE_LOOP)
    for rule in ("cudnn_benchmark", "tf32", "mixed_precision", "torch_compile", "channels_last"):
        finding = one(result, rule)
        assert (finding.kind, finding.file, finding.line) == (Kind.CHANGE, "train.py", 4), rule
    model_line = "model = torchvision.models.resnet50().cuda()"
    assert one(result, "cudnn_benchmark").after == (
        f"torch.backends.cudnn.benchmark = True\n{model_line}"
    )
    assert (
        one(result, "tf32").after == f"torch.backends.cuda.matmul.allow_tf32 = True\n{model_line}"
    )
    assert one(result, "torch_compile").after == f"{model_line}\nmodel = torch.compile(model)"
    assert one(result, "channels_last").after == (
        f"{model_line}\nmodel = model.to(memory_format=torch.channels_last)"
    )
    assert "torch.autocast" in one(result, "mixed_precision").fix


def test_a_transformer_program_is_not_told_about_convolutions():
    result = check("import torch\nmodel = torch.nn.TransformerEncoder(layer, 6).cuda()\n" + TRAINS)
    assert not found(result, "cudnn_benchmark") and not found(result, "channels_last")
    assert found(result, "tf32") and found(result, "mixed_precision")


def test_a_program_on_the_cpu_gets_no_program_wide_rule():
    result = check(
        "import torch\nmodel = torch.nn.Conv2d(3, 8, 3)\nfor x in d:\n"
        "    model(x).sum().backward()\n"
    )
    assert not {f.rule for f in result.findings} & {
        "cudnn_benchmark",
        "tf32",
        "mixed_precision",
        "torch_compile",
        "channels_last",
    }


PROGRAM_WIDE = {"cudnn_benchmark", "tf32", "mixed_precision", "torch_compile", "channels_last"}
# A small convolutional network trained on whatever `device` is: the line that picks the device
# is what the tests below vary.
ON_DEVICE = """\
import torch
from torch import nn

{device}
net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU()).to(device)
opt = torch.optim.Adam(net.parameters())
for images, labels in batches:
    net(images.to(device)).mean().backward()
    opt.step()
"""


@pytest.mark.parametrize(
    "device",
    [
        "device = torch.accelerator.current_accelerator() if use_gpu else torch.device('cpu')",
        "if torch.accelerator.is_available():\n    device = torch.accelerator.current_accelerator()"
        "\nelse:\n    device = 'cpu'",
        "device = torch.device(args.device)",
        "device = torch.device(f'xpu:{rank}')",
        "device = pick_device()",
    ],
)
def test_a_program_whose_device_is_not_pinned_to_the_cpu_is_taken_to_run_on_a_gpu(device):
    result = check(ON_DEVICE.format(device=device))
    assert {f.rule for f in result.findings} >= PROGRAM_WIDE


@pytest.mark.parametrize(
    "device", ["device = torch.device('cpu')", "device = 'cpu'", "device = torch.device('cpu:0')"]
)
def test_a_program_pinned_to_the_cpu_gets_no_program_wide_rule(device):
    result = check(ON_DEVICE.format(device=device))
    assert not {f.rule for f in result.findings} & PROGRAM_WIDE


def test_a_script_that_neither_trains_nor_evaluates_gets_no_program_wide_rule():
    statistics = """\
    import torch
    from torch.utils.data import DataLoader
    device = torch.accelerator.current_accelerator()
    loader = DataLoader(images, batch_size=64)
    total = sum(batch.to(device).sum() for batch in loader)
    """
    result = check(statistics)
    assert result.trains_or_evaluates is False
    assert not {f.rule for f in result.findings} & PROGRAM_WIDE
    assert {f.rule for f in result.findings} == {"dataloader_num_workers", "dataloader_pin_memory"}


def test_cudnn_benchmark_off_for_determinism_is_a_question_and_off_alone_a_change():
    deterministic = check(
        "import torch\ntorch.backends.cudnn.benchmark = False\n"
        "torch.backends.cudnn.deterministic = True\n" + BARE_LOOP.replace("import torch\n", "")
    )
    finding = one(deterministic, "cudnn_benchmark")
    assert (finding.kind, finding.line) == (Kind.QUESTION, 2)
    off = check("import torch\ntorch.backends.cudnn.benchmark = False\n" + BARE_LOOP)
    finding = one(off, "cudnn_benchmark")
    assert (finding.kind, finding.line) == (Kind.CHANGE, 2)
    assert finding.after == "torch.backends.cudnn.benchmark = True"


def test_tf32_through_matmul_precision_counts_and_highest_does_not():
    high = check('import torch\ntorch.set_float32_matmul_precision("high")\n' + BARE_LOOP)
    assert not found(high, "tf32")
    highest = check('import torch\ntorch.set_float32_matmul_precision("highest")\n' + BARE_LOOP)
    assert one(highest, "tf32").kind is Kind.CHANGE


def test_mixed_precision_counts_autocast_half_and_sixteen_bit_loading():
    for setting in (
        "with torch.cuda.amp.autocast():\n    pass\n",
        "model = model.half()\n",
        "model = model.to(torch.bfloat16)\n",
        "m = AutoModel.from_pretrained('x', torch_dtype=torch.float16)\n",
    ):
        assert not found(check(BARE_LOOP + setting), "mixed_precision"), setting


@pytest.mark.parametrize(
    "autocast",
    [
        "cast = functools.partial(torch.autocast, device_type='cuda')\n",
        "cast = contextlib.nullcontext\nif use_amp:\n    cast = torch.amp.autocast\n",
        "from torch.cuda.amp import autocast as cast\n",
    ],
)
def test_autocast_referred_to_through_a_name_counts_as_mixed_precision(autocast):
    program = BARE_LOOP.replace(
        "\nmodel = ", f"import contextlib\nimport functools\n{autocast}\nmodel = "
    )
    program = program.replace("    loss = ", "    with cast():\n        loss = ")
    assert not found(check(program), "mixed_precision")


def test_an_inference_only_program_is_told_about_precision_but_not_compile():
    result = check(
        "import torch\nmodel = Net().cuda()\nmodel.eval()\nwith torch.no_grad():\n"
        "    out = model(x.cuda())\n"
    )
    assert one(result, "mixed_precision").kind is Kind.CHANGE
    assert not found(result, "torch_compile")
    assert not found(result, "no_grad_evaluation")


# --- frameworks, read in their own terms ------------------------------------------------------


def test_lightning_precision_missing_wrong_or_unknown():
    missing = check(GOOD_LIGHTNING.replace(', precision="bf16-mixed"', ""))
    finding = one(missing, "mixed_precision")
    assert (finding.kind, finding.line, finding.column) == (Kind.CHANGE, 23, 11)
    assert 'precision="bf16-mixed")' in finding.after
    wrong = check(GOOD_LIGHTNING.replace('precision="bf16-mixed"', 'precision="32-true"'))
    finding = one(wrong, "mixed_precision")
    assert (finding.kind, finding.line, finding.column) == (Kind.CHANGE, 23, 67)
    assert 'precision="bf16-mixed"' in finding.after and "32-true" not in finding.after
    unknown = check(GOOD_LIGHTNING.replace('precision="bf16-mixed"', "precision=args.precision"))
    finding = one(unknown, "mixed_precision")
    assert finding.kind is Kind.QUESTION and "`args.precision`" in finding.message
    assert not unknown.changes


def test_lightning_strategy_dp_is_data_parallel_and_benchmark_true_counts():
    program = GOOD_LIGHTNING.replace(
        "self.net = torch.compile(torch.nn.Linear(10, 10))",
        "self.net = torch.compile(torch.nn.Conv2d(3, 8, 3))",
    )
    finding = one(check(program), "cudnn_benchmark")
    assert (finding.line, finding.kind) == (23, Kind.CHANGE)
    assert "benchmark=True" in finding.after
    benchmarked = program.replace('strategy="ddp"', 'strategy="ddp", benchmark=True')
    assert not found(check(benchmarked), "cudnn_benchmark")
    dp = check(GOOD_LIGHTNING.replace('strategy="ddp"', 'strategy="dp"'))
    finding = one(dp, "data_parallel")
    assert (finding.line, finding.kind) == (23, Kind.CHANGE) and 'strategy="ddp"' in finding.after


CLI = """\
import lightning as L
import torch
from lightning.pytorch.cli import LightningCLI
from torch.utils.data import DataLoader


class Segmenter(L.LightningModule):
    def __init__(self, workers: int = 8):
        super().__init__()
        self.workers = workers
        self.net = torch.compile(torch.nn.Conv2d(3, 2, 1).to(memory_format=torch.channels_last))

    def train_dataloader(self):
        return DataLoader(self.tiles, batch_size=16, num_workers=self.workers, pin_memory=True)


torch.set_float32_matmul_precision("high")
LightningCLI(
    Segmenter,
    trainer_defaults={
        "max_epochs": 30,
        "benchmark": True,
    },
)
"""


def test_lightning_cli_trains_and_its_trainer_defaults_are_the_trainers_arguments():
    result = check(CLI)
    loader = one(result, "dataloader_num_workers")
    assert (loader.kind, loader.line) == (Kind.QUESTION, 14)
    assert "`self.workers`" in loader.message
    assert not found(result, "cudnn_benchmark")  # "benchmark": True in the defaults
    finding = one(result, "mixed_precision")
    assert (finding.kind, finding.line) == (
        Kind.CHANGE,
        20,
    )  # the trainer_defaults lines the after replaces
    assert '        "benchmark": True,\n        "precision": "bf16-mixed",\n    },' in finding.after
    assert {f.rule for f in result.findings} == {"dataloader_num_workers", "mixed_precision"}


def test_lightning_cli_trainer_defaults_set_wrong_unknown_or_missing():
    wrong = check(CLI.replace('"benchmark": True', '"benchmark": False, "precision": 32'))
    finding = one(wrong, "mixed_precision")
    assert (finding.kind, finding.line) == (Kind.CHANGE, 22)
    assert '"precision": "bf16-mixed"' in finding.after and "32" not in finding.after
    assert one(wrong, "cudnn_benchmark").kind is Kind.CHANGE
    unknown = check(CLI.replace('"max_epochs": 30', '"precision": args.precision'))
    assert one(unknown, "mixed_precision").kind is Kind.QUESTION
    defaults = CLI[CLI.index("    trainer_defaults") : CLI.index("    },\n") + 7]
    none = check(CLI.replace(defaults, ""))
    assert 'trainer_defaults={"precision": "bf16-mixed"}' in one(none, "mixed_precision").after


def test_lightning_cli_with_run_false_trains_through_its_trainers_fit():
    not_run = CLI.replace("LightningCLI(", "cli = LightningCLI(").replace(
        "},\n)", "},\n    run=False,\n)"
    )
    # Built but never fitted: nothing trains, so no program-wide rule; its loader is still read.
    assert {f.rule for f in check(not_run).findings} == {"dataloader_num_workers"}
    fitted = check(not_run + "cli.trainer.fit(cli.model)\n")
    assert {f.rule for f in fitted.findings} == {"dataloader_num_workers", "mixed_precision"}


def test_hugging_face_arguments_missing_wrong_or_unknown():
    bare = check(
        "from transformers import Trainer, TrainingArguments\n"
        "args = TrainingArguments(output_dir='out')\n"
        "Trainer(model=model, args=args).train()\n"
    )
    rules = {f.rule: f for f in bare.changes}
    assert set(rules) == {"dataloader_num_workers", "mixed_precision", "tf32", "torch_compile"}
    workers = rules["dataloader_num_workers"]
    assert (workers.line, workers.column) == (2, 8)
    assert workers.after == (
        "args = TrainingArguments(output_dir='out', dataloader_num_workers=16)"
    )
    assert "bf16=True" in rules["mixed_precision"].after
    assert not found(bare, "dataloader_pin_memory")  # the Trainer pins memory by default
    wrong = check(
        GOOD_HF.replace("bf16=True", "fp16=False").replace(
            "dataloader_num_workers=16", "dataloader_num_workers=0, dataloader_pin_memory=False"
        )
    )
    assert one(wrong, "mixed_precision").line == 8
    assert one(wrong, "dataloader_num_workers").line == 4
    assert one(wrong, "dataloader_pin_memory").line == 7
    unknown = check(
        GOOD_HF.replace("bf16=True", "bf16=cfg.bf16").replace(
            "dataloader_num_workers=16", "dataloader_num_workers=cfg.workers"
        )
    )
    assert {(f.rule, f.kind) for f in unknown.findings} == {
        ("mixed_precision", Kind.QUESTION),
        ("dataloader_num_workers", Kind.QUESTION),
    }


def test_seq2seq_and_sft_arguments_are_read_the_same_way():
    for module, name in (("transformers", "Seq2SeqTrainingArguments"), ("trl", "SFTConfig")):
        result = check(
            f"from {module} import {name}\nimport trl\n"
            f"args = {name}(output_dir='o', bf16=True, tf32=True, torch_compile=True)\n"
            "trl.SFTTrainer(model=m, args=args).train()\n"
        )
        assert [f.rule for f in result.findings] == ["dataloader_num_workers"], name


def test_hugging_face_arguments_from_a_parser_are_questions():
    result = check(
        "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
        "(training_args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
        "trainer = Trainer(model=model, args=training_args)\n"
        "trainer.train()\n"
    )
    assert not result.changes
    assert {f.rule for f in result.questions} == {"dataloader_num_workers", "mixed_precision"}
    assert all("`training_args`" in f.message for f in result.questions)


def test_accelerate_mixed_precision_set_no_or_left_to_the_launcher():
    body = (
        "from accelerate import Accelerator\naccelerator = Accelerator({})\n"
        "model, opt = accelerator.prepare(model, opt)\naccelerator.backward(loss)\n"
    )
    assert not found(check(body.format('mixed_precision="bf16"')), "mixed_precision")
    finding = one(check(body.format('mixed_precision="no"')), "mixed_precision")
    assert (finding.kind, finding.line, finding.column) == (Kind.CHANGE, 2, 27)
    assert finding.after == 'accelerator = Accelerator(mixed_precision="bf16")'
    launcher = one(check(body.format("")), "mixed_precision")
    assert launcher.kind is Kind.QUESTION and "accelerate launch" in launcher.message


# --- odd but valid Python never breaks the check ----------------------------------------------

ODD_PROGRAMS = {
    "deep nesting": "".join("    " * i + f"def f{i}(x=lambda: 0):\n" for i in range(80))
    + "    " * 80
    + "return DataLoader(ds)\n",
    "long attribute chain": "x = torch" + ".nn" * 2_000 + "\ny = a" + ".b" * 2_000 + "(0)\n",
    "long expression": "x = " + " + ".join(["1"] * 900) + "\n",
    "lambdas and walrus": "f = lambda kw={'num_workers': 0}: DataLoader(ds, **kw)\n"
    "if (n := 0) == 0:\n    l = DataLoader(ds, num_workers=n)\n"
    "g = [(w := k) for k in range(3)]\n",
    "match": "match cfg:\n    case {'workers': int(w)}:\n"
    "        l = DataLoader(ds, num_workers=w)\n"
    "    case [a, *rest]:\n        pass\n    case Point(x=0) | None:\n        pass\n",
    "decorators": "@a.b(c)\n@d\nclass C(Base, metaclass=M):\n    @property\n"
    "    @torch.no_grad()\n    def f(self):\n        self.eval()\n        return self(1)\n",
    "f-strings": "name = 'x'\ns = f\"{name!r:>{width}} {f'{1 + 2}'} {DataLoader(ds)}\"\n",
    "async": "async def main():\n    async with lock as (a, b):\n"
    "        async for x in DataLoader(ds):\n            await model(x)\n"
    "    return [y async for y in aiter()]\n",
    "unicode": "café = 'naïve ✓'\n\U0001d465 = DataLoader(ds, num_workers=0)  # ünïcode\n",
    "form feed and odd lines": "x = 1\n\x0c\ny = 2  # \u2028 in a comment\r\n"
    "l = DataLoader(ds)\r\n",
    "star imports": "from torch.utils.data import *\nfrom torch.nn import *\n"
    "l = DataLoader(ds)\nm = DataParallel(Conv2d(3, 8, 3))\n",
    "stubs and ellipses": "def f(x: 'A[int]', *a, **k) -> ...: ...\nclass P(Protocol): ...\n"
    "type Alias = list[int]\ndef g[T](x: T) -> T: return x\n",
    "global and del": "global w\nw = 0\ndel w\nkw = {}\nkw |= {'num_workers': 0}\n"
    "l = DataLoader(ds, **kw)\n",
    "self-reference": "a = b\nb = a\nl = DataLoader(ds, num_workers=a)\n",
}


@pytest.mark.parametrize("name", sorted(ODD_PROGRAMS))
def test_odd_but_valid_python_never_breaks_the_check(name):
    source = "import torch\nfrom torch.utils.data import DataLoader\n" + ODD_PROGRAMS[name]
    result = check_code({"train.py": source + TRAINS, "b.py": source}, DGX)
    assert result.files == ("train.py", "b.py"), result.unreadable
    for finding in result.findings:
        assert 1 <= finding.line <= finding.end_line and finding.column >= 1


def test_odd_programs_are_still_read_where_they_are_plain():
    source = "import torch\nfrom torch.utils.data import DataLoader\n"
    star = check_code({"train.py": source + ODD_PROGRAMS["star imports"] + TRAINS}, DGX)
    assert found(star, "dataloader_num_workers") and found(star, "data_parallel")
    unicode = check_code({"train.py": source + ODD_PROGRAMS["unicode"] + TRAINS}, DGX)
    finding = found(unicode, "dataloader_num_workers")[0]
    assert (finding.line, finding.column) == (4, 5)  # columns in characters, not bytes
    odd_lines = check_code(
        {"train.py": source + ODD_PROGRAMS["form feed and odd lines"] + TRAINS}, DGX
    )
    assert found(odd_lines, "dataloader_num_workers")[0].line == 6
    loop = check_code({"train.py": source + ODD_PROGRAMS["self-reference"] + TRAINS}, DGX)
    assert found(loop, "dataloader_num_workers")[0].kind is Kind.QUESTION


def test_nesting_too_deep_for_the_parser_is_unreadable_not_an_error():
    result = check_code({"train.py": "x = " + " + ".join(["1"] * 50_000) + "\n"}, DGX)
    (bad,) = result.unreadable
    assert "nested too deeply" in bad.message and result.findings == ()


def test_a_rule_that_fails_on_odd_code_stays_quiet_and_the_others_still_speak(monkeypatch):
    from guidance.engine.code_check import check as check_module

    def broken(project, program, values):
        raise RecursionError("odd code")

    monkeypatch.setattr(check_module, "LOCATED", (broken, *check_module.LOCATED))
    result = check(ORDERED)
    assert found(result, "data_parallel") and found(result, "dataloader_persistent_workers")


def test_the_program_wide_place_is_the_programs_own_model_class_built():
    result = check(
        """\
        import torch
        from torch import nn

        class AutoEncoder(nn.Module):
            def forward(self, x):
                return x

        net_config = dict(width=3)
        encoder = AutoEncoder().cuda()
        """
        + TRAINS
    )
    finding = one(result, "torch_compile")
    assert finding.line == 9
    assert finding.after == "encoder = AutoEncoder().cuda()\nencoder = torch.compile(encoder)"


def test_a_model_picked_from_torchvisions_table_is_a_vision_model():
    result = check(
        "import torch\nimport torchvision.models as models\n"
        "model = models.__dict__[args.arch]().cuda()\n" + TRAINS
    )
    assert one(result, "channels_last").line == 3 and one(result, "cudnn_benchmark").line == 3


def test_each_class_has_its_own_layers_of_the_same_name():
    result = check(
        """\
        import torch
        from torch import nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(8, 8, 3, bias=False)
                self.bn1 = nn.BatchNorm2d(8)

            def forward(self, x):
                return self.bn1(self.conv1(x))

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(3, 8, 3)
                self.bn1 = nn.BatchNorm2d(8)

            def forward(self, x):
                return self.bn1(self.conv1(x))

        stats = torch.tensor([1.0, 2.0]).cuda(local_rank)
        """
        + TRAINS
    )
    assert [f.line for f in found(result, "conv_bias_before_batchnorm")] == [16]
    moved = one(result, "tensor_created_then_moved")
    assert moved.after == "stats = torch.tensor([1.0, 2.0], device=local_rank)"


# --- the catalogue and the rules agree ---------------------------------------------------------

LOADER = "from torch.utils.data import DataLoader\n"
FLAGGED = {
    "dataloader_num_workers": LOADER + "l = DataLoader(ds)\n",
    "dataloader_pin_memory": LOADER + "l = DataLoader(ds, num_workers=4)\n",
    "dataloader_persistent_workers": LOADER + "l = DataLoader(ds, num_workers=4)\n",
    "dataloader_prefetch_factor": LOADER + "l = DataLoader(ds, num_workers=4)\n",
    "batch_size": LOADER + "l = DataLoader(ds, batch_size=8)\n",
    "data_parallel": "import torch\nm = torch.nn.DataParallel(m)\n",
    "debug_apis": "import torch\ntorch.autograd.set_detect_anomaly(True)\n",
    "mixed_precision": "import torch\n",
    "no_grad_evaluation": "def ev(model, x):\n    model.eval()\n    return model(x)\n",
    "manual_attention": ATTENTION,
    "cpu_augmentation": "from torchvision import transforms\nt = transforms.RandomCrop(32)\n",
    "cudnn_benchmark": BARE_LOOP,
    "tf32": "import torch\n",
    "torch_compile": "import torch\n",
    "channels_last": BARE_LOOP,
    "tensor_created_then_moved": "import torch\nx = torch.ones(3).cuda()\n",
    "conv_bias_before_batchnorm": "from torch import nn\n"
    "s = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))\n",
    "zero_grad_set_to_none": "opt.zero_grad(set_to_none=False)\n",
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_of_the_catalogue_is_said_with_its_title_impact_and_source(rule):
    info = RULES[rule]
    assert info.advice and info.title and info.source is not None
    measured = Measured(35, 20, peak_memory_gb=10.0, memory_total_gb=80.0)
    result = check(FLAGGED[rule] + TRAINS, measured=measured)
    finding = found(result, rule)[0]
    assert (finding.title, finding.impact, finding.source) == (info.title, info.impact, info.source)
    assert finding.message and finding.fix


def test_the_catalogue_lists_exactly_the_contracts_rules():
    assert set(FLAGGED) == set(RULES) and len(RULES) == 18


def test_odd_arguments_never_break_the_check():
    source = {"train.py": "from torch.utils.data import DataLoader\nl = DataLoader(d)\n" + TRAINS}
    odd = Measured(mean_utilization=None, minutes=None)  # type: ignore[arg-type]
    result = check_code(source, DGX, entry=["not", "a", "name"], measured=odd, cpus_per_gpu=-3)
    finding = found(result, "dataloader_num_workers")[0]
    assert "num_workers=16" in finding.after and "Measured" not in finding.message
    assert check_code(source, DGX, entry="missing.py").files == ("train.py",)


def test_a_question_names_where_the_value_comes_from():
    result = check(
        "from torch.utils.data import DataLoader\nworkers = args.workers\n"
        "l = DataLoader(ds, num_workers=workers, pin_memory=True)\n" + TRAINS
    )
    assert "`args.workers`" in one(result, "dataloader_num_workers").message


def test_evaluation_called_from_a_function_without_gradients_is_quiet():
    result = check(
        "import torch\n\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n\n"
        "@torch.no_grad()\ndef validate(model, x):\n    return evaluate(model, x)\n" + TRAINS
    )
    assert not found(result, "no_grad_evaluation")


def test_a_program_wide_fix_before_a_class_shows_its_first_lines_only():
    result = check(
        """\
        import torch

        @register
        class Net(torch.nn.Module):
            def forward(self, x):
                return x

        def main():
            pass
        """
        + TRAINS
    )
    finding = one(result, "tf32")
    assert (finding.line, finding.end_line) == (3, 4)
    assert finding.before == "@register\nclass Net(torch.nn.Module):"
    assert finding.after == (
        "torch.backends.cuda.matmul.allow_tf32 = True\n@register\nclass Net(torch.nn.Module):"
    )


def test_a_long_call_is_laid_out_one_argument_per_line_with_its_values_replaced():
    result = check(
        "from torch.utils.data import DataLoader\n"
        "def make(train_dataset_with_a_long_name):\n"
        "    return DataLoader(train_dataset_with_a_long_name, batch_size=128, num_workers=0)"
        "  # note\n" + TRAINS
    )
    assert one(result, "dataloader_num_workers").after == (
        "    return DataLoader(\n"
        "        train_dataset_with_a_long_name,\n"
        "        batch_size=128,\n"
        "        num_workers=16,\n"
        "        pin_memory=True,\n"
        "        persistent_workers=True,\n"
        "        prefetch_factor=4,\n"
        "    )  # note"
    )


def test_a_module_name_that_a_function_reassigns_as_global_is_not_knowable():
    result = check(
        "from torch.utils.data import DataLoader\nWORKERS = 0\n\n"
        "def configure(n):\n    global WORKERS\n    WORKERS = n\n\n"
        "l = DataLoader(ds, num_workers=WORKERS, pin_memory=True)\n" + TRAINS
    )
    assert one(result, "dataloader_num_workers").kind is Kind.QUESTION


def test_attention_through_an_nn_softmax_module_is_found_too():
    program = ATTENTION.replace(
        "weights = F.softmax(scores, dim=-1)", "weights = self.softmax(scores)"
    ).replace("    def forward", "    softmax = torch.nn.Softmax(dim=-1)\n\n    def forward")
    assert one(check(program + TRAINS), "manual_attention").line == 11


# --- Files in which nothing trains ----------------------------------------------------------


def test_a_helper_module_alone_is_said_to_train_nothing():
    result = check("def scale(x, factor=2):\n    return x * factor\n")
    assert result.trains_or_evaluates is False and not result.findings
    assert check("model.train()\n" + TRAINS).trains_or_evaluates is True


def test_data_parallel_and_anomaly_detection_are_flagged_where_the_loop_is_not_sent():
    # The training loop lives in trainer.py, which was not sent: these still cost every step.
    result = check(
        """
        import torch
        from torch import nn
        from trainer import run
        torch.autograd.set_detect_anomaly(True)
        net = nn.DataParallel(Net().cuda())
        run(net)
        """
    )
    assert result.trains_or_evaluates is False
    assert sorted(f.rule for f in result.changes) == ["data_parallel", "debug_apis"]


def test_data_parallel_with_device_ids_by_position_gets_a_fix_that_parses():
    result = check(
        """
        from torch import nn
        netG = nn.DataParallel(netG, list(range(ngpu)), 0)
        """
        + TRAINS
    )
    (finding,) = found(result, "data_parallel")
    assert finding.after == (
        "netG = nn.parallel.DistributedDataParallel(netG, device_ids=[local_rank])"
    )
    ast.parse(finding.after)


def test_a_fix_replaces_exactly_the_lines_the_finding_names():
    source = text(
        """
        import torch
        from torch.utils.data import DataLoader
        loaders = {
            split: DataLoader(sets[split], batch_size=64, num_workers=8)
            for split in ["train", "val"]
        }
        """
        + TRAINS
    )
    lines = source.split("\n")
    result = check_code({"train.py": source}, DGX)
    fixes = [f for f in result.findings if f.after and f.rule.startswith("dataloader")]
    assert {f.rule for f in fixes} >= {"dataloader_pin_memory", "dataloader_prefetch_factor"}
    for finding in fixes:
        assert (finding.line, finding.end_line) == (5, 5)
        assert finding.before == lines[4]
        ast.parse("\n".join([*lines[:4], finding.after, *lines[5:]]))
    hf = check(
        GOOD_HF.replace("bf16=True", "fp16=False").replace(
            "dataloader_num_workers=16", "dataloader_num_workers=16, dataloader_pin_memory=False"
        )
    )
    precision = one(hf, "mixed_precision")
    assert (precision.line, precision.end_line) == (8, 8)
    assert (precision.before, precision.after) == ("    fp16=False,", "    bf16=True,")


def test_program_wide_fixes_go_where_the_model_is_built_or_import_torch():
    trainer = (
        "import torch\nfrom torch import nn\n\n\ndef run():\n"
        "    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).cuda()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x in range(3):\n        model(x).sum().backward()\n        optimizer.step()\n"
    )
    files = {"main.py": "from trainer import run\n\nrun()\n", "trainer.py": trainer}
    result = check_code(files, DGX)
    wide = [f for f in result.changes if f.rule in ("tf32", "cudnn_benchmark", "torch_compile")]
    assert len(wide) == 3 and {f.file for f in wide} == {"trainer.py"}
    assert "    torch.backends.cudnn.benchmark = True" in one(result, "cudnn_benchmark").after
    # Where nothing in the files builds the model, the entry's fix brings its own import.
    alone = {"main.py": "from trainer import run\n\nrun()\n", "trainer.py": TRAINS}
    tf32 = one(check_code(alone, DGX), "tf32")
    assert tf32.file == "main.py"
    assert tf32.after == "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\nrun()"


@pytest.mark.parametrize(
    "not_the_model",
    [
        "mask = mask.half()\n",
        "weights = weights.to(torch.bfloat16)\n",
        "noise = torch.randn(4, dtype=torch.float16)\n",
        "with torch.autocast('cpu'):\n    stats = compute(batch)\n",
        "with torch.autocast(device_type='cpu', dtype=torch.bfloat16):\n    stats = compute(b)\n",
    ],
)
def test_half_tensors_and_cpu_autocast_are_not_mixed_precision(not_the_model):
    result = check("import torch\nmodel = Net().cuda()\n" + not_the_model + TRAINS)
    assert one(result, "mixed_precision").kind is Kind.CHANGE


@pytest.mark.parametrize(
    "reduced",
    [
        "netG = netG.half()\n",
        "encoder = Encoder().cuda()\nencoder = encoder.to(torch.bfloat16)\n",
        "with torch.autocast('cuda'):\n    out = model(x)\n",
        "with torch.autocast(device):\n    out = model(x)\n",
        "lm = AutoModel.from_pretrained('gpt2', torch_dtype=torch.bfloat16)\n",
    ],
)
def test_a_half_model_or_gpu_autocast_is_mixed_precision(reduced):
    result = check(
        "import torch\nfrom torch import nn\nclass Encoder(nn.Module):\n    pass\n"
        "netG = Generator().cuda()\n" + reduced + TRAINS
    )
    assert not found(result, "mixed_precision")


@pytest.mark.parametrize(
    "made", ["torch.tensor(d).to(other_tensor)", "torch.zeros(3).to(x)", "torch.ones(2).to(dtype)"]
)
def test_a_tensor_moved_like_another_tensor_is_not_given_a_device(made):
    result = check(f"import torch\nt = {made}\n" + TRAINS)
    assert not found(result, "tensor_created_then_moved")


@pytest.mark.parametrize(
    "device",
    ["device", "torch.device('cuda')", "x.device", "args.device", "local_rank", "'cuda:0'"],
)
def test_a_tensor_moved_to_a_device_gets_the_device_argument(device):
    finding = one(
        check(f"import torch\nt = torch.zeros(3).to({device})\n" + TRAINS),
        "tensor_created_then_moved",
    )
    assert finding.after == f"t = torch.zeros(3, device={device})"


@pytest.mark.parametrize("workers", ["False", "-1", "None"])
def test_num_workers_false_or_negative_is_no_workers(workers):
    source = (
        f"from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers={workers})\n"
    )
    finding = one(check(source + TRAINS), "dataloader_num_workers")
    assert finding.kind is Kind.CHANGE and f"num_workers={workers}" in finding.message
    assert "num_workers=16" in finding.after


def test_num_workers_given_as_a_string_is_changed_to_the_number():
    source = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers='4')\n"
    finding = one(check(source + TRAINS), "dataloader_num_workers")
    assert finding.kind is Kind.CHANGE and "needs an int" in finding.message
    assert finding.after == "loader = DataLoader(ds, num_workers=4)"


# --- Workers read from the job, or defaulted elsewhere ----------------------------------------

JOB = "import os\nfrom torch.utils.data import DataLoader\n"
PARSER = "import argparse\nparser = argparse.ArgumentParser()\n"


@pytest.mark.parametrize(
    "workers",
    [
        "loader = DataLoader(ds, num_workers=int(os.environ['SLURM_CPUS_PER_TASK']))\n",
        "loader = DataLoader(ds, num_workers=int(os.environ.get('SLURM_CPUS_PER_TASK', 4)))\n",
        "loader = DataLoader(ds, num_workers=int(os.getenv('SLURM_CPUS_PER_TASK', '4')))\n",
        "loader = DataLoader(ds, num_workers=len(os.sched_getaffinity(0)))\n",
        "cpus = int(os.environ['SLURM_CPUS_PER_TASK'])\n"
        "loader = DataLoader(ds, num_workers=cpus)\n",
        PARSER + "parser.add_argument('--workers', type=int, "
        "default=int(os.environ.get('SLURM_CPUS_PER_TASK', 4)))\nargs = parser.parse_args()\n"
        "loader = DataLoader(ds, num_workers=args.workers)\n",
        # argparse gives a string default its type: int("6").
        PARSER + "parser.add_argument('-j', '--workers', type=int, "
        "default=os.environ['SLURM_CPUS_PER_TASK'])\nargs = parser.parse_args()\n"
        "loader = DataLoader(ds, num_workers=args.workers)\n",
        "WORKERS = len(os.sched_getaffinity(0))\n\ndef make(ds):\n"
        "    return DataLoader(ds, num_workers=WORKERS)\n",
        "from dataclasses import dataclass\n@dataclass\nclass Config:\n"
        "    workers: int = int(os.environ['SLURM_CPUS_PER_TASK'])\n"
        "config = Config()\nloader = DataLoader(ds, num_workers=config.workers)\n",
        "def make(ds, workers=int(os.environ['SLURM_CPUS_PER_TASK'])):\n"
        "    return DataLoader(ds, num_workers=workers)\n",
        "from transformers import TrainingArguments\n"
        "training_args = TrainingArguments('out', "
        "dataloader_num_workers=int(os.environ['SLURM_CPUS_PER_TASK']))\n",
    ],
)
def test_workers_read_from_the_job_are_not_asked_about(workers):
    result = check(JOB + workers + TRAINS)
    assert not found(result, "dataloader_num_workers")


@pytest.mark.parametrize(
    ("assignment", "read"),
    [
        ("loader = DataLoader(ds, num_workers=os.environ.get('SLURM_CPUS_PER_TASK'))\n", None),
        ("cpus = os.environ['SLURM_CPUS_PER_TASK']\n", "cpus"),
    ],
)
def test_an_environment_variable_as_read_is_a_string_the_dataloader_refuses(assignment, read):
    source = text(
        JOB
        + assignment
        + (f"loader = DataLoader(ds, num_workers={read})\n" if read else "")
        + TRAINS
    )
    finding = one(check_code({"train.py": source}, DGX), "dataloader_num_workers")
    assert finding.kind is Kind.CHANGE and finding.line == 3
    assert "a string" in finding.message and "TypeError" in finding.message
    # Wrapped in int(); an unset variable given the CPUs per GPU instead of None.
    assert finding.after == assignment.rstrip("\n").replace(
        "os.environ.get('SLURM_CPUS_PER_TASK')", "int(os.environ.get('SLURM_CPUS_PER_TASK', 16))"
    ).replace("= os.environ['SLURM_CPUS_PER_TASK']", "= int(os.environ['SLURM_CPUS_PER_TASK'])")
    lines = source.split("\n")
    ast.parse("\n".join([*lines[:2], finding.after, *lines[3:]]))


def test_an_argparse_default_of_zero_is_the_change_where_it_is_written():
    source = text(
        JOB
        + PARSER
        + "parser.add_argument('--num-workers', type=int, default=0, help='loader workers')\n"
        "args = parser.parse_args()\n"
        "loader = DataLoader(ds, batch_size=64, num_workers=args.num_workers)\n" + TRAINS
    )
    finding = one(check_code({"train.py": source}, DGX), "dataloader_num_workers")
    assert (finding.kind, finding.line, finding.column) == (Kind.CHANGE, 5, 48)
    assert "the option `--num-workers`, which is 0 (`default=0`)" in finding.message
    assert "int(os.environ['SLURM_CPUS_PER_TASK'])" in finding.fix
    assert finding.after == (
        "parser.add_argument('--num-workers', type=int, default=16, help='loader workers')"
    )


@pytest.mark.parametrize(
    ("program", "line", "after"),
    [
        (
            "WORKERS = 8\n" + PARSER + "parser.add_argument('--workers', default=WORKERS)\n"
            "args = parser.parse_args()\nloader = DataLoader(ds, num_workers=args.workers)\n",
            None,
            None,
        ),
        (
            "from dataclasses import dataclass, field\n@dataclass\nclass Config:\n"
            "    workers: int = field(default=0)\n"
            "loader = DataLoader(ds, num_workers=Config().workers)\n",
            6,
            "    workers: int = field(default=16)",
        ),
        (
            "class Data:\n    def __init__(self, root, workers=0):\n"
            "        self.workers = workers\n\n    def loader(self):\n"
            "        return DataLoader(self.root, num_workers=self.workers)\n"
            "data = Data('/data')\n",
            4,
            "    def __init__(self, root, workers=16):",
        ),
    ],
)
def test_a_default_written_elsewhere_is_followed(program, line, after):
    result = check(JOB + program + TRAINS)
    if line is None:
        assert not found(result, "dataloader_num_workers")
        return
    finding = one(result, "dataloader_num_workers")
    assert (finding.kind, finding.line, finding.after) == (Kind.CHANGE, line, after)


def test_an_attribute_set_in_its_class_is_followed_there_not_to_an_option_of_its_name():
    result = check(
        JOB + PARSER + "parser.add_argument('--workers', type=int, default=8)\n"
        "class Data:\n    def __init__(self, root, workers=0):\n"
        "        self.workers = workers\n"
        "        self.loader = DataLoader(root, num_workers=self.workers)\n"
        "data = Data('/data')\n" + TRAINS
    )
    assert one(result, "dataloader_num_workers").before == (
        "    def __init__(self, root, workers=0):"
    )


def test_an_option_typed_int_reading_another_variable_is_asked_about_not_called_a_string():
    result = check(
        JOB + PARSER + "parser.add_argument('--workers', type=int, "
        "default=os.environ.get('LOADER_WORKERS', 4))\n"
        "args = parser.parse_args()\nloader = DataLoader(ds, num_workers=args.workers)\n" + TRAINS
    )
    assert one(result, "dataloader_num_workers").kind is Kind.QUESTION


def test_a_default_that_a_call_replaces_is_still_asked_about():
    result = check(
        JOB + "class Data:\n    def __init__(self, root, workers=0):\n"
        "        self.loader = DataLoader(root, num_workers=workers)\n"
        "data = Data('/data', 8)\n" + TRAINS
    )
    assert one(result, "dataloader_num_workers").kind is Kind.QUESTION


def test_the_script_checkers_advice_on_workers_is_code_this_checker_accepts():
    """The script checker tells a job with too few CPUs to start as many DataLoader workers,
    with a line of Python: this checker must not flag that very line."""
    script = job("--gpus-per-node=4", "--cpus-per-task=1")
    fix = note(checked(script), "too_few_cpus").fix
    advice = re.search(r"\((num_workers=.+)\)\.$", fix)
    assert advice, fix
    loader = f"loader = DataLoader(ds, {advice.group(1)}, pin_memory=True)\n"
    result = check(JOB + loader + TRAINS)
    assert not found(result, "dataloader_num_workers")
    hf = f"TrainingArguments('out', dataloader_{advice.group(1)})\n"
    result = check(JOB + "from transformers import TrainingArguments\n" + hf)
    assert not found(result, "dataloader_num_workers")


# --- issue 41: program-wide fixes where they hold for the whole run ----------------------------

SPAWNED = """\
import torch
import torch.multiprocessing as mp
from torch import nn


def worker(rank, args):
    torch.cuda.set_device(rank)
    if args.arch == "wide":
        model = nn.Linear(64, 64)
    else:
        model = nn.Linear(64, 8)
    model = model.cuda(rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in range(3):
        model(x).sum().backward()
        optimizer.step()


def main():
    mp.spawn(worker, args=(None,), nprocs=4)


if __name__ == "__main__":
    main()
"""


def test_a_process_wide_setting_goes_at_the_start_of_the_worker_each_process_runs():
    tf32 = one(check(SPAWNED), "tf32")
    assert tf32.line == 7
    assert tf32.after == (
        "    torch.backends.cuda.matmul.allow_tf32 = True\n    torch.cuda.set_device(rank)"
    )


def test_a_model_fix_goes_after_the_model_is_moved_and_outside_the_branch_that_builds_it():
    compiled = one(check(SPAWNED), "torch_compile")
    assert compiled.line == 12
    assert compiled.after == "    model = model.cuda(rank)\n    model = torch.compile(model)"
    moved_in_a_branch = SPAWNED.replace("    model = model.cuda(rank)\n", "")
    compiled = one(check(moved_in_a_branch), "torch_compile")
    assert compiled.line == 12 and compiled.after.startswith("    model = torch.compile(model)\n")


@pytest.mark.parametrize(
    "setting",
    [
        "    if torch.cuda.is_available():\n        torch.backends.cuda.matmul.allow_tf32 = True\n",
        "    setup()\n",  # a helper that sets it, called unconditionally
    ],
)
def test_a_setting_made_on_every_gpu_run_is_not_questioned(setting):
    program = SPAWNED.replace("    torch.cuda.set_device(rank)\n", setting)
    program += "\n\ndef setup():\n    torch.backends.cuda.matmul.allow_tf32 = True\n"
    assert not found(check(program), "tf32")


def test_a_setting_made_under_a_flag_is_moved_to_the_start_with_its_line_named():
    program = SPAWNED.replace(
        "        model = nn.Linear(64, 64)\n",
        "        torch.backends.cuda.matmul.allow_tf32 = True\n        model = nn.Linear(64, 64)\n",
    )
    tf32 = one(check(program), "tf32")
    assert 'only under `args.arch == "wide"` (line 8)' in tf32.message
    assert tf32.line == 7 and "allow_tf32 = True" in tf32.after.split("\n")[0]


def test_a_recurrent_model_trained_beside_a_convolution_gets_no_channels_last():
    program = """\
    import torch
    from torch import nn

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(8, 8)

    features = nn.Conv2d(3, 8, 3).cuda().eval()
    decoder = Decoder().cuda()
    optimizer = torch.optim.Adam(decoder.parameters())
    for x in batches:
        decoder(features(x.cuda())).sum().backward()
        optimizer.step()
    """
    result = check(program)
    assert not found(result, "channels_last") and found(result, "cudnn_benchmark")
    assert one(result, "torch_compile").after.endswith("decoder = torch.compile(decoder)")
