"""What the portal does on a cluster: the one module through which every command, file read and
host-key fetch goes to the gateway, and every answer through the parsers in jobs.cluster.slurm.
Models come in, plain results go out, nothing is saved here."""

import shlex
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings

from guidance.engine.data_path import PathCheck
from guidance.engine.shell import split_path
from jobs.cluster import keys, slurm
from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.cluster.gateway import fetch_host_key, gateway
from jobs.cluster.login import HostKey, Login
from jobs.compose.script import STOP_MARK
from jobs.gpu.monitoring import with_monitoring
from jobs.models import ClusterAccount, Job

TAG_PREFIX = "portal:"
OUTPUT_CAP = 64 * 1024  # the tail of stdout or stderr a job page shows


class Rejected(Exception):
    """Slurm refused the job; `message` is what it said, word for word."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Snapshot:
    """One poll of one login: what squeue and sacct said about its jobs."""

    queue: list
    accounting: list


def host_key(host: str, port: int) -> HostKey:
    """The key a login host presents, for an admin to compare and pin: nothing is trusted yet."""
    return fetch_host_key(host, port)


def login_for(account: ClusterAccount) -> Login:
    cluster = account.cluster
    return Login(
        host=cluster.login_host,
        port=cluster.login_port,
        username=account.username,
        private_key=keys.decrypt(account.private_key_encrypted),
        host_key=cluster.host_key,
    )


def test_connection(account: ClusterAccount) -> str:
    result = gateway.run(login_for(account), ["sbatch", "--version"])
    if result.exit_status != 0:
        raise ClusterError(
            ErrorKind.PROTOCOL,
            f"Logged in, but sbatch did not answer: {result.stderr.strip() or 'no message'}",
            retryable=False,
        )
    return result.stdout.strip()


def read_partitions(login: Login) -> list[slurm.GpuPartition]:
    """The cluster's GPU partitions as Slurm describes them: two commands, nothing saved."""
    partitions = slurm.parse_partitions(gateway.run(login, slurm.PARTITIONS_ARGV).stdout)
    nodes = slurm.parse_nodes(gateway.run(login, slurm.NODES_ARGV).stdout)
    return slurm.gpu_partitions(partitions, nodes)


def tag(job: Job) -> str:
    return f"{TAG_PREFIX}{job.tag}"


def find_submitted(login: Login, job: Job) -> str:
    """The Slurm id of a job this portal job already made, or "" (a retry must not submit twice)."""
    result = gateway.run(login, slurm.squeue_argv(login.username))
    for row in slurm.parse_squeue(result.stdout):
        if row.comment == tag(job):
            return str(row.array_job_id)
    return ""


# One round trip: the output directory must exist before the job starts (Slurm does not make
# it), and sbatch reads the script from stdin. $1 and $2 arrive quoted by the gateway. `[ -d ]`
# and `command -v` are builtins, and `exec` spares a fork (0.5 ms): when the directory exists
# (a job run before), sbatch is the only process started. sbatch reads its stdin to the end
# before anything else can fail, so the gateway's stdin drain is not needed after it; on every
# path where sbatch does not start (mkdir failed, no sbatch), the shell goes on to the drain.
NO_SBATCH = "No sbatch on the login node's PATH: is Slurm's client installed there?"
SUBMIT = (
    '{ [ -d "$1" ] || mkdir -p -- "$1"; } && '
    f"{{ command -v sbatch >/dev/null || {{ echo {shlex.quote(NO_SBATCH)} >&2; false; }}; }} && "
    'exec sbatch --parsable --comment="$2"'
)


def submit(job: Job, look_first: bool) -> str:
    """Submits the job's script; returns its Slurm id.

    `look_first`: an earlier attempt may have reached sbatch (a worker killed before it saved
    the id), so adopt the job it made, found by its tag, rather than submit a second one.
    """
    login = login_for(job.account)
    if look_first and (existing := find_submitted(login, job)):
        return existing
    args = [job.job_dir, tag(job)]
    script = submitted_script(job)
    result = gateway.run_script(login, SUBMIT, args, program="sbatch", stdin=script)
    if result.exit_status != 0:
        raise Rejected(result.stderr.strip() or f"sbatch exited with status {result.exit_status}")
    return str(slurm.parse_sbatch(result.stdout).job_id)


def submitted_script(job: Job) -> str:
    """The job's script as Slurm gets it: with the GPU sampler between its monitoring markers
    when it asks for GPUs (jobs.gpu.monitoring); the job keeps the text its owner composed."""
    return with_monitoring(job.script, job.job_dir, settings.SAMPLE_SECONDS)


def test_only(account: ClusterAccount, script: str) -> slurm.WouldStart:
    """Slurm's answer to the script without submitting it: when and where it would start."""
    result = gateway.run(login_for(account), slurm.TEST_ONLY_ARGV, stdin=script)
    if result.exit_status != 0:
        raise Rejected(result.stderr.strip() or f"sbatch exited with status {result.exit_status}")
    return slurm.parse_test_only(result.stderr)


def cancel(job: Job) -> None:
    result = gateway.run(login_for(job.account), ["scancel", job.slurm_id])
    if result.exit_status != 0:
        raise Rejected(result.stderr.strip() or f"scancel exited with status {result.exit_status}")


def poll(account: ClusterAccount, since: datetime, slurm_ids: list[str]) -> Snapshot:
    """Two commands for all of a login's jobs, however many: squeue, then sacct.

    sacct is asked for the portal's active jobs by id: a job cancelled before it was ever
    eligible (held, or waiting on a dependency) is outside any time window, and the list
    keeps other jobs of the same user out of the answer.
    """
    login = login_for(account)
    queue = gateway.run(login, slurm.squeue_argv(login.username))
    # An hour's margin for clocks that disagree; the window is read in UTC (slurm.IN_UTC).
    window = (since - timedelta(hours=1)).astimezone(UTC).replace(tzinfo=None)
    accounting = gateway.run(login, slurm.sacct_argv(login.username, window, slurm_ids))
    return Snapshot(slurm.parse_squeue(queue.stdout), slurm.parse_sacct(accounting.stdout))


def output_tail(job: Job, stream: str) -> bytes:
    """The end of the job's stdout or stderr ("out" or "err"), at most OUTPUT_CAP bytes.

    An array (a chain) writes one file per task, slurm-<array id>_<task>: show the newest part's.
    """
    path = f"{job.job_dir}/slurm-{_newest_part(job)}.{stream}"
    return gateway.read_tail(login_for(job.account), path, OUTPUT_CAP)


def _newest_part(job: Job) -> str:
    """The id in the file names of the job's newest part: <id>, or <array id>_<task>."""
    part = job.tasks.exclude(started=None).order_by("-started").first()
    return f"{job.slurm_id}_{part.task_id}" if part else job.slurm_id


# Looks at a data path as a job would see it: $1 the variable it starts with ("" for none), $2 the
# rest, literally; then NAME=value fallbacks for the site's variables. Prints the path, then
# "folder <files, counted up to 100,001>", "file <bytes>", "other", "missing" or "unset <NAME>".
PATH_PROBE = r"""
var=$1 rest=$2; shift 2
for pair; do
    name=${pair%%=*}
    [ -n "$(printenv "$name")" ] || export "$name=${pair#*=}"
done
base=""
if [ -n "$var" ]; then
    base=$(printenv "$var") || base=""
    [ -n "$base" ] || { printf '\nunset %s\n' "$var"; exit 0; }
fi
p=$base$rest
case $p in /*) ;; *) p=./$p ;; esac  # under the home folder; never read as an option
printf '%s\n' "$p"
if [ -d "$p" ]; then
    printf 'folder %s\n' "$(find "$p" -type f 2>/dev/null | head -n 100001 | wc -l)"
elif [ -f "$p" ]; then printf 'file %s\n' "$(stat -c %s "$p")"
elif [ -e "$p" ]; then echo other
else echo missing
fi
"""


def check_path(account: ClusterAccount, path: str, fallbacks: dict[str, str]) -> PathCheck:
    """What `path` is on the cluster, looked at through the user's own login."""
    variable, rest = split_path(path)
    pairs = [f"{name}={value}" for name, value in fallbacks.items()]
    result = gateway.run(
        login_for(account), ["bash", "-c", PATH_PROBE, "portal-path", variable, rest, *pairs]
    )
    lines = result.stdout.splitlines()
    if result.exit_status != 0 or len(lines) < 2:
        raise ClusterError(
            ErrorKind.PROTOCOL,
            f"The path could not be looked at: {result.stderr.strip() or 'no answer'}",
            retryable=False,
        )
    what, _, number = lines[1].partition(" ")
    if what == "unset":
        return PathCheck("", what, variable=number)
    return PathCheck(lines[0], what, int(number) if number.isdigit() else None)


def list_folder(login: Login, path: str) -> dict[str, int]:
    """The names in one of the login's folders, with their sizes; {} when it is not there."""
    return gateway.list_dir(login, path)


def read_from_offsets(
    login: Login, wanted: list[tuple[str, int]], max_bytes: int
) -> list[tuple[bytes, int]]:
    """What each (path, offset) holds past its offset, at most `max_bytes`, and the offset to ask
    for next time: no command, one SFTP session. A missing file gives b""; one now shorter than
    its offset (replaced) is read from 0 again."""
    return gateway.read_many(login, wanted, max_bytes)


STOP_TAIL_BYTES = 4096  # the stop line is among the script's last words


def stop_line(job: Job) -> str:
    """The one line in which the job's script said why it stopped itself (jobs.compose.script's
    portal_stop), or "" when it said none."""
    path = f"{job.job_dir}/slurm-{_newest_part(job)}.err"
    tail = gateway.read_tail(login_for(job.account), path, STOP_TAIL_BYTES)
    lines = tail.decode(errors="replace").splitlines()
    said = [line for line in lines if line.startswith(STOP_MARK)]
    return said[-1].removeprefix(STOP_MARK).strip() if said else ""


# What Slurm's terse refusals mean, in plain words; Slurm's own words always come first.
EXPLANATIONS = {
    "invalid partition": "The cluster has no partition of that name.",
    "requested time limit is invalid": "The time asked for is over the partition's limit.",
    "requested node configuration is not available": (
        "No node of that partition has the GPUs, CPUs or memory asked for."
    ),
    "invalid account": "You may not bill that account: check the account name.",
    "invalid generic resource": "The cluster has no GPUs of that type.",
    "qosmaxsubmitjobperuserlimit": "You have as many jobs queued as the cluster allows.",
}


def plain_words(message: str) -> str:
    lowered = message.casefold()
    return next((text for key, text in EXPLANATIONS.items() if key in lowered), "")


def explain(message: str) -> str:
    if message.startswith("mkdir:"):  # SUBMIT's first step: sbatch never ran
        return f"The job's folder could not be made on the cluster: {message}"
    if message == NO_SBATCH:
        return message
    plain = plain_words(message)
    return f"Slurm refused the job: {message}" + (f"\n{plain}" if plain else "")
