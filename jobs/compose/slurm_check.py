"""“Check with Slurm”: `sbatch --test-only` on the user's login, in plain words.

The answer is wanted while the user waits (one command, about 10 ms), so it runs in the web
request rather than through Celery; a cluster that does not answer is said so, not raised."""

from dataclasses import dataclass
from datetime import UTC, datetime

from guidance.engine.slurm_refusals import meaning
from jobs.cluster import remote
from jobs.cluster.errors import ClusterError
from jobs.models import ClusterAccount, no_login
from jobs.slurm.sbatch import WouldStart
from jobs.slurm.values import SlurmParseError


@dataclass(frozen=True)
class Validation:
    accepted: bool
    slurm_says: str = ""  # Slurm's own words, when it refused
    plain: str = ""  # what they mean, or why the cluster could not be asked
    would_start: WouldStart | None = None
    needs_login: bool = False

    @property
    def start(self) -> datetime | None:
        start = self.would_start.start if self.would_start else None
        # Naive UTC: Slurm was asked with TZ=UTC (jobs.slurm.values.IN_UTC).
        return start.replace(tzinfo=UTC) if start else None


def validate(user, cluster, script: str) -> Validation:
    account = ClusterAccount.objects.login_of(user, cluster)
    if account is None:
        return Validation(
            False, plain=no_login(cluster, "to check scripts with Slurm"), needs_login=True
        )
    try:
        return Validation(True, would_start=remote.test_only(account, script))
    except remote.SlurmRefused as refused:
        return Validation(False, refused.message, meaning(refused.message))
    except SlurmParseError as error:
        return Validation(False, plain=f"Slurm answered something unexpected: {error}")
    except ClusterError as error:
        return Validation(False, plain=error.message)
