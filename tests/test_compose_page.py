"""The composer page: live advice and script, download, save, templates and who sees what."""

import html
import re

import pytest
from django.test import Client

from guidance.models import Policy
from jobs.compose.forms import SLURM_ONLY, ComposeForm
from jobs.models import Composition

GOOD = {
    "cluster": "narval",
    "job_name": "resnet",
    "account": "def-someuser",
    "workload": "training",
    "dataset_gb": "50",
    "file_count": "",
    "data_location": "project",
    "data_path": "/project/def-someuser/data",
    "gpu_type": "",
    "gpu_count": "1",
    "gpu_mem_gb": "",
    "hours": "12",
    "nodes": "1",
    "similar_runs": "1",
    "modules": "python/3.11 cuda",
    "environment": "none",
    "environment_path": "",
    "command": 'python train.py --data "$STAGE_DIR"',
    "results_dir": "$HOME/results",
    "mail_user": "",
}


def test_it_requires_login(client, seeded):
    assert client.get("/jobs/new/").status_code == 302


def test_a_new_job_offers_the_site_templates(user_client, seeded):
    page = user_client.get("/jobs/new/").content.decode()
    assert "PyTorch training, one GPU" in page
    assert "Inference" in page


def test_a_template_fills_the_form(user_client, seeded):
    page = user_client.get("/jobs/new/?template=inference").content.decode()
    assert 'value="infer"' in page
    assert "predict.py" in page


def test_an_unknown_template_is_404(user_client, seeded):
    assert user_client.get("/jobs/new/?template=nosuch").status_code == 404


def test_the_page_shows_advice_and_script(user_client, seeded):
    page = user_client.get("/jobs/new/", GOOD).content.decode()
    assert 'data-placement="node_local"' in page
    assert "#SBATCH --gres=gpu:a100:1" in page
    assert "salloc --account=def-someuser" in page


def test_htmx_gets_the_panel_only(user_client, seeded):
    response = user_client.get("/jobs/new/", GOOD, headers={"HX-Request": "true"})
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="panel"')
    assert "#SBATCH --job-name=resnet" in page


def test_download_has_the_jobs_name_and_a_script_type(user_client, seeded):
    response = user_client.post("/jobs/new/", GOOD | {"download": "1"})
    assert response["Content-Type"] == "text/x-shellscript; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="resnet.sbatch"'
    assert response.content.decode().startswith("#!/bin/bash\n")


def test_an_edited_script_is_what_is_downloaded_and_saved(user_client, user, seeded):
    edited = "#!/bin/bash\n#SBATCH --time=1:00:00\necho mine\n"
    response = user_client.post("/jobs/new/", GOOD | {"download": "1", "script_text": edited})
    assert response.content.decode() == edited
    # The checker finds things in it (no GPU, no account) that the written script had: kept.
    flagged = user_client.post("/jobs/new/", GOOD | {"save": "1", "script_text": edited})
    keep = re.search(r'name="keep_edit" value="(\w+)"', flagged.content.decode())[1]
    response = user_client.post(
        "/jobs/new/", GOOD | {"save": "1", "script_text": edited, "keep_edit": keep}
    )
    saved = Composition.objects.get(owner=user)
    assert saved.script == edited and saved.edited
    assert "edited by hand" in user_client.get(response["Location"]).content.decode()


def test_saving_keeps_the_form_values_to_start_again(user_client, user, seeded):
    user_client.post("/jobs/new/", GOOD | {"save": "1", "composition_name": "My run"})
    saved = Composition.objects.get(owner=user, name="My run")
    assert not saved.edited
    assert "#SBATCH --job-name=resnet" in saved.script
    page = user_client.get(f"/jobs/new/?from={saved.pk}").content.decode()
    assert 'value="resnet"' in page


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"job_name": "my job; rm -rf ~"}, "job_name", "no spaces"),
        ({"dataset_gb": "-1"}, "dataset_gb", "The dataset size cannot be negative."),
        ({"hours": "0"}, "hours", "more than zero hours"),
        ({"gpu_type": "h100"}, "gpu_type", "Narval has no GPU type"),
        ({"modules": "cuda $(id)"}, "modules", "Not a module name: $(id)"),
        ({"command": ""}, "command", "This field is required."),
        ({"environment": "venv"}, "environment_path", "Enter the path of the virtualenv"),
        ({"data_path": ""}, "data_path", "Enter the data path"),
        ({"mail_user": "not an address"}, "mail_user", "Enter a valid email address."),
    ],
)
def test_bad_input_gets_a_message_and_keeps_everything(
    user_client, seeded, changes, field, message
):
    data = GOOD | changes
    response = user_client.post("/jobs/new/", data | {"save": "1"})
    assert response.status_code == 200
    page = response.content.decode()
    assert message in page
    assert f'href="#field-{field}"' in page
    assert 'value="/project/def-someuser/data"' in page or field == "data_path"
    assert Composition.objects.count() == 0


def test_the_dgx_cluster_gets_advice_but_no_script(user_client, seeded):
    page = user_client.get("/jobs/new/", GOOD | {"cluster": "dgx"}).content.decode()
    assert "this is advice only, no job script is made" in page
    assert "#SBATCH" not in page


def test_the_dgx_cluster_neither_needs_nor_checks_what_only_a_slurm_script_uses(
    user_client, seeded
):
    # As an API client sends it, without the Slurm-only fields, or as the page posts it after
    # values typed for a Slurm cluster (a time over every limit, a bad memory, modules).
    asked = {k: v for k, v in GOOD.items() if k not in SLURM_ONLY} | {"cluster": "dgx"}
    typed = GOOD | {
        "cluster": "dgx",
        "time_limit": "99-00:00:00",
        "memory": "lots",
        "similar_runs": "5",
    }
    for data in (asked, typed | {"modules": "bad module!", "cpus_per_task": "0"}):
        page = user_client.get("/jobs/new/", data).content.decode()
        assert "this is advice only, no job script is made" in page
        assert "This field is required" not in page
        assert "is not a time limit" not in page and "not an amount of memory" not in page
        assert "dgx-a100" in page, "the advice names the cluster's GPUs"
        # What only a Slurm job is given is not offered either.
        assert "<th>CPUs per task</th>" not in page and "--array" not in page
    # Long work without checkpoints: no chain is promised where the portal writes no jobs.
    page = user_client.get("/jobs/new/", asked | {"hours": "30"}).content.decode()
    assert "Make the program save and resume from checkpoints." in page
    assert "as a chain of" not in page


def test_another_user_cannot_see_use_or_change_a_composition(
    user_client, user, seeded, django_user_model
):
    user_client.post("/jobs/new/", GOOD | {"save": "1"})
    saved = Composition.objects.get(owner=user)
    client = Client()
    client.force_login(django_user_model.objects.create_user("bob", password="x"))
    assert client.get(f"/jobs/compositions/{saved.pk}/").status_code == 404
    assert client.get(f"/jobs/compositions/{saved.pk}/?download=1").status_code == 404
    assert client.get(f"/jobs/new/?from={saved.pk}").status_code == 404
    assert client.post(f"/jobs/compositions/{saved.pk}/update/", {"delete": "1"}).status_code == 404
    assert "resnet" not in client.get("/jobs/compositions/").content.decode()
    assert Composition.objects.filter(pk=saved.pk).exists()


def test_a_user_template_is_offered_and_can_be_deleted(user_client, user, seeded):
    user_client.post("/jobs/new/", GOOD | {"save": "1", "composition_name": "Base"})
    saved = Composition.objects.get(owner=user)
    user_client.post(f"/jobs/compositions/{saved.pk}/update/", {"is_template": "on"})
    assert f'href="?from={saved.pk}"' in user_client.get("/jobs/new/").content.decode()
    download = user_client.get(f"/jobs/compositions/{saved.pk}/?download=1")
    assert download["Content-Disposition"] == 'attachment; filename="resnet.sbatch"'
    user_client.post(f"/jobs/compositions/{saved.pk}/update/", {"delete": "1"})
    assert not Composition.objects.filter(pk=saved.pk).exists()


def test_a_warning_about_a_field_shows_beside_it(user_client, seeded):
    page = user_client.get("/jobs/new/", GOOD | {"gpu_count": "4"}).content.decode()
    beside = page.split('id="warnings-gpu_count"')[1].split("</ul>")[0]
    assert 'data-code="one_gpu_unless_multi"' in beside
    assert "hx-swap-oob" not in page  # a full page has nothing out of band


def test_htmx_updates_the_warnings_beside_the_fields_out_of_band(user_client, seeded):
    headers = {"HX-Request": "true"}
    page = user_client.get("/jobs/new/", GOOD | {"gpu_count": "4"}, headers=headers)
    page = page.content.decode()
    assert '<ul class="field-warnings" id="warnings-gpu_count" hx-swap-oob="true">' in page
    quiet = user_client.get("/jobs/new/", GOOD, headers=headers).content.decode()
    assert '<ul class="field-warnings" id="warnings-gpu_count" hx-swap-oob="true"></ul>' in quiet


def test_save_as_starts_with_the_job_name(user_client, seeded):
    page = user_client.get("/jobs/new/").content.decode()
    assert 'name="composition_name" value="train"' in page


def _script_on_the_page(client) -> str:
    page = client.get("/jobs/new/", GOOD).content.decode()
    return html.unescape(
        re.search(r'<textarea id="script-text"[^>]*>(.*?)</textarea>', page, re.S)[1]
    )


def test_a_hand_edit_is_checked_before_it_is_saved(user_client, user, seeded):
    written = _script_on_the_page(user_client)
    edited = re.sub(r"#SBATCH --time=\S+", "#SBATCH --time=90-02:00:00", written)
    assert edited != written
    form = GOOD | {"save": "1", "script_text": edited}

    # As a browser sends it, with CRLF line breaks: they are not the edit's finding.
    first = user_client.post("/jobs/new/", form | {"script_text": edited.replace("\n", "\r\n")})
    assert first.status_code == 200 and not user.compositions.exists()
    page = first.content.decode()
    findings = page.split('id="edit-findings"', 1)[1].split("</div>", 1)[0]
    assert "the script checker finds this in your edit" in page
    assert re.findall(r'data-code="(\w+)"', findings) == ["over_max_duration"]
    assert "over Narval&#x27;s maximum job duration of 7 days" in findings
    assert "90-02:00:00" in page  # the edit is kept in the editor, not lost
    keep = re.search(r'name="keep_edit" value="([0-9a-f]{32})"', page)[1]

    # Changed again, it is checked again; sent again as it was, it is saved as it is.
    other = edited.replace("90-02:00:00", "80-00:00:00")
    assert (
        user_client.post("/jobs/new/", form | {"script_text": other, "keep_edit": keep}).status_code
        == 200
    )
    saved = user_client.post("/jobs/new/", form | {"keep_edit": keep})
    assert saved.status_code == 302
    assert user.compositions.get().script == edited


def test_a_hand_edit_the_checker_finds_nothing_in_is_saved_at_once(user_client, user, seeded):
    edited = _script_on_the_page(user_client).replace("\n", "\n# my note\n", 1)
    saved = user_client.post("/jobs/new/", GOOD | {"save": "1", "script_text": edited})
    assert saved.status_code == 302 and "# my note" in user.compositions.get().script


# --- Set by hand: node type, time, memory, CPUs ------------------------------------------


def test_values_set_by_hand_reach_the_script_and_the_salloc_line(user_client, seeded):
    page = user_client.get(
        "/jobs/new/", GOOD | {"memory": "200G", "cpus_per_task": "8", "time_limit": "20:00:00"}
    ).content.decode()
    assert "#SBATCH --mem=204800M" in page
    assert "#SBATCH --cpus-per-task=8" in page
    assert "#SBATCH --time=0-20:00:00" in page
    salloc = html.unescape(re.search(r'<pre class="salloc"><code>(.*?)</code>', page)[1])
    assert "--mem=204800M" in salloc and "--cpus-per-task=8" in salloc
    assert "--time=1:00:00" in salloc  # an hour at most interactively, as before
    # Against guidance: taken, with the rule quoted beside the field.
    assert "Narval asks for 124500M per GPU" in page
    assert page.count('class="set-by-hand"') == 3


def test_a_time_over_the_maximum_is_refused_beside_the_field(user_client, seeded):
    page = user_client.get("/jobs/new/", GOOD | {"time_limit": "8-00:00:00"}).content.decode()
    assert "a100 jobs on Narval may run 7 days at most" in page
    # The limit's own source: 004 states Narval's 7 days (002 names no Narval).
    assert "Important elements of a sbatch script</a>" in page
    assert "/guidance/documents/004_" in page
    assert 'name="time_limit" value="8-00:00:00"' in page  # kept as typed
    assert "#SBATCH" not in page


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("time_limit", "soon", "“soon” is not a time limit Slurm takes"),
        ("time_limit", "UNLIMITED", "is not a time limit Slurm takes"),
        ("memory", "lots", "“lots” is not an amount of memory: write e.g. 64G"),
        ("cpus_per_task", "0", "Ensure this value is greater than or equal to 1."),
        ("partition", "h100", "Narval has no node type “h100”"),
        ("gpu_type", "h100", "Narval has no GPU type “h100”"),
    ],
)
def test_values_set_by_hand_that_make_no_sense_are_named(
    user_client, seeded, field, value, message
):
    page = user_client.get("/jobs/new/", GOOD | {field: value}).content.decode()
    assert message in page


def test_the_lists_follow_the_cluster(user_client, seeded):
    page = user_client.get("/jobs/new/", GOOD | {"cluster": "processing"}).content.decode()
    assert '<option value="a6000">a6000: 8 a6000 GPUs per node, up to 7 days</option>' in page
    assert '<option value="rtx">rtx (' in page
    assert 'value="v100l"' not in page


# --- A saved composition reopens whole ------------------------------------------------


def _saved(client, user, **changes) -> Composition:
    client.post("/jobs/new/", GOOD | {"save": "1"} | changes)
    return Composition.objects.get(owner=user)


def test_a_saved_composition_reopens_with_its_advice_and_script(user_client, user, seeded):
    saved = _saved(user_client, user, memory="200G")
    page = user_client.get(f"/jobs/new/?from={saved.pk}").content.decode()
    assert 'data-placement="node_local"' in page  # the advice, without touching the form
    assert "#SBATCH --mem=204800M" in page  # and the script, with what was set by hand
    assert 'name="memory" value="200G"' in page
    assert 'id="edited-notice" class="warning" hidden' in page


def test_hand_edits_come_back_when_it_is_reopened(user_client, user, seeded):
    script = user_client.post("/jobs/new/", GOOD | {"download": "1"}).content.decode()
    edited = script.replace("set -euo pipefail", "set -euo pipefail\n# my own note", 1)
    saved = _saved(user_client, user, script_text=edited)
    assert saved.edited and "# my own note" in saved.script
    page = user_client.get(f"/jobs/new/?from={saved.pk}").content.decode()
    assert "# my own note" in html.unescape(page)
    assert 'id="edited-notice" class="warning">' in page  # said, not hidden


def test_a_saved_composition_shows_the_advice_for_its_values(user_client, user, seeded):
    saved = _saved(user_client, user)
    page = user_client.get(f"/jobs/compositions/{saved.pk}/").content.decode()
    assert "The advice for these values" in page
    assert 'data-placement="node_local"' in page
    assert "guidance has changed" not in page


def test_a_saved_composition_says_when_the_guidance_changed_since(user_client, user, seeded):
    saved = _saved(user_client, user)
    policy = Policy.objects.get(cluster__slug="narval")
    policy.memory_per_gpu_mb = 100_000
    policy.save()
    page = user_client.get(f"/jobs/compositions/{saved.pk}/").content.decode()
    assert "The cluster's guidance has changed since this was saved" in page
    assert "100000M per GPU on Narval" in page  # the advice as it stands today


# --- Live updates: a POST, and errors only where the user has been --------------------------


def _live(client, data: dict, reached: str) -> str:
    headers = {"HX-Request": "true"}
    return client.post(
        "/jobs/new/", data | {"live": "1", "reached": reached}, headers=headers
    ).content.decode()


def test_the_advice_shows_before_the_form_is_complete(user_client, seeded):
    half = GOOD | {"command": "", "job_name": ""}
    page = _live(user_client, half, reached="cluster,workload,dataset_gb,hours")
    assert 'data-placement="node_local"' in page
    assert "The script follows once the rest of the form is filled in." in page
    assert "This field is required" not in page  # the command is further down: not reached
    assert "#SBATCH" not in page


def test_a_field_the_user_has_been_to_gets_its_error(user_client, seeded):
    page = _live(user_client, GOOD | {"command": ""}, reached="dataset_gb,command")
    # Beside the field (an out-of-band swap), not in a list at the top of the advice.
    assert (
        '<div class="field-errors" id="errors-command" hx-swap-oob="true"><ul class="errorlist" '
        'id="id_command_error"><li>This field is required.'
    ) in page
    assert 'href="#field-command">' not in page
    assert 'data-placement="node_local"' in page  # the advice stays meanwhile
    # A field not reached yet has its errors cleared, not shown.
    assert '<div class="field-errors" id="errors-job_name" hx-swap-oob="true"></div>' in page


def test_a_value_the_advice_cannot_use_keeps_the_advice_there_was(user_client, seeded):
    response = user_client.post(
        "/jobs/new/",
        GOOD | {"hours": "soon", "live": "1", "reached": "hours"},
        headers={"HX-Request": "true"},
    )
    assert response["HX-Reswap"] == "none"  # the advice and script on the page stay
    page = response.content.decode()
    assert 'hx-swap-oob="true"><ul class="errorlist" id="id_hours_error"><li>Enter a number' in page
    assert "are for the values before your last change" in page
    assert 'id="panel"' not in page


def test_the_live_update_and_the_update_button_post_the_form(user_client, seeded):
    page = user_client.get("/jobs/new/").content.decode()
    assert 'hx-post="/jobs/new/"' in page and 'hx-get="/jobs/new/"' not in page
    assert 'formmethod="get"' not in page  # the CSRF token never lands in an address
    long_command = "python train.py " + " ".join(f"--opt{i}=value{i}" for i in range(400))
    assert len(long_command) > 5000
    page = _live(user_client, GOOD | {"command": long_command}, reached="command")
    assert "--opt399=value399" in html.unescape(page)


def test_saving_names_every_error_reached_or_not(user_client, seeded):
    page = user_client.post("/jobs/new/", GOOD | {"command": "", "save": "1"}).content.decode()
    assert 'href="#field-command">Command</a>: This field is required.' in page


def test_the_form_reads_in_sections_and_every_field_is_in_one(db):
    form = ComposeForm()
    names = [f.name for section in form.grouped() for f in section.fields]
    visible = [f.name for f in form.visible_fields()]
    assert sorted(names) == sorted(visible) and len(names) == len(set(names))
    assert [s.title for s in form.grouped()][:2] == ["The job", "Its data"]


def test_a_live_update_brings_the_new_clusters_lists(user_client, seeded):
    page = _live(user_client, GOOD | {"cluster": "cedar", "gpu_type": "v100l"}, reached="cluster")
    swapped = re.search(
        r'<template class="fresh-choices" data-name="gpu_type">(.*?)</template>', page, re.S
    )
    assert '<option value="v100l" selected>v100l (32 GB' in swapped[1]
    assert 'value="a100"' not in swapped[1]
    partitions = re.search(
        r'<template class="fresh-choices" data-name="partition">(.*?)</template>', page, re.S
    )
    assert '<option value="p100l">' in partitions[1]


def test_a_reopened_hand_edit_over_the_limit_is_named_as_it_opens(user_client, user, seeded):
    form = ComposeForm(GOOD)
    from jobs.compose.from_form import compose

    script = compose(form).script
    edited = re.sub(r"--time=\S+", "--time=8-00:00:00", script)
    saved = Composition.objects.create(
        owner=user, name="long", fields=dict(GOOD), script=edited, edited=True
    )
    page = user_client.get(f"/jobs/new/?from={saved.pk}").content.decode()
    assert 'id="edit-findings"' in page
    assert "8-00:00:00" in page


def test_the_results_help_follows_the_cluster_chosen(user_client, seeded):
    page = _live(user_client, GOOD | {"cluster": "graham"}, reached="cluster")
    help_text = page[page.index('id="help-results_dir"') :]
    assert help_text.index("Graham") < help_text.index("</small>")
    assert "(004_95f926fd92fa5250" not in page  # the source by its title, not its file name


def test_a_template_picked_on_another_cluster_says_why_the_cluster_changed(user_client, seeded):
    from jobs.models import SiteTemplate

    template = SiteTemplate.objects.filter(clusters__isnull=False).first()
    written_for = {c.slug for c in template.clusters.all()}
    other = next(
        slug for slug in ("narval", "graham", "cedar", "processing") if slug not in written_for
    )
    page = user_client.get(f"/jobs/new/?template={template.slug}&on={other}").content.decode()
    assert f"not {other}" in html.unescape(page)
