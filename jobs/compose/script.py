"""The sbatch script: one validated ScriptSpec (script_spec.py) in, one readable bash script out.

Values a user typed are data, never code: each is validated against a strict pattern where Slurm
reads it (the #SBATCH lines, which sbatch does not unquote), or shell-quoted into a variable at the
top of the script. The command itself runs through `bash -c "$JOB_COMMAND"`, so no text the user
writes can add a directive, end a quote or change the script around it.
"""

import textwrap

from guidance.engine import DataKind, Launch, Placement, PythonBuilder
from guidance.engine.data import file_name
from guidance.engine.shell import ALWAYS_SET, quote, shell_path, variables_in
from guidance.engine.slurm_time import parse_seconds
from guidance.engine.storage import ON_EVERY_NODE
from jobs.compose import sweep_script
from jobs.compose.script_spec import ScriptSpec
from jobs.script_markers import MONITORING_START, MONITORING_STOP, STOP_MARK, STOP_STATUS

WARNING_SECONDS = 300  # how long before the time limit a checkpointing job hears SIGUSR1
# A program's start-up, before it catches USR1: 30 s, or a quarter of a short warning.
USR1_GRACE_SECONDS = 30
# MASTER_PORT: the first port and how many follow, below Linux's ephemeral ports (32768 on).
RENDEZVOUS_PORTS = (10000, 20000)


def _q(value: str) -> str:
    return quote(value)


def _comment(text: str) -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(" ".join(text.split()), 96)]


def render(spec: ScriptSpec) -> str:
    spec.validate()
    return "\n".join(_header(spec) + _body(spec)) + "\n"


def resource_options(spec: ScriptSpec, time: str) -> list[str]:
    """What the job asks Slurm for: the same for sbatch and for salloc."""
    options = [f"--account={spec.account}"] if spec.account else []
    if spec.partition:
        options.append(f"--partition={spec.partition}")
    return [
        *options,
        f"--nodes={spec.nodes}",
        f"--ntasks-per-node={spec.tasks_per_node}",
        f"--gres=gpu:{spec.gpu_type}:{spec.gpus_per_node}",
        f"--cpus-per-task={spec.cpus_per_task}",
        f"--mem={spec.mem}",
        f"--time={time}",
    ]


def warning_seconds(time: str) -> int:
    """When a checkpointing job hears USR1 before its limit: 300 s, or a quarter of a short limit
    (with 300 s of 5 minutes the signal would come at the start)."""
    return max(10, min(WARNING_SECONDS, int(parse_seconds(time)) // 4))


def usr1_grace_seconds(time: str) -> int:
    return max(1, min(USR1_GRACE_SECONDS, warning_seconds(time) // 4))


def _header(spec: ScriptSpec) -> list[str]:
    out = "%A_%a" if spec.array else "%j"
    lines = [
        "#!/bin/bash",
        *_comment(f"{spec.job_name}: written by the GPU portal for {spec.cluster}."),
        f"# Slurm does not create the output directory: run `mkdir -p {spec.job_dir}`",
        "# before `sbatch` (the portal does this when it submits the job).",
        *(line for reason in spec.reasons for line in _comment(reason)),
        f"#SBATCH --job-name={spec.job_name}",
        *(f"#SBATCH {option}" for option in resource_options(spec, spec.time)),
        f"#SBATCH --output={spec.job_dir}/slurm-{out}.out",
        f"#SBATCH --error={spec.job_dir}/slurm-{out}.err",
    ]
    if spec.array:
        lines.append(f"#SBATCH --array={spec.array}")
    if spec.chain_parts:
        # Each run's task requeues itself for its next part; its output keeps every part's.
        lines += ["#SBATCH --requeue", "#SBATCH --open-mode=append"]
    if spec.checkpointing:
        # B: the batch shell gets the signal and passes it on to the program (see the trap).
        lines.append(f"#SBATCH --signal=B:USR1@{warning_seconds(spec.time)}")
    if spec.mail_user:
        lines += [f"#SBATCH --mail-user={spec.mail_user}", "#SBATCH --mail-type=END,FAIL"]
    return lines


def _body(spec: ScriptSpec) -> list[str]:
    return [
        "",
        "set -euo pipefail",
        *_site(spec),
        *_values(spec),
        *(sweep_script.values(spec, _checkpoint_dir(spec)) if spec.sweep else []),
        *_check_data(spec),
        *_finish(spec),
        *_folders(spec),
        *_environment(spec),
        *_staging(spec),
        "",
        MONITORING_START,
        MONITORING_STOP,
        *_run(spec),
    ]


def _uses_work_dir(spec: ScriptSpec) -> bool:
    """The job keeps a folder on node-local storage: for staged data, or a virtualenv."""
    return spec.placement != Placement.SHARED or bool(spec.requirements)


def _work_dir(spec: ScriptSpec) -> str:
    if not spec.stage_root:  # the site publishes no node-local storage: the node's own /tmp
        return "${TMPDIR:-/tmp}/portal-$SLURM_JOB_ID"
    # A tier shared by every job on the node (e.g. $SCRATCH) gets a folder per job.
    return spec.stage_root if spec.stage_per_job else f"{spec.stage_root}/$SLURM_JOB_ID"


def _site(spec: ScriptSpec) -> list[str]:
    """What the site gives every job: a fallback where the login environment may lack a value,
    and an early stop, in words, where only the scheduler could have set one."""
    lines = [
        "",
        "# Stops the job at once with one line that says why (the portal shows it).",
        f'portal_stop() {{ echo "{STOP_MARK} $*" >&2; exit {STOP_STATUS}; }}',
    ]
    defaults = [(name, value) for name, value in spec.site_variables if value]
    if defaults:
        lines += _comment(
            f"What {spec.cluster} sets in every job, should sbatch not have passed it."
        )
        lines += [f': "${{{name}:={value}}}"' for name, value in defaults]
        lines.append(f"export {' '.join(name for name, _ in defaults)}")
    for name in sorted(_variables_needed(spec) - {name for name, _ in defaults} - ALWAYS_SET):
        said = (
            f"${name} is not set in this job: Slurm sets it only in a job array. Change the paths."
            if name.startswith("SLURM_ARRAY_")
            else f"${name} is not set in this job. The script expects "
            f"{' '.join(spec.cluster.split())} to set it: ask its admins, or change the paths."
        )
        lines.append(f'[ -n "${{{name}:-}}" ] || portal_stop {_q(said)}')
    return lines


def _variables_needed(spec: ScriptSpec) -> set[str]:
    paths = [spec.data_source, spec.results_dest, spec.checkpoint_root]
    paths += [spec.venv, spec.requirements]
    if _uses_work_dir(spec):
        paths.append(spec.stage_root)
    return {name for path in paths if path for name in variables_in(path)}


def _data_path(spec: ScriptSpec) -> str:
    """Where the program finds its data: the staged copy, or the data read in place."""
    if spec.placement == Placement.SHARED:
        return '"$DATA_SOURCE"'
    if spec.data_kind == DataKind.FILE:
        return f'"$STAGE_DIR"/{_q(file_name(spec.data_source))}'
    return '"$STAGE_DIR"'


def _values(spec: ScriptSpec) -> list[str]:
    folders = []
    if _uses_work_dir(spec):
        folders.append(f'WORK_DIR="{_work_dir(spec)}"')
    if spec.placement == Placement.SHARED:  # read in place, write straight to the destination
        folders += ['STAGE_DIR="$DATA_SOURCE"', 'RESULTS_DIR="$RESULTS_DEST"']
    else:
        folders += ['STAGE_DIR="$WORK_DIR/data"', 'RESULTS_DIR="$WORK_DIR/results"']
    return [
        "",
        "# What you entered, quoted: data for the commands below, never code.",
        f"JOB_COMMAND={_q(spec.command)}",
        f"DATA_SOURCE={shell_path(spec.data_source)}",
        f"RESULTS_DEST={shell_path(spec.results_dest)}",
        *([f"VENV={shell_path(spec.venv)}"] if spec.venv else []),
        *([f"REQUIREMENTS={shell_path(spec.requirements)}"] if spec.requirements else []),
        *folders,
        f"DATA_PATH={_data_path(spec)}",
        f"CHECKPOINT_DIR={_checkpoint_dir(spec)}",
        "export DATA_SOURCE DATA_PATH RESULTS_DEST STAGE_DIR RESULTS_DIR CHECKPOINT_DIR",
    ]


def _checkpoint_dir(spec: ScriptSpec) -> str:
    """The site's checkpoint folder for this job name, the same for every part of a chain; or
    the results' own."""
    if spec.checkpoint_root:
        return shell_path(f"{spec.checkpoint_root.rstrip('/')}/{spec.job_name}")
    return '"$RESULTS_DEST/checkpoints"'


# What the data must be for the plan, as `test` asks it, and what to say when it is not.
_KIND_TESTS = {
    DataKind.FOLDER: ("-d", "is not a folder: choose the data kind that it is"),
    DataKind.ARCHIVE: ("-f", "is not an archive file: if it is a folder, choose 'A folder'"),
    DataKind.FILE: ("-f", "is not a file: if it is a folder, choose 'A folder' as the data kind"),
    DataKind.SHARDS: ("-d", "is not a folder of shards: choose the data kind that it is"),
}


def _check_data(spec: ScriptSpec) -> list[str]:
    if not spec.data_source.strip():
        return []
    lines = [
        "",
        "# Check the data before anything long: a wrong path stops the job now, in plain words.",
        '[ -e "$DATA_SOURCE" ] || portal_stop "The data path $DATA_SOURCE does not exist on '
        '$(hostname -s). Correct the data path, or copy the data there first."',
    ]
    # Read in place, the program takes it as it is; a folder of shards must be one all the same.
    if spec.placement != Placement.SHARED or spec.data_kind == DataKind.SHARDS:
        test, problem = _KIND_TESTS[spec.data_kind]
        lines.append(f'[ {test} "$DATA_SOURCE" ] || portal_stop "$DATA_SOURCE {problem}."')
    return lines


def _keeps_other_nodes(spec: ScriptSpec) -> bool:
    """A task on each other node saves what the command wrote there, or cleans up, at the end."""
    return spec.nodes > 1 and (_results_on_node(spec) or spec.cleanup is not None)


def _results_on_node(spec: ScriptSpec) -> bool:
    return spec.placement != Placement.SHARED


def _finish(spec: ScriptSpec) -> list[str]:
    cleanup = spec.cleanup
    several = _keeps_other_nodes(spec)
    lines = [
        "",
        *(['other_nodes=""  # their keepers, started once the folders exist'] if several else []),
        "# On any exit, also a failure or a time limit: save results, then clean up.",
        "finish() {",
    ]
    body = []
    if spec.sweep:  # the run's own results, and its line in runs.tsv
        lines.insert(-1, "# The exit code of what ended the job, for the run's line in runs.tsv.")
        body += ["    local code=$?", *sweep_script.finish_lines()]
    elif spec.copy_back:
        body += [f"    {line}" for line in _comment(spec.copy_back.comment)]
        body.append(f"    {spec.copy_back.command} || true")
    if several:
        body += [
            "    # Each other node saves its own"
            + (", and cleans up," if cleanup else "")
            + " when its keeper stops (srun passes SIGINT on).",
            '    if [ -n "$other_nodes" ]; then',
            '        kill -INT "$other_nodes" 2>/dev/null || true',
            '        wait "$other_nodes" 2>/dev/null || true',
            "    fi",
        ]
        if cleanup:
            body += [f"    {line}" for line in _comment(cleanup.comment)]
            body.append(f"    {cleanup.command} || true")
    elif cleanup:
        body += [f"    {line}" for line in _comment(cleanup.comment)]
        body.append(f"    {cleanup.command} || true")
    if spec.chain_parts:
        body += sweep_script.requeue_lines(spec)
    lines += body or ["    :"]
    lines += ["}", "trap finish EXIT"]
    if spec.checkpointing:
        lines += [
            "",
            "# Before the time limit Slurm sends USR1: pass it to the program so that it can write",
            "# a checkpoint and exit. One that comes before the program has started (while the",
            "# data is staged) is kept for the program, which gets it once it has started.",
            'program=""',
            'usr1_pending=""',
            # A sweep's run that saved on the warning is not done: its line says so, and a
            # chained run goes back in the queue for its next part (finish()).
            *(['usr1_seen=""'] if spec.sweep else []),
            "forward_usr1() {",
            *(["    usr1_seen=1"] if spec.sweep else []),
            '    if [ -n "$program" ]; then',
            '        kill -USR1 "$program" 2>/dev/null || true',
            "    else",
            "        usr1_pending=1",
            "    fi",
            "}",
            "trap forward_usr1 USR1",
        ]
    return lines


def _folders(spec: ScriptSpec) -> list[str]:
    lines = [
        "",
        "# Made once the exit trap is set, which cleans them up whatever happens next.",
        # A grouped sweep makes each run's own as it starts it.
        'mkdir -p "$RESULTS_DIR" "$RESULTS_DEST"'
        + ("" if spec.grouped_runs else ' "$CHECKPOINT_DIR"'),
    ]
    if spec.nodes > 1 and _results_on_node(spec):
        lines += [
            "# Every node has its own node-local $RESULTS_DIR, where the command may write.",
            f'{ON_EVERY_NODE}mkdir -p "$RESULTS_DIR"',
        ]
    if spec.chain and _results_on_node(spec):
        lines += _earlier_parts(spec)
    if _keeps_other_nodes(spec):
        lines += _node_keepers(spec)
    return lines


# What a later part of a chain takes from the results kept: not the checkpoints (with the
# results when the site has no folder of its own for them: they are read where they are), nor
# the other nodes' folders (each of those nodes takes its own).
_SEED = 'rsync -a --exclude=/checkpoints/ --exclude="/node-*/"'


def _earlier_parts(spec: ScriptSpec) -> list[str]:
    part = "$CHAIN_PART" if spec.chain_parts else "${SLURM_ARRAY_TASK_ID:-1}"
    lines = [
        *_comment(
            "A later part of the chain starts from the results the earlier parts kept, as the "
            "program left them: the copy back at the end replaces each file of the same name, "
            "so a file that every part adds to (a log, a table of metrics) keeps all their "
            "lines only this way. It costs a copy of the results onto the node per part."
        ),
        f'if [ "{part}" -gt 1 ]; then',
        f'    {_SEED} "$RESULTS_DEST"/ "$RESULTS_DIR"/',
    ]
    if spec.nodes > 1:
        lines += [
            "    # Each other node from its own folder, node-<its rank>.",
            f'    {ON_EVERY_NODE}bash -c \'[ "$SLURM_NODEID" = 0 ] || '
            '[ ! -d "$RESULTS_DEST/node-$SLURM_NODEID" ] || '
            f'{_SEED} "$RESULTS_DEST/node-$SLURM_NODEID"/ "$RESULTS_DIR"/\'',
        ]
    return [*lines, "fi"]


def _node_keepers(spec: ScriptSpec) -> list[str]:
    save = [
        "    # Cancelled, it gets SIGTERM from Slurm and SIGINT from finish(): the second must not",
        "    # cut the saving short.",
        "    trap '' INT TERM",
    ]
    does = []
    if _results_on_node(spec):
        does.append(
            "copies what the command wrote there to $RESULTS_DEST/node-<rank>, so that no node "
            "overwrites another's results"
        )
        save += [
            "    # This step leaves out the first node (the batch node): rank 1 is the second.",
            "    local rank=$((SLURM_NODEID + 1))",
            '    if [ -n "$(ls -A "$RESULTS_DIR" 2>/dev/null)" ]; then',
            '        mkdir -p "$RESULTS_DEST/node-$rank"',
            "        # rsync handles SIGINT itself: the second signal may stop it midway. Once",
            "        # more then, for what is left.",
            '        rsync -a --update "$RESULTS_DIR"/ "$RESULTS_DEST/node-$rank"/ ||',
            '            rsync -a --update "$RESULTS_DIR"/ "$RESULTS_DEST/node-$rank"/',
            "    fi",
        ]
    if spec.cleanup:
        save.append(f"    {spec.cleanup.command}")
        does.append("removes the job's folder there")
    return [
        *_comment(
            "A keeper on each other node, for as long as the job runs: when the job ends it "
            f"{' and '.join(does)}. Cancelled or out of time, Slurm starts no new step but does "
            "signal the steps that run. Its errors go to the job's error file."
        ),
        "save_node() {",
        *save,
        "}",
        "keep_node() {",
        "    # On its way out it stops its sleep too: Slurm ends the step when no process is left.",
        "    trap 'kill $! 2>/dev/null; save_node' EXIT",
        "    # The first of the two signals closes the door on the second at once.",
        "    trap 'trap \"\" INT TERM; exit 0' INT TERM",
        "    while :; do sleep 3600 & wait $!; done",
        "}",
        "export -f save_node keep_node",
        *(["export WORK_DIR"] if spec.cleanup else []),
        # --export=ALL: the functions and folders reach the nodes even where a site's jobs
        # export nothing by default (SLURM_EXPORT_ENV=NONE).
        "srun --overlap --disable-status --quiet --export=ALL --nodes=$((SLURM_NNODES - 1)) "
        '--ntasks=$((SLURM_NNODES - 1)) --ntasks-per-node=1 --exclude="$SLURMD_NODENAME" '
        "--cpus-per-task=1 --mem=0 bash -c keep_node </dev/null >/dev/null &",
        "other_nodes=$!",
    ]


def _python_module(spec: ScriptSpec) -> str:
    """The site's Python module, unless the user already loads one of that name."""
    name = spec.python_module
    if not name or any(m == name or m.startswith(f"{name}/") for m in spec.modules):
        return ""
    return name


def _environment(spec: ScriptSpec) -> list[str]:
    lines = ["", "# Environment"]
    modules = list(spec.modules)
    if spec.venv or spec.requirements:
        modules[:0] = filter(None, [_python_module(spec)])
    if modules:
        lines.append(f"module load {' '.join(modules)}")
    if spec.venv:
        lines.append('source "$VENV/bin/activate"')
    elif spec.requirements:
        lines += _build_venv(spec)
    if len(lines) == 2:
        lines.append("# (none chosen: the login environment as sbatch passes it)")
    return lines


def _build_venv(spec: ScriptSpec) -> list[str]:
    # A virtualenv on node-local storage is much faster than one on shared storage (004), and
    # each node of a multi-node job needs its own.
    if spec.python_builder == PythonBuilder.WHEELHOUSE:
        why = "# Built from the site's wheels: compute nodes have no internet access (004)."
        steps = [
            'virtualenv --no-download "$ENV_DIR"',
            '"$ENV_DIR/bin/pip" install --no-index -r "$REQUIREMENTS"',
        ]
    else:
        why = "# Built with the Python on the node and pip."
        steps = [
            'python3 -m venv "$ENV_DIR"',
            '"$ENV_DIR/bin/pip" install --disable-pip-version-check -r "$REQUIREMENTS"',
        ]
    if spec.nodes > 1:  # one shell per node: set -e there stops at the first failing step
        steps = [f"{ON_EVERY_NODE}bash -ec '{'; '.join(steps)}'"]
    return [
        why,
        'ENV_DIR="$WORK_DIR/env"',
        "export ENV_DIR REQUIREMENTS",
        *steps,
        'source "$ENV_DIR/bin/activate"',
    ]


def _staging(spec: ScriptSpec) -> list[str]:
    if not spec.staging:
        return ["", "# Data: read in place from shared storage, in large chunks."]
    lines = ["", "# Data", *sweep_script.staging_note(spec)]
    for stage in spec.staging:
        lines += [*_comment(stage.comment), stage.command]
    return lines


def _rendezvous(spec: ScriptSpec) -> list[str]:
    if spec.nodes == 1 and spec.gpus_per_node == 1:
        return []
    return [
        "",
        *_comment(
            "Where the processes of a distributed program meet (the names torch.distributed "
            "reads): the first node, which runs this script, on a port of this job's own so that "
            "jobs sharing a node do not collide. WORLD_SIZE counts one process per GPU, as "
            "torchrun or srun start them."
        ),
        "MASTER_ADDR=$(hostname)",
        f"MASTER_PORT=$(({RENDEZVOUS_PORTS[0]} + SLURM_JOB_ID % {RENDEZVOUS_PORTS[1]}))",
        'NNODES="$SLURM_NNODES"',
        f"GPUS_PER_NODE={spec.gpus_per_node}",
        "WORLD_SIZE=$((NNODES * GPUS_PER_NODE))",
        "export MASTER_ADDR MASTER_PORT NNODES GPUS_PER_NODE WORLD_SIZE",
        # On several nodes the script gives each its own (run_on_node), or srun its tasks theirs.
        *(["export NODE_RANK=0"] if spec.nodes == 1 else []),
    ]


def _launch(spec: ScriptSpec) -> list[str]:
    """How the command starts, then `program` is what the script waits for."""
    if spec.launch != Launch.NODE:
        return [
            "# Once, here: the command starts its own tasks on the nodes (srun, mpirun).",
            'bash -c "$JOB_COMMAND" &',
        ]
    if spec.nodes == 1:
        return ['bash -c "$JOB_COMMAND" &']
    own_results = []
    if not _results_on_node(spec):  # one shared folder: each other node writes into its own
        own_results = [
            '    if [ "$NODE_RANK" != 0 ]; then',
            '        RESULTS_DIR="$RESULTS_DEST/node-$NODE_RANK"',
            '        mkdir -p "$RESULTS_DIR"',
            "    fi",
        ]
    return [
        *_comment(
            "Once on every node (srun), with NODE_RANK its rank among them. --overlap: an srun "
            "the command starts itself may share this step's CPUs and GPUs; without it, it would "
            "wait for them until the time limit. --kill-on-bad-exit: a node that fails stops the "
            "others, which would wait for it in their rendezvous."
        ),
        "run_on_node() {",
        '    export NODE_RANK="$SLURM_NODEID"',
        *own_results,
        '    exec bash -c "$1"',
        "}",
        "export -f run_on_node",
        "srun --overlap --kill-on-bad-exit=1 --export=ALL "
        """bash -c 'run_on_node "$1"' run_on_node "$JOB_COMMAND" &""",
    ]


def _run(spec: ScriptSpec) -> list[str]:
    lines = [*_rendezvous(spec), "", "# Run"]
    if spec.chain:
        lines += [
            "# Each job of the chain resumes from the newest checkpoint, if any (002).",
            "LAST_CHECKPOINT=$(find \"$CHECKPOINT_DIR\" -maxdepth 1 -type f -printf '%T@ %p\\n' "
            "| sort -n | tail -n 1 | cut -d' ' -f2-)",
            "export LAST_CHECKPOINT",
        ]
    late_usr1 = []
    if spec.checkpointing:
        grace = usr1_grace_seconds(spec.time)
        late_usr1 = [
            'if [ -n "$usr1_pending" ]; then',
            f"    # USR1 came before the program started: pass it on in {grace} s, once the",
            "    # program has set its handler (before that, USR1 would end it).",
            f'    {{ sleep {grace}; kill -USR1 "$program" 2>/dev/null || true; }} &',
            "fi",
        ]
    # In the background and waited for, so that a trap can run while the program works; a trap
    # interrupts `wait`, and the second one then waits for the program to save and exit.
    if spec.grouped_runs:
        return [*lines, *sweep_script.grouped_run(spec, _launch(spec), late_usr1)]
    return [
        *lines,
        *_launch(spec),
        "program=$!",
        *late_usr1,
        "status=0",
        'wait "$program" || status=$?',
        'if [ "$status" -gt 128 ] && kill -0 "$program" 2>/dev/null; then',
        "    status=0",
        '    wait "$program" || status=$?',
        "fi",
        'exit "$status"',
    ]
