"""The software environment a job sets up: nothing from the internet where compute nodes have no
access to it, virtualenv rather than Anaconda, and a virtualenv built on the node itself."""

import re

from guidance.engine.script_check.findings import Edit, Finding, Severity
from guidance.engine.script_check.parse import Script
from guidance.engine.script_check.paths import Place, place_of
from guidance.engine.script_check.shell_lines import Shell, simple_commands
from guidance.engine.types import Cluster, Rule

PIP_INSTALL = re.compile(r"\b(pip[\d.]*|-m\s+pip)\s+install\b")
URL = re.compile(r"\b(https?|ftp)://|git@[\w.-]+:")
# What reaches the internet at job time, in words for the message.
_ANY = r"[^\n]{0,300}"  # bounded, so that a pasted wall of words stays linear
FETCHES = (
    (
        re.compile(r"\b(conda|mamba|micromamba)\s+(install|create|update|env\s+(create|update))\b"),
        "conda fetches its packages from the internet",
    ),
    (
        re.compile(
            rf"\b(apptainer|singularity)\s+(pull|build|exec|run|shell)\b{_ANY}"
            r"\b(docker|library|shub|oras)://"
        ),
        "the container image is downloaded from its registry",
    ),
    (re.compile(rf"\b(wget|curl)\b{_ANY}\b(https?|ftp)://"), "it downloads from the internet"),
    (
        re.compile(rf"\bgit\s+clone\b{_ANY}(\b(https?|ssh|git)://|git@)"),
        "git clones from the internet",
    ),
    (re.compile(r"\b(huggingface-cli|hf)\s+download\b"), "it downloads from the Hugging Face Hub"),
)
ANACONDA = re.compile(
    r"\b(conda|mamba|micromamba)\s+(activate|env|create|install|run)\b|\bsource\s+activate\b"
    rf"|\bmodule\s+(load|add)\s+{_ANY}\b(ana|mini)conda|\bconda\.sh\b"
)
VENV = re.compile(r"\b(virtualenv|venv|uv\s+venv)\b")


def check_environment(script: Script, cluster: Cluster, places: list[Place], notes: list) -> None:
    _check_internet(script, cluster, notes)
    _check_anaconda(script, cluster, notes)
    _check_venv_place(script, cluster, places, notes)


def _check_internet(script: Script, cluster: Cluster, notes: list) -> None:
    rule = cluster.rule(Rule.OFFLINE_COMPUTE_NODES)
    if rule is None:
        return
    pip_lines, edits, others = [], [], []
    for number, line in script.numbered_commands():
        if PIP_INSTALL.search(line) and "--no-index" not in line:
            pip_lines.append(number)
            written = script.line(number)
            if PIP_INSTALL.search(written):
                edits.append(Edit(number, _with_no_index(written)))
            continue
        for pattern, why in FETCHES:
            if pattern.search(line):
                others.append((number, why))
                break
    if pip_lines:
        notes.append(
            Finding(
                "needs_internet",
                f"pip install without --no-index downloads from the internet, and "
                f"{cluster.name}'s compute nodes have no internet access: the install fails "
                "and the job with it.",
                rule.source,
                "environment",
                severity=Severity.FAILS,
                lines=tuple(pip_lines),
                fix="Install from the site's wheels with pip install --no-index (the fixed "
                "script adds it); a package that has no wheel there is installed from a login "
                "node beforehand.",
                edits=tuple(edits),
            )
        )
    if others:
        why = "; ".join(dict.fromkeys(w for _, w in others))
        notes.append(
            Finding(
                "needs_internet",
                f"This part of the job needs the internet ({why}), and {cluster.name}'s "
                "compute nodes have no internet access: it fails there.",
                rule.source,
                "environment",
                severity=Severity.FAILS,
                lines=tuple(n for n, _ in others),
                fix="Fetch it before the job, on a login node (apptainer pull, wget, git "
                "clone, downloads into your project or scratch space), and have the job use "
                "that copy.",
            )
        )


def _with_no_index(line: str) -> str:
    return PIP_INSTALL.sub(lambda m: f"{m.group()} --no-index", line, count=1)


def _check_anaconda(script: Script, cluster: Cluster, notes: list) -> None:
    rule = cluster.rule(Rule.AVOID_ANACONDA)
    if rule is None:
        return
    lines = tuple(n for n, line in script.numbered_commands() if ANACONDA.search(line))
    if not lines:
        return
    notes.append(
        Finding(
            "anaconda",
            f"The job uses Anaconda (conda), which {cluster.name} asks its users to avoid: its "
            "packages bring their own CUDA and libraries in place of the cluster's tuned ones, "
            "and its many small files load the shared filesystem.",
            rule.source,
            "environment",
            severity=Severity.ADVICE,
            lines=lines,
            fix="Use a virtualenv instead: module load python, virtualenv --no-download, and "
            "pip install --no-index the same packages (all but CUDA and cuDNN, which the "
            "cluster provides).",
        )
    )


def _check_venv_place(script: Script, cluster: Cluster, places: list[Place], notes) -> None:
    rule = cluster.rule(Rule.VENV_ON_NODE)
    if rule is None:
        return
    shell = Shell()
    for number, line in script.numbered_commands():
        for command in simple_commands(line):
            shell.assign(command)
            words = [shell.expand(w) for w in command.words]
            if not any(VENV.fullmatch(w) for w in words):
                continue
            target = next((w for w in reversed(words) if not w.startswith("-")), "")
            place = place_of(target, places)
            if place is None or place.local or VENV.fullmatch(target):
                continue
            notes.append(
                Finding(
                    "venv_on_network",
                    f"The job builds a virtualenv in {target}, on shared network storage: "
                    "thousands of small files written and then read there by every import.",
                    rule.source,
                    "environment",
                    severity=Severity.ADVICE,
                    lines=(number,),
                    fix="Build it on the node: virtualenv --no-download $SLURM_TMPDIR/env, "
                    "source $SLURM_TMPDIR/env/bin/activate, then pip install --no-index -r "
                    "requirements.txt.",
                )
            )
            return
