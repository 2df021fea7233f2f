"""bench/code_check.py runs with a tiny size and prints the figures it is there to print (as
tests/test_bench_scripts.py does for the other benchmarks): at this size they mean nothing, the
default 2,000-line run is the measurement."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NUMBER = r"\d+(?:\.\d+)?"


def test_the_code_check_bench_prints_its_times_and_the_parsers_share():
    result = subprocess.run(
        [sys.executable, "bench/code_check.py", "2", "200"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"^program +\d+ lines", out, re.MULTILINE)
    for label in ("check_code median", "check_code worst"):
        assert re.search(rf"^{label} +{NUMBER} ms$", out, re.MULTILINE), label
    assert re.search(rf"^ast\.parse median +{NUMBER} ms \(\d+% of a check\)", out, re.MULTILINE)
    assert re.search(r"^by rule +.*dataloader_num_workers \d+", out, re.MULTILINE)
