"""The account a job is billed to, where the site bills every job to one."""

from guidance.engine.script_check.findings import Finding, Severity, add_directive
from guidance.engine.script_check.parse import Script
from guidance.engine.types import Cluster, Rule

# Written into a fixed script where the user's account is not known: the fix says to change it.
ACCOUNT_PLACEHOLDER = "def-yourgroup"


def check_account(script: Script, cluster: Cluster, account: str, notes: list) -> None:
    rule = cluster.rule(Rule.ACCOUNT_REQUIRED)
    if rule is None or script.has("account"):
        return
    name = account or ACCOUNT_PLACEHOLDER
    notes.append(
        Finding(
            "no_account",
            f"No --account (-A): {cluster.name} bills every job to an account, and without one "
            "Slurm refuses the job or charges your default account, if you have one.",
            rule.source,
            "account",
            severity=Severity.FAILS,
            fix=f"Add #SBATCH --account={name}"
            + (
                ""
                if account
                else f", with your own account in place of {name} (sshare -U lists yours)"
            )
            + ", unless you set SBATCH_ACCOUNT in your login's environment.",
            edits=(add_directive(script, f"--account={name}"),),
        )
    )
