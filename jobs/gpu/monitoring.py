"""GPU monitoring in a submitted script: the bash that runs the sampler on every node of the job.

jobs/compose/script.py leaves two marker lines (jobs/script_markers.py) with nothing
between them; a downloaded script keeps them empty, and the start marker itself tells its reader
that the portal adds monitoring when it submits. with_monitoring() fills them in when the portal
submits a job that asks for GPUs. The block writes jobs/gpu/sampler/portal_gpu_sampler.py into the
job's directory, starts it once per node as an overlapping job step, and stops it from the script's
exit trap, so its summary lines are written on a normal end, a cancel and a time limit alike (Slurm
also sends SIGTERM to the step itself on the last two). No Django here: pure text in, text out.
"""

import functools
import re
import shlex
from pathlib import Path

from jobs.script_markers import MONITORING_START, MONITORING_STOP

SAMPLER = Path(__file__).resolve().parent / "sampler" / "portal_gpu_sampler.py"
HEREDOC_END = "PORTAL_GPU_SAMPLER_PY"
DEFAULT_INTERVAL = 10
# A GPU request among the #SBATCH lines: --gres=gpu..., --gres=...,gpu..., --gpus..., -G N.
GPU_REQUEST = re.compile(
    r"^#SBATCH\b.*(?:--gres[= ](?:\S*,)?gpu\b|--gpus(?:-per-[a-z]+)?[= ]|\s-G\s*\d)",
    re.MULTILINE,
)
UNAVAILABLE_REASON = "No python3 3.8 or newer on this node, so the GPU sampler cannot run."


def asks_for_gpus(script: str) -> bool:
    return GPU_REQUEST.search(script) is not None


def is_monitored(script: str) -> bool:
    """Whether with_monitoring() fills the script in: it asks for GPUs and has both markers, with
    nothing between them (filled in already, or edited: left as it is)."""
    lines = script.split("\n")
    if MONITORING_START not in lines or MONITORING_STOP not in lines:
        return False
    start, stop = lines.index(MONITORING_START), lines.index(MONITORING_STOP)
    return stop == start + 1 and asks_for_gpus(script)


def with_monitoring(script: str, job_dir: str, interval: int = DEFAULT_INTERVAL) -> str:
    """The script with the monitoring block between its markers (see is_monitored(); unchanged
    otherwise). job_dir is relative to the submit directory (or absolute)."""
    if not is_monitored(script):
        return script
    lines = script.split("\n")
    start, stop = lines.index(MONITORING_START), lines.index(MONITORING_STOP)
    block = monitoring_block(job_dir, interval).split("\n")
    return "\n".join([*lines[: start + 1], *block, *lines[stop:]])


def _directory(job_dir: str) -> str:
    if job_dir.startswith("/"):
        return shlex.quote(job_dir)
    return f'"${{SLURM_SUBMIT_DIR:-$PWD}}"/{shlex.quote(job_dir)}'


@functools.cache
def _sampler_source() -> str:
    """The sampler's source, read and checked once per process, not once per submission."""
    source = SAMPLER.read_text()
    if f"\n{HEREDOC_END}\n" in f"\n{source}\n":
        raise ValueError("The sampler's source holds the heredoc's end marker.")
    return source


def monitoring_block(job_dir: str, interval: int = DEFAULT_INTERVAL) -> str:
    """The bash lines between the markers (no trailing newline)."""
    interval = int(interval)
    if not 1 <= interval <= 3600:
        raise ValueError("The sampling interval is from 1 to 3600 seconds.")
    source = _sampler_source()
    start_on_node = 'gpu_monitoring_node "$gpu_monitoring_dir" "$gpu_monitoring_label"'
    lines = [
        f"# Every {interval} s, one JSON line per GPU with its use, on each node, in",
        "# $gpu_monitoring_dir/gpu-<job id>.<node>.jsonl; the portal reads them. It never makes",
        "# the job fail: without python3 or an NVIDIA driver it writes why, once, and stops.",
        f"gpu_monitoring_dir={_directory(job_dir)}",
        'if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then',
        '    gpu_monitoring_label="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"',
        "else",
        '    gpu_monitoring_label="${SLURM_JOB_ID:-local}"',
        "fi",
        'gpu_monitoring_log="$gpu_monitoring_dir/.portal/sampler-$gpu_monitoring_label.log"',
        'gpu_sampler_py="$gpu_monitoring_dir/.portal/portal_gpu_sampler.py"',
        "gpu_sampler=",
        "# Runs on each node: the sampler, or one line saying why it cannot.",
        "gpu_monitoring_node() {",
        "    # In a subshell: the job's exit trap is not ours to run, and a job that ends at once",
        "    # must not interrupt the line below (python3 sets its own handlers).",
        "    trap - EXIT",
        "    trap '' INT",
        '    local node="${SLURMD_NODENAME:-$(hostname -s)}"',
        "    if python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then",
        f'        exec python3 "$1/.portal/portal_gpu_sampler.py" --dir "$1" --label "$2" '
        f"--interval {interval}",
        "    fi",
        """    printf '{"type": "unavailable", "time": %s, "node": "%s", "reason": "%s"}\\n' \\""",
        f'        "$(date +%s)" "$node" {shlex.quote(UNAVAILABLE_REASON)} '
        '>>"$1/gpu-$2.$node.jsonl"',
        "}",
        "# Written aside, then renamed: the array's other tasks may be reading the file right now.",
        'if mkdir -p "$gpu_monitoring_dir/.portal" 2>/dev/null &&',
        f"    cat >\"$gpu_sampler_py.$gpu_monitoring_label\" <<'{HEREDOC_END}' &&",
        source.rstrip("\n"),
        HEREDOC_END,
        '    mv -f "$gpu_sampler_py.$gpu_monitoring_label" "$gpu_sampler_py" 2>/dev/null',
        "then",
        '    if [ -n "${SLURM_JOB_ID:-}" ] && command -v srun >/dev/null 2>&1; then',
        "        # One task per node, sharing the job's CPUs, memory and GPUs (--overlap) so that",
        "        # it never holds up the job's own steps; srun's messages go to the log.",
        "        export -f gpu_monitoring_node",
        "        srun --overlap --disable-status --export=ALL \\",
        '            --nodes="${SLURM_NNODES:-1}" --ntasks="${SLURM_NNODES:-1}" \\',
        "            --ntasks-per-node=1 --cpus-per-task=1 --mem=0 \\",
        """            bash -c 'gpu_monitoring_node "$@"' portal-gpu-sampler \\""",
        '            "$gpu_monitoring_dir" "$gpu_monitoring_label" \\',
        '            </dev/null >/dev/null 2>>"$gpu_monitoring_log" &',
        "        gpu_sampler=$!",
        "        export -fn gpu_monitoring_node",
        "    else",
        "        # Forked with SIGINT ignored: a job that ends at once must not stop the subshell",
        "        # before it has dropped the job's exit trap, which it would otherwise run too.",
        '        gpu_monitoring_int="$(trap -p INT)"',
        "        trap '' INT",
        f"        {start_on_node} \\",
        '            </dev/null >/dev/null 2>>"$gpu_monitoring_log" &',
        "        gpu_sampler=$!",
        '        eval "${gpu_monitoring_int:-trap - INT}"',
        "    fi",
        "fi",
        "# On any exit: ask the sampler to stop (it writes its summary lines), run the exit trap",
        "# set before this block (finish), then wait for the sampler. Cancelled or out of time,",
        "# Slurm also signals the sampler itself.",
        "stop_gpu_monitoring() {",
        "    # srun --disable-status passes SIGINT on; SIGTERM would make it cancel the step.",
        '    if [ -n "$gpu_sampler" ]; then kill -INT "$gpu_sampler" 2>/dev/null || true; fi',
        "}",
        "wait_gpu_monitoring() {",
        '    if [ -n "$gpu_sampler" ]; then wait "$gpu_sampler" 2>/dev/null || true; fi',
        "}",
        'gpu_monitoring_then=""',
        'gpu_monitoring_chain() { eval "set -- $(trap -p EXIT)"; gpu_monitoring_then="${3:-}"; }',
        "gpu_monitoring_chain",
        "trap 'stop_gpu_monitoring; eval \"$gpu_monitoring_then\"; wait_gpu_monitoring' EXIT",
    ]
    return "\n".join(lines)
