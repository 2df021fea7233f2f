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
        )
        for name, entry in sorted(table.items())
    ]


def check(case: Case) -> ScriptCheck:
    return check_script(case.text, cluster(case.cluster))
