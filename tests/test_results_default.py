"""The results directory starts where each site's documents keep results, follows the cluster
chosen until the user types their own, and the API takes the same default."""

import html
import json

from guidance.models import Policy
from jobs.compose.forms import ComposeForm
from portal.models import ApiToken
from tests.test_api_script import JOB
from tests.test_compose_page import GOOD

NARVAL_DEFAULT = "$PROJECT/results"


def _field(page: str) -> str:
    start = page.index('id="field-results_dir"')
    warnings = page.index('class="field-warnings"', start)  # the field's last part
    return html.unescape(page[start : page.index("</ul>", warnings)])


def test_a_new_job_offers_the_first_clusters_results_directory(user_client, seeded):
    page = user_client.get("/jobs/new/?template=pytorch-training-1gpu&on=narval")
    assert 'value="$PROJECT/results/train"' in html.unescape(page.content.decode())
    form = ComposeForm(initial={"cluster": "narval"})
    assert form.initial["results_dir"] == NARVAL_DEFAULT
    assert "Narval's results directory on Project" in form.fields["results_dir"].help_text


def test_the_default_follows_the_cluster_through_htmx(user_client, seeded):
    policy = Policy.objects.get(cluster__slug="beluga")
    policy.results_dir = "$SCRATCH/results"
    policy.save()  # as an admin's edit: every process loads the guidance again
    data = GOOD | {"results_dir": NARVAL_DEFAULT, "results_default": NARVAL_DEFAULT}
    page = user_client.get("/jobs/new/", data | {"cluster": "beluga"}, HTTP_HX_REQUEST="true")
    field = _field(page.content.decode())
    assert 'hx-swap-oob="true"' in field
    assert 'value="$SCRATCH/results"' in field
    assert 'name="results_default" value="$SCRATCH/results"' in field.replace(' type="hidden"', "")


def test_a_results_directory_the_user_typed_stays(user_client, seeded):
    data = GOOD | {"results_dir": "$SCRATCH/mine", "results_default": NARVAL_DEFAULT}
    page = user_client.get("/jobs/new/", data | {"cluster": "beluga"}, HTTP_HX_REQUEST="true")
    text = page.content.decode()
    assert 'id="field-results_dir"' not in text  # not swapped: the user's own stays
    assert 'RESULTS_DEST="$SCRATCH"/mine' in html.unescape(text)


def test_the_processing_site_asks_for_one_naming_where_000_keeps_results(user_client, seeded):
    data = GOOD | {"cluster": "processing", "modules": "", "results_dir": ""}
    text = html.unescape(user_client.get("/jobs/new/", data).content.decode())
    assert "keeps results in project data folders, whose path it does not publish" in text
    assert "#SBATCH" not in text


def test_results_in_home_warn_beside_the_field(user_client, seeded):
    page = user_client.get("/jobs/new/", GOOD | {"results_dir": "$HOME/results"})
    assert 'data-code="results_small_quota"' in _field(page.content.decode())


def test_the_api_takes_the_clusters_results_directory(client, seeded, user):
    headers = {"Authorization": f"Bearer {ApiToken.issue(user, 'cli')[1]}"}
    job = {k: v for k, v in JOB.items() if k != "results_dir"}
    answer = client.post(
        "/api/v1/script", json.dumps(job), content_type="application/json", headers=headers
    )
    assert answer.status_code == 200, answer.content
    assert 'RESULTS_DEST="$PROJECT"/results' in answer.json()["script"]
    missing = client.post(
        "/api/v1/script",
        json.dumps(job | {"cluster": "processing", "modules": []}),
        content_type="application/json",
        headers=headers,
    )
    assert missing.status_code == 422
    [error] = missing.json()["detail"]
    assert error["field"] == "results_dir"
    assert "project data folders" in error["message"]


def test_admins_publish_the_results_directory_and_node_local_sizes(staff_client, seeded):
    from guidance.models import Cluster

    narval = Cluster.objects.get(slug="narval")
    page = staff_client.get(f"/admin/guidance/cluster/{narval.pk}/change/").content.decode()
    assert 'value="$PROJECT/results"' in html.unescape(page)
    assert "node_local_gb" in page  # in each node type's row, empty: the documents do not say
    assert narval.partitions.get().node_local_gb is None
