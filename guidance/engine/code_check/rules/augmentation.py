"""Random augmentations built on the CPU (torchvision's transforms, albumentations), outside a
program that only evaluates: they run in the loader for every sample while the GPU waits (003, "code
tweaks to think about")."""

from collections.abc import Iterator

from guidance.engine.code_check.context import Project, make
from guidance.engine.code_check.findings import CodeFinding, Kind
from guidance.engine.code_check.program import SOURCE_ORDER, Program
from guidance.engine.code_check.values import Values

LIBRARIES = ("torchvision.transforms.", "albumentations.")
RANDOM = frozenset(
    {
        "ColorJitter",
        "GaussianBlur",
        "RandAugment",
        "AutoAugment",
        "TrivialAugmentWide",
        "AugMix",
        "ElasticTransform",
        "RandomErasing",
    }
)


def _random_augmentation(qualname: str) -> bool:
    if not qualname.startswith(LIBRARIES):
        return False
    name = qualname.rsplit(".", 1)[-1]
    return name.startswith("Random") or name in RANDOM


def check_cpu_augmentation(
    project: Project, program: Program, values: Values
) -> Iterator[CodeFinding]:
    # Random augmentations are there for training: a dataset module sent without its loop
    # still runs them in the loader, sample by sample. A program that only evaluates uses
    # them on purpose (test-time augmentation).
    if project.evaluates and not project.trains:
        return
    calls = [
        call
        for qualname, calls in program.calls_by_name.items()
        if _random_augmentation(qualname)
        for call in calls
    ]
    if not calls:
        return
    first = min(calls, key=SOURCE_ORDER)
    names = sorted({program.segment(c.func).rsplit(".", 1)[-1] for c in calls})
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    yield make(
        "cpu_augmentation",
        Kind.CHANGE,
        program,
        first,
        f"The random augmentations here ({shown}) run on the CPU, sample by sample, in the "
        "data loader: expensive ones keep the GPU waiting for batches.",
        "Move the random augmentations to the GPU: keep only decoding and resizing in the "
        "loader, and apply the augmentations to each batch after moving it to the device "
        "(torchvision.transforms.v2 works on CUDA tensors, or write them with torch "
        "operations).",
    )
