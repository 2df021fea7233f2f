"""Collects the errors, warnings and tips that the rules raise while they work."""

from dataclasses import dataclass, field

from guidance.engine.sources import Source
from guidance.engine.types import Note


@dataclass
class Notes:
    errors: list[Note] = field(default_factory=list)
    warnings: list[Note] = field(default_factory=list)
    tips: list[Note] = field(default_factory=list)

    def error(
        self, code: str, message: str, source: Source | None = None, field: str | None = None
    ):
        self.errors.append(Note(code, message, source, field))

    def warn(self, code: str, message: str, source: Source | None = None, field: str | None = None):
        self.warnings.append(Note(code, message, source, field))

    def tip(self, code: str, message: str, source: Source | None = None, field: str | None = None):
        self.tips.append(Note(code, message, source, field))


def describe_hours(hours: float) -> str:
    """Durations as people say them: '45 min', '36 h', '7 days'."""
    if hours < 1:
        return f"{round(hours * 60)} min"
    if hours >= 48 and hours % 24 == 0:
        return f"{int(hours // 24)} days"
    return f"{hours:g} h"


def describe_gb(gb: float) -> str:
    return f"{gb:g} GB"


def describe_bytes(count: int) -> str:
    """Quotas as sites publish them: '50 GB', '20 TB', '2 PB'."""
    for unit, size in (("PB", 1000**5), ("TB", 1000**4), ("GB", 1000**3), ("MB", 1000**2)):
        if count >= size:
            return f"{count / size:g} {unit}"
    return f"{count:,} bytes"
