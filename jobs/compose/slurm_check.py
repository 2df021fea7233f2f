"""“Check with Slurm”: `sbatch --test-only` on the user's login, in plain words.

The answer is wanted while the user waits (one command, about 10 ms), so it runs in the web
request rather than through Celery; a cluster that does not answer is said so, not raised."""

from dataclasses import dataclass
from datetime import UTC, datetime

from jobs.cluster import remote, slurm
from jobs.cluster.errors import ClusterError
from jobs.models import ClusterAccount


@dataclass(frozen=True)
class Validation:
    accepted: bool
    slurm_says: str = ""  # Slurm's own words, when it refused
    plain: str = ""  # what they mean, or why the cluster could not be asked
    would_start: slurm.WouldStart | None = None
    needs_login: bool = False

    @property
    def start(self) -> datetime | None:
        start = self.would_start.start if self.would_start else None
        # Naive UTC: Slurm was asked with TZ=UTC (slurm.IN_UTC).
        return start.replace(tzinfo=UTC) if start else None


def validate(user, cluster, script: str) -> Validation:
    account = (
        ClusterAccount.objects.filter(owner=user, cluster=cluster).select_related("cluster").first()
    )
    if account is None:
        return Validation(
            False,
            plain=f"Set up your login on {cluster.name} to check scripts with Slurm.",
            needs_login=True,
        )
    try:
        return Validation(True, would_start=remote.test_only(account, script))
    except remote.Rejected as rejected:
        return Validation(False, rejected.message, remote.plain_words(rejected.message))
    except slurm.SlurmParseError as error:
        return Validation(False, plain=f"Slurm answered something unexpected: {error}")
    except ClusterError as error:
        return Validation(False, plain=error.message)
