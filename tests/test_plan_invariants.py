"""What must hold for any plan, whatever script a program sends: a plan is blocked exactly when
the script checker says the job would fail; asking to submit never makes a job; a blocked plan
never makes one however often it is confirmed, and any other makes exactly one. Scripts are drawn
from the mistakes people make (tests/test_script_check_fixed_passes.py), on every seeded
cluster. No cluster is reached: the seeded ones cannot be from here, so estimates are unknown."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guidance.models import Cluster
from jobs.models import Job, Plan, Via
from jobs.plans import deciding
from jobs.plans.making import PlanRefused, plan_script
from tests.test_job_pages import _account
from tests.test_script_check_fixed_passes import scripts

pytestmark = pytest.mark.django_db
GPU_SLUGS = ("narval", "beluga", "cedar", "graham", "processing")


@pytest.fixture
def logins(seeded, user, settings):
    settings.SOONER_BUDGET_SECONDS = 1
    return {c.slug: _account(user, c) for c in Cluster.objects.filter(slug__in=GPU_SLUGS)}


@settings(
    max_examples=int(os.environ.get("INVARIANT_EXAMPLES", "40")) // 4 or 10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(drawn=scripts(), asks=st.integers(0, 2), confirms=st.integers(1, 3))
def test_a_plan_makes_a_job_only_by_the_users_word_and_once(user, logins, drawn, asks, confirms):
    Job.objects.all().delete()
    Plan.objects.all().delete()
    text, slug = drawn
    cluster = logins[slug].cluster
    plan = plan_script(user, cluster, "drawn", text, via=Via.MCP)
    fails = [f for f in plan.findings if f["severity"] == "fails"]
    assert plan.blocked == bool(fails)
    for _ in range(asks):
        try:
            deciding.ask_to_submit(plan.pk, user)
        except PlanRefused as refused:
            assert plan.blocked and refused.code == "blocked"
        assert not Job.objects.exists()
    made = set()
    for _ in range(confirms):
        try:
            made.add(deciding.confirm(plan.pk, user).pk)
        except PlanRefused as refused:
            assert plan.blocked and refused.code == "blocked"
    assert Job.objects.count() == len(made) == (0 if plan.blocked else 1)
    if plan.gpu_hours is not None:
        assert plan.gpu_hours > 0
