"""Every rule of the training-code checker, once: its key, title, expected impact on GPU
utilization and the section of the DGX guidelines (003) it comes from. Admins switch rules off or
reword them per cluster by key (guidance.CodeRuleSetting); the rules' functions live in rules/."""

from dataclasses import dataclass

from guidance.engine.code_check.findings import Impact
from guidance.engine.sources import CAREFUL_TWEAKS, DATALOADER, NO_BRAINER_TWEAKS, Source


@dataclass(frozen=True)
class RuleInfo:
    key: str
    title: str
    impact: Impact
    source: Source


_RULES = (
    RuleInfo(
        "dataloader_num_workers", "DataLoader workers (num_workers > 0)", Impact.HIGH, DATALOADER
    ),
    RuleInfo("dataloader_pin_memory", "Pinned memory (pin_memory=True)", Impact.MEDIUM, DATALOADER),
    RuleInfo(
        "dataloader_persistent_workers",
        "Workers kept between epochs (persistent_workers=True)",
        Impact.LOW,
        DATALOADER,
    ),
    RuleInfo(
        "dataloader_prefetch_factor",
        "More batches prefetched (prefetch_factor)",
        Impact.LOW,
        DATALOADER,
    ),
    RuleInfo("batch_size", "The largest batch that fits in GPU memory", Impact.MEDIUM, DATALOADER),
    RuleInfo(
        "data_parallel",
        "DistributedDataParallel instead of DataParallel",
        Impact.HIGH,
        CAREFUL_TWEAKS,
    ),
    RuleInfo("debug_apis", "Debugging APIs turned off", Impact.HIGH, CAREFUL_TWEAKS),
    RuleInfo("mixed_precision", "Automatic mixed precision", Impact.MEDIUM, CAREFUL_TWEAKS),
    RuleInfo(
        "no_grad_evaluation",
        "No gradients for validation and inference",
        Impact.MEDIUM,
        NO_BRAINER_TWEAKS,
    ),
    RuleInfo(
        "manual_attention",
        "scaled_dot_product_attention instead of hand-written attention",
        Impact.MEDIUM,
        NO_BRAINER_TWEAKS,
    ),
    RuleInfo("cpu_augmentation", "Data augmentations on the GPU", Impact.MEDIUM, CAREFUL_TWEAKS),
    RuleInfo("cudnn_benchmark", "cuDNN benchmark mode", Impact.LOW, NO_BRAINER_TWEAKS),
    RuleInfo(
        "tf32", "TF32 for matrix multiplications and convolutions", Impact.LOW, NO_BRAINER_TWEAKS
    ),
    RuleInfo("torch_compile", "torch.compile", Impact.LOW, CAREFUL_TWEAKS),
    RuleInfo(
        "channels_last", "channels_last memory format for vision models", Impact.LOW, CAREFUL_TWEAKS
    ),
    RuleInfo(
        "tensor_created_then_moved", "Tensors created on the device", Impact.LOW, NO_BRAINER_TWEAKS
    ),
    RuleInfo(
        "conv_bias_before_batchnorm",
        "No bias on a convolution followed by batch norm",
        Impact.LOW,
        NO_BRAINER_TWEAKS,
    ),
    RuleInfo("zero_grad_set_to_none", "zero_grad(set_to_none=True)", Impact.LOW, NO_BRAINER_TWEAKS),
)

RULES: dict[str, RuleInfo] = {r.key: r for r in _RULES}
