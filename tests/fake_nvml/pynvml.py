"""A FAKE of pynvml, used only by the tests (and bench/sampler_cpu.py): it touches no GPU.

README: this is not NVIDIA's pynvml. It imitates the few calls
jobs/gpu/sampler/portal_gpu_sampler.py makes, with the same names, return shapes and error classes,
so that the sampler can be run as a real process (also inside real Slurm jobs on the dev cluster)
with predictable figures. Put this directory on PYTHONPATH and set PORTAL_SAMPLER_NVML=pynvml to use
it. Deterministic; configured by the environment when it is imported:

- FAKE_NVML_UTILIZATION="30,0": each GPU's compute utilization in percent; the number of GPUs is
  the number of values (default "30,0").
- FAKE_NVML_MIG="1": MIG mode is on for every GPU.
- FAKE_NVML_NO_SAMPLES="1": nvmlDeviceGetSamples raises NVMLError_NotSupported, as on old GPUs.
- FAKE_NVML_MEMORY_MB="1000,2000": used memory per GPU in MiB (default 1024 each); total 40960.
- FAKE_NVML_INIT_FAILS="1": nvmlInit raises NVMLError_DriverNotLoaded.
- FAKE_NVML_NO_ENERGY="1": nvmlDeviceGetTotalEnergyConsumption raises NVMLError_NotSupported, as
  on GPUs older than Volta. Otherwise each GPU's FAKE energy counter grows at exactly its fake
  power draw (60 W + 3 W per % of utilization: 150 W and 60 W by default) from a driver "loaded"
  an hour before the import, so that the joules between two samples are watts x seconds.

UUIDs are GPU-00000000-0000-0000-0000-00000000000<i>; MIG-<that> names a slice of GPU <i>.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_GPU_UTILIZATION_SAMPLES = 6
NVML_TEMPERATURE_GPU = 0
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_DEVICE_MIG_DISABLE = 0
NVML_DEVICE_MIG_ENABLE = 1
TOTAL_MB = 40960
SAMPLE_PERIOD_US = 166_666  # the driver's utilization samples: about six a second


class NVMLError(Exception):
    def __init__(self, value: int):
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return {3: "Not Supported", 6: "Not Found", 9: "Driver Not Loaded"}.get(
            self.value, f"error {self.value}"
        )


# Named as pynvml names them.
class NVMLError_NotSupported(NVMLError):
    def __init__(self):
        super().__init__(NVML_ERROR_NOT_SUPPORTED)


class NVMLError_NotFound(NVMLError):
    def __init__(self):
        super().__init__(NVML_ERROR_NOT_FOUND)


class NVMLError_DriverNotLoaded(NVMLError):
    def __init__(self):
        super().__init__(NVML_ERROR_DRIVER_NOT_LOADED)


def _numbers(name: str, default: str) -> list[float]:
    return [float(v) for v in (os.environ.get(name) or default).split(",") if v.strip()]


UTILIZATION = _numbers("FAKE_NVML_UTILIZATION", "30,0")
MEMORY_MB = _numbers("FAKE_NVML_MEMORY_MB", ",".join("1024" for _ in UTILIZATION))
MIG = os.environ.get("FAKE_NVML_MIG") == "1"
NO_SAMPLES = os.environ.get("FAKE_NVML_NO_SAMPLES") == "1"
INIT_FAILS = os.environ.get("FAKE_NVML_INIT_FAILS") == "1"
NO_ENERGY = os.environ.get("FAKE_NVML_NO_ENERGY") == "1"
FAKE_DRIVER_LOADED = time.time() - 3600  # the fake energy counter counts from here


class _Handle:
    def __init__(self, index: int, mig_slice: bool = False):
        self.index = index
        self.mig_slice = mig_slice


def _uuid(index: int) -> str:
    return f"GPU-00000000-0000-0000-0000-{index:012d}"


# The API, with pynvml's names.
def nvmlInit() -> None:
    if INIT_FAILS:
        raise NVMLError_DriverNotLoaded()


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return len(UTILIZATION)


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    if not 0 <= index < len(UTILIZATION):
        raise NVMLError(2)  # NVML_ERROR_INVALID_ARGUMENT
    return _Handle(index)


def nvmlDeviceGetHandleByUUID(uuid) -> _Handle:
    uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
    for index in range(len(UTILIZATION)):
        if uuid == _uuid(index):
            return _Handle(index)
        if uuid == "MIG-" + _uuid(index):
            return _Handle(index, mig_slice=True)
    raise NVMLError_NotFound()


def nvmlDeviceGetIndex(handle: _Handle) -> int:
    if handle.mig_slice:
        raise NVMLError_NotSupported()
    return handle.index


def nvmlDeviceIsMigDeviceHandle(handle: _Handle) -> int:
    return int(handle.mig_slice)


def nvmlDeviceGetUUID(handle: _Handle) -> str:
    return ("MIG-" if handle.mig_slice else "") + _uuid(handle.index)


def nvmlDeviceGetName(handle: _Handle) -> str:
    return "FAKE NVIDIA A100-SXM4-40GB" + (" MIG 1g.5gb" if handle.mig_slice else "")


def nvmlDeviceGetPciInfo(handle: _Handle) -> SimpleNamespace:
    return SimpleNamespace(busId=f"00000000:{handle.index + 7:02X}:00.0")


def nvmlDeviceGetMemoryInfo(handle: _Handle) -> SimpleNamespace:
    used = MEMORY_MB[handle.index] if handle.index < len(MEMORY_MB) else 1024
    mib = 1024 * 1024
    return SimpleNamespace(total=TOTAL_MB * mib, used=int(used * mib), free=0)


def nvmlDeviceGetUtilizationRates(handle: _Handle) -> SimpleNamespace:
    if handle.mig_slice or MIG:
        raise NVMLError_NotSupported()
    return SimpleNamespace(gpu=int(UTILIZATION[handle.index]), memory=10)


def nvmlDeviceGetSamples(handle: _Handle, sampling_type: int, last_seen: int):
    """Samples every SAMPLE_PERIOD_US since last_seen (at most 120, the driver's buffer)."""
    if NO_SAMPLES or sampling_type != NVML_GPU_UTILIZATION_SAMPLES:
        raise NVMLError_NotSupported()
    if handle.mig_slice or MIG:
        raise NVMLError_NotSupported()
    now = int(time.time() * 1_000_000)
    first = max(last_seen + 1, now - 120 * SAMPLE_PERIOD_US)
    stamps = range(first - first % SAMPLE_PERIOD_US + SAMPLE_PERIOD_US, now, SAMPLE_PERIOD_US)
    value = int(UTILIZATION[handle.index])
    sample = SimpleNamespace
    samples = [sample(timeStamp=t, sampleValue=sample(uiVal=value)) for t in stamps]
    if not samples:
        raise NVMLError_NotFound()
    return NVML_VALUE_TYPE_UNSIGNED_INT, samples


def nvmlDeviceGetPowerUsage(handle: _Handle) -> int:
    if handle.mig_slice:
        raise NVMLError_NotSupported()
    return _fake_milliwatts(handle)


def _fake_milliwatts(handle: _Handle) -> int:
    return 60_000 + int(UTILIZATION[handle.index] * 3000)


def nvmlDeviceGetTotalEnergyConsumption(handle: _Handle) -> int:
    """The FAKE counter: millijoules since the fake driver loaded, at the fake power draw."""
    if NO_ENERGY or handle.mig_slice:
        raise NVMLError_NotSupported()
    return int(_fake_milliwatts(handle) * (time.time() - FAKE_DRIVER_LOADED))


def nvmlDeviceGetTemperature(handle: _Handle, sensor: int) -> int:
    if handle.mig_slice:
        raise NVMLError_NotSupported()
    return 35 + int(UTILIZATION[handle.index] // 5)


def nvmlDeviceGetMigMode(handle: _Handle) -> list[int]:
    if handle.mig_slice:
        raise NVMLError_NotSupported()
    mode = NVML_DEVICE_MIG_ENABLE if MIG else NVML_DEVICE_MIG_DISABLE
    return [mode, mode]
