"""The user's word on a plan. A program may only ask for it (`ask_to_submit`); the user gives
it on the portal's page, or through the program's client when it can ask them (MCP
elicitation), and `confirm` then submits the plan's script once, whoever confirms it twice."""

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from jobs.compose import sending
from jobs.models import Job, Plan, PlanState, Via
from jobs.plans import actions
from jobs.plans.making import PlanRefused


def find(plan_id, user) -> Plan:
    """The user's plan; anyone else's is not there as far as they can tell."""
    plan = Plan.objects.select_related("account__cluster").filter(pk=plan_id, owner=user).first()
    if plan is None:
        raise PlanRefused("plan", "unknown_plan", f"You have no plan {plan_id}.")
    return plan


def ask_to_submit(plan_id, user) -> Plan:
    """Marks the plan as waiting for the user's word; PlanRefused if it may not be submitted."""
    with transaction.atomic():
        plan = _locked(plan_id, user)
        _may_be_submitted(plan)
        if plan.state == PlanState.CHECKED:
            plan.state, plan.asked = PlanState.WAITING, timezone.now()
            plan.save(update_fields=["state", "asked"])
            actions.of_plan(plan, f"Asked to submit {plan.name}: waiting for your word")
    return plan


def confirm(plan_id, user, via: Via = Via.PAGE) -> Job:
    """The user's word: the plan's script is queued for submission, once. A plan confirmed again
    gives the job it made."""
    with transaction.atomic():
        plan = _locked(plan_id, user)
        if plan.job_id:
            return plan.job
        _may_be_submitted(plan)
        job, _ = sending.submit(user, plan.account, plan.name, plan.script, plan.pk.hex)
        Job.objects.filter(pk=job.pk).update(via=plan.via, token=plan.token, client=plan.client)
        job.refresh_from_db()
        plan.state, plan.job = PlanState.SUBMITTED, job
        plan.decided, plan.decided_via = timezone.now(), via
        plan.save(update_fields=["state", "job", "decided", "decided_via"])
        actions.of_plan(plan, f"Submitted {plan.name}, confirmed on {Via(via).label}", job)
    return job


def decline(plan_id, user) -> Plan:
    with transaction.atomic():
        plan = _locked(plan_id, user)
        if plan.state in (PlanState.CHECKED, PlanState.WAITING):
            plan.state, plan.decided = PlanState.DECLINED, timezone.now()
            plan.decided_via = Via.PAGE
            plan.save(update_fields=["state", "decided", "decided_via"])
            actions.of_plan(plan, f"Declined {plan.name}")
    return plan


def _locked(plan_id, user) -> Plan:
    find(plan_id, user)  # PlanRefused, in words, before the lock
    return Plan.objects.select_for_update().select_related("account__cluster").get(pk=plan_id)


def _may_be_submitted(plan: Plan) -> None:
    if plan.state == PlanState.DECLINED:
        raise PlanRefused("plan", "declined", "You declined this plan: make a new one.")
    if plan.state == PlanState.SUBMITTED:
        return
    if plan.blocked:
        raise PlanRefused(
            "plan",
            "blocked",
            "The script checker found what would make this job fail: fix the script and make "
            "a new plan.",
        )
    if plan.expired:
        raise PlanRefused(
            "plan",
            "expired",
            f"The plan is older than {settings.PLAN_MINUTES} minutes: the queue and the start "
            "estimate it showed are stale. Make a new plan.",
        )
