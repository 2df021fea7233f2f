"""A sweep in the composer: its runs, GPU-hours and plan beside its fields as the user types,
its errors beside the field at fault with the text kept, its script, and saved compositions."""

import html
import re

import pytest

from jobs.compose import sweep_script
from jobs.models import Composition
from tests.test_compose_page import GOOD

GRID = "lr = 0.1 0.01 0.001\nseed = 1 2"
HUNDRED = [str(n) for n in range(1, 101)]
SWEEP = GOOD | {
    "sweep_grid": GRID,
    "command": 'python train.py --lr {lr} --seed {seed} --data "$STAGE_DIR"',
}


def _live(client, data: dict, reached: str = "sweep_grid"):
    return client.post(
        "/jobs/new/", data | {"live": "1", "reached": reached}, headers={"HX-Request": "true"}
    )


def _summary(page: str) -> str:
    found = re.search(r'<div class="sweep-summary[^>]*>(.*?)</div>', page, re.S)
    assert found, "the sweep's summary is on the page"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", found[1])).split())


def test_the_live_update_shows_the_runs_gpu_hours_and_plan_with_its_source(user_client, seeded):
    response = _live(user_client, SWEEP)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="sweep-summary" aria-live="polite" hx-swap-oob="true"' in page
    summary = _summary(page)
    # Six runs of 12 hours on one GPU each.
    assert summary.startswith("6 runs · 72 GPU-hours · 6 runs of 12 h each: one job array")
    assert "Source:" in summary and "Running many similar jobs" in summary


def test_short_runs_are_summed_up_as_one_grouped_job(user_client, seeded):
    summary = _summary(_live(user_client, SWEEP | {"hours": "0.25"}).content.decode())
    assert summary.startswith("6 runs · 1.5 GPU-hours · 6 runs of 15 min each are short: one job")


def test_the_count_shows_before_the_command_names_the_parameters(user_client, seeded):
    # The user fills in the grid first: an empty command, then one without placeholders.
    empty = _summary(_live(user_client, SWEEP | {"command": ""}).content.decode())
    assert empty.startswith("6 runs · 72 GPU-hours")
    plain = _live(user_client, SWEEP | {"command": "python train.py"}, reached="command")
    summary = _summary(plain.content.decode())
    assert summary.startswith("6 runs · 72 GPU-hours")
    assert "The command does not use {lr}, {seed} yet" in summary


def test_a_bad_grid_line_is_named_beside_the_grid_and_its_text_stays(user_client, seeded):
    bad = SWEEP | {"sweep_grid": GRID + "\nbatch 32 64"}
    live = _live(user_client, bad)
    assert live.status_code == 200
    page = html.unescape(live.content.decode())
    beside = re.search(r'<div class="field-errors" id="errors-sweep_grid"[^>]*>(.*?)</div>', page)
    assert "Line 3: write the parameter's name, =, then its values." in beside[1]
    assert "6 runs" not in _summary(page)  # no count for a grid that cannot be read
    # Without JavaScript the page comes back with the grid as typed, and the error.
    full = html.unescape(user_client.post("/jobs/new/", bad).content.decode())
    assert f">\n{GRID}\nbatch 32 64</textarea>" in full
    assert 'href="#field-sweep_grid">Parameter grid</a>: Line 3' in full


def test_a_reserved_name_and_too_many_runs_are_named_beside_the_grid(user_client, seeded):
    for grid, said in (
        ("status = 1 2", "status is the job's own variable"),
        (f"a = {' '.join(map(str, range(40)))}\nb = {' '.join(map(str, range(50)))}", "2,000 runs"),
    ):
        page = html.unescape(_live(user_client, SWEEP | {"sweep_grid": grid}).content.decode())
        beside = re.search(r'id="errors-sweep_grid"[^>]*>(.*?)</div>', page)
        assert said in beside[1]


def test_repeats_without_a_grid_are_an_array_of_runs_each_in_its_own_folder(user_client, seeded):
    data = GOOD | {"similar_runs": "3", "download": "1"}
    script = user_client.post("/jobs/new/", data).content.decode()
    assert "#SBATCH --array=1-3\n" in script
    for number in (1, 2, 3):
        assert f"        {number}) RUN_NAME=run-00{number} JOB_COMMAND=" in script
    assert "run-004" not in script


def test_a_grid_and_a_count_of_runs_that_disagree_is_an_error_on_the_count(user_client, seeded):
    page = user_client.post("/jobs/new/", SWEEP | {"similar_runs": "4"}).content.decode()
    assert (
        'href="#field-similar_runs">Runs of the same command</a>: The sweep has 6 runs: leave '
        "this at 1, or make it 6."
    ) in html.unescape(page)
    agreeing = user_client.post("/jobs/new/", SWEEP | {"similar_runs": "6", "download": "1"})
    assert "#SBATCH --array=1-6\n" in agreeing.content.decode()


def test_a_saved_sweep_opens_again_with_its_runs(user_client, user, seeded):
    lines = "lr=0.1 tag='a b'\nlr=0.01 tag=c"
    data = GOOD | {
        "sweep_runs": lines,
        "runs_at_once": "1",
        "command": "python train.py --lr {lr} --tag {tag}",
    }
    user_client.post("/jobs/new/", data | {"save": "1", "composition_name": "lrs"})
    saved = Composition.objects.get(owner=user, name="lrs")
    assert saved.fields["sweep_runs"] == lines and saved.fields["runs_at_once"] == "1"
    assert "#SBATCH --array=1-2%1\n" in saved.script
    page = html.unescape(user_client.get(f"/jobs/new/?from={saved.pk}").content.decode())
    assert f">\n{lines}</textarea>" in page
    assert 'name="runs_at_once" value="1"' in page
    assert "2 runs · 24 GPU-hours" in _summary(page)
    shown = html.unescape(user_client.get(f"/jobs/compositions/{saved.pk}/").content.decode())
    assert "at most 1 at a time (%1)" in shown  # the advice for the saved values


# --- A portal sweep script opened in the composer again ------------------------------------


def _reopened(script: str) -> dict:
    from jobs.compose.from_script import carry, composer_query
    from tests.engine_helpers import cluster

    return composer_query(carry(script, cluster("narval")))


@pytest.mark.parametrize(
    "changes",
    [
        {"runs_at_once": "2"},  # an array task per run, two at a time
        {"hours": "0.25"},  # short runs: one job runs them in turn
        # Short runs, more than one job's time holds: an array of jobs, each running its share.
        {"hours": "0.45", "runs_at_once": "1", "sweep_grid": f"lr = {' '.join(HUNDRED)}\nseed = 7"},
        {"sweep_grid": "", "sweep_runs": "tag='a b' lr=1 seed=1\ntag=\"it's\" seed=2 lr=2"},
        # A command of several lines: each run's line in the script spans them.
        {"command": 'cd "$STAGE_DIR"\npython train.py --lr {lr} --seed {seed}'},
    ],
)
def test_a_sweep_script_opened_in_the_composer_brings_its_runs_back(user_client, seeded, changes):
    data = SWEEP | changes | {"download": "1"}
    script = user_client.post("/jobs/new/", data).content.decode()
    sweep = sweep_script.runs_in(script)
    assert len(sweep) == 6 if "sweep_grid" not in changes else len(sweep) in (2, 100)
    values = _reopened(script)
    assert "sweep_grid" not in values  # the runs come back as lines, whatever made them
    assert values["command"] == data["command"]
    assert "checkpointing" not in values and values.get("similar_runs", "1") == "1"
    # What no script says, the composer asks again.
    data_fields = {k: GOOD[k] for k in ("dataset_gb", "data_location", "data_path", "results_dir")}
    again = user_client.post("/jobs/new/", values | data_fields | {"download": "1"})
    written = again.content.decode()
    assert sweep_script.runs_in(written) == sweep_script.runs_in(script)
    if "99" in changes.get("sweep_grid", ""):
        assert re.search(r"^#SBATCH --array=1-\d+%1$", script, re.M) and "SWEEP_RUNS=" in script
    for line in ("#SBATCH --array=", "#SBATCH --time=", "SWEEP_RUNS="):
        assert [x for x in script.splitlines() if x.startswith(line)] == [
            x for x in written.splitlines() if x.startswith(line)
        ]


def test_repeats_opened_in_the_composer_are_repeats_again(user_client, seeded):
    script = user_client.post(
        "/jobs/new/", GOOD | {"similar_runs": "3", "download": "1"}
    ).content.decode()
    values = _reopened(script)
    assert values["similar_runs"] == "3" and values["hours"] == "12"
    assert "sweep_runs" not in values
