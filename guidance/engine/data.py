"""What the data path names, and how a job gets each kind onto the node."""

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


def file_name(path: str) -> str:
    return posixpath.basename(path.rstrip("/"))
