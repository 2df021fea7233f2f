"""The job page's "Check the program", from the database: when it is offered and why not, who may
ask for it, and how a kept check shows (its findings, and the GPU warning that names them). The
read over SSH is tested on the dev cluster (tests/test_program_check_cluster.py)."""

import html

import pytest

from guidance.engine.code_check import CodeFinding, Impact, Kind, Measured
from guidance.engine.sources import DATALOADER, NO_BRAINER_TWEAKS
from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.cluster.remote import Program
from jobs.gpu import program_check
from jobs.models import JobOrigin, ProgramCheck
from tests.test_efficiency import add_samples, resnet_job
from tests.test_job_pages import stranger_client  # noqa: F401  (a fixture)

SCRIPT = "#!/bin/bash\n#SBATCH --gres=gpu:2\ncd code\nsrun python -u train.py --epochs 10\n"


@pytest.fixture
def job(user, seeded, settings):
    settings.GPU_WARMUP_SECONDS = 300
    job = resnet_job(user)
    job.script = SCRIPT
    job.save()
    add_samples(job, 0, 30.0)
    add_samples(job, 1, 0.0)
    return job


def _finding(rule: str, kind: Kind, impact: Impact, line: int, before: str, **more):
    return CodeFinding(
        rule=rule,
        kind=kind,
        impact=impact,
        file="train.py",
        line=line,
        column=10,
        end_line=line,
        title=f"The {rule} title",
        message=f"What {rule} says.",
        before=before,
        **more,
    )


FINDINGS = [
    _finding(
        "dataloader_num_workers",
        Kind.CHANGE,
        Impact.HIGH,
        42,
        "loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True)",
        after="loader = DataLoader(ds, batch_size=64, num_workers=6, pin_memory=True)",
        fix="Give the loader workers.",
        source=DATALOADER,
    ),
    _finding("dataloader_pin_memory", Kind.CHANGE, Impact.MEDIUM, 42, "loader = DataLoader(ds)"),
    _finding("mixed_precision", Kind.CHANGE, Impact.MEDIUM, 7, "model = Net()"),
    _finding("tf32", Kind.CHANGE, Impact.LOW, 7, "model = Net()", source=NO_BRAINER_TWEAKS),
    _finding("zero_grad_set_to_none", Kind.DEFAULT, Impact.LOW, 50, "opt.zero_grad()"),
]


def _kept(job, findings=FINDINGS, **fields) -> ProgramCheck:
    return ProgramCheck.objects.create(
        job=job,
        entry="code/train.py",
        files=["train.py", "models.py"],
        findings=[program_check._stored(f) for f in findings],
        measured="2 GPUs at 15 % for 55 min",
        **fields,
    )


def _page(client, job) -> str:
    response = client.get(f"/jobs/{job.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_offers_to_check_the_program_the_command_names(user_client, job):
    page = _page(user_client, job)
    assert "The job's command runs <code>code/train.py</code>" in page
    assert f'action="/jobs/{job.pk}/program/"' in page
    assert ">Check the program</button>" in page


def test_a_command_that_names_no_python_program_is_explained_and_not_offered(user_client, job):
    job.script = "#!/bin/bash\n./run_everything.sh\n"
    job.save()
    page = _page(user_client, job)
    assert html.escape(program_check.NOT_NAMED) in page
    assert f'action="/jobs/{job.pk}/program/"' not in page
    answer = user_client.post(f"/jobs/{job.pk}/program/", follow=True)
    assert html.escape(program_check.NOT_NAMED) in answer.content.decode()
    assert not ProgramCheck.objects.exists()  # nothing was asked of the cluster


def test_a_job_submitted_outside_the_portal_is_explained(user_client, job):
    job.origin, job.script = JobOrigin.OUTSIDE, ""
    job.save()
    assert html.escape(program_check.OUTSIDE) in _page(user_client, job)


def test_another_user_gets_404_and_nothing_is_read(stranger_client, job):  # noqa: F811
    assert stranger_client.post(f"/jobs/{job.pk}/program/").status_code == 404
    assert not ProgramCheck.objects.exists()


def test_checking_is_a_post(user_client, job):
    assert user_client.get(f"/jobs/{job.pk}/program/").status_code == 405


def test_a_kept_check_shows_each_finding_with_its_place_code_and_source(user_client, job):
    _kept(job)
    page = _page(user_client, job)
    assert "Checked " in page and "train.py, models.py" in page
    first = page[page.index('id="program-finding-1"') : page.index('id="program-finding-2"')]
    assert 'data-rule="dataloader_num_workers" data-file="train.py" data-line="42"' in first
    assert "train.py:42</strong> · The dataloader_num_workers title · High impact" in first
    assert "What dataloader_num_workers says." in first and "Give the loader workers." in first
    assert "loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True)" in first
    assert "num_workers=6, pin_memory=True" in first
    assert 'class="source"' in first
    assert "PyTorch's default already" in page  # the zero_grad one
    assert ">Check the program again</button>" in page


def test_the_gpu_warning_names_the_first_three_places_to_change_and_links_them(user_client, job):
    later = [
        _finding("cudnn_benchmark", Kind.CHANGE, Impact.LOW, line, "torch.manual_seed(0)")
        for line in (60, 61)
    ]
    _kept(job, findings=[*FINDINGS[:4], *later, FINDINGS[4]])
    page = _page(user_client, job)
    start = page.index('<div class="warning program-changes">')
    warning = page[start : page.index("</div>", start)]
    assert warning.startswith('<div class="warning program-changes">2 GPUs at 15 % for 55 min: ')
    # Two rules about the DataLoader's line are one place, linked to its first finding.
    assert (
        '<a href="#program-finding-1">train.py:42</a> '
        "<code>loader = DataLoader(ds, batch_size=64, …</code> "
        "(The dataloader_num_workers title; The dataloader_pin_memory title)"
    ) in warning
    assert (
        '<a href="#program-finding-3">train.py:7</a> <code>model = Net()</code> '
        "(The mixed_precision title; The tf32 title)"
    ) in warning
    assert '<a href="#program-finding-5">train.py:60</a>' in warning
    assert "train.py:61" not in warning  # three places, not a fourth
    assert "#program-finding-7" not in warning  # a default is not a change
    # The fragment htmx refreshes shows it too.
    fragment = user_client.get(f"/jobs/{job.pk}/gpus/").content.decode()
    assert '<a href="#program-finding-1">train.py:42</a>' in fragment


def test_a_program_that_follows_the_advice_gets_nothing_to_change(user_client, job):
    _kept(job, findings=[])
    page = _page(user_client, job)
    assert "Nothing to change" in page
    assert "program-changes" not in page


def test_a_check_that_could_not_read_the_program_says_why(user_client, job):
    said = "train.py is not in ~/code: the job's command runs it from there (python train.py)."
    ProgramCheck.objects.create(job=job, entry="code/train.py", error=said)
    page = _page(user_client, job)
    assert html.escape(said) in page
    assert "program-finding" not in page and "Nothing to change" not in page


def test_the_measured_use_is_the_gpu_panels_after_the_warm_up(job):
    measured = program_check.measured_use(job, target=90)
    assert measured == Measured(15.0, 55.0, gpus=2, peak_memory_gb=12.0, memory_total_gb=80.0)
    assert str(measured) == "2 GPUs at 15 % for 55 min"


def test_the_cpus_per_gpu_are_the_jobs_own(job):
    assert program_check.cpus_per_gpu(job) == 6  # 12 CPUs for 2 GPUs
    job.cpus = None
    assert program_check.cpus_per_gpu(job) is None


def test_a_program_path_of_any_length_is_kept(user_client, job, monkeypatch):
    folder = "/".join(["a-rather-long-folder-name"] * 20)
    job.script = f"#!/bin/bash\ncd {folder}\nsrun python train.py\n"
    job.save()
    said = "train.py is not in that folder."

    def fake_read_program(account, workdir, entry):  # FAKE: the cluster's answer, not read
        raise ClusterError(ErrorKind.REMOTE_FILE, said, retryable=False)

    monkeypatch.setattr(program_check.remote, "read_program", fake_read_program)
    user_client.post(f"/jobs/{job.pk}/program/")
    check = ProgramCheck.objects.get(job=job)
    assert check.entry == f"{folder}/train.py" and len(check.entry) > 500
    check.clean_fields(exclude=["files", "findings", "unreadable", "not_read"])  # as PostgreSQL
    assert html.escape(said) in _page(user_client, job)


def test_a_login_key_the_portal_cannot_unlock_is_said_in_plain_words(user_client, job):
    job.account.private_key_encrypted = "not a key the portal made"
    job.account.save()
    answer = user_client.post(f"/jobs/{job.pk}/program/", follow=True)
    assert answer.status_code == 200
    error = ProgramCheck.objects.get(job=job).error
    assert error.startswith("The portal could not unlock the key it keeps for your login on ")
    assert "make a new key on the Cluster logins page" in error
    assert html.escape(error) in answer.content.decode()


def test_a_check_kept_in_an_earlier_shape_asks_to_be_made_again(user_client, job):
    old = program_check._stored(FINDINGS[0])
    del old["end_line"]  # a field the checker did not keep then
    ProgramCheck.objects.create(job=job, entry="code/train.py", findings=[old])
    page = _page(user_client, job)
    assert "kept by an earlier version of the portal" in page
    assert ">Check the program again</button>" in page
    assert "program-finding" not in page and "Nothing to change" not in page
    assert user_client.get(f"/jobs/{job.pk}/gpus/").status_code == 200


def test_a_kept_finding_with_a_field_this_version_lacks_still_shows(user_client, job):
    newer = program_check._stored(FINDINGS[0]) | {"confidence": "high"}
    ProgramCheck.objects.create(job=job, entry="code/train.py", findings=[newer])
    page = _page(user_client, job)
    assert 'data-rule="dataloader_num_workers" data-file="train.py" data-line="42"' in page


def test_a_program_with_no_training_in_the_files_read_is_not_said_to_follow_the_advice(
    user_client, job, monkeypatch
):
    def fake_read_program(account, workdir, entry):  # FAKE: the files as the cluster gave them
        return Program({"train.py": b"from loop import run\nrun()\n"})

    monkeypatch.setattr(program_check.remote, "read_program", fake_read_program)
    user_client.post(f"/jobs/{job.pk}/program/")
    assert ProgramCheck.objects.get(job=job).trains_or_evaluates is False
    page = _page(user_client, job)
    assert (
        "No training or evaluation found in the files read (train.py): every line read was "
        "checked, but the program-wide advice needs the training loop, which may be in a module "
        "the portal could not read."
    ) in page
    assert "Nothing to change" not in page


def test_a_kept_check_of_files_that_neither_train_nor_evaluate_says_so(user_client, job):
    _kept(job, findings=[], trains_or_evaluates=False)
    page = _page(user_client, job)
    assert "No training or evaluation found in the files read (train.py, models.py)" in page
    assert "Nothing to change" not in page


def test_the_script_is_read_for_its_program_once_a_page_and_not_on_the_gpu_poll(
    user_client, job, monkeypatch
):
    # A long script takes about a second to read: the page reads it once, the GPU fragment
    # that htmx asks for every few seconds not at all.
    calls = []
    real = program_check.program_entry

    def counted(script):
        calls.append(script)
        return real(script)

    monkeypatch.setattr(program_check, "program_entry", counted)
    _kept(job)
    assert "The job's command runs <code>code/train.py</code>" in _page(user_client, job)
    assert len(calls) == 1
    fragment = user_client.get(f"/jobs/{job.pk}/gpus/").content.decode()
    assert '<a href="#program-finding-1">train.py:42</a>' in fragment
    assert len(calls) == 1


def test_the_programs_quoted_code_shows_as_code_and_escaped(user_client, job):
    quoted = _finding(
        "dataloader_pin_memory",
        Kind.CHANGE,
        Impact.MEDIUM,
        42,
        "loader = DataLoader(ds)",
        fix="Add `pin_memory=True` to `DataLoader(ds, tag='<b>')`.",
    )
    _kept(job, findings=[quoted])
    page = _page(user_client, job)
    assert (
        "<code>pin_memory=True</code> to <code>DataLoader(ds, tag=&#x27;&lt;b&gt;&#x27;)</code>"
        in page
    )
