"""Check my script against the corpus in tests/script_corpus: per script the findings it should
raise and did (hits), should and did not (misses), and raised though nothing calls for them (false
alarms), then the totals and the time per check.

The checker and the clusters' seeded facts are pure Python, so unlike the other benchmarks this one
sets up no Django and no database: it measures the check alone, as the corpus test runs it.
A finding is counted once per script and code, as the expectations are written. Codes a script
allows count neither way.
Usage: .venv/bin/python bench/script_check_corpus.py [runs per script]   (default 50)
"""

import statistics
import sys
import time
from pathlib import Path

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
ROOT = Path(__file__).resolve().parent.parent


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from tests.script_corpus_helpers import check, load_corpus

    cases = load_corpus()
    expected = hits = raised = alarms = allowed = noisy_sound = 0
    timings: list[float] = []
    width = max(len(case.name) for case in cases)
    print(f"{'script':{width}s} {'cluster':10s} {'hits':>5s} {'µs':>6s}  misses; false alarms")
    for case in cases:
        found = {n.code for n in check(case).notes}
        times = []
        for _ in range(RUNS):
            start = time.perf_counter()
            check(case)
            times.append((time.perf_counter() - start) * 1e6)
        timings += times
        expect, allow = set(case.expect), set(case.allow)
        hit, missed, wrong = found & expect, expect - found, found - expect - allow
        expected += len(expect)
        hits += len(hit)
        raised += len(hit) + len(wrong)
        alarms += len(wrong)
        allowed += len(found & allow - expect)
        noisy_sound += case.sound and bool(found)
        print(
            f"{case.name:{width}s} {case.cluster:10s} {len(hit):>2d}/{len(expect):<2d} "
            f"{statistics.median(times):6.0f}  {', '.join(sorted(missed)) or '-'}; "
            f"{', '.join(sorted(wrong)) or '-'}"
        )
    misses = expected - hits
    median = statistics.median(timings)
    totals = (
        ("scripts", len(cases)),
        ("sound scripts", sum(case.sound for case in cases)),
        ("expected findings", expected),
        ("hits", hits),
        ("misses", f"{misses} (catch rate {percent(hits, expected)})"),
        ("findings raised", f"{raised} (besides {allowed} allowed)"),
        ("false alarms", f"{alarms} ({percent(alarms, raised)} of findings raised)"),
        ("sound scripts with any finding", noisy_sound),
        ("time per check", f"median {median:.0f} µs (n={len(timings)})"),
    )
    print()
    for label, value in totals:
        print(f"{label:32s} {value}")


if __name__ == "__main__":
    main()
