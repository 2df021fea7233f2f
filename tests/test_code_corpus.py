"""Check my training code against a corpus of PyTorch programs in the styles people publish
(tests/code_corpus): plain loops, torchvision and timm, Lightning 1.x and 2.x, Hugging Face,
accelerate, DDP, inference and debugging scripts, and programs that follow all the advice. Each
program gets exactly the findings the rule contract calls for (expectations.py, written before
the checker was run): every one of them, at its line, and nothing else."""

import ast
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from guidance.engine import Cluster, Policy
from guidance.engine.code_check import CodeCheck, CodeFinding, check_code
from guidance.engine.code_check.catalogue import RULES
from guidance.engine.code_check.made_on_cpu import FACTORIES
from tests.code_corpus.expectations import EXPECTED

CORPUS = Path(__file__).parent / "code_corpus"
# The DGX cluster as the checker sees it: its published 16 CPUs per GPU.
DGX = Cluster(slug="dgx", name="DGX cluster", policy=Policy(cpus_per_gpu=16))
# Only reported with a measured job (peak memory), which the corpus does not give.
NEEDS_MEASUREMENT = {"batch_size"}
KINDS = {"change", "question", "default"}

Expected = tuple[str, str, str, int | None]


def program_files(name: str) -> dict[str, str]:
    """A single file as itself; a project folder as every .py and YAML config in it, by
    relative path."""
    path = CORPUS / name
    if path.is_file():
        return {name: path.read_text()}
    return {
        p.relative_to(path).as_posix(): p.read_text()
        for p in sorted(path.rglob("*"))
        if p.suffix in (".py", ".yaml", ".yml")
    }


def parses(file: str, text: str) -> None:
    """Raises SyntaxError (or yaml's error) where the file no longer reads as what it is."""
    if file.endswith((".yaml", ".yml")):
        yaml.safe_load(text)
    else:
        ast.parse(text)


def on_disk() -> set[str]:
    skip = {"expectations.py", "__init__.py"}
    files = {p.name for p in CORPUS.glob("*.py") if p.name not in skip}
    folders = {p.name for p in CORPUS.iterdir() if p.is_dir() and p.name[0] not in "_."}
    return files | folders


def key(finding: CodeFinding) -> Expected:
    return (finding.rule, str(finding.kind), finding.file, finding.line)


def compare(
    found: Iterable[CodeFinding], expected: set[Expected]
) -> tuple[list[Expected], list[CodeFinding]]:
    """What was expected and not found, and what was found and not expected. An expectation
    without a line matches one finding of its rule, kind and file wherever it is."""
    left = list(found)
    missing = []
    # Exact lines first, so that a line-free expectation cannot take a finding another needs.
    for want in sorted(expected, key=lambda e: e[3] is None):
        match = next(
            (f for f in left if key(f)[:3] == want[:3] and want[3] in (None, f.line)), None
        )
        if match is None:
            missing.append(want)
        else:
            left.remove(match)
    return missing, left


def describe(name: str, result: CodeCheck, missing: list[Expected], extra: list[CodeFinding]):
    lines = [f"{name}: the checker departs from the expectations"]
    lines += [
        f"  missing:    {rule} ({kind}) at {file}:{line}" for rule, kind, file, line in missing
    ]
    lines += [
        f"  unexpected: {f.rule} ({f.kind}) at {f.file}:{f.line}:{f.column}: {f.message}"
        for f in extra
    ]
    lines += [f"  unreadable: {u.file}: {u.message}" for u in result.unreadable]
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_it_says_exactly_what_the_contract_calls_for(name):
    expected = EXPECTED[name]
    result = check_code(program_files(name), DGX, entry=expected["entry"])
    missing, extra = compare(result.findings, expected["findings"])
    if missing or extra or result.unreadable:
        pytest.fail(describe(name, result, missing, extra), pytrace=False)


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if "afters" in EXPECTED[n]))
def test_a_program_wide_fix_lands_where_it_holds_for_the_whole_run(name):
    """At main's start for a process-wide setting, right after the trained model is built for a
    model-level fix: the after holds the line as the file would write it."""
    expected = EXPECTED[name]
    result = check_code(program_files(name), DGX, entry=expected["entry"])
    for rule, line in expected["afters"].items():
        afters = [f.after for f in result.findings if f.rule == rule]
        assert afters and line in afters[0].split("\n"), (name, rule, afters)


def test_the_expectations_describe_the_programs_that_are_there():
    assert set(EXPECTED) == on_disk()
    for name, expected in EXPECTED.items():
        files = program_files(name)
        assert expected["entry"] in files, name
        for rule, kind, file, line in expected["findings"]:
            assert rule in RULES and kind in KINDS, (name, rule, kind)
            assert file in files, (name, file)
            if line is not None:
                assert 1 <= line <= len(files[file].splitlines()), (name, file, line)


def test_the_corpus_covers_every_rule_and_sound_programs():
    assert len(EXPECTED) >= 20
    expected_rules = {f[0] for e in EXPECTED.values() for f in e["findings"]}
    assert expected_rules == set(RULES) - NEEDS_MEASUREMENT
    assert sum(not e["findings"] for e in EXPECTED.values()) >= 3


def test_every_after_replaces_exactly_the_lines_its_finding_names():
    """An editor (or an API client) replaces lines line..end_line with `after`: `before` is
    those lines as written, and the file with them replaced still parses."""
    checked = 0
    for name, expected in sorted(EXPECTED.items()):
        files = program_files(name)
        for finding in check_code(files, DGX, entry=expected["entry"]).findings:
            if not finding.after:
                continue
            lines = files[finding.file].split("\n")
            where = f"{name}: {finding.rule} at {finding.file}:{finding.line}"
            shown = "\n".join(lines[finding.line - 1 : finding.end_line])
            assert finding.before == shown, where
            changed = [*lines[: finding.line - 1], finding.after, *lines[finding.end_line :]]
            try:
                parses(finding.file, "\n".join(changed))
            except (SyntaxError, yaml.YAMLError) as error:
                pytest.fail(f"{where}: the file no longer parses: {error}", pytrace=False)
            checked += 1
    assert checked >= 50


def with_every_fix(text: str, findings: Iterable[CodeFinding]) -> str:
    """The file with every fix that has an `after` applied, from the bottom up; of fixes whose
    lines overlap (two keywords of one DataLoader), the lowest is taken and the others, which
    were written against the lines as they were, are left for the next pass."""
    lines = text.split("\n")
    taken_from = len(lines) + 1
    for finding in sorted(findings, key=lambda f: (f.line, f.end_line), reverse=True):
        if not finding.after or finding.end_line >= taken_from:
            continue
        lines[finding.line - 1 : finding.end_line] = finding.after.split("\n")
        taken_from = finding.line
    return "\n".join(lines)


def leading_whitespace_kinds(text: str) -> set[str]:
    return {
        "tab" if line[0] == "\t" else "space"
        for line in text.split("\n")
        if line[:1] in ("\t", " ") and line.strip()
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_applying_every_fix_of_a_program_leaves_it_parsing(name):
    """Fix after fix, as a user following all the advice would, until no fix is left that
    changes the files: each pass's files still parse, with the file's own indentation."""
    files = program_files(name)
    for _ in range(10):
        findings = check_code(files, DGX, entry=EXPECTED[name]["entry"]).findings
        changed = {}
        for file, text in files.items():
            fixed = with_every_fix(text, [f for f in findings if f.file == file])
            try:
                parses(file, fixed)
            except (SyntaxError, yaml.YAMLError) as error:
                pytest.fail(f"{name}: {file} with its fixes no longer parses: {error}")
            if leading_whitespace_kinds(text) == {"tab"}:
                assert leading_whitespace_kinds(fixed) == {"tab"}, f"{name}: {file} mixes"
            if fixed != text:
                changed[file] = fixed
        if not changed:
            return
        files = {**files, **changed}


def calls_given_a_device(text: str) -> Counter:
    return Counter(
        ast.unparse(node.func)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call) and any(k.arg == "device" for k in node.keywords)
    )


def test_a_tensor_fix_gives_device_only_to_torchs_factories():
    """device= added to a call that does not take it (torch.exp, a helper, a Python number)
    would raise: every call a created-then-moved fix gives a device makes a tensor."""
    checked = 0
    for name, expected in sorted(EXPECTED.items()):
        files = program_files(name)
        for finding in check_code(files, DGX, entry=expected["entry"]).findings:
            if finding.rule != "tensor_created_then_moved" or not finding.after:
                continue
            lines = files[finding.file].split("\n")
            lines[finding.line - 1 : finding.end_line] = [finding.after]
            added = calls_given_a_device("\n".join(lines)) - calls_given_a_device(
                files[finding.file]
            )
            assert added and set(added) <= FACTORIES, (name, finding.line, added)
            checked += 1
    assert checked >= 8
