"""Training data read straight from network storage instead of the node's local storage."""

from guidance.engine import sources
from guidance.engine.script_check.commands import Reading
from guidance.engine.sources import Source
from guidance.engine.types import Cluster, Note, StorageTier, TierKind


def check_training_data(cluster: Cluster, reading: Reading, notes: list[Note]) -> None:
    local = cluster.tier(TierKind.NODE_LOCAL, TierKind.MEMORY)
    if local is None or reading.staged or not reading.training:
        return
    command, place = reading.training[0]
    where = f"{place.tier.name}, " if place.tier else ""
    notes.append(
        Note(
            "training_from_network",
            f"\u201c{command[:120]}\u201d reads its training data from {place.prefix} ({where}"
            "shared network storage), and the script copies nothing to the node's local "
            "storage first. Training from the network is slow and loads the shared filesystem for "
            f"everybody: copy or unpack the data to {local.path or local.name} at the start of "
            "the job (rsync, cp, or tar xf ... -C) and train from there.",
            _training_source(local),
        )
    )


def _training_source(local: StorageTier) -> Source:
    # The processing cluster's own rule (000) where its node-local scratch is the tier; the
    # federation's dataset tiers (001) elsewhere.
    if local.source and local.source.document == sources.DOC_PROCESSING:
        return sources.PROCESSING_TRAINING
    return sources.DATASET_SIZE_TIERS
