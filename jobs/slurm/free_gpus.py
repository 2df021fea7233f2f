"""sinfo's view of every node's GPUs: how many each has, how many are allocated, and whether the
node can take jobs at all. One line per node and partition, read once per cluster per cycle."""

from collections.abc import Iterable
from dataclasses import dataclass

from jobs.slurm.values import parse_gres, read_rows

# Each field ends in `|`; an empty width keeps sinfo from padding or cutting the field.
_FIELDS = ("name", "partition", "state", "gres", "gres_used")
FREE_GPUS_ARGV = [
    "sinfo",
    "--Node",
    "--noheader",
    "--Format=NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|",
]

# Node states in which no new job starts (sinfo's long names, flags removed). A node that does
# not answer carries `*` whatever its state. Draining nodes finish their jobs but take no more.
_NOT_TAKING_JOBS = frozenset(
    {"down", "drained", "draining", "drain", "fail", "failing", "future", "inval", "maint",
     "reserved", "unknown", "not_responding", "perfctrs", "planned", "reboot_issued",
     "reboot_requested", "powered_down", "powering_down", "power_down"}
)  # fmt: skip
_STATE_FLAGS = "*~#!%$@^-+"


@dataclass(frozen=True)
class NodeGpus:
    """One node in one partition, for one GPU type."""

    node: str
    partition: str
    gpu_type: str  # "" when the site does not type its GPUs
    total: int
    allocated: int
    available: bool  # the node can start jobs now
    state: str


def node_available(state: str) -> bool:
    """`mixed`, `idle~` and `allocated` take jobs; `drained`, `down*` or `mixed+drain` do not."""
    if "*" in state:
        return False
    words = state.strip().lower().rstrip(_STATE_FLAGS).replace("+", " ").split()
    return bool(words) and not any(word.rstrip(_STATE_FLAGS) in _NOT_TAKING_JOBS for word in words)


def parse_free_gpus(text: str) -> list[NodeGpus]:
    lines = (line.removesuffix("|") for line in text.splitlines())
    result = []
    for row in read_rows("\n".join(lines), _FIELDS):
        used = {
            gres.type: gres.count for gres in parse_gres(row["gres_used"]) if gres.name == "gpu"
        }
        for gres in parse_gres(row["gres"]):
            if gres.name != "gpu":
                continue
            state = row["state"].strip()
            result.append(
                NodeGpus(
                    node=row["name"].strip(),
                    partition=row["partition"].strip().rstrip("*"),
                    gpu_type=gres.type,
                    total=gres.count,
                    allocated=min(used.get(gres.type, 0), gres.count),
                    available=node_available(state),
                    state=state,
                )
            )
    return result


@dataclass(frozen=True)
class GpuCount:
    """The GPUs of one partition and type: every GPU is allocated, unavailable (its node is down,
    drained or reserved) or free."""

    partition: str
    gpu_type: str
    total: int
    allocated: int
    unavailable: int
    nodes: int

    @property
    def free(self) -> int:
        return self.total - self.allocated - self.unavailable


def count_gpus(nodes: Iterable[NodeGpus]) -> list[GpuCount]:
    totals: dict[tuple[str, str], list[int]] = {}
    for node in nodes:
        count = totals.setdefault((node.partition, node.gpu_type), [0, 0, 0, 0])
        count[0] += node.total
        count[1] += node.allocated
        # A drained node's allocated GPUs still run jobs: only the idle ones are lost.
        count[2] += 0 if node.available else node.total - node.allocated
        count[3] += 1
    return [
        GpuCount(partition, gpu_type, *numbers)
        for (partition, gpu_type), numbers in sorted(totals.items())
    ]
