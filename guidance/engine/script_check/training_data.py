"""Training data read straight from network storage instead of the node's local storage, and
staged data the program then does not read."""

from guidance.engine import sources
from guidance.engine.script_check.commands import Reading
from guidance.engine.script_check.findings import Finding, Severity
from guidance.engine.script_check.paths import Place
from guidance.engine.sources import Source
from guidance.engine.types import Cluster, StorageTier, TierKind


def check_training_data(cluster: Cluster, reading: Reading, notes: list) -> None:
    local = cluster.tier(TierKind.NODE_LOCAL, TierKind.MEMORY)
    if local is None:
        return
    source = _training_source(local)
    for line, command, place in reading.training:
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
                f"({where}shared network storage). {staged}Training from the network is slow "
                "and loads the shared filesystem for everybody.",
                source,
                "data_path",
                severity=Severity.WASTES,
                lines=(line,),
                fix=f"Copy or unpack the data to {local.path or local.name} at the start of the "
                "job (rsync, cp, or tar xf ... -C) and give the program that copy.",
            )
        )
        break
    _check_other_folder(reading, source, notes)


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
