"""docker/cluster-side/portal-remote, the forced command of the portal's key on an automation node:
run as sshd would run it, with the portal's command line in SSH_ORIGINAL_COMMAND.

The commands it lets through are built with the portal's own argv builders, so that these tests
fail when the portal starts sending something the wrapper would refuse."""

import ast
import importlib.machinery
import importlib.util
import os
import pwd
import shlex
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from jobs.cluster.remote import OUTPUT_CAP, STOP_TAIL_BYTES, tag
from jobs.gpu.sample_files import file_name
from jobs.models import Job
from jobs.slurm.free_gpus import FREE_GPUS_ARGV
from jobs.slurm.nodes import NODES_ARGV, PARTITIONS_ARGV
from jobs.slurm.pending import PENDING_ARGV
from jobs.slurm.sacct import sacct_argv
from jobs.slurm.sbatch import TEST_ONLY_ARGV
from jobs.slurm.squeue import squeue_argv

WRAPPER = Path(__file__).resolve().parent.parent / "docker" / "cluster-side" / "portal-remote"
REFUSED = 97
ME = pwd.getpwuid(os.getuid()).pw_name
JOB_DIR = Job(name="train-1.b").job_dir
SLURM = ("sbatch", "squeue", "sacct", "sinfo", "scontrol", "scancel")
# A fake Slurm command: prints its name, TZ, its arguments one a line, then its stdin (sbatch).
FAKE_SLURM = '#!/bin/sh\nprintf "%s\\n" "$(basename "$0")" "TZ=${TZ:-}" "$@"\ncat\n'


@pytest.fixture
def fake_slurm(tmp_path: Path) -> Path:
    """FAKE sbatch, squeue, sacct, sinfo, scontrol and scancel that print what they were given.
    The real ones run behind the wrapper on the dev cluster's automation node, in the issue's
    next part; mkdir, tail and find are the real coreutils and findutils here."""
    folder = tmp_path / "fake-slurm"
    folder.mkdir()
    for name in SLURM:
        program = folder / name
        program.write_text(FAKE_SLURM)
        program.chmod(0o755)
    return folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    (folder / JOB_DIR).mkdir(parents=True)
    return folder


def wrapper(home: Path, command: str | None, fakes: Path | None = None, stdin: str = "", **env):
    return _run(home, command, fakes, stdin, env, text=True)


def wrapper_bytes(home: Path, command: str) -> subprocess.CompletedProcess:
    """The wrapper's answer as bytes: portal-read frames bytes by their count."""
    return _run(home, command, None, b"", {}, text=False)


def _run(home, command, fakes, stdin, env, *, text: bool) -> subprocess.CompletedProcess:
    variables = {"HOME": str(home), "PATH": f"{fakes or '/nonexistent'}:/usr/bin:/bin", **env}
    if command is not None:
        variables["SSH_ORIGINAL_COMMAND"] = command
    return subprocess.run(
        [sys.executable, WRAPPER],
        env=variables,
        input=stdin,
        capture_output=True,
        text=text,
        cwd="/",
        check=False,
    )


def assert_refused(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == REFUSED, result
    assert result.stdout == ""
    assert result.stderr.startswith("portal-remote: refused: ")
    assert result.stderr.count("\n") == 1


def ran(argv: list[str]) -> list[str]:
    """What a fake prints for `argv`: its name, TZ (set by the portal's `env TZ=UTC`), its args."""
    in_utc = argv[:2] == ["env", "TZ=UTC"]
    program, *args = argv[2:] if in_utc else argv
    return [program, f"TZ={'UTC' if in_utc else ''}", *args]


# -- what the portal sends passes, exactly as sent ---------------------------------------------

PORTAL_SLURM_COMMANDS = {
    "squeue of the user's jobs": squeue_argv(ME),
    "squeue of the pending queue": PENDING_ARGV,
    "sacct of a window": sacct_argv(ME, datetime(2026, 11, 22, 4, 5, 6)),
    "sacct of named jobs": sacct_argv(ME, datetime(2026, 11, 22), ["4121", "4122_3"]),
    "sinfo of free GPUs": FREE_GPUS_ARGV,
    "sinfo of nodes": NODES_ARGV,
    "scontrol of partitions": PARTITIONS_ARGV,
    "scancel": ["scancel", "4121"],
    "sbatch version": ["sbatch", "--version"],
}


@pytest.mark.parametrize("argv", PORTAL_SLURM_COMMANDS.values(), ids=PORTAL_SLURM_COMMANDS.keys())
def test_it_passes_the_portals_slurm_commands(home, fake_slurm, argv):
    result = wrapper(home, shlex.join(argv), fake_slurm)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ran(argv)


def test_it_passes_a_submission_with_the_script_on_stdin(home, fake_slurm):
    job = SimpleNamespace(tag=uuid.uuid4())
    argv = ["sbatch", "--parsable", f"--comment={tag(job)}"]  # remote.SUBMIT's sbatch
    result = wrapper(home, shlex.join(argv), fake_slurm, stdin="#!/bin/bash\nhostname\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [*ran(argv), "#!/bin/bash", "hostname"]


def test_it_passes_a_test_only_with_the_script_on_stdin(home, fake_slurm):
    result = wrapper(home, shlex.join(TEST_ONLY_ARGV), fake_slurm, stdin="#!/bin/bash\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [*ran(TEST_ONLY_ARGV), "#!/bin/bash"]


@pytest.mark.parametrize("dashes", [[], ["--"]])
def test_it_makes_a_job_folder(home, dashes):
    folder = Job(name="new-job").job_dir
    result = wrapper(home, shlex.join(["mkdir", "-p", *dashes, folder]))
    assert result.returncode == 0, result.stderr
    assert (home / folder).is_dir()


def test_it_makes_the_jobs_root_with_the_first_job_folder(tmp_path):
    result = wrapper(tmp_path, shlex.join(["mkdir", "-p", JOB_DIR]))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / JOB_DIR).is_dir()


@pytest.mark.parametrize("cap", [OUTPUT_CAP, STOP_TAIL_BYTES])
def test_it_reads_the_tail_of_a_job_output(home, cap):
    path = f"{JOB_DIR}/slurm-4121.out"
    (home / path).write_bytes(b"x" * cap + b"the end\n")
    result = wrapper(home, shlex.join(["tail", "-c", str(cap), path]))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "x" * (cap - 8) + "the end\n"


def test_it_reads_many_files_past_their_offsets_in_one_command(home):
    grown = f"{JOB_DIR}/{file_name('4121', 'gpu-a100-1')}"
    replaced = f"{JOB_DIR}/{file_name('4122_3', 'node-1.local')}"
    (home / grown).write_bytes(b"0123456789")
    (home / replaced).write_bytes(b"abc")
    missing = f"{JOB_DIR}/gpu-9.n.jsonl"
    argv = ["portal-read", "4", grown, "3", replaced, "7", missing, "0"]
    result = wrapper_bytes(home, shlex.join(argv))
    assert result.returncode == 0, result.stderr
    # 4 bytes past 3; a file now shorter than its offset from 0 again; one that is not there.
    assert result.stdout == b"3 4\n3456" + b"0 3\nabc" + b"- 0\n"


def test_it_lists_a_job_folder_with_sizes(home):
    (home / JOB_DIR / "slurm-4121.out").write_text("abc")
    argv = [*["find", JOB_DIR, "-mindepth", "1", "-maxdepth", "1"], "-printf", "%s %f\\n"]
    result = wrapper(home, shlex.join(argv))
    assert (result.returncode, result.stdout) == (0, "3 slurm-4121.out\n")


# -- everything else is refused ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["rm -rf ~", "bash", "bash -i", "python3 -c 'print(1)'", "env"])
def test_it_refuses_a_command_not_on_the_list(home, fake_slurm, command):
    assert_refused(wrapper(home, command, fake_slurm))


NOT_THE_PORTALS = [
    f"squeue --user={ME}x",
    "squeue --user=not-" + ME,
    f"squeue -u {ME}",
    "squeue --noheader --noheader",
    "squeue --states=all --json",
    "sacct --allusers",
    "sacct --starttime=yesterday",
    "sacct --endtime=2026-01-01",
    "sacct --jobs=all",
    f"sacct --user={ME} --parsable2 --duplicates",
    "scancel --user=" + ME,
    "scancel 4121 4122",
    "scancel --signal=KILL 4121",
    "sbatch --wrap=hostname",
    "sbatch --export=ALL,LD_PRELOAD=/tmp/x.so",
    "sbatch job.sh",
    "sbatch --parsable --comment=other",
    "sbatch --parsable -",
    "sinfo --all",
    "scontrol show job",
    "scontrol update jobid=1 timelimit=1",
    "env TZ=UTC mkdir -p portal-jobs/a",
    "env LD_PRELOAD=/tmp/x.so squeue",
    "mkdir portal-jobs/a",
    "mkdir -p -m 777 portal-jobs/a",
    "mkdir -p portal-jobs/a portal-jobs/b",
    "tail -n 10 portal-jobs/a/x",
    "tail -f portal-jobs/a/x",
    "tail -c 10 portal-jobs/a/x portal-jobs/a/y",
    "stat portal-jobs/a/x",
    "stat -c %n portal-jobs/a/x",
    "dd if=portal-jobs/a/x of=portal-jobs/a/y",
    "dd if=portal-jobs/a/x iflag=skip_bytes,count_bytes skip=3 count=4",
    "find portal-jobs/a -delete",
    "portal-read 10 portal-jobs/a/x",
    "portal-read ten portal-jobs/a/x 0",
    "portal-read 10 portal-jobs/a/x -1",
    "portal-read 10 portal-jobs/a 0",
    "find portal-jobs/a -mindepth 1 -maxdepth 1 -printf %p",
]


@pytest.mark.parametrize("command", NOT_THE_PORTALS)
def test_it_refuses_an_option_the_portal_does_not_send(home, fake_slurm, command):
    assert_refused(wrapper(home, command, fake_slurm))


@pytest.mark.parametrize(
    "argument",
    ["a;id", "a&&id", "a|id", "$(id)", "`id`", "a>b", "a<b", "(a)", "{a,b}", "a\\b", "a*", "a?"],
)
def test_it_refuses_shell_characters_in_an_argument(home, fake_slurm, argument):
    assert_refused(wrapper(home, shlex.join(["scancel", argument]), fake_slurm))
    assert_refused(wrapper(home, shlex.join(["tail", "-c", "1", f"{JOB_DIR}/{argument}"])))


def test_it_refuses_a_bar_outside_a_column_list(home, fake_slurm):
    assert_refused(wrapper(home, f"squeue '--user={ME}|x'", fake_slurm))


@pytest.mark.parametrize("character", ["\n", "\r", "\t", "\u2028", "\u2029", "\u0085", "é"])
def test_it_refuses_line_breaks_and_non_ascii(home, fake_slurm, character):
    assert_refused(wrapper(home, f"scancel 4121{character}", fake_slurm))
    assert_refused(wrapper(home, f"scancel '41{character}21'", fake_slurm))


def test_it_refuses_a_nul():
    # No environment variable can carry a NUL, so this asks the wrapper's own check.
    loader = importlib.machinery.SourceFileLoader("portal_remote", str(WRAPPER))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    with pytest.raises(module.Refused):
        module.allowed("scancel 4121\0; id")


@pytest.mark.parametrize(
    "path",
    ["../x", "portal-jobs/../.ssh/id_ed25519", "/etc/passwd", "portal-jobs/a/../../x", ".ssh/x"],
)
def test_it_refuses_a_path_outside_the_job_folders(home, path):
    assert_refused(wrapper(home, shlex.join(["tail", "-c", "10", path])))
    assert_refused(wrapper(home, shlex.join(["mkdir", "-p", path])))


def test_it_refuses_a_link_out_of_the_jobs_root(home):
    (home / JOB_DIR / "slurm-1.out").symlink_to("/etc/passwd")
    (home / "portal-jobs" / "elsewhere").symlink_to("/etc")
    assert_refused(wrapper(home, shlex.join(["tail", "-c", "10", f"{JOB_DIR}/slurm-1.out"])))
    assert_refused(wrapper(home, "portal-read 10 portal-jobs/elsewhere/passwd 0"))
    assert_refused(wrapper(home, "mkdir -p portal-jobs/elsewhere"))


def test_it_follows_a_jobs_root_that_is_itself_a_link(tmp_path):
    """A user may keep portal-jobs on project storage: the root's own link is theirs to make."""
    (tmp_path / "project" / "a").mkdir(parents=True)
    (tmp_path / "project" / "a" / "x").write_text("hello")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "portal-jobs").symlink_to(tmp_path / "project")
    result = wrapper(tmp_path / "home", "tail -c 5 portal-jobs/a/x")
    assert (result.returncode, result.stdout) == (0, "hello")


@pytest.mark.parametrize("command", ["internal-sftp", "/usr/lib/openssh/sftp-server"])
def test_it_refuses_sftp(home, command):
    result = wrapper(home, command)
    assert_refused(result)
    assert "SFTP" in result.stderr


def test_it_refuses_a_terminal(home, fake_slurm):
    assert_refused(wrapper(home, "sbatch --version", fake_slurm, SSH_TTY="/dev/pts/3"))


@pytest.mark.parametrize("command", [None, "", "   "])
def test_it_refuses_an_interactive_login(home, command):
    assert_refused(wrapper(home, command))


def test_it_refuses_an_unclosed_quote(home, fake_slurm):
    assert_refused(wrapper(home, "scancel '4121", fake_slurm))


def test_it_says_when_an_allowed_command_is_missing(home, tmp_path):
    result = wrapper(home, "sbatch --version", PATH=str(tmp_path))  # no sbatch on PATH
    assert result.returncode == 127
    assert result.stderr.startswith("portal-remote: sbatch: ")


def test_it_is_python_3_6():
    source = WRAPPER.read_text()
    ast.parse(source, feature_version=(3, 6))
    assert source.startswith("#!/usr/bin/env python3\n")
    assert os.access(WRAPPER, os.X_OK)
