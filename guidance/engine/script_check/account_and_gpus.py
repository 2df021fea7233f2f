"""The account a job is billed to, the GPU types it asks for, and whether several get used."""

import re
from collections.abc import Iterator

from guidance.engine import sources
from guidance.engine.script_check.commands import Reading
from guidance.engine.script_check.findings import Finding, Severity, add_directive
from guidance.engine.script_check.parse import Script, gpu_request, gres_gpus, read_count
from guidance.engine.types import Cluster, Note, Rule

# What starts one process per GPU, or hands the GPUs to the program: a small list, kept in
# words a user recognizes in the message.
LAUNCHERS = (
    ("torchrun", re.compile(r"\btorchrun\b")),
    ("python -m torch.distributed.run", re.compile(r"\btorch\.distributed\.(run|launch)\b")),
    ("accelerate launch", re.compile(r"\baccelerate\s+launch\b")),
    ("deepspeed", re.compile(r"\bdeepspeed\b")),
    ("horovodrun", re.compile(r"\bhorovodrun\b")),
    ("mpirun or mpiexec", re.compile(r"\bmpi(run|exec)\b")),
    ("srun python", re.compile(r"\bsrun\b[^\n]{0,200}\bpython")),
    ("lightning run", re.compile(r"\blightning\s+run\b")),
    (
        "an option giving the program its GPUs (--devices, --gpus, --nproc_per_node)",
        re.compile(
            r"--(devices|n_?gpus|num_gpus|gpus|nproc[_-]per[_-]node|multi[_-]gpu)\b|\bdevices="
        ),
    ),
    ("GNU parallel", re.compile(r"\bparallel\b|\bxargs\b[^\n]{0,200}\s-P")),
)


# Written into a fixed script where the user's account is not known: the fix says to change it.
ACCOUNT_PLACEHOLDER = "def-yourgroup"


def check_account(script: Script, cluster: Cluster, account: str, notes: list[Note]) -> None:
    rule = cluster.rule(Rule.ACCOUNT_REQUIRED)
    if rule is None or script.has("account"):
        return
    name = account or ACCOUNT_PLACEHOLDER
    notes.append(
        Finding(
            "no_account",
            f"No --account (-A): {cluster.name} bills every job to an account, and without one "
            "Slurm refuses the job or charges your default account, if you have one.",
            rule.source,
            "account",
            severity=Severity.FAILS,
            fix=f"Add #SBATCH --account={name}"
            + (
                ""
                if account
                else f", with your own account in place of {name} (sshare -U lists yours)"
            )
            + ", unless you set SBATCH_ACCOUNT in your login's environment.",
            edits=(add_directive(script, f"--account={name}"),),
        )
    )


def _gpu_requests(script: Script) -> Iterator[tuple[str, str, str | None, int | None]]:
    """(option, value, type, count) of each GPU request that sbatch will use."""
    for option in ("gres", "gpus", "gpus-per-node", "gpus-per-task"):
        value = script.option(option)
        if value is None:
            continue
        kind, count = gres_gpus(value) if option == "gres" else gpu_request(value)
        yield option, value, kind, count


def check_gpu_types(script: Script, cluster: Cluster, notes: list[Note]) -> None:
    if not cluster.gpu_types:
        return
    for option, value, kind, _ in _gpu_requests(script):
        if kind and cluster.gpu_type(kind) is None:
            known = ", ".join(g.name for g in cluster.gpu_types)
            notes.append(
                Note(
                    "gres_type_unknown",
                    f"--{option}={value} asks for GPU type \u201c{kind}\u201d, which "
                    f"{cluster.name} does not publish: Slurm refuses a type it does not know. "
                    f"Its GPU types: {known}.",
                    next((g.source for g in cluster.gpu_types if g.source), None)
                    or sources.PUBLIC_HARDWARE,
                    option,
                )
            )


def _number(value: str | None) -> int:
    count = read_count(value) if value else None
    return count or 1


def _gpu_total(script: Script) -> tuple[int, str]:
    """The most GPUs the job may hold, and the option that asks for them."""
    nodes = _number(script.option("nodes"))  # "2-4": at least 2
    tasks = script.option("ntasks")
    per_node_tasks = script.option("ntasks-per-node")
    task_count = _number(tasks) if tasks else _number(per_node_tasks) * nodes
    best = (0, "")
    for option, value, _, count in _gpu_requests(script):
        if count is None:
            continue
        total = {
            "gres": count * nodes,
            "gpus-per-node": count * nodes,
            "gpus-per-task": count * task_count,
        }.get(option, count)
        if total > best[0]:
            best = (total, f"--{option}={value}")
    return best


def check_gpu_use(script: Script, reading: Reading, notes: list[Note]) -> None:
    gpus, asked = _gpu_total(script)
    if gpus <= 1:
        return
    commands = "\n".join(script.commands)
    if reading.background_runs >= 2 or any(p.search(commands) for _, p in LAUNCHERS):
        return
    launchers = ", ".join(name for name, _ in LAUNCHERS[:7])
    notes.append(
        Note(
            "multi_gpu_without_launcher",
            f"{asked} asks for {gpus} GPUs, but the script starts no multi-GPU launcher "
            f"({launchers}). PyTorch and TensorFlow use one GPU by default: the other "
            f"{gpus - 1} would sit idle, yet count against your allocation and make the job "
            "wait longer. Ask for one GPU, or start the program with a launcher (e.g. torchrun "
            "--nproc_per_node) if it can use several; if it spawns its own workers per GPU, "
            "this is fine.",
            sources.SBATCH_ELEMENTS,
            "gpus",
        )
    )
