"""check_code: the cluster's training-code rules applied to a program's files. Reads each file
once (within the limits), applies every rule, then the cluster's settings of the rules (off,
reworded, another source) and what was measured, and sorts: changes by impact, then questions,
then what PyTorch already does by default."""

import gc
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace

from guidance.engine.code_check.configs import ConfigFile, NotYaml, is_config, read_config
from guidance.engine.code_check.context import Project
from guidance.engine.code_check.findings import CodeCheck, CodeFinding, Kind, Measured, Unreadable
from guidance.engine.code_check.program import NotPython, Program, parse_program
from guidance.engine.code_check.rules import LOCATED, PROGRAM_WIDE, REPORTS
from guidance.engine.types import Cluster

MAX_FILE_BYTES = 500_000
MAX_FILES = 40
MAX_TOTAL_BYTES = 2_000_000

_KIND_ORDER = {Kind.CHANGE: 0, Kind.QUESTION: 1, Kind.DEFAULT: 2}
logger = logging.getLogger(__name__)


def check_code(
    files: Mapping[str, str | bytes],
    cluster: Cluster,
    entry: str | None = None,
    measured: Measured | None = None,
    cpus_per_gpu: int | None = None,
) -> CodeCheck:
    """Never raises: files it cannot read are in `unreadable`, the others are still checked."""
    with _collector_paused():
        return _check(files, cluster, entry, measured, cpus_per_gpu)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the check: the parser makes a hundred thousand
    objects for a large program, none of them in a cycle, and the collector would walk them
    again and again for nothing (a tenth of a check's time). Left as found: on only if it was."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _check(
    files: Mapping[str, str | bytes],
    cluster: Cluster,
    entry: str | None,
    measured: Measured | None,
    cpus_per_gpu: int | None,
) -> CodeCheck:
    files = files if isinstance(files, Mapping) else {}
    order = _order(files, entry)
    programs, configs, unreadable = _read(files, order)
    parsed = {f.name for f in [*programs, *configs]}
    read = tuple(name for name in order if name in parsed)
    if not programs:
        return CodeCheck(unreadable=tuple(unreadable), files=read)
    cpus = cpus_per_gpu if _positive(cpus_per_gpu) else cluster.policy.cpus_per_gpu
    project = Project(programs, cpus, measured, configs)
    findings: list[CodeFinding] = []
    off = {setting.rule for setting in cluster.code_rules if not setting.enabled}
    located = [rule for rule in LOCATED if not _switched_off(rule, off)]
    program_wide = [rule for rule in PROGRAM_WIDE if not _switched_off(rule, off)]
    active = _safe(lambda: project.trains or project.evaluates, "program facts", order[0])
    # Every located rule reads every file: a model file, a sampling helper or an attention
    # module sent alone has the same lines as one sent with its loop, which may simply live
    # in a module that was not sent. Whether anything trains is said beside the findings.
    for program in programs:
        values = project.values[program.name]
        for rule in located:
            findings += _run(rule, program.name, project, program, values)
    if active:
        for rule in program_wide:
            findings += _run(rule, project.entry.name, project)
    findings = _as_cluster_says(findings, cluster, measured)
    entry_name = order[0]
    findings.sort(
        key=lambda f: (
            _KIND_ORDER[f.kind],
            f.impact.rank,
            f.file != entry_name,
            f.file,
            f.line,
            f.column,
        )
    )
    return CodeCheck(tuple(findings), tuple(unreadable), read, trains_or_evaluates=active)


def _switched_off(rule: Callable, off: set[str]) -> bool:
    """Every finding the rule could make would be dropped: not worth reading the code for."""
    reports = REPORTS.get(rule)
    return bool(reports) and reports <= off


def _positive(number: object) -> bool:
    return isinstance(number, int) and not isinstance(number, bool) and number > 0


def _order(files: Mapping, entry: str | None) -> list[str]:
    names = [name for name in files if isinstance(name, str)]
    if not names:
        return []
    python = [name for name in names if not is_config(name)]
    first = entry if isinstance(entry, str) and entry in files else (python or names)[0]
    return [first, *sorted(n for n in names if n != first)]


def _read(
    files: Mapping, order: list[str]
) -> tuple[list[Program], list[ConfigFile], list[Unreadable]]:
    """The Python files that parse, the YAML configs that parse, and why the others cannot
    be read; every file counts towards the limits."""
    programs: list[Program] = []
    configs: list[ConfigFile] = []
    unreadable: list[Unreadable] = []
    total = 0
    for index, name in enumerate(order):
        if index >= MAX_FILES:
            unreadable.append(
                Unreadable(name, f"{name} was not read: a check reads at most {MAX_FILES} files.")
            )
            continue
        text, problem, size = _text(name, files[name])
        if problem:
            unreadable.append(Unreadable(name, problem))
            continue
        total += size
        if total > MAX_TOTAL_BYTES:
            unreadable.append(
                Unreadable(
                    name,
                    f"{name} was not read: the files together are over "
                    f"{MAX_TOTAL_BYTES // 1_000_000} MB.",
                )
            )
            continue
        if is_config(name):
            try:
                configs.append(read_config(name, text))
            except NotYaml as error:
                unreadable.append(Unreadable(name, _not_yaml(name, error), error.line))
            continue
        try:
            programs.append(parse_program(name, text))
        except NotPython as error:
            unreadable.append(Unreadable(name, _not_python(name, error), error.line))
    return programs, configs, unreadable


def _not_yaml(name: str, error: NotYaml) -> str:
    if error.line is None:
        return f"{name} could not be read as YAML: {error.reason}."
    return f"{name} is not a YAML config: {error.reason} (line {error.line})."


def _not_python(name: str, error: NotPython) -> str:
    if error.line is None:
        return f"{name} could not be read: {error.reason}."
    return f"{name} is not Python: {error.reason} (line {error.line})."


def _text(name: str, content: object) -> tuple[str, str, int]:
    """(text, why it cannot be read or "", its size in bytes)."""
    source = "a YAML config" if is_config(name) else "Python source"
    if isinstance(content, str):
        if "\x00" in content:
            return "", f"{name} is a binary file, not {source}.", 0
        try:
            raw = content.encode()
        except UnicodeEncodeError:
            return "", f"{name} is not UTF-8 text.", 0
    elif isinstance(content, (bytes, bytearray)):
        raw = bytes(content)
    else:
        return "", f"{name} has no text.", 0
    if len(raw) > MAX_FILE_BYTES:
        return "", f"{name} is over {MAX_FILE_BYTES // 1000} kB: too large to check.", 0
    if isinstance(content, str):
        return content, "", len(raw)
    if b"\x00" in raw:
        return "", f"{name} is a binary file, not {source}.", 0
    try:
        return raw.decode("utf-8-sig"), "", len(raw)
    except UnicodeDecodeError:
        return "", f"{name} is not UTF-8 text: {source} is read as UTF-8.", 0


def _run(rule: Callable, file: str, *args) -> list[CodeFinding]:
    """One rule on one file (or the program): odd code that trips a rule leaves that rule
    quiet there, never the check."""
    try:
        return list(rule(*args))
    except Exception:  # RecursionError included: a rule is not worth a failed check
        logger.warning("code check rule %s failed on %s", rule.__name__, file, exc_info=True)
        return []


def _safe(question: Callable[[], bool], what: str, file: str) -> bool:
    try:
        return question()
    except Exception:
        logger.warning("code check %s failed on %s", what, file, exc_info=True)
        return False


def _measured(measured: Measured | None) -> str:
    """The sentence each change ends with; "" where nothing (or nothing sensible) was measured."""
    if measured is None:
        return ""
    try:
        return f"Measured on this job: {measured}."
    except (TypeError, ValueError):  # a measurement with a missing figure says nothing
        return ""


def _as_cluster_says(
    findings: Iterable[CodeFinding], cluster: Cluster, measured: Measured | None
) -> list[CodeFinding]:
    """The cluster's settings applied (a rule off, its wording, its source), then what was
    measured said after each change; the same finding twice kept once."""
    settings = {setting.rule: setting for setting in cluster.code_rules}
    said = _measured(measured)
    kept: list[CodeFinding] = []
    seen: set[tuple] = set()
    for finding in findings:
        key = (finding.rule, finding.kind, finding.file, finding.line, finding.column)
        setting = settings.get(finding.rule)
        if key in seen or (setting is not None and not setting.enabled):
            continue
        seen.add(key)
        changes: dict[str, object] = {}
        if setting is not None and setting.wording:
            changes["message"] = setting.wording
        if setting is not None and setting.source is not None:
            changes["source"] = setting.source
        if said and finding.kind is Kind.CHANGE:
            message = str(changes.get("message", finding.message)).rstrip()
            changes["message"] = f"{message} {said}"
        kept.append(replace(finding, **changes) if changes else finding)
    return kept
