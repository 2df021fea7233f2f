"""check_code: the cluster's training-code rules applied to a program's files (stub for now)."""

from collections.abc import Mapping

from guidance.engine.code_check.findings import CodeCheck, Measured
from guidance.engine.types import Cluster

MAX_FILE_BYTES = 500_000
MAX_FILES = 40
MAX_TOTAL_BYTES = 2_000_000


def check_code(
    files: Mapping[str, str | bytes],
    cluster: Cluster,
    entry: str | None = None,
    measured: Measured | None = None,
    cpus_per_gpu: int | None = None,
) -> CodeCheck:
    return CodeCheck(files=tuple(files))
