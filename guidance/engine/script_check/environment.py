"""The software environment a job sets up: nothing from the internet where compute nodes have no
access to it, virtualenv rather than Anaconda, and a virtualenv built on the node itself."""

import re
from itertools import pairwise

from guidance.engine.script_check.findings import Edit, Finding, Severity
from guidance.engine.script_check.parse import Script
from guidance.engine.script_check.paths import Place, place_of
from guidance.engine.script_check.shell_lines import (
    ASSIGNMENT,
    Shell,
    normal_path,
    simple_commands,
)
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
    r"\b(conda|mamba|micromamba)\s+(activate|env|create|install|run|pack|shell\.\w+|shell\s+hook)\b"
    r"|\bsource\s+activate\b|\bconda-(pack|unpack)\b|\b(conda|mamba)\.sh\b"
    rf"|\bmodule\s+(load|add)\s+{_ANY}\b((ana|mini)conda|miniforge|mambaforge|micromamba)"
    r"|\$\{?(CONDA_PREFIX|CONDA_EXE|MAMBA_ROOT_PREFIX|MAMBA_EXE)\b"
)
# Where conda keeps itself and its environments: ~/miniconda3/envs/x, ~/anaconda3/bin,
# ~/.conda/envs/x, ~/miniforge3. A folder of the user's own naming (~/envs/x, $SLURM_TMPDIR/env)
# says nothing: a virtualenv lives there as well.
CONDA_ROOT = re.compile(
    r"(^|[/:=])\.?((ana|mini)conda\d*|miniforge\d*|mambaforge\d*|micromamba|conda)(/|$)"
)
# Words without which a line neither uses conda in those forms nor sets a variable.
CONDA_HINTS = re.compile(r"=|activate|conda|mamba|forge|\btar\b|unzip|/bin/")
CONDA_TOOLS = frozenset({"conda", "mamba", "micromamba", "conda-unpack"})
CONTAINER_TOOLS = frozenset({"apptainer", "singularity"})
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
    found = _conda_lines(script)
    if not found:
        return
    lines = tuple(sorted(found))
    hidden = next((why for why in found.values() if why), "")
    notes.append(
        Finding(
            "anaconda",
            f"The job uses Anaconda (conda){f' ({hidden})' if hidden else ''}, which "
            f"{cluster.name} asks its users to avoid: its packages bring their own CUDA and "
            "libraries in place of the cluster's tuned ones, and its many small files load the "
            "shared filesystem.",
            rule.source,
            "environment",
            severity=Severity.ADVICE,
            lines=lines,
            fix="Use a virtualenv instead: module load python, virtualenv --no-download, and "
            "pip install --no-index the same packages (all but CUDA and cuDNN, which the "
            "cluster provides).",
        )
    )


def _conda_lines(script: Script) -> dict[int, str]:
    """The lines that use conda, with the words that say how where the line does not name
    conda itself: an environment activated through its own bin/activate, its interpreter, or
    its folder put on PATH. A conda-pack tarball unpacked and activated is conda as well."""
    found = {n: "" for n, line in script.numbered_commands() if ANACONDA.search(line)}
    packed = any("conda-unpack" in line or "conda-pack" in line for line in script.commands)
    unpacked: set[str] = set()  # folders a conda tarball was unpacked into
    shell = Shell()
    for number, line in script.numbered_commands():
        if not CONDA_HINTS.search(line):
            continue  # no conda folder, no activate, no variable set: nothing to split
        for command in simple_commands(line):
            shell.assign(command)
            words = [shell.expand(w) for w in command.words]
            why = _conda_use(words, packed, unpacked)
            if why and not found.get(number):
                found[number] = why
    return found


def _conda_use(words: list[str], packed: bool, unpacked: set[str]) -> str:
    if words[:1] in (["export"], ["declare"]):
        words = words[1:]
    for word in words:
        name, _, value = word.partition("=")
        if name == "PATH" and any(CONDA_ROOT.search(v) for v in value.split(":")):
            return "its folder is put on PATH"
    while words and ASSIGNMENT.fullmatch(words[0]):
        words = words[1:]  # CUDA_VISIBLE_DEVICES=0 python ...: the program follows
    first = words[0].rsplit("/", 1)[-1] if words else ""
    if first in ("tar", "unzip") and any("conda" in w.rsplit("/", 1)[-1] for w in words[1:]):
        unpacked.update(_unpacked_into(words))
        return ""
    if first in ("source", ".") and len(words) > 1 and words[1].endswith("bin/activate"):
        folder = words[1].removesuffix("/bin/activate").removesuffix("bin/activate")
        if CONDA_ROOT.search(words[1]) or len(words) > 2:
            return "a conda environment is activated through its bin/activate"
        if packed or normal_path(folder) in unpacked:
            return "a conda-pack environment is unpacked and activated"
        return ""
    if first in CONDA_TOOLS:
        return ""  # named in its own words: ANACONDA found it
    program = next((w for w in words if not w.startswith("-") and w != "srun"), "")
    if program.rsplit("/", 1)[-1] in CONTAINER_TOOLS:
        return ""  # conda inside a container image is the image's own
    if CONDA_ROOT.search(program) and "/bin/" in program:
        return "its Python is run from a conda folder"
    return ""


def _unpacked_into(words: list[str]) -> set[str]:
    targets = set()
    for before, word in pairwise(words):
        if before in ("-C", "--directory", "-d"):
            targets.add(normal_path(word))
        elif word.startswith("--directory="):
            targets.add(normal_path(word.partition("=")[2]))
    return targets


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
