"""What a checked data path means, said against the plan: plain tables, no database."""

import pytest

from guidance.engine.data_path import PathCheck, describe


@pytest.mark.parametrize(
    ("found", "chosen", "ok", "words"),
    [
        (PathCheck("/p/d", "folder", 2000), "", True, "a folder of 2,000 files"),
        (PathCheck("/p/d", "folder", 100_001), "", True, "more than 100,000 files"),
        (PathCheck("/p/d", "folder", 3), "archive", False, "choose 'A folder'"),
        (PathCheck("/p/d.tar", "file", 5_000_000), "", True, "an archive"),
        (PathCheck("/p/d.h5", "file", 5_000_000), "", True, "a single file"),
        (PathCheck("/p/d", "file", 5_000_000), "", False, "not a folder"),
        (PathCheck("/p/x", "missing"), "", False, "the job would stop at once"),
        (PathCheck("", "unset", variable="PROJECT"), "", False, "no $PROJECT outside jobs"),
    ],
)
def test_a_checked_path_is_told_against_the_plan(found, chosen, ok, words):
    said_ok, said = describe(found, "Narval", chosen)
    assert said_ok == ok and words in said


def test_an_unknown_chosen_kind_is_taken_from_the_name():
    ok, said = describe(PathCheck("/p/d.tar", "file", 10), "Narval", "tape")
    assert ok and "taken as an archive" in said
