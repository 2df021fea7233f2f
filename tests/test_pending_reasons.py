"""Why a pending job waits, in plain words: pure tables, no database."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guidance.engine.pending_reasons import FIXED, explain_pending, in_about


def words(text: str) -> list[str]:
    return text.split()


# squeue(1) of Slurm 22.05, JOB REASON CODES: every entry, with the families written as members.
DOCUMENTED = words("""
AssocGrpCpuLimit AssociationJobLimit AssocMaxWallDurationPerJobLimit AssociationResourceLimit
AssociationTimeLimit BadConstraints BeginTime Cleaning Dependency DependencyNeverSatisfied
FrontEndDown InactiveLimit InvalidAccount InvalidQOS JobHeldAdmin JobHeldUser JobLaunchFailure
Licenses NodeDown NonZeroExitCode PartitionDown PartitionInactive PartitionNodeLimit
PartitionTimeLimit Priority Prolog QOSGrpGRES QOSJobLimit QOSMaxGRESPerUser QOSResourceLimit
QOSTimeLimit QOSUsageThreshold ReqNodeNotAvail Reservation Resources SystemFailure TimeLimit
WaitingForScheduling
""")

# Every word Slurm 22.05's job_reason_string() returns (src/common/slurm_protocol_defs.c), "None"
# aside: what squeue prints when the job has no description of its own.
SLURM_WORDS = words("""
Prolog Priority Dependency Resources PartitionNodeLimit PartitionTimeLimit PartitionDown
PartitionInactive JobHeldAdmin JobHeldUser BeginTime Licenses AssociationJobLimit
AssociationResourceLimit AssociationTimeLimit Reservation ReqNodeNotAvail FrontEndDown SchedDefer
NodeDown BadConstraints SystemFailure JobLaunchFailure NonZeroExitCode TimeLimit InactiveLimit
InvalidAccount InvalidQOS QOSUsageThreshold QOSJobLimit QOSResourceLimit QOSTimeLimit
BlockMaxError BlockFreeAction Cleaning QOSNotAllowed AccountNotAllowed DependencyNeverSatisfied
QOSGrpCpuLimit QOSGrpCPUMinutesLimit QOSGrpCPURunMinutesLimit QOSGrpMemLimit QOSGrpNodeLimit
QOSGrpSubmitJobsLimit QOSGrpWallLimit QOSMaxCpuPerJobLimit QOSMaxCpuMinutesPerJobLimit
QOSMaxNodePerJobLimit QOSMaxWallDurationPerJobLimit QOSMaxCpuPerUserLimit QOSMaxJobsPerUserLimit
QOSMaxNodePerUserLimit QOSMaxSubmitJobPerUserLimit QOSMinCpuNotSatisfied AssocGrpCpuLimit
AssocGrpCPUMinutesLimit AssocGrpCPURunMinutesLimit AssocGrpMemLimit AssocGrpNodeLimit
AssocGrpSubmitJobsLimit AssocGrpWallLimit AssocMaxJobsLimit AssocMaxCpuPerJobLimit
AssocMaxCpuMinutesPerJobLimit AssocMaxNodePerJobLimit AssocMaxWallDurationPerJobLimit
AssocMaxSubmitJobLimit JobHoldMaxRequeue JobArrayTaskLimit BurstBufferResources
BurstBufferStageIn BurstBufferOperation PowerNotAvail PowerReserved AssocGrpUnknown
AssocGrpUnknownMinutes AssocGrpUnknownRunMinutes AssocMaxUnknownPerJob AssocMaxUnknownPerNode
AssocMaxUnknownMinutesPerJob AssocMaxCpuPerNode AssocGrpMemMinutes AssocGrpMemRunMinutes
AssocMaxMemPerJob AssocMaxMemPerNode AssocMaxMemMinutesPerJob AssocGrpNodeMinutes
AssocGrpNodeRunMinutes AssocMaxNodeMinutesPerJob AssocGrpEnergy AssocGrpEnergyMinutes
AssocGrpEnergyRunMinutes AssocMaxEnergyPerJob AssocMaxEnergyPerNode AssocMaxEnergyMinutesPerJob
AssocGrpGRES AssocGrpGRESMinutes AssocGrpGRESRunMinutes AssocMaxGRESPerJob AssocMaxGRESPerNode
AssocMaxGRESMinutesPerJob AssocGrpLicense AssocGrpLicenseMinutes AssocGrpLicenseRunMinutes
AssocMaxLicensePerJob AssocMaxLicenseMinutesPerJob AssocGrpBB AssocGrpBBMinutes
AssocGrpBBRunMinutes AssocMaxBBPerJob AssocMaxBBPerNode AssocMaxBBMinutesPerJob QOSGrpUnknown
QOSGrpUnknownMinutes QOSGrpUnknownRunMinutes QOSMaxUnknownPerJob QOSMaxUnknownPerNode
QOSMaxUnknownPerUser QOSMaxUnknownMinutesPerJob QOSMinUnknown QOSMaxCpuPerNode
QOSGrpMemoryMinutes QOSGrpMemoryRunMinutes QOSMaxMemoryPerJob QOSMaxMemoryPerNode
QOSMaxMemoryPerUser QOSMaxMemoryMinutesPerJob QOSMinMemory QOSGrpNodeMinutes QOSGrpNodeRunMinutes
QOSMaxNodeMinutesPerJob QOSMinNode QOSGrpEnergy QOSGrpEnergyMinutes QOSGrpEnergyRunMinutes
QOSMaxEnergyPerJob QOSMaxEnergyPerNode QOSMaxEnergyPerUser QOSMaxEnergyMinutesPerJob QOSMinEnergy
QOSGrpGRES QOSGrpGRESMinutes QOSGrpGRESRunMinutes QOSMaxGRESPerJob QOSMaxGRESPerNode
QOSMaxGRESPerUser QOSMaxGRESMinutesPerJob QOSMinGRES QOSGrpLicense QOSGrpLicenseMinutes
QOSGrpLicenseRunMinutes QOSMaxLicensePerJob QOSMaxLicensePerUser QOSMaxLicenseMinutesPerJob
QOSMinLicense QOSGrpBB QOSGrpBBMinutes QOSGrpBBRunMinutes QOSMaxBBPerJob QOSMaxBBPerNode
QOSMaxBBPerUser QOSMinBB DeadLine MaxBBPerAccount MaxCpuPerAccount MaxEnergyPerAccount
MaxGRESPerAccount MaxNodePerAccount MaxLicensePerAccount MaxMemoryPerAccount MaxUnknownPerAccount
MaxJobsPerAccount MaxSubmitJobsPerAccount PartitionConfig AccountingPolicy FedJobLock OutOfMemory
MaxMemPerLimit AssocGrpBilling AssocGrpBillingMinutes AssocGrpBillingRunMinutes
AssocMaxBillingPerJob AssocMaxBillingPerNode AssocMaxBillingMinutesPerJob QOSGrpBilling
QOSGrpBillingMinutes QOSGrpBillingRunMinutes QOSMaxBillingPerJob QOSMaxBillingPerNode
QOSMaxBillingPerUser QOSMaxBillingMinutesPerJob MaxBillingPerAccount QOSMinBilling
ReservationDeleted
""")

# Reasons Slurm writes as a sentence of its own instead of a code (the job's state description).
SENTENCES = [
    "ReqNodeNotAvail, UnavailableNodes:a100-2",
    "ReqNodeNotAvail, UnavailableNodes:a100-[1-2],rtx-1",
    "ReqNodeNotAvail, Reserved for maintenance",
    "ReqNodeNotAvail, May be reserved for other job",
    "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions",
    "Job is at or exceeds QOS normal's group max TRES(gres/gpu) minutes of 600 with 610",
    "Job is at or exceeds association (acc=portal/user=portaltest/part=gpu) group wall limit 6 "
    "with 7",
    "Reservation maint was deleted",
    "Reservation maint, which this job was running under, has ended",
    "launch failed requeued held",
    "job requeued in held state",
    "Burst buffer pre_run error",
]


@pytest.mark.parametrize("code", sorted(set(DOCUMENTED + SLURM_WORDS)))
def test_every_code_slurm_has_gets_a_known_explanation(code):
    reason = explain_pending(code)
    assert reason.known and reason.given
    assert reason.code == code  # kept as printed, for the user to quote
    assert reason.meaning.endswith(".") and code not in reason.meaning
    assert reason.meaning[0].isupper()


@pytest.mark.parametrize("sentence", SENTENCES)
def test_reasons_slurm_writes_as_sentences_are_explained(sentence):
    reason = explain_pending(sentence)
    assert reason.known and reason.code == sentence and reason.meaning != sentence


def test_a_partitions_unavailable_nodes_are_named():
    reason = explain_pending("ReqNodeNotAvail, UnavailableNodes:a100-2")
    assert "a100-2 is down, drained or not responding" in reason.meaning
    several = explain_pending("ReqNodeNotAvail, UnavailableNodes:a100-[1-2]")
    assert "a100-[1-2] are down" in several.meaning


@pytest.mark.parametrize(
    ("code", "says"),
    [
        ("Priority", "higher priority are ahead of it"),
        ("Resources", "waits for nodes with the GPUs"),
        ("Dependency", "job it depends on"),
        ("DependencyNeverSatisfied", "will never start"),
        ("BeginTime", "earliest start time"),
        ("JobHeldUser", "on hold, put there by you"),
        ("JobHeldAdmin", "administrator holds the job"),
        ("JobArrayTaskLimit", "as many tasks at once"),
        ("PartitionTimeLimit", "longer than its partition allows"),
        ("Reservation", "reservation it asked for"),
        ("QOSMaxGRESPerUser", "as many GPUs as its QOS allows one user at a time"),
        ("QOSGrpGRES", "jobs under its QOS together use as many GPUs"),
        ("AssocGrpCPULimit", "jobs under your Slurm account together use as many CPUs"),
        ("AssocGrpCpuLimit", "jobs under your Slurm account together use as many CPUs"),
        ("AssocMaxJobsLimit", "You have as many jobs running as your Slurm account allows"),
        ("QOSMaxWallDurationPerJobLimit", "time limit is longer than its QOS allows one job"),
        ("QOSMaxMemoryPerUser", "as much memory as its QOS allows one user"),
        ("AssocGrpGRESRunMinutes", "GPU-minutes (for the time they have left)"),
        ("QOSGrpCPUMinutesLimit", "used all the CPU-minutes"),
        ("QOSMaxCpuMinutesPerJobLimit", "more CPU-minutes than its QOS allows one job"),
        ("MaxGRESPerAccount", "jobs of your Slurm account already use as many GPUs"),
        ("MaxSubmitJobsPerAccount", "jobs queued or running"),
        ("QOSMinGRES", "below the least its QOS requires"),
        ("AssocMaxGRESPerNode", "more GPUs on one node"),
    ],
)
def test_each_code_says_what_it_means(code, says):
    assert says in explain_pending(code).meaning


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        ("JobHeldUser", "scontrol release"),
        ("PartitionTimeLimit", "shorter --time"),
        ("DependencyNeverSatisfied", "Cancel it"),
        ("QOSMaxGRESPerUser", "`sacctmgr show qos`"),
        ("AssocGrpCPULimit", "`sacctmgr show assoc user=$USER`"),
        ("QOSMaxGRESPerJob", "fewer GPUs"),
        ("QOSMaxMemoryPerJob", "less memory"),
        ("InvalidQOS", "sacctmgr show assoc"),
    ],
)
def test_each_code_says_what_to_do(code, advice):
    assert advice in explain_pending(code).action


def test_the_family_is_read_by_its_parts_not_listed():
    # A member Slurm 22.05 does not print, built from the same parts, reads as well.
    reason = explain_pending("QOSMaxBillingPerUserLimit")
    assert reason.known and "billing units" in reason.meaning and "one user" in reason.meaning


@pytest.mark.parametrize("nothing", ["", "None", "(null)", "  ", None])
def test_no_reason_is_none(nothing):
    reason = explain_pending(nothing)
    assert not reason.given and reason.meaning == "" and reason.action == ""


@pytest.mark.parametrize(
    "code", ["SomeFutureReason", "QOSMaxGRESPerPlanet", "Grp", "MaxPer", "ReqNodeNotAvailable"]
)
def test_an_unknown_code_comes_back_as_itself(code):
    reason = explain_pending(code)
    assert (reason.known, reason.code, reason.meaning, reason.action) == (False, code, code, "")


@given(st.text())
def test_no_text_makes_it_raise(text):
    reason = explain_pending(text)
    assert reason.meaning or not reason.given


def test_the_fixed_codes_are_the_ones_slurm_has():
    # A code in the table that Slurm does not have would be a typo that never matches.
    assert set(FIXED) - set(DOCUMENTED + SLURM_WORDS) == set()


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(seconds=-5), "any moment now"),
        (timedelta(seconds=30), "in under a minute"),
        (timedelta(minutes=7, seconds=10), "in about 7 min"),
        (timedelta(hours=2, minutes=10), "in about 2 h 10 min"),
        (timedelta(hours=3), "in about 3 h"),
        (timedelta(days=3, hours=1), "in about 3 days"),
    ],
)
def test_the_start_reads_as_a_time_from_now(delta, text):
    assert in_about(delta) == text
