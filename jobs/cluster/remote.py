"""What the portal does on a cluster: the one module through which every command, file read and
host-key fetch goes to the gateway, and every answer through the parsers in jobs.slurm.
Models come in, plain results go out, nothing is saved here."""

import posixpath
import re
import shlex
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from guidance.engine.code_check import MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES
from guidance.engine.code_check.entry import Entry
from guidance.engine.code_check.local_imports import LocalImport, local_imports
from guidance.engine.data_path import MANY_FILES, PathCheck
from guidance.engine.shell import path_parts
from guidance.models import Cluster
from jobs.cluster import command_files, keys
from jobs.cluster.errors import ClusterError, ErrorKind, slurm_not_answering
from jobs.cluster.gateway import fetch_host_key, gateway
from jobs.cluster.login import CommandResult, HostKey, Login
from jobs.cluster.sftp_files import user_path
from jobs.models import JOBS_ROOT, ClusterAccount, ClusterReader, Job
from jobs.script_markers import STOP_MARK
from jobs.slurm.free_gpus import FREE_GPUS_ARGV, NodeGpus, parse_free_gpus
from jobs.slurm.nodes import (
    NODES_ARGV,
    PARTITIONS_ARGV,
    GpuPartition,
    gpu_partitions,
    parse_nodes,
    parse_partitions,
)
from jobs.slurm.pending import PENDING_ARGV, PendingJob, parse_pending
from jobs.slurm.sacct import (
    SACCT_FIELDS_WITH_USER,
    AccountedJob,
    parse_sacct,
    sacct_argv,
    sacct_users_argv,
)
from jobs.slurm.sbatch import TEST_ONLY_ARGV, WouldStart, parse_sbatch, parse_test_only
from jobs.slurm.squeue import QueuedJob, parse_squeue, squeue_argv, unknown_users
from jobs.slurm.states import SlurmState

TAG_PREFIX = "portal:"
OUTPUT_CAP = 64 * 1024  # the tail of stdout or stderr a job page shows


class SlurmRefused(Exception):
    """Slurm refused what was asked (a job, a cancel); `message` is what it said, word for word."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _refused(result: CommandResult, program: str) -> SlurmRefused:
    said = result.stderr.strip()
    return SlurmRefused(said or f"{program} exited with status {result.exit_status}")


@dataclass(frozen=True)
class Snapshot:
    """One poll of one login: what squeue and sacct said about its jobs."""

    queue: list
    accounting: list
    accounting_down: bool = False  # sacct failed (slurmdbd down): how jobs ended is not known


def host_key(host: str, port: int) -> HostKey:
    """The key a login host presents, for an admin to compare and pin: nothing is trusted yet."""
    return fetch_host_key(host, port)


def login_for(account: ClusterAccount) -> Login:
    cluster = account.cluster
    automation = account.through_automation_node
    return Login(
        host=(automation and cluster.automation_host) or cluster.login_host,
        port=(automation and cluster.automation_port) or cluster.login_port,
        username=account.username,
        private_key=keys.decrypt(account.private_key_encrypted),
        host_key=cluster.host_key,
        commands_only=automation,
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


def read_partitions(login: Login) -> list[GpuPartition]:
    """The cluster's GPU partitions as Slurm describes them: two commands, nothing saved."""
    partitions = parse_partitions(gateway.run(login, PARTITIONS_ARGV).stdout)
    nodes = parse_nodes(gateway.run(login, NODES_ARGV).stdout)
    return gpu_partitions(partitions, nodes)


def tag(job: Job) -> str:
    return f"{TAG_PREFIX}{job.tag}"


def find_submitted(login: Login, job: Job) -> str:
    """The Slurm id of a job this portal job already made, or "" (a retry must not submit twice)."""
    result = gateway.run(login, squeue_argv(login.username))
    for row in parse_squeue(result.stdout):
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


def submit(job: Job, script: str, look_first: bool) -> str:
    """Submits `script` (the job's, as Slurm is to get it) for `job`; returns its Slurm id.

    `look_first`: an earlier attempt may have reached sbatch (a worker killed before it saved
    the id), so adopt the job it made, found by its tag, rather than submit a second one.
    """
    login = login_for(job.account)
    if look_first and (existing := find_submitted(login, job)):
        return existing
    if login.commands_only:
        result = _submit_commands(login, job, script)
    else:
        args = [job.job_dir, tag(job)]
        result = gateway.run_script(login, SUBMIT, args, program="sbatch", stdin=script)
    if result.exit_status != 0:
        raise failed_submission(result)
    return str(parse_sbatch(result.stdout).job_id)


def _submit_commands(login: Login, job: Job, script: str) -> CommandResult:
    """SUBMIT as an automation node's wrapper takes it: two commands, no shell."""
    made = gateway.run(login, ["mkdir", "-p", "--", job.job_dir])
    if made.exit_status != 0:
        return made
    return gateway.run(login, ["sbatch", "--parsable", f"--comment={tag(job)}"], stdin=script)


def failed_submission(result: CommandResult) -> ClusterError | SlurmRefused:
    """Why SUBMIT failed: its own steps (the job's folder, finding sbatch) fail as a ClusterError
    that says so, which no retry mends; anything else is Slurm refusing the job."""
    said = result.stderr.strip()
    if result.exit_status == command_files.REFUSED:
        return command_files.refused(result)
    if said == NO_SBATCH or (result.exit_status == 127 and said.startswith("portal-remote:")):
        return ClusterError(ErrorKind.CONFIG, NO_SBATCH, retryable=False)
    if said.startswith("mkdir:"):  # SUBMIT's first step: sbatch never ran
        message = f"The job's folder could not be made on the cluster: {said}"
        return ClusterError(ErrorKind.REMOTE_FILE, message, retryable=False)
    return _refused(result, "sbatch")


def test_only(account: ClusterAccount, script: str) -> WouldStart:
    """Slurm's answer to the script without submitting it: when and where it would start."""
    result = gateway.run(login_for(account), TEST_ONLY_ARGV, stdin=script)
    if result.exit_status != 0:
        raise _refused(result, "sbatch")
    return parse_test_only(result.stderr)


def cancel(job: Job) -> None:
    result = gateway.run(login_for(job.account), ["scancel", job.slurm_id])
    if result.exit_status != 0:
        raise _refused(result, "scancel")


def poll(account: ClusterAccount, since: datetime, slurm_ids: list[str]) -> Snapshot:
    """Two commands for all of a login's jobs, however many: squeue, then sacct.

    sacct is asked for the portal's active jobs by id: a job cancelled before it was ever
    eligible (held, or waiting on a dependency) is outside any time window, and the list
    keeps other jobs of the same user out of the answer.
    """
    login = login_for(account)
    queue = gateway.run(login, squeue_argv(login.username))
    if queue.exit_status != 0:  # the controller is down: an empty list would say "all ended"
        raise slurm_not_answering("squeue", queue.stderr)
    # An hour's margin for clocks that disagree; the window is read in UTC (values.IN_UTC).
    window = (since - timedelta(hours=1)).astimezone(UTC).replace(tzinfo=None)
    accounting = gateway.run(login, sacct_argv(login.username, window, slurm_ids))
    return Snapshot(
        parse_squeue(queue.stdout, slurm_ids),
        parse_sacct(accounting.stdout),
        accounting_down=accounting.exit_status != 0,
    )


@dataclass(frozen=True)
class Load:
    """One read of a whole cluster: its nodes' GPUs and every user's pending jobs (no names)."""

    nodes: list[NodeGpus]
    pending: list[PendingJob]


def read_load(account: ClusterAccount) -> Load:
    """Two commands for the whole cluster, whatever the number of its users and jobs."""
    login = login_for(account)
    nodes = gateway.run(login, FREE_GPUS_ARGV)
    if nodes.exit_status != 0:
        raise slurm_not_answering("sinfo", nodes.stderr)
    queue = gateway.run(login, PENDING_ARGV)
    if queue.exit_status != 0:
        raise slurm_not_answering("squeue", queue.stderr)
    return Load(parse_free_gpus(nodes.stdout), parse_pending(queue.stdout))


@dataclass(frozen=True)
class History:
    """Every job of a login's user, however it was submitted (the portal's are known by their
    comment): those that ran or ended in a window, and those waiting now, which a window of
    Slurm 22.05's accounting does not list."""

    accounting: list[AccountedJob]
    waiting: list[QueuedJob]


def history_since(account: ClusterAccount, since: datetime) -> History:
    """One sacct for the window from `since`, and one squeue for the jobs waiting."""
    login = login_for(account)
    window = since.astimezone(UTC).replace(tzinfo=None)  # read in UTC (values.IN_UTC)
    result = gateway.run(login, sacct_argv(login.username, window))
    if result.exit_status != 0:
        raise slurm_not_answering("sacct", result.stderr)
    queue = gateway.run(login, squeue_argv(login.username))
    if queue.exit_status != 0:
        raise slurm_not_answering("squeue", queue.stderr)
    waiting = [row for row in parse_squeue(queue.stdout) if row.state is SlurmState.PENDING]
    return History(parse_sacct(result.stdout), waiting)


def output_tail(job: Job, stream: str, task: str = "") -> bytes:
    """The end of the job's stdout or stderr ("out" or "err"), at most OUTPUT_CAP bytes.

    An array (a chain) writes one file per task, slurm-<array id>_<task>: show the newest part's,
    or `task`'s (an array task id, checked by the caller).
    """
    part = f"{job.slurm_id}_{task}" if task else _newest_part(job)
    path = f"{job.job_dir}/slurm-{part}.{stream}"
    return gateway.read_tail(login_for(job.account), path, OUTPUT_CAP)


def _newest_part(job: Job) -> str:
    """The id in the file names of the job's newest part: <id>, or <array id>_<task>."""
    part = job.tasks.exclude(started=None).order_by("-started").first()
    return f"{job.slurm_id}_{part.task_id}" if part else job.slurm_id


# A path as a job would see it, for the probes below: $1 a limit; $2 how many path parts follow,
# each `var:NAME` (expanded as the job would, never evaluated) or `text:…` (literal); then
# NAME=value fallbacks for the site's variables. Leaves the path in $p, or prints "unset <NAME>"
# on the second line and exits.
_EXPANDED_PATH = r"""
most=$1 count=$2; shift 2
parts=("${@:1:count}"); shift "$count"
for pair; do
    name=${pair%%=*}
    [ -n "$(printenv "$name")" ] || export "$name=${pair#*=}"
done
p=""
for part in "${parts[@]}"; do
    case $part in
    var:*)
        value=$(printenv "${part#var:}") || value=""
        [ -n "$value" ] || { printf '\nunset %s\n' "${part#var:}"; exit 0; }
        p=$p$value ;;
    text:*) p=$p${part#text:} ;;
    esac
done
case $p in /*) ;; *) p=./$p ;; esac  # under the home folder; never read as an option
printf '%s\n' "$p"
"""

# Looks at a data path (_EXPANDED_PATH, $1 how many files to count at most). Prints the path,
# then "folder <files>", "file <bytes>", "other", "missing" or "unset <NAME>".
PATH_PROBE = (
    _EXPANDED_PATH
    + r"""if [ -d "$p" ]; then
    printf 'folder %s\n' "$(find "$p" -type f 2>/dev/null | head -n "$most" | wc -l)"
elif [ -f "$p" ]; then printf 'file %s\n' "$(stat -c %s "$p")"
elif [ -e "$p" ]; then echo other
else echo missing
fi
"""
)


def check_path(account: ClusterAccount, path: str, fallbacks: dict[str, str]) -> PathCheck:
    """What `path` is on the cluster, looked at through the user's own login."""
    login = login_for(account)
    if login.commands_only:
        raise ClusterError(
            ErrorKind.CONFIG,
            "Paths cannot be looked at through an automation node: its wrapper lets the portal "
            "read only its own job folders. The job will say if the path is missing.",
            retryable=False,
        )
    parts = [f"{kind}:{value}" for kind, value in path_parts(path)]
    pairs = [f"{name}={value}" for name, value in fallbacks.items()]
    result = gateway.run(
        login,
        [
            "bash",
            "-c",
            PATH_PROBE,
            "portal-path",
            str(MANY_FILES + 1),
            str(len(parts)),
            *parts,
            *pairs,
        ],
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


# A sweep's runs (jobs.compose.sweep_script): each run writes its own line in .runs/<folder>.tsv
# under the sweep's results folder, and runs.tsv is made again from them after each run. The
# lines themselves are read, newest first, else runs.tsv; at most $1 bytes. Prints the path, then
# "lines", "table", "missing" or "unset <NAME>", then what was read.
RUNS_PROBE = (
    _EXPANDED_PATH
    + r"""set -- "$p"/.runs/*.tsv
if [ -f "$1" ]; then echo lines; cat -- "$@" | head -c "$most"
elif [ -f "$p/runs.tsv" ]; then echo table; head -c "$most" -- "$p/runs.tsv"
else echo missing
fi
"""
)
RUNS_CAP = 1024 * 1024  # some ten thousand runs' lines


def sweep_runs(
    account: ClusterAccount, results: list[tuple[str, str]], fallbacks: dict[str, str]
) -> str:
    """The lines of a sweep's runs from its results folder, given as path parts ("var", NAME) or
    ("text", literal) as the script wrote it; "" while none has ended. One command."""
    login = login_for(account)
    if login.commands_only:
        raise ClusterError(
            ErrorKind.CONFIG,
            "Through an automation node the portal reads only its own job folders, not the "
            "sweep's results folder, where each run's exit code and time are.",
            retryable=False,
        )
    parts = [f"{kind}:{value}" for kind, value in results]
    pairs = [f"{name}={value}" for name, value in fallbacks.items()]
    argv = ["bash", "-c", RUNS_PROBE, "portal-runs", str(RUNS_CAP), str(len(parts))]
    result = gateway.run(login, [*argv, *parts, *pairs])
    _, _, rest = result.stdout.partition("\n")  # the path it read, first
    what, _, text = rest.partition("\n")
    unset = what.removeprefix("unset ") if what.startswith("unset ") else ""
    if unset:
        raise ClusterError(
            ErrorKind.REMOTE_FILE,
            f"The sweep's results folder is under ${unset}, which your login on the cluster "
            "does not set: the runs' exit codes and times could not be read.",
            retryable=False,
        )
    if result.exit_status != 0 or what not in ("lines", "table", "missing"):
        said = result.stderr.strip() or "no answer"
        raise ClusterError(
            ErrorKind.REMOTE_FILE,
            f"The sweep's runs could not be read from its results folder: {said}",
            retryable=True,
        )
    return text


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
    """The one line in which the job's script said why it stopped itself (its portal_stop, see
    jobs.script_markers), or "" when it said none."""
    path = f"{job.job_dir}/slurm-{_newest_part(job)}.err"
    tail = gateway.read_tail(login_for(job.account), path, STOP_TAIL_BYTES)
    lines = tail.decode(errors="replace").splitlines()
    said = [line for line in lines if line.startswith(STOP_MARK)]
    return said[-1].removeprefix(STOP_MARK).strip() if said else ""


@dataclass(frozen=True)
class Program:
    """A program's files as read from the cluster, by their path from its import root, entry
    first; and, in plain words, what was not read and why."""

    files: dict[str, bytes]
    not_read: tuple[str, ...] = field(default=())


# What an automation node's wrapper reads: a file directly in a job's folder, each part a name
# as docker/cluster-side/portal-remote's NAME allows (its job_path()); it refuses the whole
# command for any other path, so the portal asks only for these.
_WRAPPER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}")


def _wrapper_reads(path: str) -> bool:
    parts = user_path(path).split("/")
    shaped = len(parts) == 3 and parts[0] == JOBS_ROOT
    return shaped and all(_WRAPPER_NAME.fullmatch(part) for part in parts[1:])


def _folder_words(path: str) -> str:
    """A folder as the user knows it: ~ for the home folder, where SFTP and the wrapper start."""
    if path.startswith(("/", "~")):
        return path
    return f"~/{path}" if path else "~"


def read_program(account: ClusterAccount, workdir: str, entry: Entry) -> Program:
    """The program `entry` names and the project's modules it imports, followed from file to
    file: read only, never run. Over the login's one SFTP session (one round of reads per level
    of imports), or through an automation node with one portal-read a round, which reaches only
    the files directly in a job's folder. Within the checker's limits (MAX_FILES,
    MAX_FILE_BYTES, MAX_TOTAL_BYTES): a file over its limit is read one byte past it, for the
    checker to say so. `workdir` is the folder the job ran in ("" for the home folder, where
    sbatch runs from the portal); paths never meet a shell (SFTP, or the wrapper's argv).

    Raises ClusterError: the gateway's, or one that says in plain words that the entry file is
    not there or cannot be reached this way."""
    login = login_for(account)

    def placed(name: str) -> str:
        path = posixpath.join(entry.root, name) if entry.root else name
        if path.startswith(("/", "~")) or not workdir:
            return path
        return posixpath.join(workdir, path)

    entry_path = placed(entry.name)
    folder = _folder_words(posixpath.dirname(entry_path))
    if login.commands_only and not _wrapper_reads(entry_path):
        raise ClusterError(
            ErrorKind.CONFIG,
            f"{entry.name} is in {folder}, and through the automation node the portal reads "
            f"only files directly in a job's folder (~/{JOBS_ROOT}/<job>/, as its wrapper "
            "allows): paste the program on the Check page instead.",
            retryable=False,
        )
    [(data, _)] = gateway.read_many(login, [(entry_path, 0)], MAX_FILE_BYTES + 1)
    if not data:
        _entry_there(login, entry, entry_path, folder)
    files = {entry.name: data}
    out_of_reach: list[LocalImport] = []
    left: dict[str, LocalImport] = {}  # the modules the limits kept from being read, by name
    total = len(data)
    todo = _imports_of(entry.name, data)
    while todo:
        room = MAX_FILES - len(files)
        if room <= 0 or total >= MAX_TOTAL_BYTES:
            left.update((m.module, m) for m in todo)
            break
        if login.commands_only:
            out_of_reach += todo
        # At most two places a file a round (mod.py, mod/__init__.py) for the room left: a
        # program that imports thousands of modules costs a web request no more than 40 do.
        asked: list[tuple[LocalImport, str]] = []
        for module in todo:
            wanted = [
                name
                for name in dict.fromkeys(module.candidates)
                if name not in files
                and name not in {n for _, n in asked}
                and (not login.commands_only or _wrapper_reads(placed(name)))
            ]
            if len(asked) + len(wanted) > 2 * room:
                left[module.module] = module
                continue
            asked += [(module, name) for name in wanted]
        read = gateway.read_many(login, [(placed(n), 0) for _, n in asked], MAX_FILE_BYTES + 1)
        todo = []
        for (module, name), (data, _) in zip(asked, read, strict=True):
            if not data or name in files:
                continue
            if len(files) >= MAX_FILES or total + len(data) > MAX_TOTAL_BYTES:
                left[module.module] = module
                continue
            files[name] = data
            total += len(data)
            todo += _imports_of(name, data)
    not_read = _over_the_limits(
        [m for m in left.values() if not any(name in files for name in m.candidates)]
    )
    if out_of_reach:
        not_read += _beyond_the_wrapper(login, entry, placed, files, out_of_reach)
    return Program(files, tuple(not_read))


def _over_the_limits(modules: list[LocalImport]) -> list[str]:
    """One sentence for all the modules the checker's limits left unread, however many."""
    if not modules:
        return []
    count = len(modules)
    said = f"{count} more modules it imports were" if count > 1 else "1 more module it imports was"
    return [
        f"{said} not read: the checker reads at most {MAX_FILES} files and "
        f"{MAX_TOTAL_BYTES // 1_000_000} MB of a program."
    ]


def _imports_of(name: str, data: bytes) -> list[LocalImport]:
    return list(local_imports(data, name)) if len(data) <= MAX_FILE_BYTES else []


def _entry_there(login: Login, entry: Entry, path: str, folder: str) -> None:
    """Raises what the user is to hear when the entry file read as nothing: it is not there, or
    the cluster would not let the portal read it (an empty file is fine)."""
    listed = gateway.list_dir(login, posixpath.dirname(path) or ".")
    size = listed.get(posixpath.basename(path))
    if size is None:
        raise ClusterError(
            ErrorKind.REMOTE_FILE,
            f"{entry.name} is not in {folder}: the job's command runs it from there "
            f"({entry.command}).",
            retryable=False,
        )
    if size:
        raise ClusterError(
            ErrorKind.REMOTE_FILE,
            f"{entry.name} is in {folder}, but the cluster does not let your login read it.",
            retryable=False,
        )


def _beyond_the_wrapper(
    login: Login,
    entry: Entry,
    placed: Callable[[str], str],
    files: dict[str, bytes],
    modules: list[LocalImport],
) -> list[str]:
    """The project's modules in sub-folders of the job's folder, which an automation node's
    wrapper does not read: named when the folder they would be in is there (one listing)."""
    missing = [m for m in modules if not any(name in files for name in m.candidates)]
    if not missing:
        return []
    listed = gateway.list_dir(login, posixpath.dirname(placed(entry.name)) or ".")
    said = []
    for top in sorted({m.module.split(".")[0] for m in missing}):
        if top in listed and f"{top}.py" not in files:
            said.append(
                f"{top}/ is beside {entry.name}, but through the automation node the portal "
                "reads only files directly in the job's folder: the modules in it were not "
                "checked."
            )
    return said


# -- a cluster-wide reader (jobs.cluster.reader_poll) ------------------------------------------


def reader_login(reader: ClusterReader, cluster: Cluster) -> Login:
    """The cluster's read-only service login, on its login host, with the host key pinned there."""
    try:
        private_key = keys.decrypt(reader.private_key_encrypted)
    except keys.DecryptionError as error:
        raise ClusterError(ErrorKind.CONFIG, str(error), retryable=False) from None
    return Login(
        host=cluster.login_host,
        port=cluster.login_port,
        username=reader.username,
        private_key=private_key,
        host_key=cluster.host_key,
    )


@dataclass(frozen=True)
class ClusterRead:
    """One read of many users' jobs through a cluster's reader; rows say whose they are."""

    queue: list[QueuedJob]  # the jobs of every user asked for, as squeue lists them
    accounting: list[AccountedJob]  # every job asked for by id, whoever's
    accounting_down: bool  # that sacct failed: how jobs ended is not known
    # The history users' accounting since its window; None when not asked, or it failed (why:
    # history_error).
    history: list[AccountedJob] | None
    history_error: str
    unknown_users: frozenset[str]  # names squeue found to be no users on the cluster


def read_cluster(
    login: Login,
    users: list[str],
    slurm_ids: list[str],
    since: datetime,
    history_users: list[str],
    history_since: datetime | None,
) -> ClusterRead:
    """Three commands at most for all `users`, however many: squeue of their jobs; sacct of
    `slurm_ids` (whoever's: the rows say); sacct of `history_users`' accounting from
    `history_since`, which runs beside the other sacct on the same connection. Raises
    ClusterError when squeue fails (the controller is down) or the login does not answer."""
    queue = gateway.run(login, squeue_argv(users))
    if queue.exit_status != 0:
        raise slurm_not_answering("squeue", queue.stderr)
    unknown = frozenset(unknown_users(queue.stderr))
    # Names that are no users would make this sacct fail for everyone's history.
    asked = [user for user in history_users if user not in unknown]
    with ThreadPoolExecutor(max_workers=1) as background:
        history = None
        if asked and history_since is not None:
            window = history_since.astimezone(UTC).replace(tzinfo=None)
            argv = sacct_users_argv(asked, window)
            history = background.submit(gateway.run, login, argv)
        accounting = None
        if slurm_ids:
            # An hour's margin for clocks that disagree, as remote.poll has.
            window = (since - timedelta(hours=1)).astimezone(UTC).replace(tzinfo=None)
            accounting = gateway.run(login, sacct_users_argv([], window, slurm_ids))
        read = history.result() if history is not None else None
    return ClusterRead(
        parse_squeue(queue.stdout),
        parse_sacct(accounting.stdout, SACCT_FIELDS_WITH_USER) if accounting else [],
        accounting_down=accounting is not None and accounting.exit_status != 0,
        history=(
            parse_sacct(read.stdout, SACCT_FIELDS_WITH_USER)
            if read is not None and read.exit_status == 0
            else None
        ),
        history_error=read.stderr.strip() if read is not None and read.exit_status != 0 else "",
        unknown_users=unknown,
    )
