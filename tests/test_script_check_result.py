"""How a script check is shown (jobs/compose/check_result.py): the lines marked, the diff read
line by line. Built from Findings directly, whatever today's rules say."""

from guidance.engine.script_check import Finding, Severity
from jobs.compose.check_result import diff_lines, listing


def _finding(code: str, severity: Severity, *lines: int) -> Finding:
    return Finding(code, f"{code} message", severity=severity, lines=lines)


def test_the_listing_marks_each_line_with_its_worst_finding():
    text = "#!/bin/bash\n#SBATCH --mem=1T\n#SBATCH --gres=gpu:9\npython train.py\n"
    lines = listing(
        text,
        [
            _finding("memory", Severity.WASTES, 2),
            _finding("gres", Severity.FAILS, 3),
            _finding("gres_tip", Severity.ADVICE, 3),
        ],
    )
    assert [(line.number, line.text) for line in lines] == list(
        enumerate(text.splitlines(), 1)
    )  # the break ending the last line starts none
    assert [line.severity for line in lines] == [None, Severity.WASTES, Severity.FAILS, None]
    assert lines[2].codes == ("gres", "gres_tip")


def test_the_listing_numbers_lines_as_the_checker_does_whatever_the_breaks():
    lines = listing("#!/bin/bash\r\necho a\recho b\n\n", [])
    assert [line.text for line in lines] == ["#!/bin/bash", "echo a", "echo b", ""]


def test_the_diff_says_what_each_line_is():
    diff = (
        "--- job.sh (as pasted)\n+++ job.sh (fixed)\n@@ -1,3 +1,3 @@\n #!/bin/bash\n"
        "---mem=1T\n+#SBATCH --mem=32000M\n"
    )
    assert [(line.kind, line.text) for line in diff_lines(diff)] == [
        ("file", "--- job.sh (as pasted)"),
        ("file", "+++ job.sh (fixed)"),
        ("hunk", "@@ -1,3 +1,3 @@"),
        ("same", " #!/bin/bash"),
        ("removed", "---mem=1T"),  # a removed "--mem=1T", not a file name
        ("added", "+#SBATCH --mem=32000M"),
    ]
