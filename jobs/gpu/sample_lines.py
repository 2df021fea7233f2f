"""The lines the GPU sampler (jobs/gpu/sampler/portal_gpu_sampler.py) writes, one JSON object
each, parsed into dataclasses. Pure: bytes in, lines out."""

import json
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    time: float
    node: str
    uuid: str
    index: int | None
    name: str
    pci_bus_id: str
    memory_total_mb: float | None
    mig: bool
    interval: float | None


@dataclass(frozen=True)
class Sample:
    time: float
    uuid: str
    utilization: float | None  # None: unknown (a MIG slice), never 0
    memory_used_mb: float | None
    memory_total_mb: float | None
    power_w: float | None
    temperature_c: float | None
    # Joules since the GPU's last sample; None: unknown (no counter, or a sampler older than
    # the energy field), never 0.
    energy_j: float | None = None


@dataclass(frozen=True)
class Summary:
    time: float
    uuid: str
    samples: int | None
    mean_utilization: float | None
    peak_memory_used_mb: float | None
    stopped_by: str
    energy_j: float | None = None  # over the sampler's whole run


@dataclass(frozen=True)
class Unavailable:
    time: float
    node: str
    reason: str


type Line = Gpu | Sample | Summary | Unavailable


@dataclass(frozen=True)
class Chunk:
    """The complete lines of some bytes, parsed. `consumed` bytes are done with: everything up to
    the last newline; the partial line after it waits for the rest."""

    lines: list[Line]
    consumed: int
    malformed: int


def _number(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def _amount(value: object) -> float | None:
    number = _number(value)
    if number is not None and number < 0:
        raise ValueError(f"not an amount: {value!r}")
    return number


def _required_number(value: object) -> float:
    number = _number(value)
    if number is None:
        raise ValueError("a number is required")
    return number


UUID_LENGTH = 100  # GpuDevice.uuid


def _text(value: object, required: bool = False, limit: int | None = None) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise ValueError(f"not a text: {value!r}")
    # The job writes these lines: what the database cannot keep is a bad line, not a failed poll.
    if "\x00" in value or (limit is not None and len(value) > limit):
        raise ValueError(f"not a text the portal keeps: {value[:40]!r}")
    return value


def _count(value: object, below: float = math.inf) -> int | None:
    number = _number(value)
    if number is not None and not (0 <= number < below):
        raise ValueError(f"not a count: {value!r}")
    return None if number is None else int(number)


def parse_line(text: str) -> Line:
    """One sampler line; ValueError when it is not one (bad JSON, a missing or mistyped key)."""
    record = json.loads(text)
    if not isinstance(record, dict):
        raise ValueError("not an object")
    kind = record.get("type")
    moment = _required_number(record.get("time"))
    if kind == "sample":
        return Sample(
            time=moment,
            uuid=_text(record.get("uuid"), required=True, limit=UUID_LENGTH),
            utilization=_number(record.get("utilization")),
            memory_used_mb=_number(record.get("memory_used_mb")),
            memory_total_mb=_number(record.get("memory_total_mb")),
            power_w=_number(record.get("power_w")),
            temperature_c=_number(record.get("temperature_c")),
            energy_j=_amount(record.get("energy_j")),
        )
    if kind == "gpu":
        return Gpu(
            time=moment,
            node=_text(record.get("node")),
            uuid=_text(record.get("uuid"), required=True, limit=UUID_LENGTH),
            index=_count(record.get("index"), below=2**15),  # a small integer field
            name=_text(record.get("name")),
            pci_bus_id=_text(record.get("pci_bus_id")),
            memory_total_mb=_number(record.get("memory_total_mb")),
            mig=bool(record.get("mig")),
            interval=_number(record.get("interval")),
        )
    if kind == "summary":
        return Summary(
            time=moment,
            uuid=_text(record.get("uuid"), required=True, limit=UUID_LENGTH),
            samples=_count(record.get("samples")),
            mean_utilization=_number(record.get("mean_utilization")),
            peak_memory_used_mb=_number(record.get("peak_memory_used_mb")),
            stopped_by=_text(record.get("stopped_by")),
            energy_j=_amount(record.get("energy_j")),
        )
    if kind == "unavailable":
        return Unavailable(
            time=moment, node=_text(record.get("node")), reason=_text(record.get("reason"))
        )
    raise ValueError(f"unknown type {kind!r}")


def parse(data: bytes, limit: int | None = None) -> Chunk:
    """The complete lines of `data`; a malformed one is skipped and counted.

    `limit`: the most bytes one read returns. A read that full without a newline holds a line
    too long ever to fit one: it is skipped whole rather than waited for forever.
    """
    end = data.rfind(b"\n") + 1
    if end == 0:
        too_long = limit is not None and len(data) >= limit
        return Chunk([], len(data), 1) if too_long else Chunk([], 0, 0)
    lines: list[Line] = []
    malformed = 0
    for raw in data[:end].splitlines():
        if not raw.strip():
            continue
        try:
            lines.append(parse_line(raw.decode()))
        except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
            malformed += 1
    return Chunk(lines, end, malformed)
