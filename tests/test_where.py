"""Where should this run? The composition planned for each of the user's own logins, ranked;
Slurm's answers come from an `ask` that stands in for `sbatch --test-only` (the seam
jobs.compose.estimates takes), so no cluster is needed."""

import threading
import time
from datetime import datetime, timedelta

import pytest
from django.contrib.auth import get_user_model

from guidance.models import Cluster
from jobs.cluster import keys
from jobs.compose import where
from jobs.models import ClusterAccount, ClusterLoad
from jobs.slurm.sbatch import WouldStart
from tests.test_compose_page import GOOD

SOON = datetime(2030, 1, 1, 9, 0)
LATER = SOON + timedelta(hours=5)
# A long job: Narval's a100 nodes take 7 days at most, Cedar's and Graham's 28.
LONG = GOOD | {"hours": "200", "gpu_type": "a100", "partition": "", "checkpointing": ""}


def _login(user, slug: str, username: str = "alice") -> ClusterAccount:
    pair = keys.generate_keypair()
    return ClusterAccount.objects.create(
        owner=user,
        cluster=Cluster.objects.get(slug=slug),
        username=username,
        public_key=pair.public_line,
        private_key_encrypted=keys.encrypt(pair.private_pem),
    )


@pytest.fixture
def logins(seeded, user) -> dict[str, ClusterAccount]:
    return {slug: _login(user, slug) for slug in ("narval", "cedar", "graham")}


def _answers(starts: dict[str, datetime | None], delay: dict[str, float] | None = None):
    """Slurm's estimate per cluster; a cluster in `delay` answers that many seconds late."""
    asked = []

    def ask(account: ClusterAccount, script: str) -> WouldStart:
        asked.append(account.cluster.slug)
        time.sleep((delay or {}).get(account.cluster.slug, 0))
        return WouldStart(starts.get(account.cluster.slug), 1, ["n1"], "p")

    ask.asked = asked
    return ask


def test_it_ranks_fitting_logins_by_start_then_gpu_hours(logins, user):
    ask = _answers({"cedar": LATER, "graham": SOON, "narval": SOON})
    ranked = where.rank(user, LONG, budget=5, ask=ask)
    assert [p.cluster.slug for p in ranked] == ["graham", "cedar", "narval"]
    graham, cedar, narval = ranked
    assert graham.fits and cedar.fits and not narval.fits
    assert graham.start.hour == 9 and cedar.start.hour == 14
    assert graham.gpu_hours.total == pytest.approx(graham.gpu_hours.gpus * graham.gpu_hours.hours)
    assert graham.partition in {"p100", "t4", "v100"} and graham.gpu_type == graham.partition
    assert sorted(ask.asked) == ["cedar", "graham"]  # a job that does not fit is not asked


def test_it_says_why_a_cluster_does_not_fit(logins, user):
    narval = next(p for p in where.rank(user, LONG, ask=_answers({})) if p.cluster.slug == "narval")
    assert not narval.fits and narval.start is None
    assert any("168" in why or "7 days" in why or "7 d" in why for why in narval.why_not), narval


def test_an_unknown_start_comes_after_known_ones_then_gpu_hours_decide(logins, user):
    ask = _answers({"cedar": None, "graham": SOON, "narval": None})
    ranked = where.rank(user, GOOD | {"gpu_type": "", "account": ""}, budget=5, ask=ask)
    assert ranked[0].cluster.slug == "graham"
    unknown = [p for p in ranked if p.start is None]
    hours = [p.gpu_hours.total for p in unknown]
    assert hours == sorted(hours)


def test_a_login_that_does_not_answer_shows_unknown_within_the_budget(logins, user):
    ask = _answers({"cedar": SOON, "graham": SOON}, delay={"graham": 30})
    began = time.monotonic()
    ranked = where.rank(user, LONG, budget=1, ask=ask)
    assert time.monotonic() - began < 3
    graham = next(p for p in ranked if p.cluster.slug == "graham")
    assert graham.start is None and not graham.estimate.in_time
    assert "did not answer within 1 s" in graham.estimate.problem
    assert ranked[0].cluster.slug == "cedar"  # the one that answered leads


def test_free_gpus_are_the_clusters_last_read(logins, user):
    graham = Cluster.objects.get(slug="graham")
    rows = [
        {"partition": p, "gpu_type": p, "total": 8, "allocated": 2, "unavailable": 0, "free": 6}
        for p in ("p100", "t4", "v100")
    ]
    ClusterLoad.objects.create(cluster=graham, gpus=rows, read_at=datetime.now().astimezone())
    cedar = Cluster.objects.get(slug="cedar")
    # Slurm's own partition names, not the published node types': the GPU type's, cluster-wide.
    rows = [
        {"partition": p, "gpu_type": t, "free": 3}
        for p in ("gpu-a", "gpu-b")
        for t in ("p100", "p100l", "v100l")
    ]
    ClusterLoad.objects.create(cluster=cedar, gpus=rows, read_at=datetime.now().astimezone())
    ranked = where.rank(user, LONG, ask=_answers({"cedar": SOON, "graham": SOON}))
    by_slug = {p.cluster.slug: p for p in ranked}
    assert by_slug["graham"].free_gpus == 6
    assert by_slug["cedar"].free_gpus == 6
    assert by_slug["narval"].free_gpus is None  # never read: shown as not known


def test_other_users_logins_are_never_listed(logins, user):
    other = get_user_model().objects.create_user("bob", password="x")
    _login(other, "beluga", "bob")
    ranked = where.rank(user, LONG, ask=_answers({"cedar": SOON, "graham": SOON}))
    assert {p.cluster.slug for p in ranked} == {"narval", "cedar", "graham"}
    assert where.rank(other, LONG, ask=_answers({"beluga": SOON}))[0].account.owner == other


def test_retargeting_drops_what_does_not_carry_and_says_so(seeded):
    fields = GOOD | {
        "partition": "a100",
        "gpu_type": "a100",
        "results_dir": "/home/alice/narval-default",
        "results_default": "/home/alice/narval-default",
        "csrfmiddlewaretoken": "t",
    }
    moved, changes = where.retarget(fields, Cluster.objects.get(slug="graham"))
    assert moved["cluster"] == "graham"
    assert moved["partition"] == moved["gpu_type"] == moved["account"] == moved["results_dir"] == ""
    assert moved["modules"] == GOOD["modules"]  # Graham has modules
    assert "csrfmiddlewaretoken" not in moved
    said = " ".join(changes)
    for what in ("Node type a100", "no a100 GPUs", "Account def-someuser", "results directory"):
        assert what in said
    assert moved["command"] == GOOD["command"] and moved["hours"] == GOOD["hours"]
    moved, changes = where.retarget(fields, Cluster.objects.get(slug="processing"))
    assert moved["modules"] == "" and "publishes no modules" in " ".join(changes)
    assert moved["partition"] == "a100"  # Processing has an a100 node type: it stays


def test_retargeting_keeps_what_the_other_cluster_has(seeded):
    moved, changes = where.retarget(
        GOOD | {"gpu_type": "v100", "account": ""}, Cluster.objects.get(slug="beluga")
    )
    assert moved["gpu_type"] == "v100" and moved["modules"] == GOOD["modules"] and changes == []


def test_the_same_cluster_changes_nothing(seeded):
    moved, changes = where.retarget(GOOD, Cluster.objects.get(slug="narval"))
    assert changes == [] and moved == GOOD


def test_estimates_run_at_once(logins, user):
    ask = _answers({"cedar": SOON, "graham": SOON}, delay={"cedar": 0.5, "graham": 0.5})
    began = time.monotonic()
    where.rank(user, LONG, budget=5, ask=ask)
    assert time.monotonic() - began < 0.5 * 2  # not one after the other
    assert threading.active_count() < 50
