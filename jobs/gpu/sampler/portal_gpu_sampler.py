#!/usr/bin/env python3
"""The GPU portal's sampler: runs once per node inside a GPU job and records how busy its GPUs are.

Usage: python3 portal_gpu_sampler.py --dir DIR --label LABEL [--interval SECONDS]

It appends JSON lines to DIR/gpu-LABEL.NODE.jsonl (NODE: $SLURMD_NODENAME, else the short host
name), flushed line by line, so a reader sees at most one partial last line:

- one "gpu" line per GPU, then every interval one "sample" line per GPU; a sample's energy_j is
  the joules the GPU used since the one before (the difference of NVML's energy counter), null
  where NVML has no counter (older GPUs, MIG slices, nvidia-smi): unknown, never 0;
- one "summary" line per GPU when it stops, with its energy_j over the whole run; its stopped_by
  says why: "SIGINT" (the job script ended: its exit trap asks srun, which passes SIGINT on),
  "SIGTERM" (Slurm cancelled the job or its time ran out), "SIGHUP", "parent-exited" (the step
  that started it is gone) or "error";
- or a single "unavailable" line, saying why in plain words, when it cannot sample at all.

It reads NVML through the `pynvml` module (PORTAL_SAMPLER_NVML names another module: the tests'
fake), else `nvidia-smi`. It must never make the job fail: every error ends in exit status 0, it
writes nothing to stdout and at most one line to stderr. Standalone, standard library only, and
Python 3.8 or newer: compute nodes have old Pythons. The portal copies this file into each job
as it is (jobs/gpu/monitoring.py), which is why it is one module of over 500 lines: it has no
siblings to import on a compute node.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import io
import json
import math
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

SMI_FIELDS = (
    "index,uuid,name,pci.bus_id,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu"
)
SMI_COMMAND = ["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits"]
SMI_TIMEOUT = 20  # seconds: a GPU that fell off the bus can hang nvidia-smi
MIB = 1024 * 1024
MIN_INTERVAL = 0.1
STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")
# A checkpointing job may send USR1/USR2 to every step: their default action would kill us.
IGNORED_SIGNALS = ("SIGUSR1", "SIGUSR2")
# NVML's value types (nvmlValueType_t) and the field of c_nvmlValue_t each one fills.
VALUE_FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")

# -- pure helpers (the tests import these) -------------------------------------------------------


def visible_devices(value: str | None) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES as a list of indices or UUIDs; None means every GPU."""
    if value is None or not value.strip():
        return None
    return [token.strip() for token in value.split(",") if token.strip()]


def device_kind(token: str) -> str:
    """'index', 'uuid', 'mig' (a MIG instance's UUID) or 'unknown' (Slurm's NoDevFiles, say)."""
    if token.isdigit():
        return "index"
    if token.startswith("MIG-"):
        return "mig"
    if token.startswith("GPU-"):
        return "uuid"
    return "unknown"


def text(value: object) -> str:
    """Old pynvml versions return bytes, new ones str."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def number(value: object, digits: int = 1) -> float | None:
    """A finite float, rounded, or None: JSON has no NaN, and the reader refuses one."""
    try:
        result = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not math.isfinite(result):
        return None
    return round(result, digits)


def mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def sample_values(value_type: int, samples: list) -> tuple[list[float], int]:
    """The values of nvmlDeviceGetSamples' c_nvmlSample_t list, and its newest time stamp."""
    name = VALUE_FIELDS.get(value_type, "uiVal")
    values = []
    newest = 0
    for sample in samples:
        values.append(float(getattr(sample.sampleValue, name)))
        newest = max(newest, int(sample.timeStamp))
    return values, newest


def smi_value(field: str) -> float | None:
    """One nvidia-smi number; "[N/A]", "[Not Supported]" and the like are None."""
    field = field.strip()
    if not field or field.startswith("["):
        return None
    return number(field)


def parse_smi(output: str) -> list[dict]:
    """nvidia-smi --query-gpu=SMI_FIELDS --format=csv,noheader,nounits, one dict per GPU."""
    gpus = []
    for row in csv.reader(io.StringIO(output), skipinitialspace=True):
        if len(row) != 9:
            continue
        index, uuid, name, bus_id, total, used, utilization, power, temperature = row
        if not index.strip().isdigit() or not uuid.strip():
            continue
        gpus.append(
            {
                "index": int(index),
                "uuid": uuid.strip(),
                "name": name.strip(),
                "pci_bus_id": bus_id.strip(),
                "memory_total_mb": smi_value(total),
                "memory_used_mb": smi_value(used),
                "utilization": smi_value(utilization),
                "power_w": smi_value(power),
                "temperature_c": smi_value(temperature),
            }
        )
    return gpus


def choose(tokens: list[str] | None, gpus: list[dict]) -> list[dict]:
    """The GPUs of `gpus` (dicts with index and uuid) that CUDA_VISIBLE_DEVICES names.

    A MIG UUID names a slice nvidia-smi does not list: it cannot be matched here, so when nothing
    matches at all every GPU is taken rather than none.
    """
    if tokens is None:
        return list(gpus)
    chosen = []
    for token in tokens:
        for gpu in gpus:
            named = str(gpu["index"]) == token if token.isdigit() else gpu["uuid"] == token
            if named and gpu not in chosen:
                chosen.append(gpu)
    return chosen or list(gpus)


class Tally:
    """What one GPU's summary line says."""

    def __init__(self) -> None:
        self.samples = 0
        self.utilization: list[float] = []
        self.peak_memory: float | None = None

    def add(self, record: dict) -> None:
        self.samples += 1
        if record.get("utilization") is not None:
            self.utilization.append(record["utilization"])
        memory = record.get("memory_used_mb")
        if memory is not None and (self.peak_memory is None or memory > self.peak_memory):
            self.peak_memory = memory

    def summary(
        self, uuid: str, stopped_by: str, moment: float, energy_j: float | None = None
    ) -> dict:
        return {
            "type": "summary",
            "time": round(moment, 3),
            "uuid": uuid,
            "samples": self.samples,
            "mean_utilization": mean(self.utilization),
            "peak_memory_used_mb": self.peak_memory,
            "energy_j": energy_j,
            "stopped_by": stopped_by,
        }


def energy_between(before_mj: int | None, after_mj: int | None) -> float | None:
    """Joules between two readings of NVML's energy counter (millijoules since the driver
    loaded); None when either is unknown or the counter went back (the driver reloaded)."""
    if before_mj is None or after_mj is None or after_mj < before_mj:
        return None
    return number((after_mj - before_mj) / 1000, 3)


def sample_record(uuid: str, moment: float, reading: dict) -> dict:
    return {
        "type": "sample",
        "time": round(moment, 3),
        "uuid": uuid,
        "utilization": reading.get("utilization"),
        "memory_used_mb": reading.get("memory_used_mb"),
        "memory_total_mb": reading.get("memory_total_mb"),
        "power_w": reading.get("power_w"),
        "temperature_c": reading.get("temperature_c"),
        "energy_j": reading.get("energy_j"),
    }


def gpu_record(gpu: dict, node: str, moment: float, interval: float, source: str) -> dict:
    return {
        "type": "gpu",
        "time": round(moment, 3),
        "node": node,
        "uuid": gpu["uuid"],
        "index": gpu.get("index"),
        "name": gpu.get("name", ""),
        "pci_bus_id": gpu.get("pci_bus_id", ""),
        "memory_total_mb": gpu.get("memory_total_mb"),
        "mig": bool(gpu.get("mig")),
        "interval": interval,
        "source": source,
    }


def unavailable_record(node: str, reason: str, moment: float) -> dict:
    return {"type": "unavailable", "time": round(moment, 3), "node": node, "reason": reason}


def line(record: dict) -> str:
    return json.dumps(record, allow_nan=False, separators=(", ", ": ")) + "\n"


# -- reading the GPUs ----------------------------------------------------------------------------


class Unavailable(Exception):
    """Nothing can be sampled here; the message says why, in plain words."""


class Nvml:
    """The GPUs through pynvml (or a module with its API)."""

    source = "nvml"

    def __init__(self, nvml, tokens: list[str] | None, start: float) -> None:
        self.nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as error:
            raise Unavailable(
                f"NVML did not start ({error}): is the NVIDIA driver loaded?"
            ) from None
        self.gpus: list[dict] = []
        self.handles: dict[str, object] = {}
        self.last_seen: dict[str, int] = {}
        # NVML's energy counter at the start and at the last sample, None where it has none.
        self.energy_start: dict[str, int | None] = {}
        self.energy_last: dict[str, int | None] = {}
        for handle, index, mig in self._handles(tokens):
            gpu = self._describe(handle, index, mig)
            if gpu["uuid"] in self.handles:
                continue
            self.gpus.append(gpu)
            self.handles[gpu["uuid"]] = handle
            # NVML keeps a buffer of recent samples: start from now, not from the last job's.
            self.last_seen[gpu["uuid"]] = int(start * 1_000_000)
            self.energy_start[gpu["uuid"]] = self._energy_counter(gpu, handle)
            self.energy_last[gpu["uuid"]] = self.energy_start[gpu["uuid"]]
        if not self.gpus:
            raise Unavailable("NVML sees no GPU on this node.")

    def _handles(self, tokens: list[str] | None) -> list[tuple[object, int | None, bool]]:
        nvml = self.nvml
        count = nvml.nvmlDeviceGetCount()
        if tokens is None:
            return [(nvml.nvmlDeviceGetHandleByIndex(i), i, False) for i in range(count)]
        found = []
        for token in tokens:
            kind = device_kind(token)
            try:
                if kind == "index" and int(token) < count:
                    found.append((nvml.nvmlDeviceGetHandleByIndex(int(token)), int(token), False))
                elif kind in ("uuid", "mig"):
                    handle = nvml.nvmlDeviceGetHandleByUUID(token)
                    found.append((handle, self._index(handle), kind == "mig"))
            except Exception:
                continue  # a token this node does not have: sample the others
        if not found:  # CUDA_VISIBLE_DEVICES names nothing NVML knows: better all than none
            return [(nvml.nvmlDeviceGetHandleByIndex(i), i, False) for i in range(count)]
        return found

    def _index(self, handle: object) -> int | None:
        try:
            return int(self.nvml.nvmlDeviceGetIndex(handle))
        except Exception:
            return None

    def _get(self, name: str, *args: object) -> object:
        """An NVML call, or None when it fails (a MIG slice has no power or temperature)."""
        try:
            return getattr(self.nvml, name)(*args)
        except Exception:
            return None

    def _describe(self, handle: object, index: int | None, mig: bool) -> dict:
        if not mig:
            mig = self._mig(handle)
        pci = self._get("nvmlDeviceGetPciInfo", handle)
        memory = self._get("nvmlDeviceGetMemoryInfo", handle)
        return {
            "uuid": text(self.nvml.nvmlDeviceGetUUID(handle)),
            "index": index,
            "name": text(self._get("nvmlDeviceGetName", handle) or ""),
            "pci_bus_id": text(getattr(pci, "busId", "") or ""),
            "memory_total_mb": number(memory.total / MIB) if memory is not None else None,
            "mig": mig,
        }

    def _mig(self, handle: object) -> bool:
        nvml = self.nvml
        is_mig_handle = self._get("nvmlDeviceIsMigDeviceHandle", handle)
        if is_mig_handle:
            return True
        modes = self._get("nvmlDeviceGetMigMode", handle)  # [current, pending]; raises if no MIG
        enabled = getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)
        return bool(modes) and modes[0] == enabled

    def read(self) -> list[tuple[dict, dict]]:
        readings = []
        for gpu in self.gpus:
            handle = self.handles[gpu["uuid"]]
            memory = self._get("nvmlDeviceGetMemoryInfo", handle)
            power = self._get("nvmlDeviceGetPowerUsage", handle)
            temperature_type = getattr(self.nvml, "NVML_TEMPERATURE_GPU", 0)
            temperature = self._get("nvmlDeviceGetTemperature", handle, temperature_type)
            reading = {
                # A MIG slice's compute utilization is not measured: unknown, never 0.
                "utilization": None if gpu["mig"] else self._utilization(gpu["uuid"], handle),
                "memory_used_mb": number(memory.used / MIB) if memory is not None else None,
                "memory_total_mb": number(memory.total / MIB) if memory is not None else None,
                "power_w": number(power / 1000) if power is not None else None,
                "temperature_c": number(temperature),
                "energy_j": self._energy_since_last(gpu, handle),
            }
            readings.append((gpu, reading))
        return readings

    def _energy_counter(self, gpu: dict, handle: object) -> int | None:
        """NVML's total energy counter (mJ since the driver loaded), None where it has none
        (NVMLError_NotSupported before Volta). A MIG slice's would be its whole card's, shared
        with other jobs: unknown."""
        if gpu["mig"]:
            return None
        value = self._get("nvmlDeviceGetTotalEnergyConsumption", handle)
        return int(value) if isinstance(value, int) else None

    def _energy_since_last(self, gpu: dict, handle: object) -> float | None:
        uuid = gpu["uuid"]
        counter = self._energy_counter(gpu, handle)
        joules = energy_between(self.energy_last[uuid], counter)
        if counter is not None:
            self.energy_last[uuid] = counter
        return joules

    def energy_used(self, gpu: dict) -> float | None:
        """Joules since the sampler started, from the counter now (or at the last sample)."""
        uuid = gpu["uuid"]
        now = self._energy_counter(gpu, self.handles[uuid])
        return energy_between(
            self.energy_start[uuid], now if now is not None else self.energy_last[uuid]
        )

    def _utilization(self, uuid: str, handle: object) -> float | None:
        """The mean of the driver's samples since the last call, else its latest figure."""
        nvml = self.nvml
        try:
            value_type, samples = nvml.nvmlDeviceGetSamples(
                handle, nvml.NVML_GPU_UTILIZATION_SAMPLES, self.last_seen[uuid]
            )
            values, newest = sample_values(value_type, samples)
            if values:
                self.last_seen[uuid] = max(self.last_seen[uuid], newest)
                return mean(values)
        except Exception:
            pass  # not supported, or no sample since the last call (NVML_ERROR_NOT_FOUND)
        rates = self._get("nvmlDeviceGetUtilizationRates", handle)
        return number(rates.gpu) if rates is not None else None

    def close(self) -> None:
        self._get("nvmlShutdown")


class Smi:
    """The GPUs through nvidia-smi, when the pynvml module is missing."""

    source = "nvidia-smi"

    def __init__(self, tokens: list[str] | None) -> None:
        found = self._query()
        self.gpus = choose(tokens, found)
        for gpu in self.gpus:
            gpu["mig"] = bool(tokens) and any(device_kind(t) == "mig" for t in tokens or ())
        if not self.gpus:
            raise Unavailable("nvidia-smi lists no GPU on this node.")

    def _query(self) -> list[dict]:
        try:
            result = subprocess.run(
                SMI_COMMAND,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=SMI_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise Unavailable(
                "No NVIDIA driver here: neither the pynvml module nor nvidia-smi is available."
            ) from None
        except subprocess.TimeoutExpired:
            raise Unavailable(f"nvidia-smi did not answer within {SMI_TIMEOUT} s.") from None
        output = result.stdout.decode("utf-8", "replace")
        if result.returncode != 0:
            said = result.stderr.decode("utf-8", "replace").strip() or output.strip()
            said = " ".join(said.split())[:200]
            raise Unavailable(f"nvidia-smi failed (exit status {result.returncode}): {said}")
        return parse_smi(output)

    def read(self) -> list[tuple[dict, dict]]:
        try:
            now = {gpu["uuid"]: gpu for gpu in self._query()}
        except Unavailable:
            now = {}
        readings = []
        for gpu in self.gpus:
            reading = dict(now.get(gpu["uuid"], {}))
            if gpu["mig"]:
                reading["utilization"] = None
            readings.append((gpu, reading))
        return readings

    def energy_used(self, gpu: dict) -> float | None:
        return None  # nvidia-smi's query fields have no energy counter

    def close(self) -> None:
        pass


def open_gpus(tokens: list[str] | None, start: float) -> Nvml | Smi:
    name = os.environ.get("PORTAL_SAMPLER_NVML") or "pynvml"
    try:
        nvml = importlib.import_module(name)
    except Exception:
        return Smi(tokens)
    try:
        return Nvml(nvml, tokens, start)
    except Unavailable as nvml_said:
        try:
            return Smi(tokens)
        except Unavailable:
            raise nvml_said from None


# -- running -------------------------------------------------------------------------------------


class Stopper:
    """Remembers the first stop signal and wakes the sleeping loop through a pipe at once."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.write_end, False)
        for name in STOP_SIGNALS:
            signal.signal(getattr(signal, name), self._handle)
        for name in IGNORED_SIGNALS:
            signal.signal(getattr(signal, name), signal.SIG_IGN)

    def _handle(self, number: int, frame: object) -> None:
        if self.reason is None:
            self.reason = signal.Signals(number).name
        with contextlib.suppress(OSError):  # a full pipe: the loop wakes anyway
            os.write(self.write_end, b"x")

    def sleep(self, seconds: float) -> None:
        if self.reason is None and seconds > 0:
            select.select([self.read_end], [], [], seconds)


def node_name() -> str:
    name = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0] or "node"
    return SAFE_NAME.sub("_", name)


def options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Samples this node's GPUs into JSON lines.")
    parser.add_argument("--dir", required=True, help="the job's directory")
    parser.add_argument("--label", required=True, help="the Slurm job id, or ARRAYID_TASK")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    return parser.parse_args(argv)


class Diagnosis:
    """At most one line on stderr, whatever happens."""

    said = False

    @classmethod
    def say(cls, message: str) -> None:
        if cls.said:
            return
        cls.said = True
        try:
            sys.stderr.write(f"portal_gpu_sampler: {' '.join(message.split())[:300]}\n")
            sys.stderr.flush()
        except Exception:
            pass


def run(args: argparse.Namespace) -> None:
    interval = max(MIN_INTERVAL, args.interval if math.isfinite(args.interval) else 10.0)
    node = node_name()
    label = SAFE_NAME.sub("_", args.label)
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, f"gpu-{label}.{node}.jsonl")
    stopper = Stopper()  # before the slow start, so that an early SIGTERM is not lost
    parent = os.getppid()
    start = time.time()
    with open(path, "a", buffering=1, encoding="utf-8") as out:
        try:
            gpus = open_gpus(visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES")), start)
        except Unavailable as error:
            out.write(line(unavailable_record(node, str(error), time.time())))
            Diagnosis.say(str(error))
            return
        try:
            _loop(gpus, out, node, interval, stopper, parent)
        finally:
            gpus.close()


def _loop(gpus: Nvml | Smi, out, node: str, interval: float, stopper: Stopper, parent: int):
    moment = time.time()
    tallies = {}
    for gpu in gpus.gpus:
        out.write(line(gpu_record(gpu, node, moment, interval, gpus.source)))
        tallies[gpu["uuid"]] = Tally()
    next_tick = time.monotonic() + interval
    try:
        stopped_by = _sample_until_stopped(gpus, out, interval, stopper, parent, tallies, next_tick)
    except Exception as error:  # a full disk, a driver gone: say so, and still summarize
        Diagnosis.say(f"sampling stopped: {type(error).__name__}: {error}")
        stopped_by = "error"
    moment = time.time()
    energy = {gpu["uuid"]: _energy_used(gpus, gpu) for gpu in gpus.gpus}
    out.write(
        "".join(line(t.summary(u, stopped_by, moment, energy[u])) for u, t in tallies.items())
    )


def _energy_used(gpus: Nvml | Smi, gpu: dict) -> float | None:
    try:
        return gpus.energy_used(gpu)
    except Exception:  # a driver gone at the end: the summary still comes
        return None


def _sample_until_stopped(gpus, out, interval, stopper, parent, tallies, next_tick) -> str:
    while True:
        stopper.sleep(next_tick - time.monotonic())
        if stopper.reason is not None:
            return stopper.reason
        if os.getppid() != parent:  # the job step that started us is gone
            return "parent-exited"
        if time.monotonic() < next_tick:
            continue
        moment = time.time()
        # Written in one go, so a reader never sees half of a round of GPUs.
        records = [sample_record(gpu["uuid"], moment, r) for gpu, r in gpus.read()]
        out.write("".join(line(record) for record in records))
        for record in records:
            tallies[record["uuid"]].add(record)
        # Skip missed ticks (a suspended job) instead of sampling in a burst.
        next_tick += interval * max(1, math.ceil((time.monotonic() - next_tick) / interval))


def main(argv: list[str] | None = None) -> int:
    try:
        # Nothing of ours, nor of a library we load, may reach the job's output.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except Exception:
        pass
    try:
        run(options(argv))
    except SystemExit:  # argparse on bad options; it printed its usage on stderr
        pass
    except BaseException as error:  # never make the job fail
        Diagnosis.say(f"stopped: {type(error).__name__}: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
