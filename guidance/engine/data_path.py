"""What a data path checked on the cluster turned out to be, said against the data kind chosen."""

from dataclasses import dataclass

from guidance.engine.data import kind_from_name
from guidance.engine.types import DataKind

MANY_FILES = 100_000  # the probe counts up to one more than this


@dataclass(frozen=True)
class PathCheck:
    """What the cluster found at a data path (jobs.cluster.remote.check_path looks)."""

    path: str  # as the cluster expands it
    what: str  # folder | file | other | missing | unset
    count: int | None = None  # files in a folder (up to MANY_FILES + 1), or a file's bytes
    variable: str = ""  # the variable that was not set


def describe(found: PathCheck, cluster: str, chosen: str) -> tuple[bool, str]:
    """(all well, what to tell the user) for what the check found; `chosen` is the data kind
    the user picked ("" to take it from the name; anything else is ignored like "")."""
    chosen = chosen if chosen in {kind.value for kind in DataKind} else ""
    if found.what == "unset":
        return False, (
            f"Your login on {cluster} has no ${found.variable} outside jobs: write the path out "
            "in full to check it."
        )
    if found.what == "missing":
        return False, (
            f"Nothing is at {found.path} on {cluster}: the job would stop at once. Correct the "
            "path, or copy the data there first."
        )
    if found.what == "other":
        return False, f"{found.path} on {cluster} is neither a folder nor a file."
    if found.what == "folder":
        files = (
            f"more than {MANY_FILES:,} files"
            if found.count and found.count > MANY_FILES
            else f"{found.count or 0:,} files"
        )
        if chosen == DataKind.SHARDS:
            return True, f"{found.path} on {cluster} is a folder of {files}, taken as shards."
        text = f"{found.path} on {cluster} is a folder of {files}: the job copies it with rsync."
        if chosen and chosen != DataKind.FOLDER:
            return False, f"{text} You chose '{DataKind(chosen).label}': choose 'A folder'."
        return True, text
    kind = DataKind(chosen) if chosen else kind_from_name(found.path)
    size = f"{(found.count or 0) / 1e6:,.1f} MB"
    if kind in (DataKind.FOLDER, DataKind.SHARDS):
        return False, (
            f"{found.path} on {cluster} is a file of {size}, not a folder: choose 'An archive' "
            "or 'A single file' as the data kind."
        )
    what = (
        "an archive: the job extracts it on the node"
        if kind == DataKind.ARCHIVE
        else ("a single file: the job copies it to the node")
    )
    return True, f"{found.path} on {cluster} is a file of {size}, taken as {what}."
