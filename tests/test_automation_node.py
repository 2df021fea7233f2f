"""The wrapper under a real sshd: the dev cluster's automation node takes the test user's key only
with restrict, from= and docker/cluster-side/portal-remote as its forced command, and no SFTP.
What the portal sends runs against the real Slurm (submit with the script on standard input,
squeue, sacct, scancel, the job folder's files, portal-read); anything else, a terminal and SFTP
are refused.
"""

import shlex
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from jobs.slurm.sacct import parse_sacct, sacct_argv
from jobs.slurm.squeue import parse_squeue, squeue_argv

REFUSED = 97  # portal-remote's exit status for a command it does not run
SCRIPT = "#!/bin/bash\n#SBATCH --time=5\nsleep 120\n"


@pytest.fixture
def automation(devcluster):
    if not devcluster.automation_port:
        pytest.fail("the running dev cluster predates its automation node: run down, then up")

    def run(argv: list[str] | str, stdin: str | None = None, *options: str):
        command = argv if isinstance(argv, str) else shlex.join(argv)
        return devcluster.openssh(devcluster.automation_port, [*options, command], stdin=stdin)

    return run


def test_a_submission_with_the_script_on_stdin_is_queued_read_and_cancelled(devcluster, automation):
    tag = f"portal:{uuid.uuid4()}"
    since = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=2)
    submitted = automation(["sbatch", "--parsable", f"--comment={tag}"], stdin=SCRIPT)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        queue = automation(squeue_argv(devcluster.user))
        assert queue.returncode == 0, queue.stderr
        assert int(job_id) in {job.job_id.job_id for job in parse_squeue(queue.stdout)}
        # Accounting hears of a job a moment after the controller does.
        deadline = time.monotonic() + 15
        while True:
            accounted = automation(sacct_argv(devcluster.user, since, [job_id]))
            assert accounted.returncode == 0, accounted.stderr
            found = [job.job_id_raw for job in parse_sacct(accounted.stdout)]
            if found or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert found == [int(job_id)]
    finally:
        cancelled = automation(["scancel", job_id])
    assert cancelled.returncode == 0, cancelled.stderr


def test_the_job_folders_files_are_read_and_nothing_outside(devcluster, automation):
    folder = f"portal-jobs/auto-{uuid.uuid4().hex[:8]}"
    assert automation(["mkdir", "-p", folder]).returncode == 0
    try:
        devcluster.ssh(f"printf 'line one\\nline two\\n' >{folder}/slurm-1.out")
        tail = automation(["tail", "-c", "9", f"{folder}/slurm-1.out"])
        assert (tail.returncode, tail.stdout) == (0, "line two\n")
        past = automation(["portal-read", "100", f"{folder}/slurm-1.out", "9"])
        assert (past.returncode, past.stdout) == (0, "9 9\nline two\n")
        outside = automation(["tail", "-c", "9", ".ssh/authorized_keys"])
        assert outside.returncode == REFUSED
    finally:
        devcluster.ssh(f"rm -rf {folder}")


@pytest.mark.parametrize(
    "command",
    ["bash -c id", "cat .bashrc", "squeue --user=root", "sbatch --wrap=id", "sinfo; id", "id"],
)
def test_anything_else_is_refused_with_one_line(automation, command):
    refused = automation(command)
    assert refused.returncode == REFUSED
    assert refused.stderr.startswith("portal-remote: refused:")
    assert refused.stderr.count("\n") == 1


def test_a_terminal_and_sftp_are_refused(devcluster, automation):
    # The portal's own command, asking for a terminal: sshd gives none (restrict, PermitTTY no).
    terminal = automation(squeue_argv(devcluster.user), None, "-tt")
    assert "PTY allocation request failed" in terminal.stderr
    sftp = subprocess.run(
        [
            "sftp",
            "-b",
            "-",
            "-i",
            str(devcluster.key),
            "-P",
            str(devcluster.automation_port),
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={devcluster.known_hosts}",
            f"{devcluster.user}@{devcluster.host}",
        ],
        input="ls\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert sftp.returncode != 0
