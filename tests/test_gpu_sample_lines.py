"""GPU samples: parsing the sampler's lines (pure)."""

import json

from jobs.gpu.sample_lines import Chunk, Gpu, Sample, Summary, Unavailable, parse

T0 = 1_700_000_000.0


def gpu_line(uuid: str = "GPU-a", index: int = 0, mig: bool = False, node: str = "n1") -> dict:
    return {
        "type": "gpu", "time": T0, "node": node, "uuid": uuid, "index": index,
        "name": "NVIDIA A100-SXM4-40GB", "pci_bus_id": "00000000:07:00.0",
        "memory_total_mb": 40960.0, "mig": mig, "interval": 10, "source": "nvml",
    }  # fmt: skip


def sample_line(t: float, utilization: float | None, uuid: str = "GPU-a", memory=1000.0) -> dict:
    return {
        "type": "sample", "time": T0 + t, "uuid": uuid, "utilization": utilization,
        "memory_used_mb": memory, "memory_total_mb": 40960.0, "power_w": 250.5,
        "temperature_c": 61.0,
    }  # fmt: skip


def lines(*records: dict) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


def test_it_parses_every_kind_of_line() -> None:
    data = lines(
        gpu_line(),
        sample_line(10, 87.5),
        {"type": "summary", "time": T0 + 20, "uuid": "GPU-a", "samples": 2,
         "mean_utilization": 87.5, "peak_memory_used_mb": 1000, "stopped_by": "SIGTERM"},
        {"type": "unavailable", "time": T0, "node": "n2", "reason": "no NVML"},
    )  # fmt: skip
    chunk = parse(data)
    assert chunk.consumed == len(data) and chunk.malformed == 0
    gpu, sample, summary, unavailable = chunk.lines
    assert gpu == Gpu(
        T0, "n1", "GPU-a", 0, "NVIDIA A100-SXM4-40GB", "00000000:07:00.0", 40960.0, False, 10.0
    )
    assert sample == Sample(T0 + 10, "GPU-a", 87.5, 1000.0, 40960.0, 250.5, 61.0)
    assert summary == Summary(T0 + 20, "GPU-a", 2, 87.5, 1000.0, "SIGTERM")
    assert unavailable == Unavailable(T0, "n2", "no NVML")


def test_a_partial_last_line_is_left_for_next_time() -> None:
    whole = lines(sample_line(10, 50), sample_line(20, 60))
    cut = len(whole) - 7
    chunk = parse(whole[:cut])
    assert [line.time for line in chunk.lines] == [T0 + 10]
    assert chunk.consumed == whole.index(b"\n") + 1
    rest = parse(whole[chunk.consumed :])
    assert [line.time for line in rest.lines] == [T0 + 20]
    assert chunk.consumed + rest.consumed == len(whole)


def test_a_malformed_line_is_skipped_and_counted() -> None:
    data = b"".join(
        [
            lines(sample_line(10, 50)),
            b"{not json\n",
            b'["a list"]\n',
            b'{"type": "sample", "uuid": "GPU-a"}\n',  # no time
            b'{"type": "sample", "time": 1, "uuid": "GPU-a", "utilization": "high"}\n',
            b'{"type": "sample", "time": 1, "uuid": "GPU-a", "utilization": true}\n',
            b'{"type": "gpu", "time": 1, "uuid": "GPU-a", "index": -1}\n',
            b'{"type": "weather", "time": 1}\n',
            b'{"type": "sample", "time": NaN, "uuid": "GPU-a"}\n',
            b"\xff\xfe broken utf-8\n",
            b"[" * 100_000 + b"\n",
            # What the database cannot keep: a longer uuid than GpuDevice's, a NUL.
            b'{"type": "gpu", "time": 1, "uuid": "GPU-' + b"a" * 200 + b'"}\n',
            b'{"type": "sample", "time": 1, "uuid": "GPU-\\u0000"}\n',
            b"\n",  # blank: not counted
            lines(sample_line(20, 60)),
        ]
    )
    chunk = parse(data)
    assert [line.time for line in chunk.lines] == [T0 + 10, T0 + 20]
    assert chunk.malformed == 12 and chunk.consumed == len(data)


def test_unicode_is_read_whole() -> None:
    data = lines({**gpu_line(), "name": "Tesla ✓ ünï"}, sample_line(10, 1))
    (gpu, _) = parse(data).lines
    assert gpu.name == "Tesla ✓ ünï"
    # Cut inside the ✓: the line waits, and no half character is decoded.
    cut = data.index("✓".encode()) + 1
    assert parse(data[:cut]) == Chunk([], 0, 0)


def test_empty_input_consumes_nothing() -> None:
    assert parse(b"") == Chunk([], 0, 0)
    assert parse(b'{"type": "sam') == Chunk([], 0, 0)


def test_a_line_longer_than_a_whole_read_is_skipped() -> None:
    assert parse(b"x" * 100, limit=100) == Chunk([], 100, 1)
    assert parse(b"x" * 99, limit=100) == Chunk([], 0, 0)


def test_energy_is_read_where_the_sampler_wrote_it_and_unknown_in_older_files() -> None:
    old = sample_line(10, 50)  # a sampler from before the energy field: no such key at all
    new = sample_line(20, 50) | {"energy_j": 2505.25}
    unknown = sample_line(30, 50) | {"energy_j": None}  # a GPU without NVML's counter
    summary = {
        "type": "summary", "time": T0 + 40, "uuid": "GPU-a", "samples": 3,
        "mean_utilization": 50, "peak_memory_used_mb": 1000, "stopped_by": "SIGINT",
    }  # fmt: skip
    chunk = parse(lines(old, new, unknown, summary, summary | {"energy_j": 7000.5}))
    assert chunk.malformed == 0
    assert [line.energy_j for line in chunk.lines] == [None, 2505.25, None, None, 7000.5]


def test_negative_energy_is_a_bad_line() -> None:
    chunk = parse(lines(sample_line(10, 50) | {"energy_j": -3.0}, sample_line(20, 50)))
    assert chunk.malformed == 1 and [line.time for line in chunk.lines] == [T0 + 20]
