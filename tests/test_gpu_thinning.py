"""GPU samples: thinning a GPU's stored samples (pure)."""

from datetime import UTC, datetime, timedelta

import pytest

from jobs.gpu.thinning import Point, merge, thin


def _points(count: int, seconds: float = 10.0) -> list[Point]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        Point(
            i,
            start + timedelta(seconds=seconds * (i + 1)),
            seconds,
            float(i % 100),
            1.0 * i,
            None,
            60.0,
        )
        for i in range(count)
    ]


def _weighted_mean(points: list[Point]) -> float:
    known = [p for p in points if p.utilization is not None]
    return sum(p.utilization * p.seconds for p in known) / sum(p.seconds for p in known)


def test_thinning_keeps_the_bound_and_the_means() -> None:
    points = _points(721)
    kept = thin(points, bound=720)
    assert len(kept) == 540
    assert sum(p.seconds for p in kept) == sum(p.seconds for p in points)
    assert _weighted_mean(kept) == pytest.approx(_weighted_mean(points))
    # The oldest were merged, the newest are as sampled; times stay in order.
    assert kept[0].seconds == 20 and kept[-1] == points[-1]
    assert [p.at for p in kept] == sorted(p.at for p in kept)
    assert kept[0].at == points[1].at and kept[0].power_w is None


def test_thinning_again_and_again_keeps_the_resolution_even() -> None:
    points: list[Point] = []
    for batch in range(40):  # 40 polls of 100 samples: 4,000 samples, a long job
        start = len(points) and points[-1].at
        new = _points(100)
        for i, p in enumerate(new):
            p.pk = batch * 100 + i
            p.at = (start or new[0].at) + timedelta(seconds=10 * (i + 1))
        points = thin([*points, *new], bound=720)
        assert len(points) <= 720
    widths = {p.seconds for p in points}
    assert max(widths) <= 2 * min(widths)  # within a factor of two over the whole run
    assert sum(p.seconds for p in points) == 40_000


def test_merging_ignores_unknown_utilization() -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    a = Point(1, start, 10, None, 100.0, None, None)
    b = Point(2, start + timedelta(seconds=10), 30, 80.0, 200.0, None, None)
    merged = merge(a, b)
    assert (merged.pk, merged.at, merged.seconds) == (2, b.at, 40)
    assert merged.utilization == 80.0  # not (0 * 10 + 80 * 30) / 40
    assert merged.memory_used_mb == 175.0 and merged.power_w is None
