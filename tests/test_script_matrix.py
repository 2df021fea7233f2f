"""Every kind of script the portal writes, run on the dev cluster with the job environment of the
site it was written for (docker/devcluster: partitions site-alliance, site-processing, gpu-a100).

Scripts are rendered by the composer's own path (ComposeForm -> compose), written as the user's
files and submitted with sbatch over the dev cluster's sshd; only what the dev cluster cannot have
(partition, account, GPU type, CPUs, memory, time) is overridden on sbatch's command line. All
jobs are submitted at once and run concurrently; each case then asserts what a user would check:
the job's end state, that the program read the staged data (checksums), that results and
checkpoints arrived where the site keeps them (on the Alliance sites results in $PROJECT and
checkpoints in $SCRATCH/checkpoints/<job name>, 004; elsewhere checkpoints with the results), and
that the node-local copies are gone. Each script passes shellcheck.

Only the cases pytest selects are submitted: `-k "narval and chain"` runs those jobs alone.
"""

import collections
import hashlib
import io
import json
import pathlib
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.core.management import call_command
from django.db import transaction

from guidance.engine import Placement, data
from guidance.engine.archives import ARCHIVE_FORMATS, ARCHIVE_SUFFIXES, ArchiveFormat
from guidance.models import Partition
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.script_markers import STOP_MARK, STOP_STATUS
from tests.matrix_probe import MODEL_BYTES, digest
from tests.services import service_missing

# The module's fixtures render in their own rolled-back transaction; the mark makes pytest-django
# create the test database for them.
pytestmark = pytest.mark.django_db

PROBE = pathlib.Path(__file__).with_name("matrix_probe.py")
USER = "portaltest"
HOME = pathlib.Path("/home") / USER


@dataclass(frozen=True)
class Site:
    partition: str
    data_root: str  # as the user writes it
    results_root: str
    real: dict[str, str]  # the variables those paths start with, as the site sets them
    # Where the seeded guidance keeps checkpoints, as the job sees it: a folder per job name
    # there; "" with the results.
    checkpoint_root: str = ""


ALLIANCE = Site(
    "site-alliance",
    "$PROJECT",
    "$PROJECT",
    {"PROJECT": "/project/portal", "SCRATCH": f"/scratch/{USER}"},
    "$SCRATCH/checkpoints",
)
SITES = {
    "narval": ALLIANCE,
    "beluga": ALLIANCE,
    "cedar": ALLIANCE,
    "graham": ALLIANCE,
    "processing": Site("site-processing", "$HOME", "$HOME", {}),
    "local": Site("gpu-a100", "$HOME", "$HOME", {}),
}
LOCAL_NODE_GB = 300  # the node-local storage the dev cluster's node types publish here
PROFILES = ("narval", "processing", "local")  # one site of each job environment
PLACEMENTS = {"memory": 5, "node_local": 50, "shared": 500}  # dataset GB the user declares
# Every archive the engine accepts, as a shape named by its suffix without the dot ("tar.gz").
ARCHIVES = {suffix.removeprefix("."): suffix for suffix in ARCHIVE_SUFFIXES}
SHAPES = {  # the data's name on shared storage, and the file count the user declares
    "small-folder": ("small", 200_000),
    "large-folder": ("large", 3),
    **{shape: (f"small{suffix}", 2_000) for shape, suffix in ARCHIVES.items()},
    "file": ("weights.bin", 1),
    "missing": ("nowhere", 0),
    # The small folder cut into tar shards by the advice's own command (data.shard_command).
    "shards": ("small-shards", 2_000),
}
KINDS = {"shards": "shards"}  # the data kind the user chooses where the name cannot tell it


@dataclass(frozen=True)
class Case:
    site: str
    shape: str = "tar"
    placement: str = "node_local"
    nodes: int = 1
    environment: str = "none"  # none | modules | venv | requirements
    chain: bool = False
    # ok | fail (exit 3) | timeout | cancel: each after the results are written; usr1: Slurm's
    # warning comes while the job builds its environment, and the program saves and exits on it.
    ending: str = "ok"
    # portal: the script starts the command; srun: the command's own srun; hidden: an srun in a
    # script the command runs, which the composer cannot see (started on every node).
    launch: str = "portal"
    # What the user declares instead of the placement's size and the shape's file count (the data
    # on disk stays small): ImageNet is 200 GB in 1,281,167 files.
    gb: float | None = None
    files: int | None = None
    # plain | variables: the data path names $USER further on and the results folder ${USER}
    # and a space, as users write them (every variable is the job's, wherever it stands).
    paths: str = "plain"
    # "": one run; array | grouped: a grid sweep (SWEEPS); fail: half the runs fail once, then
    # "re-run failed runs" (an array; grouped-fail: a grouped job) runs only them again.
    sweep: str = ""

    @property
    def expected(self) -> str:
        """Where the plan puts the data: the size declared says, except on the processing
        cluster, which stages its jobs' data whatever its size (000)."""
        if self.placement == "shared" and self.site == "processing":
            return "node_local"
        return self.placement

    @property
    def name(self) -> str:
        parts = [self.site, self.shape, self.placement, f"{self.nodes}n", self.environment]
        parts += [f"{self.gb:g}gb{self.files}f"] if self.files else []
        parts += [self.launch] if self.launch != "portal" else []
        parts += ["chain"] if self.chain else []
        parts += ["variables"] if self.paths == "variables" else []
        parts += [self.ending] if self.ending != "ok" else []
        parts += [f"sweep{self.sweep}"] if self.sweep else []
        return "-".join(parts).replace(".", "")


# Each sweep's grid, and how long each run takes as the user declares it (in hours): at least
# half an hour makes an array task of each run, less groups the runs in one job.
SWEEPS = {
    "array": ("lr = 0.1, 0.01\nseed = 1 2 3", None),
    "grouped": ("lr = 0.1 0.01 0.001\nseed = 1 2 3 4", "0.05"),
    "fail": ("fail = yes no\nseed = 1 2", None),
    "grouped-fail": ("fail = yes no\nseed = 1 2", "0.05"),
    # Two runs, each a chain of two parts: Slurm's warning ends each run's first part, and the
    # run's own task is requeued for the second.
    "chain": ("seed = 1 2", None),
}


# How each ending shows in sacct, and what the program is told to do for it.
ENDINGS = {
    "ok": ("COMPLETED", ""),
    "fail": ("FAILED", "PROBE_EXIT=3 "),
    "timeout": ("TIMEOUT", "PROBE_SECONDS=600 "),
    "cancel": ("CANCELLED", "PROBE_SECONDS=600 "),
    "usr1": ("COMPLETED", "PROBE_SECONDS=300 "),
}


CASES = [
    *(Case(site, shape) for site in PROFILES for shape in SHAPES if shape != "small-folder"),
    *(Case(site, "small-folder") for site in PROFILES),
    *(
        Case(site, "large-folder", placement)
        for site in PROFILES
        for placement in ("memory", "shared")
    ),
    *(Case(site, shape, nodes=2) for site in PROFILES for shape in ("tar", "small-folder")),
    *(Case(site, environment="requirements") for site in PROFILES),
    Case("narval", nodes=2, environment="requirements"),
    Case("processing", nodes=2, environment="requirements"),
    Case("narval", environment="venv"),
    Case("processing", environment="venv"),
    Case("narval", environment="modules"),
    *(Case(site, "large-folder", chain=True) for site in PROFILES),
    # Each node's results kept over the parts: the later part starts from them on each node.
    *(Case(site, "large-folder", chain=True, nodes=2) for site in ("narval", "processing")),
    *(Case(site) for site in ("beluga", "cedar", "graham")),
    *(
        Case(site, "large-folder", ending=ending)
        for site in ("narval", "processing")
        for ending in ("fail", "timeout", "cancel")
    ),
    # Cancelled, its node-local copies go on both nodes although no new step may start.
    *(Case(site, "large-folder", nodes=2, ending="cancel") for site in ("narval", "processing")),
    # Two nodes as multi-node users write them: their own srun, and data read in place (every
    # 2-node case also meets across the nodes, and writes the same names on each).
    *(Case(site, nodes=2, launch=launch) for site in PROFILES for launch in ("srun", "hidden")),
    *(Case(site, "large-folder", "shared", nodes=2) for site in PROFILES),
    *(Case(site, environment="requirements", ending="usr1") for site in ("narval", "processing")),
    # ImageNet on Narval, too large for the node: read in place from shared storage, as the
    # folder, as the shards the advice makes of it, or as one archive, each read as a stream.
    *(
        Case("narval", shape, "shared", gb=200, files=1_281_167)
        for shape in ("small-folder", "shards", "tar")
    ),
    # 50 GB in 500,000 files on every site profile: the archive the advice makes, extracted on
    # the node, and shards, copied there and read as streams.
    *(Case(site, shape, gb=50, files=500_000) for site in PROFILES for shape in ("tar", "shards")),
    # ImageNet where the node type publishes room for it: extracted there all the same.
    Case("local", "tar", gb=200, files=1_281_167),
    *(Case(site, "large-folder", chain=True, paths="variables") for site in ("narval", "local")),
    # Sweeps: a 6-run grid as an array, 12 short runs in one job, and two that fail and run again.
    *(Case(site, sweep=sweep) for site in PROFILES for sweep in ("array", "grouped")),
    *(Case(site, sweep=sweep) for site in PROFILES for sweep in ("fail", "grouped-fail")),
    *(Case(site, "large-folder", chain=True, sweep="chain") for site in PROFILES),
]


# --- the data users really have ----------------------------------------------------------------


def _make_data(root: pathlib.Path) -> dict[str, str]:
    """Every shape under root; returns the checksum the program must see for each."""
    small = root / "small"
    for i in range(2000):  # 2,000 small files in 20 folders
        path = small / f"class-{i % 20:02d}" / f"img-{i:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"sample {i}\n" * 4)
    large = root / "large"
    large.mkdir()
    for i in range(3):
        (large / f"shard-{i}.bin").write_bytes(hashlib.sha256(bytes([i])).digest() * 100_000)
    (root / "weights.bin").write_bytes(b"\x00\x01weights" * 400_000)
    for archive in ARCHIVE_FORMATS:
        for suffix in archive.suffixes:
            make_archive(archive, small, root / f"small{suffix}")
    # The advice's shards, of the folder as it is here (2,000 files, taken as 20 GB: 4 shards).
    subprocess.run(["bash", "-c", data.shard_command(str(small), 2000, 20)], check=True)
    assert len(list((root / "small-shards").glob("shard-*.tar"))) == 4
    return {
        "small-folder": digest(small)[0],
        "large-folder": digest(large)[0],
        **{shape: digest(small)[0] for shape in ARCHIVES},
        "file": digest(root / "weights.bin")[0],
        "shards": digest(small)[0],
    }


def make_archive(archive: ArchiveFormat, folder: pathlib.Path, target: pathlib.Path) -> None:
    """An archive of the folder's contents, made with the tools users make it with (the
    composer's advice: tar -cf <folder>.tar -C <folder> .)."""
    if archive.tool == "tar":
        # tar's option is the compression's name (tar --xz): see ArchiveFormat.compression.
        compress = [f"--{archive.compression}"] if archive.compression else []
        argv = ["tar", *compress, "-cf", str(target), "-C", str(folder), "."]
        subprocess.run(argv, check=True)
    elif archive.tool == "unzip":
        subprocess.run(["zip", "-qr", str(target), "."], cwd=folder, check=True)
    else:
        raise AssertionError(f"the matrix cannot make {target.name} yet: teach make_archive")


def _as_user(path: pathlib.Path) -> None:
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(path)], check=True)


def _real(site: Site, path: str) -> pathlib.Path:
    for name, value in site.real.items():
        path = path.replace(f"${name}", value)
    path = path.replace("${USER}", USER).replace("$USER", USER)
    return pathlib.Path(path.replace("$HOME", str(HOME)))


def _job_name(case: Case) -> str:
    return f"m-{case.name}"[:64]


def _checkpoints(case: Case, results: pathlib.Path) -> pathlib.Path:
    """Where the case's checkpoints must be: the site's checkpoint folder for its job name, the
    same for every part of a chain, or the results' own."""
    site = SITES[case.site]
    if site.checkpoint_root:
        return _real(site, f"{site.checkpoint_root}/{_job_name(case)}")
    return results / "checkpoints"


# --- the scripts, as the composer writes them ----------------------------------------------------


def _hours(case: Case) -> str:
    """Two parts when chained: the local cluster's jobs run an hour at most, the others' 24 h."""
    if case.sweep and SWEEPS[case.sweep][1]:
        return SWEEPS[case.sweep][1]
    if case.site == "local":
        return "2" if case.chain else "0.5"
    return "48" if case.chain else "2"


def _form(case: Case, run: str, wheel: str) -> dict:
    site = SITES[case.site]
    data_name, file_count = SHAPES[case.shape]
    data = {
        "cluster": case.site,
        "job_name": _job_name(case),
        "account": "portal",
        "workload": "training",
        "dataset_gb": str(case.gb or PLACEMENTS[case.placement]),
        "file_count": str(case.files or file_count),
        "data_path": f"{site.data_root}/{run}/data/{data_name}",
        "data_kind": KINDS.get(case.shape, ""),
        "gpu_count": "1",
        "hours": _hours(case),
        "nodes": str(case.nodes),
        "similar_runs": "1",
        "environment": "none",
        "command": _command(case, run),
        "results_dir": f"{site.results_root}/{run}/results/{case.name}",
    }
    if case.paths == "variables":
        data["data_path"] = f"/home/$USER/{run}/data/{data_name}"
        data["results_dir"] = f"{site.results_root}/{run}/results/${{USER}} runs/{case.name}"
    if case.site == "local":
        data["gpu_type"] = "a100"
    if case.sweep:
        data["sweep_grid"] = SWEEPS[case.sweep][0]
        fails = "fail" in case.sweep
        options = "--fail {fail}" if fails else "" if case.chain else "--lr {lr}"
        options += " --seed {seed}"
        once = "PROBE_FAIL_ONCE={fail} " if fails else ""
        if case.chain:  # the first part waits for Slurm's warning, as a long run would
            once = "PROBE_SECONDS=300 PROBE_WAIT_PART=1 "
        data["command"] = f'{once}python3 "$HOME"/{run}/probe.py {options}'
    if case.chain or case.ending == "usr1":
        data["checkpointing"] = "on"
    if case.nodes > 1:
        data["multi_gpu"] = "on"
    if case.environment == "modules":
        data["modules"] = "cuda/12.2 scipy-stack"
    elif case.environment == "venv":
        data |= {"environment": "venv", "environment_path": f"$HOME/{run}/venv"}
    elif case.environment == "requirements":
        data |= {"environment": "requirements", "environment_path": f"$HOME/{run}/{wheel}"}
    return data


def _launcher(case: Case) -> str:
    return "srun " if case.launch == "srun" else ""


def _command(case: Case, run: str) -> str:
    if case.launch == "hidden":
        return f'bash "$HOME"/{run}/hidden-srun.sh'
    return f'{ENDINGS[case.ending][1]}{_launcher(case)}python3 "$HOME"/{run}/probe.py'


@pytest.fixture(scope="module")
def rendered(django_db_setup, django_db_blocker, devcluster) -> dict[str, tuple[Case, str, list]]:
    """The scripts of every case, rendered in a transaction that is rolled back afterwards."""
    scripts = {}
    with django_db_blocker.unblock(), transaction.atomic():
        call_command("seed_guidance", stdout=io.StringIO())
        from django.contrib.auth import get_user_model

        admin = get_user_model().objects.create_user("matrix-user")
        call_command("register_devcluster", admin.username, stdout=io.StringIO())
        # As an admin publishes it: the dev cluster's node types have room for LOCAL_NODE_GB.
        for partition in Partition.objects.filter(cluster__slug="local"):
            partition.node_local_gb = LOCAL_NODE_GB
            partition.save()
        for case in CASES:
            form = ComposeForm(_form(case, "@RUN@", "@REQS@"))
            composed = compose(form)
            assert composed is not None, (case.name, form.errors.as_data())
            notes = [*composed.recommendation.warnings, *composed.recommendation.tips]
            scripts[case.name] = (case, composed, notes)
        transaction.set_rollback(True)
    return scripts


def test_the_plan_follows_the_data_and_the_placement(rendered):
    for name, (case, composed, notes) in rendered.items():
        assert composed.recommendation.storage.placement == Placement(case.expected), name
        codes = {note.code for note in notes}
        folder_of_many = case.shape == "small-folder"
        staged = case.expected != "shared"
        assert ("archive_folder" in codes) == (folder_of_many and staged), name
        assert ("make_shards" in codes) == (folder_of_many and not staged), name
        # Above the node's size, shards and archives are read as streams, never extracted.
        streamed = case.shape in ("shards", "tar") and not staged
        assert ("read_as_stream" in codes) == streamed, name
        if streamed:
            assert composed.recommendation.storage.staging == (), name


# --- running them ---------------------------------------------------------------------------------


@dataclass
class Ran:
    case: Case
    script: str
    job_id: str
    rows: dict  # "<id>" or "<id>_<task>" -> (state, exit code)
    results: pathlib.Path
    stderr: str
    checkpoints: pathlib.Path


FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}


@pytest.fixture(scope="module")
def matrix(request, devcluster, rendered) -> Iterator[dict[str, Ran]]:
    selected = _selected(request)
    rendered = {name: value for name, value in rendered.items() if name in selected}
    for tool in ("shellcheck", "zip"):
        if shutil.which(tool) is None:
            service_missing(f"{tool} is not installed (scripts/install-test-deps installs it)")
    run = f"matrix-{uuid.uuid4().hex[:8]}"
    roots = {HOME / run, pathlib.Path("/project/portal") / run, pathlib.Path("/scratch", USER, run)}
    # Named by the job, as a chain's parts find them: an earlier run's would be resumed from.
    checkpoint_dirs = {
        _checkpoints(case, HOME)
        for case, _, _ in rendered.values()
        if SITES[case.site].checkpoint_root
    }
    for folder in checkpoint_dirs:
        shutil.rmtree(folder, ignore_errors=True)
    submitted: list[str] = []

    def clean_up() -> None:
        # Also after a failure: no job of this run keeps the nodes, no data set is left behind
        # (the machine is kept between sessions and CI runs).
        if submitted:
            devcluster.ssh(f"scancel {' '.join(submitted)}")
        for root in roots | checkpoint_dirs:
            shutil.rmtree(root, ignore_errors=True)

    request.addfinalizer(clean_up)
    for root in roots:
        root.mkdir(parents=True)
    expected = _make_data(HOME / run / "data")
    shutil.copytree(HOME / run / "data", pathlib.Path("/project/portal") / run / "data")
    shutil.copy(PROBE, HOME / run / "probe.py")
    [wheel] = (devcluster.lab / "site").rglob("portal_probe-*.whl")
    shutil.copy(wheel, HOME / run / wheel.name)
    # A requirements file that names the wheel: found by name in the site's wheelhouse
    # (pip --no-index), and by its path where pip may use an index.
    (HOME / run / "requirements.txt").write_text("portal_probe\n")
    (HOME / run / "requirements-path.txt").write_text(f"{HOME / run / wheel.name}\n")
    # A user's script with an srun of its own inside: it must run, not wait for the time limit.
    (HOME / run / "hidden-srun.sh").write_text(
        f'set -e\nsrun --nodes=1 --ntasks=1 true\nexec python3 "$HOME"/{run}/probe.py\n'
    )
    for root in roots:
        _as_user(root)
    venv = subprocess.run(
        ["runuser", "-u", USER, "--", "python3", "-m", "venv", str(HOME / run / "venv")],
        capture_output=True,
        text=True,
    )
    assert venv.returncode == 0, venv.stderr

    scripts_dir = HOME / run / "scripts"
    scripts_dir.mkdir()
    submit = ["set -e", "cd ~"]
    texts = {}
    for name, (case, composed, _) in rendered.items():
        wheel_file = "requirements.txt" if SITES[case.site] is ALLIANCE else "requirements-path.txt"
        text = composed.script.replace("@RUN@", run).replace("@REQS@", wheel_file)
        texts[name] = text
        (scripts_dir / f"{name}.sbatch").write_text(text)
        job_dir = composed.spec.job_dir
        submit.append(
            f"mkdir -p {job_dir} && echo {name} $(sbatch --parsable {_overrides(case)} "
            f"{scripts_dir}/{name}.sbatch)"
        )
    (scripts_dir / "submit.sh").write_text("\n".join(submit) + "\n")
    _as_user(scripts_dir)

    lint = subprocess.run(
        ["shellcheck", "-S", "warning", *sorted(str(p) for p in scripts_dir.glob("*.sbatch"))],
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout

    started = time.monotonic()
    answer = devcluster.ssh(f"bash {scripts_dir}/submit.sh", timeout=120)
    assert answer.returncode == 0, answer.stderr
    ids = dict(line.split() for line in answer.stdout.splitlines())
    submitted += ids.values()
    _interrupt(devcluster, rendered, ids, run)
    parts = {job_id: _parts(*rendered[name][:2]) for name, job_id in ids.items()}
    rows = _wait(devcluster, parts, timeout=600)
    print(f"\nscript matrix: {len(ids)} jobs ran in {time.monotonic() - started:.0f} s")
    _print_table(rendered, ids, rows)

    ran = {}
    for name, job_id in ids.items():
        case, composed, _ = rendered[name]
        mine = {key: value for key, value in rows.items() if key.split("_")[0] == job_id}
        results = _real(SITES[case.site], _form(case, run, "")["results_dir"])
        stderr = "".join(
            path.read_text() for path in (HOME / composed.spec.job_dir).glob(f"slurm-{job_id}*.err")
        )
        ran[name] = Ran(
            case, texts[name], job_id, mine, results, stderr, _checkpoints(case, results)
        )
    ran["expected"] = expected  # type: ignore[assignment]
    yield ran


def _overrides(case: Case) -> str:
    """What the dev cluster cannot have of the site's, on sbatch's command line."""
    limit = "00:01:00" if case.ending == "timeout" else "00:10:00"
    return (
        f"--partition={SITES[case.site].partition} --account=portal --gres=gpu:1 "
        f"--cpus-per-task=1 --mem=300M --time={limit}"
    )


def _parts(case: Case, composed) -> int:
    """The jobs sacct lists for the case: a chain's parts, an array sweep's runs, or one."""
    spec = composed.spec
    if spec.sweep and not spec.grouped_runs:
        return len(spec.sweep.runs)
    return 2 if case.chain else 1


def _selected(request) -> set[str]:
    """The cases pytest will run (after -k): only their jobs are submitted."""
    names = set()
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.module is request.module and "name" in params:
            names.add(params["name"])
    return names


def _print_table(rendered, ids: dict[str, str], rows: dict[str, tuple[str, str]]) -> None:
    """Each case as sacct ended it, beside what its ending should give (read with pytest -s)."""
    width = max(map(len, ids))
    print(f"{'case':<{width}}  {'job':>6}  {'expected':<9}  {'state':<10}  exit")
    for name, job_id in sorted(ids.items()):
        case = rendered[name][0]
        # A chain is an array: its last part stands for it.
        parts = sorted(k for k in rows if k == job_id or k.startswith(f"{job_id}_"))
        state, exit_code = rows[parts[-1]] if parts else ("?", "?")
        # A data path that is not there stops the job with the portal's own status; a grouped
        # job exits with its last failed run's code.
        failing = case.shape == "missing" or case.sweep == "grouped-fail"
        expected = "FAILED" if failing else ENDINGS[case.ending][0]
        print(f"{name:<{width}}  {job_id:>6}  {expected:<9}  {state:<10}  {exit_code}")


# How long the first part of a sweep's chained run works before Slurm's warning.
FIRST_PART_SECONDS = 10


def _interrupt(devcluster, rendered, ids: dict[str, str], run: str) -> None:
    """scancel each "cancel" case once its program has written its results, on every node, and
    send USR1 to each "usr1" case's batch shell (as --signal=B: does) while it builds its
    virtualenv, before the program has started."""
    waiting = {name for name, (case, _, _) in rendered.items() if case.ending in {"cancel", "usr1"}}
    # A sweep of chains: each run's first part hears the warning once it has written its results.
    warned = {
        (name, run.number, run.folder)
        for name, (case, composed, _) in rendered.items()
        if case.sweep == "chain"
        for run in composed.spec.sweep.runs
    }
    # As long as _wait waits: on a shared dev cluster a job may queue for minutes first.
    deadline = time.monotonic() + 600
    while (waiting or warned) and time.monotonic() < deadline:
        for name, number, folder in sorted(warned):
            case = rendered[name][0]
            results = _real(SITES[case.site], _form(case, run, "")["results_dir"])
            first = list((results / folder).glob("probe-1-*.json"))
            # Once the first part has run a while: long enough to count in the run's time.
            if first and time.time() - first[0].stat().st_mtime >= FIRST_PART_SECONDS:
                signal = devcluster.ssh(f"scancel --batch --signal=USR1 {ids[name]}_{number}")
                assert signal.returncode == 0, signal.stderr
                warned.discard((name, number, folder))
        for name in sorted(waiting):
            case, job_id = rendered[name][0], ids[name]
            if case.ending == "cancel":
                results = _real(SITES[case.site], _form(case, run, "")["results_dir"])
                if len(list(results.glob("probe-*.json"))) == case.nodes:
                    assert devcluster.ssh(f"scancel {job_id}").returncode == 0
                    waiting.discard(name)
            elif _building_environment(devcluster, job_id):
                signal = devcluster.ssh(f"scancel --batch --signal=USR1 {job_id}")
                assert signal.returncode == 0, signal.stderr
                waiting.discard(name)
        time.sleep(0.2)
    assert not waiting and not warned, f"never started: {waiting} {warned}"


def _building_environment(devcluster, job_id: str) -> bool:
    envs = [f"/processing/{USER}/{job_id}/env", f"/localscratch/{USER}.{job_id}.0/env"]
    check = " || ".join(f"test -d {path}" for path in envs)
    return any(devcluster.on_node(node, check).returncode == 0 for node in ("a100-1", "a100-2"))


def _gone(devcluster, path: str, nodes=("a100-1", "a100-2"), seconds: float = 20) -> bool:
    """Nothing at path on any node; a site's Epilog may still be at work when sacct says done."""
    deadline = time.monotonic() + seconds
    while any(devcluster.on_node(node, f"test -e {path}").returncode == 0 for node in nodes):
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def _wait(devcluster, parts: dict[str, int], timeout: float) -> dict[str, tuple[str, str]]:
    """Until every job has ended, each part of a chain: slurmdbd records them asynchronously,
    so a fast chain's last part may be listed before its first."""
    ids = list(parts)
    deadline = time.monotonic() + timeout
    while True:
        answer = devcluster.ssh(
            f"sacct -n -P -X -o JobID,State,ExitCode -j {','.join(ids)}", timeout=60
        )
        rows = {}
        for line in answer.stdout.splitlines():
            job, state, exit_code = line.split("|")
            rows[job] = (state.split()[0], exit_code)
        ended = collections.Counter(
            job.split("_")[0] for job, (state, _) in rows.items() if state in FINAL
        )
        waiting = [job for job, (state, _) in rows.items() if state not in FINAL]
        if not waiting and all(ended[job] >= count for job, count in parts.items()):
            return rows
        if time.monotonic() > deadline:
            pytest.fail(f"jobs still not done after {timeout} s: {waiting}")
        time.sleep(2)


def _check_every_node(ran: Ran, probes: list[dict]) -> None:
    """Every rank met rank 0 on the first node, and what each node wrote came back, apart."""
    by_rank = {probe["rank"]: probe for probe in probes}
    assert sorted(by_rank) == [0, 1], probes
    first, second = by_rank[0]["met"]["0"], by_rank[0]["met"]["1"]
    assert first != second, "both ranks ran on one node"
    assert all(probe["met"] == {"0": first, "1": second} for probe in probes), probes
    for probe in probes:
        assert probe["rendezvous"] == {
            "MASTER_ADDR": socket.gethostname(),  # the dev cluster's nodes share this host
            "NNODES": "2",
            "WORLD_SIZE": "2",
        }
    assert (ran.results / "node.txt").read_text() == first
    assert (ran.results / "node-1" / "node.txt").read_text() == second
    if ran.case.ending == "cancel":  # copied whole although a signal came in the middle
        assert (ran.results / "node-1" / "model.bin").stat().st_size == MODEL_BYTES
    checkpoints = {path.name for path in ran.checkpoints.glob("nodes/node-*.txt")}
    assert checkpoints == {f"node-{first}.txt", f"node-{second}.txt"}


def _probes(ran: Ran) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(ran.results.glob("probe-*.json"))]


@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_each_script_runs_as_its_site_runs_it(matrix, devcluster, name):
    ran, expected = matrix[name], matrix["expected"]
    case = ran.case
    if case.sweep:
        _check_sweep(ran, expected[case.shape], devcluster)
        return
    if case.shape == "missing":
        assert list(ran.rows.values()) == [("FAILED", f"{STOP_STATUS}:0")], ran.stderr
        assert f"{STOP_MARK} The data path" in ran.stderr
        assert "does not exist" in ran.stderr
        # It stopped before making anything on the node.
        for work_dir in (f"/localscratch/{ran.job_id}", f"/processing/{USER}/{ran.job_id}"):
            assert _gone(devcluster, work_dir, seconds=0), f"{work_dir} was left"
        return

    parts = 2 if case.chain else 1
    assert len(ran.rows) == parts, ran.rows
    state, _ = ENDINGS[case.ending]
    assert {row[0] for row in ran.rows.values()} == {state}, (ran.rows, ran.stderr)
    if case.ending == "ok":
        assert set(ran.rows.values()) == {("COMPLETED", "0:0")}
    elif case.ending == "fail":
        assert set(ran.rows.values()) == {("FAILED", "3:0")}
    probes = _probes(ran)
    assert len({(p["digest"], p["files"]) for p in probes}) == 1, probes
    assert probes[0]["digest"] == expected[case.shape], "the program read other data"
    nodes_seen = len(list(ran.results.glob("probe-1-*.json" if case.chain else "probe-0-*.json")))
    assert nodes_seen == case.nodes

    staged = case.expected != "shared"
    for probe in probes:
        if staged:  # read from node-local storage, not from where the data lives
            assert probe["data_path"].startswith(("/localscratch/", "/processing/")), probe
        if SITES[case.site] is ALLIANCE:
            assert probe["slurm_tmpdir"], "the Alliance sites set SLURM_TMPDIR"
        else:
            assert probe["slurm_tmpdir"] is None
        if case.environment == "requirements":
            assert probe["probe_module"] == "portal-probe-ok"
            assert probe["env_dir"].startswith(("/localscratch/", "/processing/"))

    # Results came back to persistent storage, a checkpoint per part, each part resuming.
    numbers = range(1, parts + 1) if case.chain else [0]
    for part in numbers:
        assert (ran.results / f"result-{part}.txt").read_text() == expected[case.shape]
    # A log that every part adds to, on every node, keeps every part's lines, in order.
    logs = {log: log.read_text().splitlines() for log in ran.results.rglob("log.txt")}
    lines = sorted(line for written in logs.values() for line in written)
    assert lines == sorted(f"part {part}" for part in numbers for _ in range(case.nodes)), logs
    assert all(written == sorted(written) for written in logs.values()), logs
    checkpoints = ran.checkpoints
    site = SITES[case.site]
    if site.checkpoint_root:  # on scratch, named by the job; none with the results
        assert f'CHECKPOINT_DIR="$SCRATCH"/checkpoints/{_job_name(case)}\n' in ran.script
        assert checkpoints.is_relative_to(site.real["SCRATCH"]), checkpoints
        assert not (ran.results / "checkpoints").exists(), "checkpoints went to the results"
    else:
        assert 'CHECKPOINT_DIR="$RESULTS_DEST/checkpoints"\n' in ran.script
    assert (checkpoints / f"part-{1 if case.chain else 0}.ckpt").read_text().startswith("part ")
    if case.chain:
        assert sorted(p.name for p in checkpoints.glob("*.ckpt")) == ["part-1.ckpt", "part-2.ckpt"]
        second = next(p for p in probes if p["resumed_from"])
        assert second["resumed_from"] == "part 1"
        # The second part found the first's checkpoint in the folder they share.
        assert second["last_checkpoint"] == str(checkpoints / "part-1.ckpt")
        # Part 2's older copy of a result did not overwrite part 1's newer one.
        assert (ran.results / "shared.txt").read_text() == "from part 1"
    if case.nodes > 1:
        _check_every_node(ran, probes)
    if case.ending == "usr1":
        [probe] = probes
        [usr1] = ran.results.glob("usr1-0-*")
        # It came while the virtualenv was built: the program got it once it had started and
        # could catch it, and saved before its limit.
        assert float(usr1.read_text()) - probe["started"] >= 10, "USR1 came after the start"
    # Nothing of the job is left on any node's local disk.
    for probe in probes:
        for path in {probe["stage_dir"], probe["env_dir"]} - {""}:
            if path.startswith(("/localscratch/", "/processing/")):
                work_dir = str(pathlib.PurePosixPath(path).parent)
                assert _gone(devcluster, work_dir), f"{work_dir} was left on a node"


def _check_sweep(ran: Ran, digest: str, devcluster) -> None:
    """Every run's values reached it, its results and checkpoints came back to its own folder
    (never another's), and runs.tsv has a line for each with its exit code."""
    sweep = _sweep_of(ran)
    grouped = "SWEEP_RUNS=" in ran.script
    failing = {run.number for run in sweep.runs if dict(run.values).get("fail") == "yes"}
    expected_rows = (
        {("FAILED" if failing else "COMPLETED", "3:0" if failing else "0:0")}
        if grouped
        else {("FAILED", "3:0"), ("COMPLETED", "0:0")}
        if failing
        else {("COMPLETED", "0:0")}
    )
    assert len(ran.rows) == (1 if grouped else len(sweep.runs)), ran.rows
    assert set(ran.rows.values()) == expected_rows, (ran.rows, ran.stderr)
    _check_runs(ran, sweep, failing, digest, devcluster)
    if failing:
        _rerun_failed(ran, sweep, failing, digest, devcluster)


def _sweep_of(ran: Ran):
    from guidance.engine.sweep import from_grid, grid_from_text

    return from_grid(grid_from_text(SWEEPS[ran.case.sweep][0]), "x")


def _check_runs(ran: Ran, sweep, failing: set, digest: str, devcluster, again=frozenset()) -> None:
    grouped = "SWEEP_RUNS=" in ran.script
    names = sweep.names
    assert sorted(p.name for p in ran.results.iterdir()) == sorted(
        [run.folder for run in sweep.runs] + [".runs", "runs.tsv"]
    ), "a run wrote outside its folder"
    table = (ran.results / "runs.tsv").read_text().splitlines()
    assert table[0].split("\t") == [
        "run",
        "folder",
        *names,
        "exit_code",
        "elapsed_s",
        "job",
        "node",
    ]
    lines = [line.split("\t") for line in table[1:]]
    assert [int(line[0]) for line in lines] == [run.number for run in sweep.runs], table
    for run, line in zip(sweep.runs, lines, strict=True):
        failed = run.number in failing and run.number not in again
        assert line[1] == run.folder
        assert tuple(zip(names, line[2 : 2 + len(names)], strict=True)) == run.values
        assert line[2 + len(names)] == ("3" if failed else "0"), table
        folder = ran.results / run.folder
        found = json.loads((folder / "run.json").read_text())
        values = dict(run.values)
        assert found["parameters"] == {n: values[n] for n in names if n in ("lr", "seed", "fail")}
        assert found["argv"][1::2] == [values[n] for n in names], found["argv"]
        assert (found["run"], found["name"]) == (str(run.number), run.folder)
        own = SITES[ran.case.site].checkpoint_root
        checkpoints = ran.checkpoints / run.folder if own else folder / "checkpoints"
        if ran.case.chain:  # run.json is the second part's: it found only the run's own first
            _check_chained_run(found, folder, checkpoints, digest)
            _check_chained_time(ran, run.number, int(line[3 + len(names)]), devcluster)
            continue
        # No other run's checkpoint or result was there when it started: only its own save
        # from its failed first try, when it is run again.
        assert found["checkpoints_before"] == (["failed-once"] if run.number in again else [])
        assert found["results_before"] in ([], ["log.txt"] if run.number in again else [])
        if failed:
            continue
        part = "0" if grouped else str(run.number)
        assert (folder / f"result-{part}.txt").read_text() == digest, run.folder
        assert (checkpoints / f"part-{part}.ckpt").read_text() == f"part {part}"
        for probe in map(json.loads, map(pathlib.Path.read_text, folder.glob("probe-*.json"))):
            if probe["stage_dir"].startswith(("/localscratch/", "/processing/")):
                work_dir = str(pathlib.PurePosixPath(probe["stage_dir"]).parent)
                assert _gone(devcluster, work_dir), f"{work_dir} was left on a node"


def _check_chained_run(
    found: dict, folder: pathlib.Path, checkpoints: pathlib.Path, digest
) -> None:
    """Both parts of the run's chain ran in its task, the second resuming from the first's
    checkpoint in the run's own folder, with the first's results and log lines kept."""
    assert found["checkpoints_before"] == ["part-1.ckpt"], found
    assert {"log.txt", "result-1.txt"} <= set(found["results_before"]), found
    for part in ("1", "2"):
        assert (folder / f"result-{part}.txt").read_text() == digest, folder
        assert (checkpoints / f"part-{part}.ckpt").read_text() == f"part {part}"
    assert (folder / "log.txt").read_text().splitlines() == ["part 1", "part 2"]
    [second] = [json.loads(p.read_text()) for p in folder.glob("probe-2-*.json")]
    assert second["resumed_from"] == "part 1"
    assert second["last_checkpoint"] == str(checkpoints / "part-1.ckpt")
    assert list(folder.glob("usr1-*")), "the first part did not hear Slurm's warning"


def _check_chained_time(ran: Ran, number: int, elapsed: int, devcluster) -> None:
    """A chained run's time in runs.tsv is all its parts', as sacct counts each (to the second,
    and less the few lines before the run starts)."""
    answer = devcluster.ssh(
        f"sacct -n -P -X --duplicates -o ElapsedRaw -j {ran.job_id}_{number}", timeout=60
    )
    parts = [int(seconds) for seconds in answer.stdout.split()]
    assert len(parts) == 2 and max(parts) >= FIRST_PART_SECONDS, answer.stdout
    assert sum(parts) - 2 * len(parts) <= elapsed <= sum(parts), (elapsed, parts)


def _rerun_failed(ran: Ran, sweep, failing: set, digest: str, devcluster) -> None:
    """What "Re-run failed runs" submits: the same script with only the failed runs."""
    from jobs.compose.sweep_script import with_only

    script = with_only(ran.script, sorted(failing))
    path = HOME / f"rerun-{ran.job_id}.sbatch"
    path.write_text(script)
    _as_user(path)
    try:
        answer = devcluster.ssh(f"sbatch --parsable {_overrides(ran.case)} {path}", timeout=60)
        assert answer.returncode == 0, answer.stderr
        job_id = answer.stdout.strip()
        grouped = "SWEEP_RUNS=" in script
        rows = _wait(devcluster, {job_id: 1 if grouped else len(failing)}, timeout=300)
    finally:
        path.unlink()
    # Only the failed runs ran again, and they all completed this time.
    tasks = sorted(rows)
    if grouped:
        assert tasks == [job_id], rows
    else:
        assert tasks == sorted(f"{job_id}_{n}" for n in failing), rows
    assert set(rows.values()) == {("COMPLETED", "0:0")}, rows
    _check_runs(ran, sweep, failing, digest, devcluster, again=frozenset(failing))
    table = [line.split("\t") for line in (ran.results / "runs.tsv").read_text().splitlines()[1:]]
    for line in table:  # the runs that passed the first time keep their first job's line
        again = int(line[0]) in failing
        assert line[-2].split("_")[0] == (job_id if again else ran.job_id), line


@pytest.mark.parametrize("site", PROFILES)
def test_a_glob_in_the_data_path_is_refused_before_submission(seeded, site):
    """Shards given by a pattern: the job would look for a file of that very name and stop, so the
    form refuses it beside the data path, saying what to give instead, and writes no script."""
    data = _form(Case(site, "shards"), "@RUN@", "") | {
        "data_path": f"{SITES[site].data_root}/@RUN@/data/small-shards/shard-*.tar"
    }
    form = ComposeForm(data)
    assert compose(form) is None
    [said] = form.errors["data_path"]
    folder = f"{SITES[site].data_root}/@RUN@/data/small-shards"
    assert "holds a pattern (*)" in said
    assert f"Give the folder that holds the files instead ({folder})" in said
