"""The data kind and the site's job environment, from the composer's form to the script's text.

The scripts themselves run in tests/test_script_matrix.py; here: what the form accepts, what the
plan says and why, and that an admin's edit of a site's job environment reaches the script.
"""

import pytest
from django.core.exceptions import ValidationError

from guidance.models import Cluster, GpuType, JobEnvironment, Partition, StorageTier
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from tests.source_helpers import link_to

BASE = {
    "cluster": "narval",
    "job_name": "train",
    "account": "def-someone",
    "workload": "training",
    "dataset_gb": "50",
    "file_count": "",
    "data_path": "$PROJECT/data/imagenet.tar",
    "gpu_count": "1",
    "hours": "12",
    "nodes": "1",
    "similar_runs": "1",
    "environment": "none",
    "command": "python train.py --data $DATA_PATH",
    "results_dir": "$SCRATCH/results",
}


def _compose(seeded, **changes):
    form = ComposeForm(BASE | changes)
    return form, compose(form)


@pytest.mark.parametrize(
    ("path", "kind", "command"),
    [
        ("$PROJECT/d.tar.gz", "", 'tar -xf "$DATA_SOURCE" -C "$STAGE_DIR"'),
        ("$PROJECT/d.zip", "", 'unzip -q "$DATA_SOURCE" -d "$STAGE_DIR"'),
        ("$PROJECT/d", "", 'rsync -a --info=progress2 "$DATA_SOURCE"/ "$STAGE_DIR"/'),
        ("$PROJECT/d.h5", "", 'cp "$DATA_SOURCE" "$STAGE_DIR"/'),
        ("$PROJECT/d.h5", "archive", 'tar -xf "$DATA_SOURCE" -C "$STAGE_DIR"'),
        ("$PROJECT/d.tar", "folder", 'rsync -a --info=progress2 "$DATA_SOURCE"/ "$STAGE_DIR"/'),
    ],
)
def test_the_staging_follows_what_the_data_is(seeded, path, kind, command):
    form, composed = _compose(seeded, data_path=path, data_kind=kind)
    assert composed is not None, form.errors
    assert command in composed.script
    step = composed.recommendation.storage.staging[0]
    assert command in step.command and step.reason and step.source


def test_a_single_file_is_found_by_its_name_on_the_node(seeded):
    _, composed = _compose(seeded, data_path="$PROJECT/models/weights.h5")
    assert 'DATA_PATH="$STAGE_DIR"/weights.h5' in composed.script
    assert '[ -f "$DATA_SOURCE" ] || portal_stop' in composed.script


def test_a_folder_of_many_small_files_gets_the_exact_archive_command(seeded):
    _, composed = _compose(seeded, data_path="$PROJECT/imagenet", file_count="1200000")
    [tip] = [n for n in composed.recommendation.tips if n.code == "archive_folder"]
    assert 'tar -cf "$PROJECT"/imagenet.tar -C "$PROJECT"/imagenet .' in tip.message
    assert tip.source and tip.field == "data_path"
    # An archive given as the data path needs no such advice.
    _, composed = _compose(seeded, data_path="$PROJECT/imagenet.tar", file_count="1200000")
    assert "archive_folder" not in {n.code for n in composed.recommendation.tips}


def test_the_composer_page_shows_the_plan_with_its_reason_and_source(seeded, user_client):
    page = user_client.get("/jobs/new/", BASE | {"data_path": "$PROJECT/d.zip"})
    text = page.content.decode()
    assert "Extract the dataset archive on the node" in text
    assert "unzip -q" in text
    assert link_to("002_7837a9bf9505db0f.txt") in text  # the source of the archive advice


def test_modules_on_a_site_without_a_module_system_are_refused_on_their_field(seeded):
    form, composed = _compose(
        seeded, cluster="processing", modules="cuda", results_dir="$HOME/results"
    )
    assert composed is None
    assert "no module command" in form.errors["modules"][0]


def test_a_path_starting_with_a_variable_the_site_does_not_set_is_refused(seeded):
    form, composed = _compose(
        seeded, cluster="processing", data_path="$SLURM_TMPDIR/d", results_dir="$HOME/r"
    )
    assert composed is None
    assert "have no $SLURM_TMPDIR" in form.errors["data_path"][0]


def test_every_variable_of_a_path_is_one_the_job_has(seeded):
    # Further on in the path too: the job would stop on an unset variable.
    form, composed = _compose(
        seeded, cluster="processing", data_path="/data/$PROJECT_X/d", results_dir="$HOME/r"
    )
    assert composed is None
    assert "have no $PROJECT_X" in form.errors["data_path"][0]
    # Slurm's own job variables are in every job; the user's name is everywhere.
    form, composed = _compose(
        seeded, data_path="/project/def-x/$USER/set.h5", results_dir="$SCRATCH/r/$SLURM_JOB_ID"
    )
    assert composed is not None, form.errors
    assert 'DATA_SOURCE=/project/def-x/"$USER"/set.h5' in composed.script
    assert 'RESULTS_DEST="$SCRATCH"/r/"$SLURM_JOB_ID"' in composed.script


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("$HOME/data/shards/shard-*.tar", "*"),
        ("$PROJECT/d/part-?.h5", "?"),
        ("$PROJECT/d/shard-[0-9].tar", "[0-9]"),
        ("$PROJECT/d/{train,val}", "{train,val}"),
    ],
)
def test_a_data_path_with_a_pattern_is_refused_on_its_field_with_what_to_write(
    seeded, path, pattern
):
    # Written quoted, the job would look for a file of that very name and stop at once.
    form, composed = _compose(seeded, data_path=path)
    assert composed is None
    error = form.errors["data_path"][0]
    assert f"holds a pattern ({pattern})" in error
    assert "choose 'A folder of shards'" in error
    assert form.data["data_path"] == path  # kept as typed


@pytest.mark.parametrize(
    "path", ["${PROJECT}/d", "$PROJECT/d[1]", "$PROJECT/{x}", "$PROJECT/a,b", "~/d"]
)
def test_a_path_that_names_one_path_is_not_taken_for_a_pattern(seeded, path):
    form, _ = _compose(seeded, data_path=path)
    assert "data_path" not in form.errors, form.errors


def test_a_cluster_with_no_published_job_environment_says_what_to_ask_for(seeded):
    # As for a cluster an admin has just added: nothing is known of what its jobs get.
    JobEnvironment.objects.filter(cluster__slug="narval").delete()
    form, composed = _compose(seeded, modules="cuda", data_path="$SCRATCH/imagenet.tar")
    assert composed is None
    for field, what in [("modules", "a module command"), ("data_path", "$SCRATCH")]:
        said = form.errors[field][0]
        assert "Narval has no published job environment yet" in said
        assert f"cannot tell whether its jobs have {what}" in said
        assert "ask the portal's admins to publish the cluster's job environment" in said


def test_each_site_builds_a_virtualenv_its_own_way(seeded):
    changes = {"environment": "requirements", "environment_path": "$HOME/requirements.txt"}
    _, narval = _compose(seeded, **changes)
    assert "module load python\n" in narval.script
    assert 'virtualenv --no-download "$ENV_DIR"' in narval.script
    assert 'pip" install --no-index -r' in narval.script
    assert 'WORK_DIR="$SLURM_TMPDIR"' in narval.script
    _, processing = _compose(
        seeded, cluster="processing", results_dir="$HOME/r", data_path="$HOME/d", **changes
    )
    assert 'python3 -m venv "$ENV_DIR"' in processing.script
    assert "SLURM_TMPDIR" not in processing.script
    assert ': "${SCRATCH:=/processing/$USER}"' in processing.script


def test_an_admins_edit_of_the_job_environment_reaches_the_script(seeded, staff_client):
    environment = JobEnvironment.objects.get(cluster__slug="narval")
    changes = {"environment": "requirements", "environment_path": "$HOME/requirements.txt"}
    page = staff_client.get(f"/admin/guidance/jobenvironment/{environment.pk}/change/")
    assert page.status_code == 200
    form = page.context["adminform"].form
    data = {name: form.initial.get(name, "") for name in form.fields} | {
        "variables": "SLURM_TMPDIR\nSCRATCH=/lustre/scratch/$USER\nPROJECT",
        "python_builder": "venv",
        "python_module": "python",
        "modules": "on",
    }
    response = staff_client.post(f"/admin/guidance/jobenvironment/{environment.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    _, composed = _compose(seeded, **changes)
    assert ': "${SCRATCH:=/lustre/scratch/$USER}"' in composed.script
    assert 'python3 -m venv "$ENV_DIR"' in composed.script
    # A value that could run a command is refused in the admin, on its field.
    data["variables"] = "SCRATCH=$(rm -rf ~)"
    response = staff_client.post(f"/admin/guidance/jobenvironment/{environment.pk}/change/", data)
    assert response.status_code == 200
    assert "nothing else" in response.content.decode()


# Inference on the processing cluster reads its data in place; its virtualenv is built on the node.
READ_IN_PLACE_WITH_VENV = {
    "cluster": "processing",
    "workload": "inference",
    "data_path": "$HOME/data.tar",
    "environment": "requirements",
    "environment_path": "$HOME/requirements.txt",
}
TWO_NODES = {"nodes": "2", "gpu_count": "8", "multi_gpu": "on", "gpu_mem_gb": "20"}


@pytest.mark.parametrize(
    ("changes", "node_local", "work_dir", "removed"),
    [
        (READ_IN_PLACE_WITH_VENV, True, "$SCRATCH/$SLURM_JOB_ID", True),
        (READ_IN_PLACE_WITH_VENV, False, "${TMPDIR:-/tmp}/portal-$SLURM_JOB_ID", True),
        (READ_IN_PLACE_WITH_VENV | TWO_NODES, True, "$SCRATCH/$SLURM_JOB_ID", True),
        # Narval's $SLURM_TMPDIR is the job's own: the scheduler removes it.
        (
            READ_IN_PLACE_WITH_VENV | {"cluster": "narval", "data_path": "$PROJECT/d.tar"},
            True,
            "$SLURM_TMPDIR",
            False,
        ),
    ],
)
def test_a_virtualenv_built_on_the_node_goes_with_the_jobs_folder(
    seeded, changes, node_local, work_dir, removed
):
    if not node_local:
        StorageTier.objects.filter(cluster__slug="processing", kind="node_local").delete()
    form, composed = _compose(seeded, **(changes | {"dataset_gb": "500"}))
    assert composed is not None, form.errors
    assert composed.recommendation.storage.placement == "shared"
    script = composed.script
    assert f'WORK_DIR="{work_dir}"' in script
    assert ('rm -rf "$WORK_DIR" || true' in script) == removed
    assert ("other_nodes=$!" in script) == ("nodes" in changes)


def test_each_cluster_page_publishes_what_its_jobs_get(seeded, user_client):
    narval = user_client.get("/guidance/narval/").content.decode()
    assert "What every job gets" in narval
    assert "<code>$SLURM_TMPDIR</code>: set by the scheduler for each job" in narval
    assert "<code>module load</code> works in jobs" in narval
    processing = user_client.get("/guidance/processing/").content.decode()
    assert "<code>$SCRATCH</code>: <code>/processing/$USER</code>" in processing
    assert "No <code>module</code> command in jobs." in processing


def test_the_plan_says_what_the_data_path_is_taken_as(seeded, user_client):
    page = user_client.get("/jobs/new/", BASE | {"data_path": "$PROJECT/d.h5"}).content.decode()
    assert "is taken as a single file (from its name)" in page
    page = user_client.get(
        "/jobs/new/", BASE | {"data_path": "$PROJECT/d.h5", "data_kind": "archive"}
    ).content.decode()
    assert "is taken as an archive (.tar" in page


@pytest.mark.parametrize("name", ["PATH", "LD_PRELOAD", "BASH_ENV", "HOME"])
def test_a_site_may_not_redefine_the_shells_own_variables(seeded, name):
    environment = JobEnvironment.objects.get(cluster__slug="narval")
    environment.variables = f"{name}=/opt/x"
    with pytest.raises(ValidationError, match="leave it out"):
        environment.full_clean()


def test_without_javascript_the_path_check_answers_in_the_page(seeded, user_client):
    page = user_client.post("/jobs/new/", BASE | {"check_path": "1"}).content.decode()
    assert "Set up your login on Narval to check paths there" in page
    assert 'value="$PROJECT/data/imagenet.tar"' in page  # nothing typed is lost


def _add_in_admin(staff_client, **fields) -> str:
    """A cluster as an admin adds one: the cluster's own fields, every inline left empty."""
    inlines = [
        "policy",
        "job_environment",
        "gpu_types",
        "partitions",
        "storage_tiers",
        "site_rules",
        "code_rules",
    ]
    data = {"scheduler": "slurm", "login_port": "22"} | fields
    for prefix in inlines:
        data |= {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}
    page = staff_client.post("/admin/guidance/cluster/add/", data, follow=True)
    assert page.status_code == 200
    return page.content.decode()


def test_a_cluster_added_in_the_admin_gets_a_default_job_environment_that_says_what_to_add(
    seeded, staff_client
):
    page = _add_in_admin(staff_client, name="Newsite", slug="newsite")
    assert "It has the default job environment of a Slurm cluster" in page
    cluster = Cluster.objects.get(slug="newsite")
    environment = cluster.job_environment
    assert (environment.pairs(), environment.modules) == ((), False)
    gpu = GpuType.objects.create(cluster=cluster, name="a100", memory_gb=40, relative_speed=1)
    Partition.objects.create(
        cluster=cluster, name="gpu", slurm_partition="gpu", gpu_type=gpu, gpus_per_node=4,
        cpus_per_node=32, memory_per_node_mb=256_000, max_hours=24, default_hours=1,
    )  # fmt: skip
    form, composed = _compose(
        seeded, cluster="newsite", modules="cuda", data_path="$SCRATCH/imagenet.tar"
    )
    assert composed is None
    assert form.errors["data_path"] == [
        "Jobs on Newsite have no $SCRATCH (its published job environment): give the full path "
        "instead. If they do, the portal's admins add SCRATCH to its job environment's variables."
    ]
    assert "tick 'module command in jobs' in its job environment" in form.errors["modules"][0]
    # Once added, the same form composes, and the script falls back on the admin's value.
    environment.variables = "SCRATCH=/scratch/$USER"
    environment.modules = True
    environment.save()
    form, composed = _compose(
        seeded, cluster="newsite", modules="cuda", data_path="$SCRATCH/imagenet.tar"
    )
    assert composed is not None, form.errors
    assert ': "${SCRATCH:=/scratch/$USER}"' in composed.script


def test_a_guidance_only_cluster_gets_no_job_environment(seeded, staff_client):
    page = _add_in_admin(staff_client, name="Runai", slug="runai2", scheduler="runai")
    assert "default job environment" not in page
    assert not JobEnvironment.objects.filter(cluster__slug="runai2").exists()
