"""Training data read straight from network storage instead of the node's local storage, and
staged data the program then does not read."""

import re

from guidance.engine import sources
from guidance.engine.code_check.data_defaults import data_defaults
from guidance.engine.code_check.program import Program
from guidance.engine.script_check.commands import Reading, Unset
from guidance.engine.script_check.findings import Basis, Edit, Finding, Severity
from guidance.engine.script_check.paths import Place, place_of
from guidance.engine.script_check.shell_lines import normal_path
from guidance.engine.sources import Source
from guidance.engine.types import Cluster, StorageTier, TierKind


def check_training_data(cluster: Cluster, reading: Reading, notes: list) -> None:
    local = cluster.tier(TierKind.NODE_LOCAL, TierKind.MEMORY)
    if local is None:
        return
    source = _training_source(local)
    for line, command, place, path in reading.training:
        if reading.staged and not any(_same_storage(place, s) for s in reading.sources):
            continue  # staged from elsewhere: this network path is likely an output
        where = f"{place.tier.name}, " if place.tier else ""
        staged = (
            "The script copies data to the node, but this command still reads the copy's source. "
            if reading.staged
            else "The script copies nothing to the node's local storage first. "
        )
        notes.append(
            Finding(
                "training_from_network",
                f"\u201c{command[:120]}\u201d reads its training data from {place.prefix} "
                f"({where}shared network storage){_through_variables(command, path)}. "
                f"{staged}Training from the network is slow and loads the shared filesystem "
                "for everybody.",
                source,
                "data_path",
                severity=Severity.WASTES,
                lines=(line,),
                fix=f"Copy or unpack the data to {local.path or local.name} at the start of the "
                "job (rsync, cp, or tar xf ... -C) and give the program that copy.",
            )
        )
        break
    _check_outside_subshell(reading, local, source, notes)
    _check_empty_sources(reading, local, source, notes)
    _check_other_folder(reading, source, notes)


def _through_variables(command: str, path: str) -> str:
    """Where the script's variables, defaults and binds lead, when the command does not say."""
    return "" if path in command else f": the script makes its data path {path}"


def _check_outside_subshell(
    reading: Reading, local: StorageTier, source: Source, notes: list
) -> None:
    for outside in reading.outside_subshell[:1]:
        here = outside.cwd if outside.cwd not in ("", "?") else "the folder the job started in"
        notes.append(
            Finding(
                "training_from_network",
                f"\u201c{outside.command[:120]}\u201d reads {outside.path} in {here}, not in "
                f"{outside.folder}: the cd on line {outside.cd_line} ran inside ( ... ), and a "
                "subshell's cd ends with it. The copy on the node is never read; the program "
                "reads the data from shared network storage, or finds none there.",
                source,
                "data_path",
                severity=Severity.WASTES,
                lines=(outside.line, outside.cd_line),
                fix=f"Give the program the full path of the copy "
                f"({outside.folder}/{outside.path.removeprefix('./')}), or cd to "
                f"{local.path or local.name} outside the parentheses before it starts.",
            )
        )


def _check_empty_sources(reading: Reading, local: StorageTier, source: Source, notes) -> None:
    for unset in reading.empty_sources[:1]:
        written = f"${unset.name}"
        if unset.meant:
            why = (
                f"{written} is never set (the script sets ${unset.meant}, a different name), "
                "so bash makes it empty"
            )
            fix = f"Write ${unset.meant} for {written} (the fixed script does)."
            edits = _respelt(unset)
        else:
            why = (
                f"nothing in the script sets {written}, so unless you export it before calling "
                "sbatch, bash makes it empty"
            )
            fix = f"Set {unset.name} in the script to the data's folder before this line."
            edits = ()
        notes.append(
            Finding(
                "staging_source_unset",
                f"\u201c{unset.command[:120]}\u201d stages nothing: {why}, and the command "
                "copies from the wrong place (rsync from /, the whole filesystem) or fails. "
                f"The training that follows finds no data in {local.path or local.name}.",
                source,
                "data_path",
                severity=Severity.FAILS if unset.meant else Severity.WASTES,
                lines=(unset.line,),
                fix=fix,
                edits=edits,
            )
        )


def _same_storage(read: Place, staged_from: Place) -> bool:
    if read.tier is not None and read.tier == staged_from.tier:
        return True
    return read.prefix == staged_from.prefix


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _check_other_folder(reading: Reading, source: Source, notes: list) -> None:
    if not reading.destinations:
        return
    for line, command, path in reading.local_reads:
        related = any(_inside(path, d) or _inside(d, path) for d in reading.destinations)
        if related:
            continue
        into = ", ".join(dict.fromkeys(reading.destinations))
        notes.append(
            Finding(
                "reads_other_folder",
                f"\u201c{command[:120]}\u201d reads {path}, but the script put the data in "
                f"{into}: the program will not find it there.",
                source,
                "data_path",
                severity=Severity.FAILS,
                lines=(line,),
                fix="Give the program the folder the data was copied or unpacked into (mind "
                "the folder an archive unpacks to: tar tf lists it).",
            )
        )
        return


def _training_source(local: StorageTier) -> Source:
    # The processing cluster's own rule (000) where its node-local scratch is the tier; the
    # federation's dataset tiers (001) elsewhere.
    if local.source and local.source.document == sources.DOC_PROCESSING:
        return sources.PROCESSING_TRAINING
    return sources.DATASET_SIZE_TIERS


def _respelt(unset: Unset) -> tuple[Edit, ...]:
    """The staging line with the misspelt name written as the script's own."""
    line = unset.written
    name = re.compile(rf"\$(\{{)?{unset.name}\b")
    fixed = name.sub(lambda m: f"${m.group(1) or ''}{unset.meant}", line)
    return (Edit(unset.line, fixed),) if line and fixed != line else ()


def check_program_data(
    cluster: Cluster,
    reading: Reading,
    places: list[Place],
    program: tuple[Program, ...],
    notes: list,
) -> None:
    """A training run given no data path reads where its program falls back on: an option's
    default the command does not override, or a folder the program names outright."""
    local = cluster.tier(TierKind.NODE_LOCAL, TierKind.MEMORY)
    run = next((r for r in reading.runs if r.training), None)
    if not program or local is None or run is None or reading.training or reading.local_reads:
        return
    given = {word.split("=", 1)[0] for word in run.words}
    for default in sorted(data_defaults(program), key=lambda d: not d.options):
        if given & set(default.options) or default.variable in run.environment:
            continue  # the command line or the job's environment says where
        place = place_of(normal_path(default.path), places)
        if place is None or place.local:
            continue
        option = default.options[-1] if default.options else ""
        # A Hydra config's key (`data.data_dir`) is overridden as key=value, an option with
        # its dashes as `--data path`.
        hydra_key = bool(option) and not option.startswith("-")
        if hydra_key:
            what = f"its config's {option}, which the command does not override"
        elif option:
            what = f"the default of its {option} option, which the command does not give"
        else:
            what = "a folder it names itself"
        notes.append(
            Finding(
                "training_from_network",
                f"\u201c{run.text[:120]}\u201d reads its training data from {default.path}: "
                f"{what} ({default.file}, line {default.line}). That is shared network storage "
                f"({place.prefix}); training from the network is slow and loads the shared "
                "filesystem for everybody.",
                _training_source(local),
                "data_path",
                severity=Severity.WASTES,
                lines=(run.line,),
                fix=f"Copy or unpack the data to {local.path or local.name} at the start of the "
                "job and give the program that copy"
                + (
                    f" ({option}=$SLURM_TMPDIR/...)."
                    if hydra_key
                    else f" ({option} $SLURM_TMPDIR/...)."
                    if option
                    else "."
                ),
                basis=Basis.PROGRAM,
            )
        )
        return
