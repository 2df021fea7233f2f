"""Slurm's durations, written and read in one place (guidance/engine/slurm_time.py)."""

import math

import pytest

from guidance.engine.slurm_time import format_time, parse_seconds


@pytest.mark.parametrize(
    ("minutes", "text"), [(15, "0:15:00"), (90, "1:30:00"), (36 * 60, "1-12:00:00")]
)
def test_it_writes_what_a_person_reads(minutes, text):
    assert format_time(minutes * 60) == text


@pytest.mark.parametrize(
    ("seconds", "text"), [(75 * 60, "0-01:15:00"), (86400, "1-00:00:00"), (59.6, "0-00:01:00")]
)
def test_scripts_always_get_days(seconds, text):
    assert format_time(seconds, days=True) == text


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 5400),  # sbatch's bare number is minutes
        ("5:30", 330),
        ("1:90:00", 9000),
        ("2-12", 216000),
        ("1-02:03:04", 93784),
        ("7-", 604800),
        ("UNLIMITED", math.inf),
        ("-1", math.inf),
    ],
)
def test_it_reads_sbatch_and_sacct_durations(text, seconds):
    assert parse_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "3h", "1.5", "1:2:3:4", "1-2-3", ":30", "ten"])
def test_it_refuses_what_sbatch_refuses(text):
    with pytest.raises(ValueError, match="not a Slurm duration"):
        parse_seconds(text)


def test_fractions_of_a_second_are_saccts_not_sbatchs():
    assert parse_seconds("00:00.005", fractions=True) == pytest.approx(0.005)
    assert parse_seconds("1-00:00:01.5", fractions=True) == pytest.approx(86401.5)
    for text in ("00:00.005", "10:00.5", "1:00:00.25", "1-0:0:0.5"):
        with pytest.raises(ValueError):
            parse_seconds(text)


def test_what_it_writes_it_reads_back():
    for seconds in (0, 59, 3600, 86399, 86400, 10 * 86400 + 3723):
        assert parse_seconds(format_time(seconds)) == seconds
        assert parse_seconds(format_time(seconds, days=True)) == seconds
