"""Check my training code against the corpus in tests/code_corpus: per program the findings it
should raise and did (hits), should and did not (misses), and raised though nothing calls for
them (false alarms); the fixes whose `after` leaves the file unparsable, alone or applied all
together (broken fixes); then the totals and the time per check.

Pure Python like the checker: no Django, no database. A finding is matched as the corpus test
matches it (rule, kind, file, line; the program-wide rules by file alone).
Usage: .venv/bin/python bench/code_check_corpus.py [runs per program]   (default 20)
"""

import ast
import statistics
import sys
import time
from pathlib import Path

import yaml

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
ROOT = Path(__file__).resolve().parent.parent


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def parses(name: str, text: str) -> bool:
    """The file still reads as what it is: Python, or for a .yaml/.yml config, YAML."""
    try:
        if name.endswith((".yaml", ".yml")):
            yaml.safe_load(text)
        else:
            ast.parse(text)
    except (SyntaxError, yaml.YAMLError):  # TabError included
        return False
    return True


def broken_fixes(files: dict[str, str], findings) -> tuple[int, int]:
    """(fixes whose after, put in place of its lines, leaves the file unparsable;
    files that do not parse with all their fixes applied)."""
    from tests.test_code_corpus import with_every_fix

    alone = 0
    for finding in findings:
        if finding.after:
            lines = files[finding.file].split("\n")
            lines[finding.line - 1 : finding.end_line] = [finding.after]
            alone += not parses(finding.file, "\n".join(lines))
    together = sum(
        not parses(name, with_every_fix(text, [f for f in findings if f.file == name]))
        for name, text in files.items()
    )
    return alone, together


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from guidance.engine.code_check import check_code
    from tests.code_corpus.expectations import EXPECTED
    from tests.test_code_corpus import DGX, compare, program_files

    expected_total = hits = raised = alarms = fixes = broken = broken_files = noisy_sound = 0
    timings: list[float] = []
    width = max(map(len, EXPECTED))
    print(f"{'program':{width}s} {'hits':>5s} {'ms':>6s}  misses; false alarms; broken fixes")
    for name, expected in sorted(EXPECTED.items()):
        files = program_files(name)
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            result = check_code(files, DGX, entry=expected["entry"])
            times.append((time.perf_counter() - start) * 1e3)
        timings += times
        missing, extra = compare(result.findings, expected["findings"])
        hit = len(expected["findings"]) - len(missing)
        alone, together = broken_fixes(files, result.findings)
        expected_total += len(expected["findings"])
        hits += hit
        raised += hit + len(extra)
        alarms += len(extra)
        fixes += sum(bool(f.after) for f in result.findings)
        broken += alone
        broken_files += together
        noisy_sound += not expected["findings"] and bool(result.findings)
        shown_missing = ", ".join(f"{r}@{f}:{line}" for r, _, f, line in sorted(missing, key=str))
        shown_extra = ", ".join(f"{f.rule}@{f.file}:{f.line}" for f in extra)
        print(
            f"{name:{width}s} {hit:>2d}/{len(expected['findings']):<2d} "
            f"{statistics.median(times):6.1f}  {shown_missing or '-'}; {shown_extra or '-'}; "
            f"{alone + together or '-'}"
        )
    totals = (
        ("programs", len(EXPECTED)),
        ("sound programs", sum(not e["findings"] for e in EXPECTED.values())),
        ("expected findings", expected_total),
        ("hits", hits),
        ("misses", f"{expected_total - hits} (catch rate {percent(hits, expected_total)})"),
        ("findings raised", raised),
        ("false alarms", f"{alarms} ({percent(alarms, raised)} of findings raised)"),
        ("sound programs with any finding", noisy_sound),
        ("fixes with an after", fixes),
        ("broken fixes", f"{broken} alone, {broken_files} files with all fixes applied"),
        ("time per check", f"median {statistics.median(timings):.1f} ms (n={len(timings)})"),
    )
    print()
    for label, value in totals:
        print(f"{label:32s} {value}")


if __name__ == "__main__":
    main()
