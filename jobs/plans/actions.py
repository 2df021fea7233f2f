"""The record of what programs did with the user's API tokens, for the user's page of them."""

from jobs.models import Plan, TokenAction, Via


def record(owner, via: Via, token, client: str, what: str, job=None, plan=None) -> None:
    TokenAction.objects.create(
        owner=owner, token=token, via=via, client=client[:100], what=what[:300], job=job, plan=plan
    )


def of_plan(plan: Plan, what: str, job=None) -> None:
    record(plan.owner, plan.via, plan.token, plan.client, what, job=job, plan=plan)
