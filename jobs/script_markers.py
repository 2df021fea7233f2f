"""The lines a portal script shares with the code that fills or reads it after rendering.

The renderer (jobs/compose/script.py) writes them, the monitoring block (jobs/gpu/monitoring.py)
goes between the two monitoring markers when the portal submits, and the poller (jobs/tasks.py,
through jobs/cluster/remote.py) reads the stop line. A leaf module, so that none of them needs
another's package.
"""

import re

# Empty in a composed or downloaded script; the start line itself tells its reader why.
MONITORING_START = "# >>> GPU monitoring starts here (added by the portal when it submits) >>>"
MONITORING_STOP = "# <<< GPU monitoring stops here <<<"

# A script that finds it cannot do its job (no data, a variable the site should have set) prints
# one line that starts with STOP_MARK on stderr and exits with STOP_STATUS; the portal shows the
# line as the job's message.
STOP_MARK = "portal-stop:"
STOP_STATUS = 66  # EX_NOINPUT

# A chain: an array whose tasks run one at a time, each part resuming the last, so that the job's
# work is its parts' times added up (a sweep's runs are told apart by their own lines first).
_ONE_AT_A_TIME = re.compile(r"^#SBATCH --array=\S+%1$", re.MULTILINE)


def one_task_at_a_time(script: str) -> bool:
    return bool(_ONE_AT_A_TIME.search(script))
