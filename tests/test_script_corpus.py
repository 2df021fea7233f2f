"""Check my script against a corpus of job scripts in the shapes people publish
(tests/script_corpus): each gets every finding an expert reading the guidance raises, and nothing
else but the few that a reasonable reader could go either way on. The corpus is written ahead of
the checker: scripts fail here until it learns what they show. bench/script_check_corpus.py
prints the same as rates."""

import pytest

from guidance.engine.script_check import Basis
from tests.script_corpus_helpers import CORPUS, check, load_corpus

# The checker's finding codes: the only words expectations.toml may use.
CATALOGUE = frozenset(
    {
        # Would fail
        "not_a_batch_script",
        "dos_line_breaks",
        "ignored_directive",
        "unknown_option",
        "missing_value",
        "bad_time",
        "bad_memory",
        "over_max_duration",
        "no_account",
        "gres_type_unknown",
        "gpus_over_node",
        "cpus_over_node",
        "memory_over_node",
        "no_gpu_requested",
        "array_task_id_without_array",
        "needs_internet",
        "no_commands",
        "reads_other_folder",
        "staging_source_unset",
        # Wastes resources
        "memory_over_share",
        "whole_node",
        "too_few_cpus",
        "too_many_cpus",
        "multi_gpu_without_launcher",
        "multi_gpu_unseen",
        "training_from_network",
        "long_without_checkpoints",
        "chain_without_resume",
        "duplicate_gpu_request",
        "container_without_gpus",
        "server_holds_gpus",
        # Advice
        "anaconda",
        "venv_on_network",
        "missing_time",
    }
)
# The Slurm clusters of guidance/seed.py (dgx runs Run:ai) and the fewest scripts each has.
MINIMUM_SCRIPTS = {"processing": 8, "narval": 6, "beluga": 6, "cedar": 6, "graham": 6}
# The dev cluster's federation profile (tests/engine_helpers.py), whose fixed scripts sbatch tests.
MINIMUM_SCRIPTS["alliance-lab"] = 3
MINIMUM_TOTAL = 45
MINIMUM_SOUND = 12

CASES = load_corpus()
IDS = [case.name for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_it_finds_every_problem(case):
    found = {n.code for n in check(case).notes}
    missed = sorted(set(case.expect) - found)
    assert not missed, f"missed {missed} on {case.cluster}. Expected because: {case.why}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_it_raises_no_false_alarm(case):
    notes = check(case).notes
    wrong = [n for n in notes if n.code not in {*case.expect, *case.allow}]
    alarms = "\n".join(f"{n.code}: {n.message}" for n in wrong)
    assert not wrong, f"false alarms on {case.cluster}:\n{alarms}\nThe expert says: {case.why}"


@pytest.mark.parametrize("case", [c for c in CASES if c.from_program], ids=lambda c: c.name)
def test_what_the_program_shows_is_read_from_it(case):
    notes = [n for n in check(case).notes if n.code in case.from_program]
    assert notes and all(n.basis == Basis.PROGRAM for n in notes), [
        (n.code, n.basis) for n in notes
    ]


def test_the_corpus_covers_every_cluster_with_sound_and_faulty_scripts():
    assert len(CASES) >= MINIMUM_TOTAL
    assert sum(case.sound for case in CASES) >= MINIMUM_SOUND
    per_cluster = {slug: sum(c.cluster == slug for c in CASES) for slug in MINIMUM_SCRIPTS}
    assert all(per_cluster[slug] >= least for slug, least in MINIMUM_SCRIPTS.items()), per_cluster
    assert {case.cluster for case in CASES} <= set(MINIMUM_SCRIPTS)


def test_every_expectation_is_in_the_catalogue_and_said_once():
    for case in CASES:
        named = case.expect + case.allow
        assert set(named) <= CATALOGUE, (case.name, sorted(set(named) - CATALOGUE))
        assert len(set(named)) == len(named), (case.name, "a code named twice")
        assert case.why.strip(), case.name
        assert not (case.sound and case.allow), (case.name, "a sound script allows nothing")
        assert set(case.from_program) <= set(case.expect), (case.name, "from_program: expected")
        assert case.program or not case.from_program, (case.name, "from_program: no program")


def test_every_script_has_its_expectations():
    assert sorted(p.name for p in CORPUS.glob("*.sh")) == [case.name for case in CASES]
