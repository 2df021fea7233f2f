"""What the data path names, and how a job gets each kind onto the node."""

import math
import posixpath

from guidance.engine.archives import ARCHIVE_SUFFIXES, ZIP
from guidance.engine.shell import shell_path
from guidance.engine.types import DataKind

# Suffixes of single data files; any other name (imagenet.v2, coco-2017.1) is taken as a folder.
FILE_SUFFIXES = frozenset(
    {
        "arrow", "bin", "ckpt", "csv", "db", "feather", "h5", "hdf5", "json", "jsonl", "mat",
        "nc", "npy", "npz", "onnx", "parquet", "pickle", "pkl", "pt", "pth", "safetensors",
        "sqlite", "tfrecord", "tfrecords", "txt",
    }
)  # fmt: skip


def kind_from_name(path: str) -> DataKind:
    """An archive or a data file by its suffix, else a folder."""
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    if path.endswith("/") or not name:
        return DataKind.FOLDER
    if name.endswith(ARCHIVE_SUFFIXES):
        return DataKind.ARCHIVE
    stem, dot, suffix = name.rpartition(".")
    return DataKind.FILE if dot and stem and suffix in FILE_SUFFIXES else DataKind.FOLDER


def is_zip(path: str) -> bool:
    return path.lower().endswith(ZIP.suffixes)


def archive_command(folder: str) -> str:
    """The one-off command that makes an archive of a folder's contents beside it, so that
    extracting it gives the same layout as copying the folder."""
    folder = folder.rstrip("/") or folder
    return f"tar -cf {shell_path(folder + '.tar')} -C {shell_path(folder)} ."


# Shards of about this size: large enough for long sequential reads, small enough for several
# data loader workers to read different ones at once (001: large archives, large chunks).
SHARD_GB = 5


def shard_count(dataset_gb: float) -> int:
    return max(1, math.ceil(dataset_gb / SHARD_GB))


def shards_folder(folder: str) -> str:
    """Where the shards of a folder go: beside it, named after it."""
    return (folder.rstrip("/") or folder) + "-shards"


def shard_command(folder: str, file_count: int, dataset_gb: float) -> str:
    """The one-off commands that cut a folder of many files into tar shards of about SHARD_GB
    each, beside it: the files in name order (a sample's files stay together, as WebDataset
    expects), an equal number per shard, each shard holding paths relative to the folder."""
    folder = folder.rstrip("/") or folder
    shards = shards_folder(folder)
    per_shard = max(1, math.ceil(max(file_count, 1) / shard_count(dataset_gb)))
    src, dest = shell_path(folder), shell_path(shards)
    return (
        f"mkdir -p {dest} && find {src} -type f -printf '%P\\n' | LC_ALL=C sort | "
        f"split -d -a 5 -l {per_shard} - {dest}/shard- && "
        f"for list in {dest}/shard-?????; do "
        f'tar -cf "$list.tar" -C {src} -T "$list" && rm "$list"; done'
    )


def file_name(path: str) -> str:
    return posixpath.basename(path.rstrip("/"))
