"""Shared by the corpus test and its benchmark: the job scripts in tests/script_corpus, what an
expert who has read the guidance documents says about each (expectations.toml), and the check."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from guidance.engine.script_check import ScriptCheck, check_script
from tests.engine_helpers import cluster

CORPUS = Path(__file__).parent / "script_corpus"


@dataclass(frozen=True)
class Case:
    name: str  # the script's file name
    cluster: str
    text: str
    expect: tuple[str, ...]  # every real problem, each once; empty: the script is sound
    allow: tuple[str, ...]  # where a reasonable reader could go either way
    why: str
    # The program the script starts, its files by name, where the case gives it (the
    # expectation's `program`: a folder under script_corpus/programs); None: not given.
    program: dict[str, str] | None = None
    # Expected codes that the program given shows (their findings' basis is "program").
    from_program: tuple[str, ...] = ()

    @property
    def sound(self) -> bool:
        return not self.expect


def load_corpus() -> list[Case]:
    table = tomllib.loads((CORPUS / "expectations.toml").read_text())
    return [
        Case(
            name,
            entry["cluster"],
            # As bytes: read_text would turn the DOS line breaks that one script is about into \n.
            (CORPUS / name).read_bytes().decode(),
            tuple(entry["expect"]),
            tuple(entry["allow"]),
            entry["why"],
            _program(entry.get("program")),
            tuple(entry.get("from_program", ())),
        )
        for name, entry in sorted(table.items())
    ]


def _program(folder: str | None) -> dict[str, str] | None:
    if folder is None:
        return None
    root = CORPUS / "programs" / folder
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def check(case: Case) -> ScriptCheck:
    return check_script(case.text, cluster(case.cluster), program=case.program)
