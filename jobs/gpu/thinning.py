"""Thinning a GPU's stored samples: past a bound, neighbours merge into longer ones whose values
are time-weighted means, and whose energy is the sum of theirs. Pure."""

import itertools
from dataclasses import dataclass, replace
from datetime import datetime

MAX_POINTS = 720  # samples kept per GPU per job part (see thin())


@dataclass
class Point:
    """A stored sample as thin() sees it; `pk` None for one not saved yet."""

    pk: int | None
    at: datetime
    seconds: float
    utilization: float | None
    memory_used_mb: float | None
    power_w: float | None
    temperature_c: float | None
    energy_j: float | None = None


VALUES = ("utilization", "memory_used_mb", "power_w", "temperature_c")
AMOUNTS = ("energy_j",)  # what a span used: neighbours' add up


def merge(older: Point, newer: Point) -> Point:
    """One point for two neighbours: their spans add up, each value is their time-weighted mean
    over the ones that know it (None stays None only when neither knows it)."""
    values = {}
    for name in VALUES:
        known = [
            (getattr(p, name), p.seconds) for p in (older, newer) if getattr(p, name) is not None
        ]
        weight = sum(seconds for _, seconds in known)
        if not known:
            values[name] = None
        elif weight > 0:
            values[name] = sum(value * seconds for value, seconds in known) / weight
        else:
            values[name] = sum(value for value, _ in known) / len(known)
    for name in AMOUNTS:
        known = [getattr(p, name) for p in (older, newer) if getattr(p, name) is not None]
        values[name] = sum(known) if known else None
    return replace(newer, seconds=older.seconds + newer.seconds, **values)


def thin(points: list[Point], bound: int = MAX_POINTS) -> list[Point]:
    """At most `bound` points, oldest first, for a GPU's stored samples (oldest first).

    Past the bound, neighbours are merged in pairs (merge()) down to three quarters of it, so
    that thinning runs once per bound/4 new samples, not on every poll. Finest pairs first
    (the smallest summed span, with a quarter's slack for the sampler's jitter), oldest first
    among them: raw 10 s samples become 20 s ones from the start of the job on, and only when
    all are 20 s do 40 s ones appear. The resolution stays even over the whole run, within a
    factor of two, with the newest samples the finest, and time-weighted means do not change.
    """
    if len(points) <= bound:
        return points
    target = bound * 3 // 4
    points = list(points)
    while len(points) > target and len(points) > 1:
        finest = min(a.seconds + b.seconds for a, b in itertools.pairwise(points))
        limit = finest * 1.25
        merged: list[Point] = []
        excess = len(points) - target
        index = 0
        while index < len(points):
            pair = points[index : index + 2]
            if excess > 0 and len(pair) == 2 and pair[0].seconds + pair[1].seconds <= limit:
                merged.append(merge(*pair))
                excess -= 1
                index += 2
            else:
                merged.append(points[index])
                index += 1
        points = merged
    return points
