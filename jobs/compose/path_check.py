"""The login-shell fallbacks for checking a data path on the cluster on request
(jobs.cluster.remote.check_path looks; guidance.engine.data_path says what it found)."""

from guidance.models import Cluster


def fallbacks(cluster: Cluster, username: str) -> dict[str, str]:
    """The site's variables with the values a job falls back on, for a login shell that lacks
    them; $USER is the login's. Values naming other variables are left to the shell's own."""
    environment = getattr(cluster, "job_environment", None)
    pairs = environment.pairs() if environment else ()
    values = {
        name: value.replace("${USER}", username).replace("$USER", username)
        for name, value in pairs
        if value
    }
    return {name: value for name, value in values.items() if "$" not in value}
