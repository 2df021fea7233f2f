"""The long options sbatch 22.05 takes, and how it resolves an abbreviated one.

The list is sbatch --help's, plus the options it takes without listing them (each tried on
22.05.8 with --test-only). sbatch reads options with getopt_long: an unambiguous abbreviation
(--mem-per-g) names its option, one that several options start with (--cpus, --tim) is refused.
"""

import difflib

LISTED = frozenset(
    """
    account array bb bbf begin chdir cluster-constraint clusters comment constraint container
    contiguous core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task deadline
    delay-boot dependency distribution error exclude exclusive export export-file
    extra-node-info get-user-env gid gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket
    gpus-per-task gres gres-flags help hold ignore-pbs input job-name licenses mail-type
    mail-user mcs-label mem mem-per-cpu mem-per-gpu mincpus nice no-kill no-requeue nodefile
    nodelist nodes ntasks ntasks-per-core ntasks-per-node ntasks-per-socket output overcommit
    oversubscribe parsable partition power priority profile propagate qos quiet reboot requeue
    reservation signal sockets-per-node spread-job switches thread-spec threads-per-core time
    time-min tmp uid usage use-min-nodes verbose version wait wckey wrap
    """.split()  # noqa: SIM905 (a list of words reads best as words)
)
UNLISTED = frozenset(
    """
    acctg-freq batch hint kill-on-invalid-dep mem-bind network ntasks-per-gpu open-mode prefer
    tasks-per-node test-only wait-all-nodes
    """.split()  # noqa: SIM905
)
OPTIONS = LISTED | UNLISTED


def resolve(name: str) -> tuple[str | None, tuple[str, ...]]:
    """The option sbatch takes `name` for (None: it refuses it), and the options that an
    ambiguous abbreviation could be."""
    if name in OPTIONS:
        return name, ()
    matches = tuple(sorted(o for o in OPTIONS if o.startswith(name)))
    return (matches[0], ()) if len(matches) == 1 else (None, matches)


def closest(name: str, among: tuple[str, ...] = ()) -> str | None:
    """The option a misspelt name most likely meant: ntaks-per-node -> ntasks-per-node; `among`
    the options an ambiguous abbreviation could be (--tim -> time)."""
    found = difflib.get_close_matches(name, sorted(among or OPTIONS), n=1, cutoff=0.75)
    return found[0] if found else None
