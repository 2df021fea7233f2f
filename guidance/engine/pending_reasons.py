"""Why a pending job waits, in plain words: Slurm's reason codes (squeue's REASON, Slurm 22.05),
each with what it means and what the user can do about it.

Most codes are one word each (`FIXED`). The accounting limits are one large family whose names are
built from parts (`QOSMaxGRESPerUser`, `AssocGrpCPURunMinutesLimit`, `MaxJobsPerAccount`): they
are read by those parts (`_limit`), so that every member, also one Slurm adds later, reads well.
A code the portal does not know comes back as Slurm's own word, flagged unknown, never an error.
"""

import re
from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class PendingReason:
    code: str  # Slurm's words as printed, for the user to quote to the administrators
    meaning: str  # what it means, in a sentence; Slurm's words themselves when not known
    action: str = ""  # what the user can do about it; "" when there is nothing to do
    known: bool = True

    @property
    def given(self) -> bool:
        """False when Slurm gave no reason ("None" or nothing)."""
        return bool(self.code)


NO_REASON = PendingReason(code="", meaning="")

RESUBMIT = "Cancel it and submit it again"
ASK_ADMINS = "Ask the cluster's administrators; you cannot change this yourself."
OWN_QOS = "`sacctmgr show assoc user=$USER format=account,partition,qos` lists the ones you may use"

# Slurm's one-word codes: (what it means, what to do).
FIXED: dict[str, tuple[str, str]] = {
    "Priority": (
        "Jobs with a higher priority are ahead of it in its partition (or reservation).",
        "Nothing is wrong with the job: it starts in its turn. A shorter time limit or fewer "
        "GPUs can let the scheduler fit it into a gap sooner (backfill).",
    ),
    "Resources": (
        "It is next in line and waits for nodes with the GPUs, CPUs and memory it asked for to "
        "become free.",
        "Nothing is wrong with the job: it starts when running jobs end. Fewer GPUs, another GPU "
        "type or a shorter time limit may start it sooner.",
    ),
    "Dependency": (
        "It waits for the job it depends on (--dependency) to reach the state it asked for, "
        "such as having ended.",
        "Nothing to do: it becomes eligible when that job does.",
    ),
    "DependencyNeverSatisfied": (
        "The job it depends on ended in a way that can never satisfy the dependency (it failed, "
        "say, where this one needed it to succeed), so this job will never start.",
        "Cancel it, then submit the first job again and this one after it.",
    ),
    "BeginTime": (
        "It was submitted with an earliest start time (--begin) that has not come yet.",
        "Nothing to do: it becomes eligible at that time. `scontrol update jobid=<id> "
        "StartTime=now` makes it eligible at once.",
    ),
    "JobHeldUser": (
        "It is on hold, put there by you (--hold, or `scontrol hold`): Slurm will not start it.",
        "Release it with `scontrol release <id>` when it should run, or cancel it.",
    ),
    "JobHeldAdmin": (
        "An administrator holds the job: Slurm will not start it until they release it.",
        "Ask the cluster's administrators why; you cannot release it yourself.",
    ),
    "JobHoldMaxRequeue": (
        "Slurm could not launch the job several times, put it back in the queue and now holds it.",
        "Check its output and the folders it uses, then release it with `scontrol release <id>` "
        "or cancel it; tell the administrators if its nodes keep failing.",
    ),
    "JobArrayTaskLimit": (
        "The array already runs as many tasks at once as its limit allows (the %N of "
        "--array=...%N); this task waits for one of them to end.",
        "Nothing to do: it starts when a running task ends. `scontrol update jobid=<id> "
        "ArrayTaskThrottle=<n>` raises the limit.",
    ),
    "PartitionTimeLimit": (
        "Its time limit is longer than its partition allows, so it cannot start there.",
        f"{RESUBMIT} with a shorter --time, or to a partition with a longer limit.",
    ),
    "PartitionNodeLimit": (
        "It asks for more (or fewer) nodes than its partition allows now, or nodes it needs are "
        "down or drained.",
        f"{RESUBMIT} with a number of nodes within the partition's limits; if the number is "
        "right, ask the administrators about the nodes.",
    ),
    "PartitionDown": (
        "Its partition is down: it keeps jobs queued but starts none for now.",
        "It starts when the administrators bring the partition back; to start sooner, submit it "
        "to another partition.",
    ),
    "PartitionInactive": (
        "Its partition is inactive: it starts no jobs for now.",
        "It starts when the administrators make the partition active again; to start sooner, "
        "submit it to another partition.",
    ),
    "PartitionConfig": (
        "What it asks for does not agree with its partition's settings (its limits or who may "
        "use it).",
        f"{RESUBMIT} within the partition's limits (`scontrol show partition` lists them).",
    ),
    "ReqNodeNotAvail": (
        "A node it needs is not available: in use, reserved, down, drained or not responding.",
        "Busy nodes free up by themselves; a node down or drained waits for the administrators. "
        "To start sooner, submit it to another partition or GPU type (or leave out --nodelist "
        "if you named nodes).",
    ),
    "NodeDown": (
        "A node it needs is down.",
        "It waits for the node to come back; to start sooner, submit it to another partition "
        "or GPU type.",
    ),
    "Reservation": (
        "It waits for the reservation it asked for (--reservation) to begin.",
        "Nothing to do: it starts when the reservation does (`scontrol show reservation` "
        "says when).",
    ),
    "ReservationDeleted": (
        "The reservation it was to run in was deleted or has ended, so it cannot start in it.",
        f"{RESUBMIT} without --reservation, or with another reservation.",
    ),
    "BadConstraints": (
        "No node has the features it asks for (--constraint) together with the rest of its "
        "request.",
        f"{RESUBMIT} with features the nodes have (`sinfo -o '%N %f'` lists them).",
    ),
    "InvalidQOS": (
        "The QOS it asked for does not exist, or you may not use it.",
        f"{RESUBMIT} with a QOS you may use ({OWN_QOS}).",
    ),
    "InvalidAccount": (
        "The Slurm account it bills does not exist, or you are not a member of it.",
        f"{RESUBMIT} with an account you belong to ({OWN_QOS}).",
    ),
    "QOSNotAllowed": (
        "Its partition does not take jobs of the QOS it asked for.",
        f"{RESUBMIT} with a QOS the partition allows, or to another partition.",
    ),
    "AccountNotAllowed": (
        "Its partition does not take jobs of the Slurm account it bills.",
        f"{RESUBMIT} with an account the partition allows, or to another partition.",
    ),
    "AssociationJobLimit": (
        "Your Slurm account has as many jobs running as its limit allows.",
        "Nothing is wrong with the job: it starts when one of those jobs ends.",
    ),
    "AssociationResourceLimit": (
        "Your Slurm account has reached a limit on some resource (GPUs, CPUs, memory or nodes).",
        "It starts when running jobs of the account free some; asking for less may start it "
        "sooner (`sacctmgr show assoc user=$USER` lists the limits).",
    ),
    "AssociationTimeLimit": (
        "Your Slurm account has reached its limit on time.",
        ASK_ADMINS,
    ),
    "QOSJobLimit": (
        "Its QOS has as many jobs running as its limit allows.",
        "Nothing is wrong with the job: it starts when one of those jobs ends.",
    ),
    "QOSResourceLimit": (
        "Its QOS has reached a limit on some resource (GPUs, CPUs, memory or nodes).",
        "It starts when running jobs of the QOS free some; asking for less may start it sooner "
        "(`sacctmgr show qos` lists the limits).",
    ),
    "QOSTimeLimit": ("Its QOS has reached its limit on time.", ASK_ADMINS),
    "QOSUsageThreshold": (
        "Its QOS has been used beyond the threshold it requires (UsageThreshold), so it starts "
        "no new jobs for now.",
        "It waits until past use decays; ask the cluster's administrators about it.",
    ),
    "AccountingPolicy": (
        "The cluster's accounting limits keep it waiting.",
        "`sacctmgr show assoc user=$USER` and `sacctmgr show qos` list the limits.",
    ),
    "MaxMemPerLimit": (
        "It asks for more memory per CPU or per node than the partition or cluster allows.",
        f"{RESUBMIT} with less memory (--mem or --mem-per-cpu).",
    ),
    "Licenses": (
        "It waits for the licenses it asked for (--licenses) to be free.",
        "Nothing to do: it starts when other jobs release them.",
    ),
    "BurstBufferResources": (
        "It waits for burst buffer space to be free.",
        "Nothing to do: it starts when other jobs release the space.",
    ),
    "BurstBufferStageIn": (
        "Slurm is copying its files into the burst buffer before it starts.",
        "Nothing to do: it starts once they are copied.",
    ),
    "BurstBufferOperation": ("A burst buffer operation for it failed.", ASK_ADMINS),
    "PowerNotAvail": (
        "The cluster caps its power, and not enough is free to start it.",
        "Nothing to do: it starts when running jobs end.",
    ),
    "PowerReserved": (
        "The power it would need is kept for other jobs.",
        "Nothing to do: it starts when that power is released.",
    ),
    "Prolog": (
        "The program the cluster runs before each job starts is still running for it.",
        "Nothing to do: it starts when that program is done.",
    ),
    "Cleaning": (
        "It was put back in the queue and Slurm is still cleaning up after its last run.",
        "Nothing to do: it becomes eligible once the clean-up is done.",
    ),
    "SchedDefer": (
        "The scheduler put off looking at it (the cluster defers scheduling at submission).",
        "Nothing to do: the next scheduling pass looks at it.",
    ),
    "WaitingForScheduling": (
        "Slurm has not looked at it yet; a reason appears at its next scheduling pass.",
        "Nothing to do.",
    ),
    "FedJobLock": (
        "The clusters of the federation it was sent to are deciding which one runs it.",
        "Nothing to do.",
    ),
    "FrontEndDown": ("No front-end node is available to run it.", ASK_ADMINS),
    "DeadLine": (
        "It can no longer finish before its deadline (--deadline), so it will not run.",
        f"{RESUBMIT} with a later deadline or a shorter time limit.",
    ),
    "InactiveLimit": (
        "It was idle (its srun lost contact) longer than the cluster allows.",
        "Submit it again; keep the session that started it open.",
    ),
    "SystemFailure": (
        "A failure of Slurm, a file system or the network stopped it.",
        "Submit it again; tell the administrators if it happens again.",
    ),
    "JobLaunchFailure": (
        "Slurm could not start it: most often a folder for --output or --chdir that does not "
        "exist, a file system problem, or a program that is not there.",
        "Check that its folders and program exist, then submit it again.",
    ),
    "NonZeroExitCode": (
        "It ended with a non-zero exit code.",
        "The end of its stderr usually says why.",
    ),
    "TimeLimit": (
        "It used all of its time limit.",
        "Ask for more time, or save checkpoints and run it as a chain of shorter jobs.",
    ),
    "OutOfMemory": (
        "It used more memory than it asked for and was killed.",
        "Ask for more memory (--mem), or make it use less.",
    ),
    "BlockMaxError": ("An error of an IBM Blue Gene block, which Slurm no longer supports.", ""),
    "BlockFreeAction": (
        "An IBM Blue Gene block is being freed (hardware Slurm no longer supports).",
        "",
    ),
}

# Slurm writes a few reasons as sentences of its own (the job's state description): their
# beginnings, and the code whose explanation they get, or their own where no code fits.
SENTENCES: tuple[tuple[str, str | tuple[str, str]], ...] = (
    (
        "Nodes required for job are DOWN, DRAINED or reserved",
        (
            "The nodes it could run on are down, drained, or kept for jobs of a partition with a "
            "higher priority.",
            "Nodes that are down or drained wait for the administrators; to start sooner, submit "
            "it to another partition or GPU type.",
        ),
    ),
    ("Job is at or exceeds QOS", "QOSResourceLimit"),
    ("Job is at or exceeds association", "AssociationResourceLimit"),
    ("launch failed requeued held", "JobHoldMaxRequeue"),
    ("Burst buffer pre_run error", "BurstBufferOperation"),
    (
        "job requeued in held state",
        (
            "It was put back in the queue and is held there: it will not start until it is "
            "released.",
            "Release it with `scontrol release <id>` when it should run again, or cancel it.",
        ),
    ),
)
_ENDED_RESERVATION = re.compile(r"Reservation (\S+ was deleted|[^,]+, which this job)")

# ReqNodeNotAvail's tails after the comma, as Slurm writes them.
_NODES = re.compile(r"UnavailableNodes:(?P<nodes>\S*)")
_NODE_TAILS = {
    "Reserved for maintenance": (
        "The nodes it needs are reserved for maintenance before it could end.",
        "A time limit that ends before the maintenance lets it start now.",
    ),
    "May be reserved for other job": (
        "The nodes it needs may be kept for another job.",
        "Nothing to do: it starts when they are free.",
    ),
}

# The accounting limits, read by their parts: whose limit (a QOS, or the association: your user in
# its Slurm account; none, on a QOS's per-account limits), which kind (Grp: shared by all the jobs
# under it; Max: for one job, user, node or account; Min: the least a job must ask), the resource,
# over time or not (Minutes: used so far; RunMinutes: held by running jobs for their time left),
# and per what.
_LIMIT = re.compile(
    r"(?P<owner>QOS|Assoc)?(?P<kind>Grp|Max|Min)"
    r"(?P<resource>CPU|Memory|Mem|Node|GRES|License|BB|Energy|Billing|Unknown|WallDuration|Wall|"
    r"SubmitJobs?|Jobs)"
    r"(?P<minutes>RunMinutes|Minutes)?(?:Per(?P<per>Job|Node|User|Account))?(?:Limit|NotSatisfied)?",
    re.IGNORECASE,
)
# Each resource as a user counts it, and its use over time.
_RESOURCES = {
    "cpu": ("CPUs", "CPU-minutes"),
    "mem": ("memory", "memory-minutes"),
    "memory": ("memory", "memory-minutes"),
    "node": ("nodes", "node-minutes"),
    "gres": ("GPUs", "GPU-minutes"),
    "license": ("licenses", "license-minutes"),
    "bb": ("burst buffer space", "burst buffer minutes"),
    "energy": ("energy", "energy"),
    "billing": (
        "billing units (the cluster's price of CPUs, memory and GPUs together)",
        "billing minutes (the cluster's price of CPUs, memory and GPUs over time)",
    ),
    "unknown": ("some resource", "some resource over time"),
}
_UNCOUNTED = {"memory", "energy", "burst buffer space", "some resource"}
_OWNERS = {"qos": "its QOS", "assoc": "your Slurm account", "": "its QOS"}
_LIMITS_COMMAND = {
    "qos": "`sacctmgr show qos` lists the QOS's limits",
    "assoc": "`sacctmgr show assoc user=$USER` lists your account's limits",
    "": "`sacctmgr show qos` lists the QOS's limits",
}


def explain_pending(reason: str) -> PendingReason:
    """What Slurm's reason for a waiting job means. Never raises: a code not known here comes
    back as itself, flagged unknown."""
    raw = (reason or "").strip()
    if raw.casefold() in ("", "none", "(null)"):
        return NO_REASON
    for beginning, meant in SENTENCES:
        if raw.casefold().startswith(beginning.casefold()):
            if isinstance(meant, str):
                return _fixed(raw, meant)
            return PendingReason(code=raw, meaning=meant[0], action=meant[1])
    if _ENDED_RESERVATION.match(raw):
        return _fixed(raw, "ReservationDeleted")
    code, _, tail = raw.partition(",")
    code = code.strip()
    if code.casefold() == "reqnodenotavail" and tail.strip():
        return _unavailable_nodes(raw, tail.strip())
    if (fixed := _fixed_or_none(raw, code)) is not None:
        return fixed
    if (limit := _limit(raw, code)) is not None:
        return limit
    return PendingReason(code=raw, meaning=raw, known=False)


_FIXED_BY_CASE = {code.casefold(): code for code in FIXED}


def _fixed_or_none(raw: str, code: str) -> PendingReason | None:
    known = _FIXED_BY_CASE.get(code.casefold())
    return _fixed(raw, known) if known else None


def _fixed(raw: str, code: str) -> PendingReason:
    meaning, action = FIXED[code]
    return PendingReason(code=raw, meaning=meaning, action=action)


def _unavailable_nodes(raw: str, tail: str) -> PendingReason:
    for beginning, (meaning, action) in _NODE_TAILS.items():
        if tail.casefold().startswith(beginning.casefold()):
            return PendingReason(code=raw, meaning=meaning, action=action)
    meaning, action = FIXED["ReqNodeNotAvail"]
    if (found := _NODES.search(tail)) and found["nodes"]:
        verb = "are" if any(mark in found["nodes"] for mark in ",[") else "is"
        meaning = (
            f"A node it needs is not available: {found['nodes']} {verb} down, drained or not "
            "responding (an administrator has to bring it back)."
        )
    return PendingReason(code=raw, meaning=meaning, action=action)


def _limit(raw: str, code: str) -> PendingReason | None:
    parts = _LIMIT.fullmatch(code)
    if parts is None:
        return None
    owner_key = (parts["owner"] or "").casefold()
    owner = _OWNERS[owner_key]
    kind, per = parts["kind"].casefold(), (parts["per"] or "").casefold()
    resource, minutes = parts["resource"].casefold(), (parts["minutes"] or "").casefold()
    limits = _LIMITS_COMMAND[owner_key]
    if resource in ("jobs", "submitjob", "submitjobs"):
        meaning, action = _job_count(owner, resource != "jobs", kind, per)
    elif resource in ("wall", "wallduration"):
        meaning, action = _wall(owner, kind)
    else:
        meaning, action = _amount(owner, *_RESOURCES[resource], kind, per, minutes)
    return PendingReason(code=raw, meaning=meaning, action=f"{action} ({limits}).")


def _job_count(owner: str, queued: bool, kind: str, per: str) -> tuple[str, str]:
    jobs = "jobs queued or running" if queued else "jobs running"
    if kind == "grp":
        who = f"All the users of {owner} together have"
    elif per == "account":
        who = "The users of your Slurm account together have"
    else:
        who = "You have"
    return (
        f"{who} as many {jobs} as {owner} allows; this one waits for one of them to end.",
        "Nothing is wrong with the job: it starts when one of those jobs ends",
    )


def _wall(owner: str, kind: str) -> tuple[str, str]:
    if kind == "grp":
        return (
            f"The jobs under {owner} have used all the run time its shared limit allows.",
            "It waits until that use decays or the limit is raised: ask the administrators",
        )
    return (
        f"Its time limit is longer than {owner} allows one job, so it will not start as it is.",
        f"{RESUBMIT} with a shorter --time",
    )


def _amount(
    owner: str, what: str, over_time: str, kind: str, per: str, minutes: str
) -> tuple[str, str]:
    over_time = over_time if minutes else what
    if kind == "min":
        return (
            f"It asks for {over_time} below the least {owner} requires of each job, so it will "
            "not start as it is.",
            f"{RESUBMIT} asking for at least that minimum, or under another QOS",
        )
    if kind == "grp" and minutes == "runminutes":
        return (
            f"The running jobs under {owner} together hold as many {over_time} (for the "
            "time they have left) as its shared limit allows; this one waits until some of "
            "them end.",
            f"Nothing is wrong with the job; a shorter time limit or {_fewer(what)} fits sooner",
        )
    if kind == "grp" and minutes:
        return (
            f"The jobs under {owner} have used all the {over_time} its shared limit allows.",
            "It waits until that use decays or the limit is raised: ask the administrators",
        )
    if kind == "grp":
        return (
            f"The jobs under {owner} together use {_as_many(what)} as its shared limit allows; "
            "this one waits until some of them end.",
            f"Nothing is wrong with the job: it starts when they free some; {_fewer(what)} may "
            "start it sooner",
        )
    if per == "user":
        return (
            f"Your running jobs already use {_as_many(what)} as {owner} allows one user at a "
            "time; this one waits until they free some.",
            f"It starts when one of your jobs ends; cancel one of them, or ask for {_fewer(what)}, "
            "to start it sooner",
        )
    if per == "account":
        return (
            f"The running jobs of your Slurm account already use {_as_many(what)} as {owner} "
            "allows one account; this one waits until they free some.",
            f"Nothing is wrong with the job: it starts when they free some; {_fewer(what)} may "
            "start it sooner",
        )
    if per == "node":
        return (
            f"It asks for more {what} on one node than {owner} allows, so it will not start as "
            "it is.",
            f"{RESUBMIT} with {_fewer(what)} on each node",
        )
    return (
        f"It asks for more {over_time} than {owner} allows one job, so it will not start as it is.",
        f"{RESUBMIT} with {_fewer(what)}" + (" or a shorter --time" if minutes else ""),
    )


def _as_many(what: str) -> str:
    return f"as much {what}" if what in _UNCOUNTED else f"as many {what}"


def _fewer(what: str) -> str:
    return f"less {what}" if what in _UNCOUNTED else f"fewer {what}"


def in_about(delta: timedelta) -> str:
    """'in about 2 h 10 min', 'in about 5 min', 'in under a minute'; 'any moment now' for a
    time already past (the scheduler's estimate is behind)."""
    seconds = delta.total_seconds()
    if seconds <= 0:
        return "any moment now"
    if seconds < 60:
        return "in under a minute"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"in about {minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours >= 48:
        return f"in about {round(hours / 24)} days"
    return f"in about {hours} h" + (f" {minutes} min" if minutes else "")
