"""The advice form on each cluster: live recommendations, and clear messages for bad values."""

import pytest

from tests.source_helpers import link_to

GOOD = {
    "workload": "training",
    "dataset_gb": "50",
    "file_count": "",
    "data_location": "project",
    "gpu_type": "",
    "gpu_count": "1",
    "gpu_mem_gb": "",
    "hours": "12",
    "nodes": "1",
    "similar_runs": "1",
}


def _advice(client, slug="narval", htmx=False, **changes):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.get(f"/guidance/{slug}/advice/", GOOD | changes, headers=headers)


def test_it_requires_login(client, seeded):
    assert _advice(client).status_code == 302


def test_an_empty_form_explains_what_it_does(user_client, seeded):
    page = user_client.get("/guidance/narval/advice/").content.decode()
    assert "Describe the job" in page
    assert 'hx-get="/guidance/narval/advice/"' in page


@pytest.mark.parametrize(
    ("dataset_gb", "placement"),
    [("5", "memory"), ("50", "node_local"), ("500", "shared")],
)
def test_it_recommends_where_the_data_lives(user_client, seeded, dataset_gb, placement):
    page = _advice(user_client, dataset_gb=dataset_gb).content.decode()
    assert f'data-placement="{placement}"' in page
    assert link_to("001_5f2bc19f2ff4af17.txt") in page  # every recommendation cites its source


def test_htmx_gets_only_the_recommendation(user_client, seeded):
    response = _advice(user_client, htmx=True)
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="result"')
    assert "<html" not in page
    assert 'data-partition="a100"' in page


def test_it_shows_the_processing_clusters_choice_with_why_not(user_client, seeded):
    page = _advice(user_client, "processing", workload="inference", gpu_mem_gb="8").content.decode()
    assert 'data-partition="2080ti"' in page
    assert "Why not the others" in page
    assert link_to("000_6e5e8c8484f3c234.txt") + '3-inference">' in page


def test_a_chain_shows_its_array(user_client, seeded):
    page = _advice(user_client, hours="72", checkpointing="on").content.decode()
    assert "--array=1-3%1" in page


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"dataset_gb": "-5"}, "The dataset size cannot be negative."),
        ({"hours": "0"}, "The duration must be more than zero hours."),
        ({"gpu_type": "h100"}, "Narval has no GPU type “h100”: choose one of a100, or recommend"),
        ({"dataset_gb": "lots"}, "Enter a number, e.g. 50."),
        ({"hours": "200"}, "over Narval&#x27;s maximum job duration of 7 days"),
        ({"gpu_mem_gb": "80"}, "No GPU on Narval has 80 GB of memory"),
    ],
)
def test_bad_values_get_a_clear_message_and_keep_what_was_typed(
    user_client, seeded, changes, message
):
    response = _advice(user_client, **changes)
    assert response.status_code == 200
    page = response.content.decode()
    assert message in page
    assert "data-placement" not in page  # no advice on a job that cannot run
    for name, value in changes.items():
        if name != "gpu_type":  # a list: a value not in it was never typed (see below)
            assert f'name="{name}" value="{value}"' in page


def test_the_gpu_type_is_chosen_from_the_clusters_own(user_client, seeded):
    page = _advice(user_client, "cedar").content.decode()
    assert '<select name="gpu_type"' in page
    assert '<option value="" selected>Recommend for me</option>' in page
    assert '<option value="v100l">v100l (32 GB' in page
    assert 'value="a100"' not in page  # Narval's, not Cedar's
    page = _advice(user_client, "cedar", gpu_type="v100l").content.decode()
    assert '<option value="v100l" selected>' in page
    assert "You asked for v100l" in page


def test_bad_values_over_htmx_also_get_the_message(user_client, seeded):
    page = _advice(user_client, htmx=True, dataset_gb="-1").content.decode()
    assert "The dataset size cannot be negative." in page


def test_the_dgx_cluster_is_advice_only(user_client, seeded):
    page = _advice(user_client, "dgx").content.decode()
    assert "this is advice only, no job script is made" in page


def test_an_unknown_cluster_is_404(user_client, seeded):
    assert _advice(user_client, "nosuch").status_code == 404


def test_data_held_in_memory_says_where_it_is_loaded_from(user_client, seeded):
    page = _advice(user_client, dataset_gb="5").content.decode()
    assert "<strong>In memory</strong>, loaded from Node-local job directory" in page
    assert "In memory</strong>: " not in page  # as if memory were that disk
