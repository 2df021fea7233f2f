"""The modules a Python file imports that may be its project's own, and where they would be.

To check a program the portal reads its entry file and the project's modules it imports, not
the installed libraries. A module counts as the project's unless its top name is Python's own
(sys.stdlib_module_names) or a library training programs use; one that is not found beside the
program is then taken to be installed. Read with `ast`, never imported.
"""

import ast
import posixpath
import sys
from dataclasses import dataclass

# Libraries training programs import, by their import names: never looked for beside the program.
INSTALLED = frozenset(
    {"torch", "torchvision", "torchaudio", "torchtext", "torchdata", "torchmetrics", "numpy"}
    | {"scipy", "pandas", "sklearn", "matplotlib", "seaborn", "PIL", "cv2", "skimage", "tqdm"}
    | {"yaml", "transformers", "datasets", "tokenizers", "accelerate", "deepspeed", "lightning"}
    | {"pytorch_lightning", "lightning_fabric", "timm", "einops", "wandb", "tensorboard"}
    | {"tensorboardX", "mlflow", "hydra", "omegaconf", "h5py", "albumentations", "peft", "trl"}
    | {"bitsandbytes", "safetensors", "huggingface_hub", "sentencepiece", "apex", "xformers"}
    | {"flash_attn", "triton", "jax", "flax", "optax", "tensorflow", "keras", "requests"}
    | {"click", "typer", "rich", "fire", "absl", "psutil", "pynvml", "numba", "imageio"}
    | {"pycocotools", "webdataset", "ray", "optuna", "dask", "pyarrow", "polars", "nltk"}
    | {"spacy", "evaluate", "sentence_transformers", "diffusers", "open_clip", "pytest", "pip"}
    | {"setuptools", "pkg_resources", "dotenv", "submitit", "zarr", "netCDF4", "xarray"}
)


def is_installed(module: str) -> bool:
    """Python's own module or a known library: not a file of the project."""
    top = module.split(".")[0]
    return top in sys.stdlib_module_names or top in INSTALLED


@dataclass(frozen=True)
class LocalImport:
    module: str  # the full name, relative imports resolved: "models.resnet"
    line: int
    candidates: tuple[str, ...]  # where it would be, from the import root: mod.py, mod/__init__.py


def local_imports(text: str | bytes, path: str = "") -> tuple[LocalImport, ...]:
    """What the file at `path` (from the import root: the entry's folder) imports that may be
    the project's own, each package on the way included (`import a.b` runs a/__init__.py too).
    A file that does not parse imports nothing here: the checker says what is wrong with it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    package = posixpath.dirname(path).split("/") if posixpath.dirname(path) else []
    found: dict[str, LocalImport] = {}
    for node in ast.walk(tree):
        for name in _names(node, package):
            if is_installed(name):
                continue
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):
                module = ".".join(parts[:depth])
                if module not in found:
                    found[module] = LocalImport(module, node.lineno, _candidates(module))
    return tuple(sorted(found.values(), key=lambda i: (i.line, i.module)))


def _names(node: ast.AST, package: list[str]) -> list[str]:
    """The modules an import statement may load; a `from x import name` name may be a module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        if node.level > len(package):
            return []  # above the top package (or in a script run as a file): Python refuses it
        base = package[: len(package) - (node.level - 1)]
        parts = [*base, *(node.module.split(".") if node.module else [])]
    else:
        parts = node.module.split(".") if node.module else []
    module = ".".join(parts)
    return [module, *(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")]


def _candidates(module: str) -> tuple[str, ...]:
    path = module.replace(".", "/")
    return (f"{path}.py", f"{path}/__init__.py")
