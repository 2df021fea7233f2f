"""The archives a data path may name, and the programs that unpack each.

The one list of them: the engine's reading of a path, the data kinds' labels, the script checker,
the dev cluster's packages and the script matrix take theirs from here or are tested against it
(tests/test_data_shapes.py).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ArchiveFormat:
    suffixes: tuple[str, ...]  # the usual one first
    tool: str  # what the portal's script unpacks it with
    # The program tar runs by itself to decompress it, named as tar's option that makes one
    # (tar --zstd); None: not compressed, or not a tar.
    compression: str | None = None
    others: tuple[str, ...] = ()  # what else users write to unpack it by hand

    @property
    def node_programs(self) -> frozenset[str]:
        """What the portal's script runs to unpack it: every compute node needs these."""
        return frozenset({self.tool, self.compression} - {None})

    @property
    def unpackers(self) -> frozenset[str]:
        """Every command a user may write to unpack it (tar -xjf, bzip2 -d, pbzip2, ...)."""
        return self.node_programs | set(self.others)


ZIP = ArchiveFormat((".zip",), "unzip", others=("7z", "7za"))
ARCHIVE_FORMATS = (
    ArchiveFormat((".tar",), "tar"),
    ArchiveFormat((".tar.gz", ".tgz"), "tar", "gzip", ("gunzip", "pigz", "unpigz", "zcat")),
    ArchiveFormat((".tar.zst", ".tzst"), "tar", "zstd", ("unzstd", "zstdcat", "pzstd")),
    ArchiveFormat((".tar.bz2",), "tar", "bzip2", ("bunzip2", "bzcat", "pbzip2", "lbzip2")),
    ArchiveFormat((".tar.xz",), "tar", "xz", ("unxz", "xzcat", "pixz")),
    ZIP,
)
ARCHIVE_SUFFIXES = tuple(suffix for archive in ARCHIVE_FORMATS for suffix in archive.suffixes)


def suffixes_in_words() -> str:
    """The suffixes as people read them: each format once, its other names after a slash
    (".tar, .tar.gz/.tgz, ...")."""
    return ", ".join("/".join(archive.suffixes) for archive in ARCHIVE_FORMATS)
