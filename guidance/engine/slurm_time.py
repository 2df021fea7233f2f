"""Slurm's durations, written and read in one place: `--time` as sbatch takes it, and the time
columns squeue and sacct print (elapsed, limits, CPU time)."""

import math
import re

NO_LIMIT = frozenset({"-1", "infinite", "unlimited"})  # casefolded; sbatch's words for no limit


def _formats(seconds: str) -> tuple[re.Pattern, ...]:
    # minutes | minutes:seconds | hours:minutes:seconds | days-[hours[:minutes[:seconds]]].
    # Slurm bounds no field (90 and 1:90:00 are valid).
    number = "[0-9]{1,9}"
    return tuple(
        re.compile(pattern)
        for pattern in (
            rf"(?P<m>{number})",
            rf"(?P<m>{number}):(?P<s>{seconds})",
            rf"(?P<h>{number}):(?P<m>{number}):(?P<s>{seconds})",
            rf"(?P<d>{number})-(?:(?P<h>{number})(?::(?P<m>{number})(?::(?P<s>{seconds}))?)?)?",
        )
    )


# sbatch takes whole seconds; sacct prints CPU times with fractions (00:00.005).
_WHOLE = _formats("[0-9]{1,9}")
_FRACTIONS = _formats(r"[0-9]{1,9}(?:\.[0-9]+)?")
_UNIT = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_seconds(text: str, *, fractions: bool = False) -> float:
    """Seconds in a Slurm duration, math.inf for no limit; ValueError for what sbatch refuses,
    and for fractions of a second unless `fractions` (what sacct prints)."""
    text = text.strip()
    if text.casefold() in NO_LIMIT:
        return math.inf
    for pattern in _FRACTIONS if fractions else _WHOLE:
        match = pattern.fullmatch(text)
        if match:
            return sum(float(v) * _UNIT[k] for k, v in match.groupdict().items() if v)
    raise ValueError(f"not a Slurm duration: {text!r}")


def format_time(seconds: float, *, days: bool = False) -> str:
    """H:MM:SS under a day and D-HH:MM:SS from a day on, to the second; with `days`, always
    D-HH:MM:SS (the form the portal's scripts use, so that every --time line reads alike)."""
    whole_days, rest = divmod(round(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if whole_days or days:
        return f"{whole_days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{hours}:{minutes:02d}:{secs:02d}"
