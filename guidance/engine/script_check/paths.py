"""Where a path is: node-local or network storage, by the cluster's published tiers."""

from dataclasses import dataclass

from guidance.engine.script_check.shell_lines import normal_path
from guidance.engine.types import Cluster, StorageTier, TierKind

LOCAL_KINDS = (TierKind.NODE_LOCAL, TierKind.MEMORY)
NETWORK_KINDS = (TierKind.HOME, TierKind.SCRATCH, TierKind.PROJECT, TierKind.NEARLINE)
# Other spellings of a network tier that users write, counted only where the cluster publishes
# a tier of that kind: on the processing cluster $SCRATCH is the node's own SSD, not this.
ALIASES = {
    TierKind.HOME: ("$HOME", "/home"),
    TierKind.SCRATCH: ("/scratch", "$SCRATCH", "$HOME/scratch"),
    TierKind.PROJECT: ("/project", "$PROJECT", "$HOME/projects"),
    TierKind.NEARLINE: ("/nearline", "$NEARLINE", "$HOME/nearline"),
}
# On the node whatever the cluster publishes: the job's temporary directories and RAM disks,
# under the names sites give them.
ALWAYS_LOCAL = (
    "$SLURM_TMPDIR",
    "$TMPDIR",
    "$TMP",
    "$LOCAL_SCRATCH",
    "$LOCALSCRATCH",
    "$SLURM_JOB_TMP",
    "/tmp",
    "/dev/shm",
    "/localscratch",
)
# Where sites mount shared network storage, whatever they call it: counted as network storage
# wherever the cluster publishes nothing closer (its own tiers win by their longer prefix).
USUAL_NETWORK = (
    "/home",
    "/project",
    "/projects",
    "/scratch",
    "/scratch-shared",
    "/nearline",
    "/mnt",
    "/nfs",
    "/gpfs",
    "/lustre",
    "/data",
    "/datasets",
    "/shared",
    "/net",
    "/storage",
    "/work",
    "/groups",
    "/cluster",
)


@dataclass(frozen=True)
class Place:
    prefix: str
    local: bool
    tier: StorageTier | None
    alias: bool


def fixed_prefix(path: str) -> str | None:
    """The fixed start of a path, up to its first part that is filled in at run time:
    /scratch/$USER -> /scratch, $HOME/projects/def-$X -> $HOME/projects, $SCRATCH/$1/x ->
    $SCRATCH; a leading variable such as $SLURM_TMPDIR stays."""
    parts = normal_path(path.strip()).split("/")
    kept = parts[:1]
    for part in parts[1:]:
        if "$" in part or "<" in part:
            break
        kept.append(part)
    prefix = "/".join(kept)
    return prefix if prefix not in ("", "/") else None


def storage_places(cluster: Cluster) -> list[Place]:
    places = []
    for tier in cluster.storage_tiers:
        local = tier.kind in LOCAL_KINDS
        prefix = fixed_prefix(tier.path)
        if prefix:
            places.append(Place(prefix, local, tier, alias=False))
        if tier.kind in NETWORK_KINDS:
            places += [Place(a, False, tier, alias=True) for a in ALIASES[tier.kind]]
    # A tier named by a variable of the job environment is also where the variable points:
    # $SCRATCH is /processing/$USER on the processing cluster's nodes.
    for name, value in cluster.environment.variables:
        tier = next((p.tier for p in places if p.prefix == f"${name}" and p.tier), None)
        if tier is not None and (prefix := fixed_prefix(value)):
            places.append(Place(prefix, tier.kind in LOCAL_KINDS, tier, alias=False))
    places += [Place(p, True, None, alias=True) for p in ALWAYS_LOCAL]
    known = {p.prefix for p in places}
    places += [Place(p, False, None, alias=True) for p in USUAL_NETWORK if p not in known]
    # The longest prefix decides; at equal length the cluster's own path beats a usual spelling.
    return sorted(places, key=lambda p: (-len(p.prefix), p.alias))


def place_of(path: str, places: list[Place]) -> Place | None:
    for place in places:
        if path.startswith(place.prefix):
            rest = path[len(place.prefix) :]
            if not rest or not (rest[0].isalnum() or rest[0] in "_-."):
                return place
    return None
