"""What Slurm's refusals of a job mean, in plain words, after Slurm's own words."""

# A fragment of Slurm's terse message (any case) and what it means for the user.
MEANINGS = {
    "invalid partition": "The cluster has no partition of that name.",
    "requested time limit is invalid": "The time asked for is over the partition's limit.",
    "requested node configuration is not available": (
        "No node of that partition has the GPUs, CPUs or memory asked for."
    ),
    "invalid account": "You may not bill that account: check the account name.",
    "invalid generic resource": "The cluster has no GPUs of that type.",
    "qosmaxsubmitjobperuserlimit": "You have as many jobs queued as the cluster allows.",
}


def meaning(message: str) -> str:
    """What Slurm's message means, or "" when it is none of the refusals known here."""
    lowered = message.casefold()
    return next((text for fragment, text in MEANINGS.items() if fragment in lowered), "")


def explain_refusal(message: str) -> str:
    """The message of a job Slurm refused: Slurm's words, then what they mean when known."""
    plain = meaning(message)
    return f"Slurm refused the job: {message}" + (f"\n{plain}" if plain else "")
