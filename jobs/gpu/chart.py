"""A job's GPU use as an inline SVG drawn on the server: no JavaScript library, readable by screen
readers (title, description) and printable. Pure: points in, markup out."""

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

MAX_POINTS = 240  # per GPU: about 3 px per point at the chart's width
WIDTH = 720
LEFT, RIGHT = 44, 28
LEGEND = 26
LABEL = 18  # the GPU's name above its panel
PLOT = 80
GAP = 14
AXIS = 26
TICK_STEPS = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
UTIL_COLOUR = "#1f5fa8"
MEMORY_COLOUR = "#b35900"


@dataclass(frozen=True)
class Point:
    t: float  # seconds since the job started, at the end of the sample
    seconds: float  # the span the sample covers, up to t
    utilization: float | None  # %; None: unknown (a MIG slice, or the driver did not say)
    memory_mb: float | None


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[Point, ...]
    memory_total_mb: float | None = None
    name: str = ""
    mean: float | None = None
    peak_memory_mb: float | None = None


def downsample(points: Sequence[Point], max_points: int = MAX_POINTS) -> tuple[Point, ...]:
    """At most `max_points` points: time-weighted mean utilization (unknown only where all of a
    bucket is unknown) and the peak memory of each equal slice of time."""
    if len(points) <= max_points:
        return tuple(points)
    start = points[0].t - points[0].seconds
    width = (points[-1].t - start) / max_points or 1
    buckets: dict[int, list[Point]] = {}
    for p in points:
        buckets.setdefault(min(int((p.t - p.seconds - start) / width), max_points - 1), []).append(
            p
        )
    return tuple(_merge(group) for _, group in sorted(buckets.items()))


def _merge(group: list[Point]) -> Point:
    known = [p for p in group if p.utilization is not None]
    weight = sum(p.seconds for p in known)
    if known and weight:
        utilization = sum(p.utilization * p.seconds for p in known) / weight
    elif known:
        utilization = sum(p.utilization for p in known) / len(known)
    else:
        utilization = None
    memory = [p.memory_mb for p in group if p.memory_mb is not None]
    return Point(
        group[-1].t,
        group[-1].t - (group[0].t - group[0].seconds),
        utilization,
        max(memory) if memory else None,
    )


def render(
    series: Sequence[Series], *, title: str, duration: float = 0, ids: str = "gpu-chart"
) -> SafeString:
    """The chart: one panel per GPU, utilization and memory (as a share of the card) on 0-100%."""
    end = max([duration, *(p.t for s in series for p in s.points), 1.0])
    height = LEGEND + len(series) * (LABEL + PLOT + GAP) + AXIS
    plot_width = WIDTH - LEFT - RIGHT
    x = _Scale(LEFT, plot_width, end)
    parts = [
        f'<svg class="gpu-chart" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="100%" preserveAspectRatio="xMinYMin meet" '
        f'aria-labelledby="{ids}-title {ids}-desc">',
        f'<title id="{ids}-title">{escape(title)}</title>',
        f'<desc id="{ids}-desc">{escape(describe(series, end))}</desc>',
        _legend(),
    ]
    top = LEGEND
    for s in series:
        parts.append(_panel(s, x, top + LABEL))
        top += LABEL + PLOT + GAP
    parts.append(_time_axis(x, LEGEND + LABEL, top - GAP, end))
    parts.append("</svg>")
    # Safe: every value in it is a number we formatted or text escaped above.
    return mark_safe("".join(parts))


def describe(series: Sequence[Series], duration: float) -> str:
    """The chart in words: what its title and description tell a screen reader."""
    lines = [f"GPU compute utilization and memory over {_clock(duration)}."]
    for s in series:
        busy = f"{s.mean:.0f}% busy on average" if s.mean is not None else "utilization unknown"
        memory = ""
        if s.peak_memory_mb is not None:
            of = f" of {s.memory_total_mb / 1024:.0f}" if s.memory_total_mb else ""
            memory = f", peak memory {s.peak_memory_mb / 1024:.1f}{of} GB"
        unknown = sum(p.seconds for p in s.points if p.utilization is None)
        gaps = f", unknown for {_clock(unknown)}" if unknown and s.mean is not None else ""
        lines.append(f"{s.label}: {busy}{memory}{gaps}.")
    return " ".join(lines)


@dataclass(frozen=True)
class _Scale:
    left: float
    width: float
    end: float

    def __call__(self, t: float) -> float:
        return self.left + max(0.0, min(t, self.end)) / self.end * self.width


def _legend() -> str:
    y = 12
    return (
        '<g class="legend" font-size="11">'
        f'<line x1="{LEFT}" y1="{y}" x2="{LEFT + 24}" y2="{y}" stroke="{UTIL_COLOUR}" '
        'stroke-width="2"/>'
        f'<text x="{LEFT + 30}" y="{y + 4}">compute utilization</text>'
        f'<line x1="{LEFT + 170}" y1="{y}" x2="{LEFT + 194}" y2="{y}" stroke="{MEMORY_COLOUR}" '
        'stroke-width="2" stroke-dasharray="5 3"/>'
        f'<text x="{LEFT + 200}" y="{y + 4}">memory used, of the card</text>'
        f'<rect x="{LEFT + 370}" y="{y - 6}" width="24" height="12" class="unknown" '
        'fill="#ddd"/>'
        f'<text x="{LEFT + 400}" y="{y + 4}">utilization unknown</text>'
        "</g>"
    )


def _panel(s: Series, x: _Scale, top: float) -> str:
    def y(value: float) -> float:
        return top + PLOT * (1 - max(0.0, min(value, 100.0)) / 100)

    right = x.left + x.width
    parts = [
        f'<g class="gpu-series" data-gpu="{escape(s.label)}">',
        f'<text x="{LEFT}" y="{top - 5:.1f}" font-size="12" font-weight="600">'
        f"{escape(_heading(s))}</text>",
    ]
    for value in (0, 50, 100):
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y(value):.1f}" x2="{right:.1f}" '
            f'y2="{y(value):.1f}" stroke="#ccc" stroke-width="0.5"/>'
            f'<text x="{LEFT - 4}" y="{y(value) + 4:.1f}" font-size="10" '
            f'text-anchor="end">{value}%</text>'
        )
    for first, last in _runs(s.points, lambda p: p.utilization is None):
        x0, x1 = x(first.t - first.seconds), x(last.t)
        parts.append(
            f'<rect class="unknown" x="{x0:.1f}" y="{top:.1f}" width="{max(x1 - x0, 1):.1f}" '
            f'height="{PLOT}" fill="#ddd"><title>utilization unknown</title></rect>'
        )
        if x1 - x0 > 50:
            parts.append(
                f'<text class="unknown-label" x="{(x0 + x1) / 2:.1f}" y="{top + PLOT / 2 + 4:.1f}" '
                f'font-size="11" text-anchor="middle" fill="#555">unknown</text>'
            )
    total = s.memory_total_mb or max((p.memory_mb or 0 for p in s.points), default=0) or 1
    memory = _path(s.points, x, _memory_share(total), y)
    utilization = _path(s.points, x, lambda p: p.utilization, y)
    if memory:
        parts.append(
            f'<path class="memory" d="{memory}" '
            f'fill="none" stroke="{MEMORY_COLOUR}" stroke-width="1.5" stroke-dasharray="5 3"/>'
        )
    if utilization:
        parts.append(
            f'<path class="utilization" d="{utilization}" fill="none" stroke="{UTIL_COLOUR}" '
            'stroke-width="2"/>'
        )
    parts.append("</g>")
    return "".join(parts)


def _memory_share(total: float):
    return lambda p: None if p.memory_mb is None else 100 * p.memory_mb / total


def _heading(s: Series) -> str:
    bits = [s.label]
    if s.name:
        bits.append(s.name)
    bits.append(f"{s.mean:.0f}% busy" if s.mean is not None else "utilization unknown")
    if s.peak_memory_mb is not None:
        of = f" of {s.memory_total_mb / 1024:.0f}" if s.memory_total_mb else ""
        bits.append(f"peak {s.peak_memory_mb / 1024:.1f}{of} GB")
    return " · ".join(bits)


def _path(points: Sequence[Point], x: _Scale, value, y) -> str:
    """An SVG path through the known values, lifted (a new M) at unknowns and at gaps in time."""
    limit = _gap_limit(points)
    commands, previous = [], None
    for p in points:
        v = value(p)
        if v is None:
            previous = None
            continue
        if previous is None or p.t - p.seconds - previous.t > limit:
            commands.append(f"M{x(p.t - p.seconds):.1f} {y(v):.1f}")
        commands.append(f"L{x(p.t):.1f} {y(v):.1f}")
        previous = p
    return "".join(commands)


def _gap_limit(points: Sequence[Point]) -> float:
    # Missing samples (the sampler stopped, the node was busy) break the line rather than
    # drawing a straight line across time nobody measured.
    steps = [b.t - a.t for a, b in itertools.pairwise(points) if b.t > a.t]
    return 2 * max(statistics.median(steps) if steps else 0, 1)


def _runs(points: Sequence[Point], test) -> list[tuple[Point, Point]]:
    runs, first, last = [], None, None
    for p in points:
        if test(p):
            first = first or p
            last = p
        elif first:
            runs.append((first, last))
            first = None
    if first:
        runs.append((first, last))
    return runs


def _time_axis(x: _Scale, top: float, bottom: float, end: float) -> str:
    step = next((s for s in TICK_STEPS if end / s <= 6), TICK_STEPS[-1])
    parts = ['<g class="time-axis" font-size="10">']
    t = 0
    while t <= end:
        px = x(t)
        parts.append(
            f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{bottom:.1f}" '
            'stroke="#e4e4e4" stroke-width="0.5"/>'
            f'<text x="{px:.1f}" y="{bottom + 14:.1f}" text-anchor="middle">'
            f"{_tick(t, step)}</text>"
        )
        t += step
    parts.append(
        f'<text x="{x.left + x.width:.1f}" y="{bottom + 24:.1f}" text-anchor="end">'
        "time since the job started</text></g>"
    )
    return "".join(parts)


def _tick(t: float, step: int) -> str:
    if t == 0:
        return "0"
    if step < 3600:
        return f"{t / 60:g} min"
    if step < 86400:
        return f"{t / 3600:g} h"
    return f"{t / 86400:g} d"


def _clock(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes / 60:.1f} h"
