"""The record of what programs did with the user's API tokens, for the user's page of them: what
they did, and what their token's scope refused them."""

from jobs.models import Plan, TokenAction, Via


def record(owner, via: Via, token, client: str, what: str, job=None, plan=None) -> None:
    TokenAction.objects.create(
        owner=owner, token=token, via=via, client=client[:100], what=what[:300], job=job, plan=plan
    )


def of_plan(plan: Plan, what: str, job=None) -> None:
    record(plan.owner, plan.via, plan.token, plan.client, what, job=job, plan=plan)


def refused(token, via: Via, client: str, what: str, needed: str) -> None:
    """A call the token's scope does not allow: the owner sees that a program tried it."""
    record(token.user, via, token, client, f"Refused {what}: it needs a {needed} token")
