"""Whether the job's GPUs get used: none asked for by a job that needs one, and several asked for
by a program started as one process.

A program started as one process (a plain python, one srun task) may still use every GPU itself:
a Hugging Face Trainer, `device_map="auto"`, DataParallel, a tuner running trials side by side.
So the checker says the other GPUs sit idle only where it has read the program (given beside the
script, or written inside it) and found none of that; without the program it asks, at advice,
and changes nothing. A launcher told to start one process uses one GPU whatever the program. It
stays quiet where the script shows anything that spreads the work over the GPUs, and says it
cannot tell where the work runs in another script.
"""

import re

from guidance.engine import sources
from guidance.engine.code_check.beside_script import configs_of
from guidance.engine.code_check.gpu_spread import spread_over_gpus, unsettled
from guidance.engine.code_check.program import Program
from guidance.engine.script_check.commands import Reading, Run
from guidance.engine.script_check.findings import (
    Basis,
    Finding,
    Severity,
    add_directive,
    replace_directive,
)
from guidance.engine.script_check.parse import Directive, Script
from guidance.engine.script_check.request import Request
from guidance.engine.types import Cluster

# What spreads the work over several GPUs, in the script or in a program it embeds: launchers,
# frameworks that use every visible GPU, and options handing the program its GPUs (a
# LightningCLI told --trainer.devices=1 uses one: its program then says what it does).
USES_SEVERAL = re.compile(
    r"\btorchrun\b|\btorch\.distributed\.(run|launch)\b|\baccelerate\s+launch\b|\bdeepspeed\b"
    r"|\bhorovodrun\b|\bmpi(run|exec)\b|\blightning\s+run\b|\bparallel\b|\bxargs\b[^\n]{0,300}\s-P"
    r"|DataParallel|DistributedDataParallel|\bpytorch_lightning\b|\blightning\."
    r"|\btrainer\.(?!(devices|gpus)[= ]1\b)"
    r"|--per[_-]device[_-]\w+|\bMirroredStrategy\b|\bjax\.pmap\b|\bpmap\("
    r"|--(devices|n_?gpus|num_gpus|gpus|world[_-]size|multi[_-]gpu)\b|\bdevices=(?!1\b)"
    r"|CUDA_VISIBLE_DEVICES=\S*,",
    re.IGNORECASE,
)
# A Hydra override of a nested key on a command line: `trainer.devices=1`, `++trainer.gpus=2`.
HYDRA_OVERRIDE = re.compile(r"(?<=\s)\+{0,2}[A-Za-z_][\w-]*\.[\w.-]*=\S*")
# A launcher told to start a single process per node.
ONE_PROCESS = re.compile(
    r"--nproc[_-]per[_-]node[= ]1\b|--num[_-]processes[= ]1\b|--num[_-]gpus[= ]1\b"
)
PROGRAM = re.compile(r"(^|/)python[\d.]*$|\.py$")
OTHER_SCRIPT = re.compile(r"^(bash|sh|zsh|source|\.)$|\.(sh|bash)$")
# The program is on the command line itself: `python -c "..."`, or read from a heredoc.
INLINE = re.compile(r"^(-c|-)$")
SRUN_TASKS = re.compile(r"^(-n|--ntasks|--ntasks-per-node|--tasks-per-node)(=|$)|^-n\d")
# A partition named for its GPUs: a job in it that asks for none still gets none.
GPU_PARTITION = re.compile(r"gpu", re.IGNORECASE)


def check_gpu_use(
    script: Script,
    request: Request,
    reading: Reading,
    notes: list,
    program: tuple[Program, ...] = (),
) -> bool:
    """Whether the script shows a program that uses one of several GPUs on one node: the fixed
    script then asks for one GPU, and the job's CPUs and memory are judged for that one.
    `program`: the files of the program given beside the script that parse; none: not given."""
    gpus = request.gpus_per_node * request.nodes
    if gpus < 2:
        return False
    text = "\n".join((*script.commands, script.embedded))
    if configs_of(program):
        # Hydra's overrides (trainer.devices=1) are read with the program's configs, in _single.
        text = HYDRA_OVERRIDE.sub("", text)
    asked = request.gpu_requests[-1]
    one = next((r for r in reading.runs if ONE_PROCESS.search(r.text)), None)
    if one is not None:
        notes.append(_one_gpu(script, request, one, "the launcher is told to start one process"))
        return request.nodes == 1
    if USES_SEVERAL.search(text) or reading.background_runs >= 2:
        return False
    for run in reading.runs:
        if run.words[0].rsplit("/", 1)[-1] == "srun":
            tasks = _srun_tasks(run, request)
            if tasks >= 2:
                return False
            if _runs_program(run.words[1:]):
                return _single(
                    script, request, run, "srun starts it as a single task", program, notes
                )
        elif _runs_program(run.words):
            return _single(script, request, run, "it starts as a single process", program, notes)
    elsewhere = [r for r in reading.runs if OTHER_SCRIPT.search(r.words[0])]
    if elsewhere:
        notes.append(
            Finding(
                "multi_gpu_unseen",
                f"{asked} asks for {gpus} GPUs, and the work runs in "
                f"\u201c{elsewhere[0].text[:80]}\u201d, which the checker cannot read: it "
                f"cannot tell whether all {gpus} GPUs get used.",
                sources.SBATCH_ELEMENTS,
                "gpus",
                severity=Severity.ADVICE,
                lines=(asked.line, elsewhere[0].line),
                fix="Make sure that script starts one process per GPU (torchrun "
                "--nproc_per_node, srun with a task per GPU) or uses all GPUs itself; if not, "
                "ask for one GPU. Paste it here to have it checked too.",
                basis=Basis.QUESTION,
            )
        )
    return False


def _single(
    script: Script,
    request: Request,
    run: Run,
    how: str,
    program: tuple[Program, ...],
    notes: list,
) -> bool:
    """A program started as one process: idle GPUs where its files show no use of several, a
    question where the checker has not read it, nothing where it spreads itself."""
    if program:
        if spread_over_gpus(program, run.words) is not None:
            return False
        if why := unsettled(program, run.words):
            notes.append(_may_use_one(request, run, why))
            return False
        notes.append(_one_gpu(script, request, run, how, Basis.PROGRAM))
        return request.nodes == 1
    if any(INLINE.match(word) for word in run.words[1:4]):
        notes.append(_one_gpu(script, request, run, how))
        return request.nodes == 1
    notes.append(_may_use_one(request, run))
    return False


def _may_use_one(request: Request, run: Run, unsettled_by: str = "") -> Finding:
    """`unsettled_by`: why the program given does not settle it (its configs are missing)."""
    asked = request.gpu_requests[-1]
    gpus = request.gpus_per_node * request.nodes
    given = f" The files given cannot say: {unsettled_by}." if unsettled_by else ""
    return Finding(
        "multi_gpu_without_launcher",
        f"{asked} asks for {gpus} GPUs, and \u201c{run.text[:100]}\u201d starts one process. "
        f"Does the program use all {gpus} GPUs itself (a Hugging Face Trainer, "
        'device_map="auto", DataParallel, a tuner running trials side by side)? If not, the '
        f"other {gpus - 1} sit idle: PyTorch and TensorFlow use one GPU by default.{given}",
        sources.SBATCH_ELEMENTS,
        "gpus",
        severity=Severity.ADVICE,
        lines=(asked.line, run.line),
        fix=("Give its YAML configs beside it too" if unsettled_by else "Give the program beside")
        + " the script to settle it. If it uses one GPU, ask for one; "
        f"to use all, start one process per GPU (torchrun --nproc_per_node={gpus}, or srun "
        f"with --ntasks-per-node={gpus}).",
        basis=Basis.QUESTION,
    )


def _runs_program(words) -> bool:
    return any(PROGRAM.search(w) for w in words[:3])


def _srun_tasks(run: Run, request: Request) -> int:
    """The tasks an srun starts in all: its own option, else the job's."""
    words = run.words
    for i, word in enumerate(words[1:], 1):
        if not SRUN_TASKS.match(word):
            continue
        if "=" in word:
            value = word.partition("=")[2]
        elif word.startswith("-n") and len(word) > 2:
            value = word[2:]
        else:
            value = words[i + 1] if i + 1 < len(words) else ""
        digits = re.match(r"\d+", value)
        if digits:
            count = int(digits.group())
            return count * request.nodes if "per-node" in word else count
        return 2 if "$" in value else 1  # $SLURM_NTASKS and the like: as the job says
    return request.tasks_per_node * request.nodes


def one_gpu(directive: Directive) -> str:
    """The GPU request asking for one GPU of the same type: --gres=gpu:a100:4 -> gpu:a100:1."""
    value = directive.value or ""
    if directive.option != "gres":
        kind, _, _ = value.rpartition(":")
        return f"--{directive.option}={kind + ':' if kind else ''}1"
    items = value.split(",")
    for i, item in enumerate(items):
        parts = item.strip().split(":")
        if parts[0].removeprefix("gres/") != "gpu":
            continue
        if len(parts) == 2 and parts[1][:1].isdigit():
            parts[1] = "1"
        elif len(parts) >= 3:
            parts[2] = "1"
        items[i] = ":".join(parts)
        break
    return f"--gres={','.join(items)}"


def _one_gpu(
    script: Script, request: Request, run: Run, how: str, basis: Basis = Basis.SCRIPT
) -> Finding:
    asked = request.gpu_requests[-1]
    gpus = request.gpus_per_node * request.nodes
    # Over several nodes, one GPU also means one node: the user decides that.
    edits = (replace_directive(script, asked, one_gpu(asked)),) if request.nodes == 1 else ()
    return Finding(
        "multi_gpu_without_launcher",
        f"{asked} asks for {gpus} GPUs, but \u201c{run.text[:100]}\u201d uses one: {how}, and "
        f"PyTorch and TensorFlow use one GPU by default"
        + (
            " (your program uses no Trainer, DataParallel, device_map or tuner that would "
            "spread it)"
            if basis == Basis.PROGRAM
            else ""
        )
        + f". The other {gpus - 1} sit idle, yet count against your allocation and make the "
        "job wait longer.",
        sources.SBATCH_ELEMENTS,
        "gpus",
        severity=Severity.WASTES,
        lines=(asked.line, run.line),
        fix="Ask for one GPU; or, if the program can use several, start one process per GPU "
        f"(torchrun --nproc_per_node={gpus}, or srun with --ntasks-per-node={gpus})."
        + (" The fixed script asks for one GPU, and CPUs and memory for it." if edits else ""),
        edits=edits,
        basis=basis,
    )


def _gpu_partition(partition: str, cluster: Cluster) -> bool:
    """Whether the named partition is one of the cluster's GPU node types, or named for GPUs."""
    names = {n.strip() for n in partition.split(",") if n.strip()}
    published = {p.slurm_partition or p.name for p in cluster.partitions if p.gpus_per_node}
    return bool(names & published) or bool(GPU_PARTITION.search(partition))


def check_gpu_requested(
    script: Script, request: Request, reading: Reading, cluster: Cluster, notes: list
) -> None:
    """A training job, or one in a GPU partition, that asks for no GPU at all."""
    if request.gpu_requests or not cluster.gpu_types:
        return
    partition = script.option("partition") or ""
    off = [d for d in script.commented if d.option in ("gres", "gpus", "gpus-per-node")]
    training = next((r for r in reading.runs if r.training), None)
    if not (training or _gpu_partition(partition, cluster) or off):
        return
    why = (
        f"its GPU request on line {off[0].line} is commented out"
        if off
        else "no #SBATCH line asks for one"
    )
    what = "It trains" if training else f"It runs in partition {partition}"
    notes.append(
        Finding(
            "no_gpu_requested",
            f"The job gets no GPU: {why}. {what}, but Slurm gives a GPU only to a job that asks "
            "for it, so the program finds no CUDA device and stops, or crawls on the CPU.",
            sources.SBATCH_ELEMENTS,
            "gpus",
            severity=Severity.FAILS,
            lines=tuple(d.line for d in off) + ((training.line,) if training else ()),
            fix=f"Ask for the GPUs it needs: #SBATCH {off[0] if off else '--gres=gpu:1'}.",
            edits=(add_directive(script, str(off[0]) if off else "--gres=gpu:1"),),
        )
    )
