""" "Check the program" on the dev cluster, through both of the portal's routes to it.

A real Slurm job runs a real Python program, train.py, with a DataLoader that has no workers. A
small fake `torch` package beside it lets it run without PyTorch, and the fake NVML makes its GPU
report 35 % busy, so that the portal's GPU warning appears. The owner asks the portal to check the
program: its files are read over SSH (SFTP on the login node, the wrapper's portal-read on the
automation node), never run by the portal, and the page shows the DataLoader's line next to the
warning.
"""

import html
import io
import shlex
import uuid

import pytest
from django.core.management import call_command
from django.test import Client

from guidance.engine import Placement
from guidance.engine.code_check import MAX_FILES
from jobs import tasks
from jobs.compose.script import render
from jobs.compose.script_spec import ScriptSpec
from jobs.models import ClusterAccount, Job, JobState, ProgramCheck
from jobs.script_markers import MONITORING_START
from tests.cluster_routes import ROUTES, take_route
from tests.test_monitoring_cluster import FAKE_HOME_DIR, FAKE_NVML, poll_until

DATALOADER_LINE = 13
STOP_FILE = "stop-training"  # beside train.py: the test's word that it has seen enough
SAFETY_SECONDS = 300  # train.py stops by itself after this, should the test not say so
TRAIN = f"""\
import os
import time

import torch
from torch.utils.data import DataLoader

from numbers_data import Numbers

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
dataset = Numbers(64)
# The portal's checker is to point here: no workers feed the GPU.
loader = DataLoader(dataset, batch_size=8, shuffle=True)

# Runs until the test has checked it (the stop file), so that it is still running then.
deadline = time.time() + {SAFETY_SECONDS}
while time.time() < deadline and not os.path.exists("{STOP_FILE}"):
    for batch in loader:
        optimizer.zero_grad()
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
    time.sleep(0.5)
print("trained")
"""
assert TRAIN.splitlines()[DATALOADER_LINE - 1].startswith("loader = DataLoader(")

NUMBERS = """\
class Numbers:
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        return [float(i)] * 4
"""

# Just enough of torch for train.py to run: nothing here touches a GPU.
FAKE_TORCH = {
    "torch/__init__.py": "from torch import nn, optim, utils  # noqa\n",
    "torch/nn.py": """\
class _Loss:
    def sum(self):
        return self

    def backward(self):
        pass


class Linear:
    def __init__(self, inputs, outputs):
        self.weight = [0.0] * inputs

    def parameters(self):
        return [self.weight]

    def __call__(self, batch):
        return _Loss()
""",
    "torch/optim.py": """\
class SGD:
    def __init__(self, parameters, lr):
        self.parameters = parameters

    def zero_grad(self):
        pass

    def step(self):
        pass
""",
    "torch/utils/__init__.py": "from torch.utils import data  # noqa\n",
    "torch/utils/data.py": """\
class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=False, num_workers=0, **kwargs):
        self.dataset, self.batch_size = dataset, batch_size

    def __iter__(self):
        items = [self.dataset[i] for i in range(len(self.dataset))]
        for start in range(0, len(items), self.batch_size):
            yield items[start : start + self.batch_size]
""",
}


@pytest.fixture(scope="module")
def cluster(devcluster):
    source = FAKE_NVML.read_text()
    copy = f"mkdir -p {FAKE_HOME_DIR} && cat > {FAKE_HOME_DIR}/pynvml.py <<'FAKE_NVML_EOF'\n"
    result = devcluster.ssh(f"{copy}{source}FAKE_NVML_EOF\n")
    assert result.returncode == 0, result.stderr
    return devcluster


@pytest.fixture(params=ROUTES)
def account(request, cluster, seeded, user) -> ClusterAccount:
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    account = ClusterAccount.objects.get(owner=user, cluster__slug="local")
    return take_route(account, request.param)


@pytest.fixture
def stranger_client(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user("mallory", password="x"))
    return client


def _put(cluster, folder: str, files: dict[str, str]) -> None:
    """Writes the files under `folder` (from the test user's home) with the user's own shell."""
    commands = []
    for path, text in files.items():
        assert "\nPROGRAM_EOF\n" not in text
        target = shlex.quote(f"{folder}/{path}")
        commands.append(
            f"mkdir -p \"$(dirname {target})\" && cat > {target} <<'PROGRAM_EOF'\n{text}PROGRAM_EOF"
        )
    result = cluster.ssh("\n".join(commands) + "\n")
    assert result.returncode == 0, result.stderr


def _script(name: str, command: str) -> str:
    """A script as the composer renders it, its one GPU reported 35 % busy by the fake NVML."""
    spec = ScriptSpec(
        cluster="portallab",
        job_name=name,
        partition="gpu-a100",
        gpu_type="a100",
        gpus_per_node=1,
        nodes=1,
        cpus_per_task=2,
        mem="1000M",
        time="00:08:00",  # past train.py's own safety stop
        command=command,
        placement=Placement.SHARED,
        data_source="$HOME",
        results_dest=f"$HOME/portal-jobs/{name}/results",
    )
    fake = (
        f'export PYTHONPATH="$HOME/{FAKE_HOME_DIR}" PORTAL_SAMPLER_NVML=pynvml'
        " FAKE_NVML_UTILIZATION=35"
    )
    return render(spec).replace(MONITORING_START, f"{fake}\n{MONITORING_START}")


def _name() -> str:
    return f"prog-{uuid.uuid4().hex[:8]}"


def test_the_owner_checks_the_program_of_a_running_job_beside_its_gpu_warning(
    account, user_client, stranger_client, cluster, settings
):
    settings.SAMPLE_SECONDS = 1
    settings.GPU_WARMUP_SECONDS = 3
    name = _name()
    folder = f"portal-jobs/{name}"
    _put(cluster, folder, {"train.py": TRAIN, "numbers_data.py": NUMBERS, **FAKE_TORCH})
    command = f"cd {folder} && python3 train.py"
    job = Job.objects.create(
        owner=account.owner, account=account, name=name, script=_script(name, command)
    )
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"The job's command runs <code>{folder}/train.py</code>" in page
    tasks.submit_job.apply(args=[job.pk])
    try:
        running = poll_until(job, lambda j: j.state == JobState.RUNNING and j.gpu_warning, 300)
        assert "35% busy on average" in running.gpu_warning

        # A stranger can neither check it nor learn that it exists.
        assert stranger_client.post(f"/jobs/{job.pk}/program/").status_code == 404
        assert not ProgramCheck.objects.exists()

        answer = user_client.post(f"/jobs/{job.pk}/program/")
        assert answer.status_code == 302 and answer["Location"].endswith("#program-check")
        check = ProgramCheck.objects.get(job=job)
        assert check.error == ""
        # The entry first, then the project's own module it imports; torch is a library, not read.
        assert check.files == ["train.py", "numbers_data.py"]
        assert check.measured.startswith("GPU at 35 % for ")

        page = user_client.get(f"/jobs/{job.pk}/").content.decode()
        finding = (
            f'data-rule="dataloader_num_workers" data-file="train.py" data-line="{DATALOADER_LINE}"'
        )
        assert finding in page
        assert f"train.py:{DATALOADER_LINE}</strong>" in page
        assert "loader = DataLoader(dataset, batch_size=8, shuffle=True)" in page  # before
        assert "num_workers=2" in page  # after: the job's own 2 CPUs for its GPU
        # The warning names the line and links to the finding.
        warning = page[page.index('class="warning program-changes"') :]
        warning = warning[: warning.index("</div>")]
        assert warning.startswith('class="warning program-changes">GPU at 35 % for ')
        assert f">train.py:{DATALOADER_LINE}</a> <code>loader = DataLoader(dataset" in warning
        assert 'href="#program-finding-1"' in warning
    finally:
        _put(cluster, folder, {STOP_FILE: ""})  # train.py ends: the check is done
    ended = poll_until(job, lambda j: j.is_final, 300)  # the dev cluster may be busy
    assert ended.state == JobState.COMPLETED  # the program ran on the cluster: the portal did not


def test_a_missing_program_is_said_in_plain_words(account, user_client):
    name = _name()
    command = f"cd portal-jobs/{name} && python3 nowhere.py --epochs 3"
    job = Job.objects.create(
        owner=account.owner, account=account, name=name, script=_script(name, command)
    )
    user_client.post(f"/jobs/{job.pk}/program/")
    check = ProgramCheck.objects.get(job=job)
    said = (
        f"nowhere.py is not in ~/portal-jobs/{name}: the job's command runs it from there "
        "(python3 nowhere.py --epochs 3)."
    )
    assert check.error == said
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert html.escape(said) in page
    assert "program-finding" not in page


def test_through_the_automation_node_a_program_outside_the_jobs_folder_is_said_to_be(
    cluster, seeded, user, user_client
):
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    account = take_route(ClusterAccount.objects.get(owner=user), "automation node")
    name = _name()
    _put(cluster, f"code-{name}", {"train.py": TRAIN})
    job = Job.objects.create(
        owner=user,
        account=account,
        name=name,
        script=_script(name, f"python3 code-{name}/train.py"),
    )
    user_client.post(f"/jobs/{job.pk}/program/")
    error = ProgramCheck.objects.get(job=job).error
    assert error.startswith(f"train.py is in ~/code-{name}, and through the automation node")
    assert "only files directly in a job's folder" in error


PACKAGED = {
    "train.py": """\
import torch

from pipeline.loading import make_loader

model = torch.nn.Linear(4, 1)
for batch in make_loader():
    model(batch).sum().backward()
""",
    "pipeline/__init__.py": "",
    "pipeline/loading.py": """\
from torch.utils.data import DataLoader

from .numbers import Numbers


def make_loader():
    return DataLoader(Numbers(64), batch_size=8)
""",
    "pipeline/numbers.py": NUMBERS,
}


def test_the_projects_modules_are_followed_from_file_to_file(account, user_client, cluster):
    name = _name()
    folder = f"portal-jobs/{name}"
    _put(cluster, folder, PACKAGED)
    job = Job.objects.create(
        owner=account.owner,
        account=account,
        name=name,
        script=_script(name, f"cd {folder} && python3 train.py"),
    )
    user_client.post(f"/jobs/{job.pk}/program/")
    check = ProgramCheck.objects.get(job=job)
    assert check.error == ""
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    if account.through_automation_node:
        # Its wrapper reads only files directly in the job's folder: the rest is said, not read.
        assert check.files == ["train.py"]
        assert check.not_read == [
            "pipeline/ is beside train.py, but through the automation node the portal reads "
            "only files directly in the job's folder: the modules in it were not checked."
        ]
        assert html.escape(check.not_read[0]) in page
    else:
        # The empty pipeline/__init__.py has nothing to check.
        assert check.files == ["train.py", "pipeline/loading.py", "pipeline/numbers.py"]
        assert check.not_read == []
        place = 'data-rule="dataloader_num_workers" data-file="pipeline/loading.py" data-line="7"'
        assert place in page


def test_a_program_that_imports_hundreds_of_modules_is_read_only_to_the_checkers_limits(
    account, user_client, cluster
):
    name = _name()
    folder = f"portal-jobs/{name}"
    modules = {f"mod{i}.py": f"VALUE = {i}\n" for i in range(200)}
    imports = "".join(f"import mod{i}\n" for i in range(200))
    _put(cluster, folder, {"train.py": imports, **modules})
    job = Job.objects.create(
        owner=account.owner,
        account=account,
        name=name,
        script=_script(name, f"cd {folder} && python3 train.py"),
    )
    user_client.post(f"/jobs/{job.pk}/program/")
    check = ProgramCheck.objects.get(job=job)
    assert check.error == ""
    # The entry and the first modules it imports, up to the checker's 40 files; the rest is said
    # once, not module by module.
    assert check.files[0] == "train.py"
    assert sorted(check.files[1:]) == sorted(f"mod{i}.py" for i in range(MAX_FILES - 1))
    assert check.not_read == [
        f"{200 - (MAX_FILES - 1)} more modules it imports were not read: the checker reads at "
        "most 40 files and 2 MB of a program."
    ]
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert html.escape(check.not_read[0]) in page
