"""The checkpoint warning (USR1 before the time limit) on the real cluster: it fits a short limit,
and a signal that comes before the program has started does not break the job."""

import pathlib
import time
import uuid

from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from tests.test_data_path_cluster import _form

HOME = pathlib.Path("/home/portaltest")


def _compose(data_path: str, results: str) -> str:
    form = ComposeForm(
        _form(data_path)
        | {
            "job_name": "ckpt",
            "hours": "0.1",
            "checkpointing": "on",
            "command": 'sleep 2; echo saved > "$CHECKPOINT_DIR/last.ckpt"',
            "results_dir": results,
        }
    )
    composed = compose(form)
    assert composed is not None, form.errors
    return composed.script


def test_a_usr1_before_the_program_starts_leaves_the_job_running(devcluster, local_login):
    run = HOME / f"signal-{uuid.uuid4().hex[:8]}"
    (run / "data").mkdir(parents=True)
    (run / "data" / "x.txt").write_text("x\n")
    # rsync, as the script stages the data, delivers Slurm's USR1 to the batch shell first: the
    # signal arrives after the trap is set and before the program has started.
    (run / "bin").mkdir()
    (run / "bin" / "rsync").write_text(
        f'#!/bin/sh\nkill -USR1 "$PPID"\ntouch {run}/usr1-sent\nexec /usr/bin/rsync "$@"\n'
    )
    (run / "bin" / "rsync").chmod(0o755)
    script = _compose(f"$HOME/{run.name}/data", f"$HOME/{run.name}/results")
    # A 6-minute limit gets its warning 90 s before the end, not 300 s (at the start).
    assert "#SBATCH --time=0-00:06:00" in script
    assert "#SBATCH --signal=B:USR1@90" in script
    (run / "job.sbatch").write_text(script)
    devcluster.on_node("a100-1", f"chown -R portaltest: {run}")

    submitted = devcluster.ssh(
        f"mkdir -p portal-jobs/ckpt && sbatch --parsable "
        f"--export=ALL,PATH={run}/bin:/usr/bin:/bin {run}/job.sbatch"
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        state = devcluster.ssh(f"sacct -n -P -X -j {job_id} -o State,ExitCode").stdout.strip()
        if state and state.split("|")[0] not in ("PENDING", "RUNNING", "COMPLETING"):
            break
        time.sleep(1)
    stderr = (HOME / "portal-jobs" / "ckpt" / f"slurm-{job_id}.err").read_text()
    assert state == "COMPLETED|0:0", stderr
    assert "unbound variable" not in stderr
    assert (run / "usr1-sent").exists(), "the signal was never sent: the test tested nothing"
    assert (run / "results" / "checkpoints" / "last.ckpt").read_text() == "saved\n"
