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
    # The rule in one sentence, whatever the program: what an admin rewords, and what a page
    # listing the rules shows. Findings say it in the program's own names.
    advice: str = ""


_RULES = (
    RuleInfo(
        "dataloader_num_workers",
        "DataLoader workers (num_workers > 0)",
        Impact.HIGH,
        DATALOADER,
        advice=(
            "Load batches in worker processes (num_workers > 0, one per CPU the job has per "
            "GPU), so that the GPU does not wait while the training process prepares each "
            "batch."
        ),
    ),
    RuleInfo(
        "dataloader_pin_memory",
        "Pinned memory (pin_memory=True)",
        Impact.MEDIUM,
        DATALOADER,
        advice=(
            "Pin the loader's batches in page-locked memory (pin_memory=True), so that copies "
            "to the GPU skip a staging copy and can overlap with its work."
        ),
    ),
    RuleInfo(
        "dataloader_persistent_workers",
        "Workers kept between epochs (persistent_workers=True)",
        Impact.LOW,
        DATALOADER,
        advice=(
            "Keep the loader's workers between epochs (persistent_workers=True) instead of "
            "starting new ones each epoch."
        ),
    ),
    RuleInfo(
        "dataloader_prefetch_factor",
        "More batches prefetched (prefetch_factor)",
        Impact.LOW,
        DATALOADER,
        advice=(
            "Let each worker keep more batches ready (prefetch_factor=4), so that a slow "
            "batch does not leave the GPU idle."
        ),
    ),
    RuleInfo(
        "batch_size",
        "The largest batch that fits in GPU memory",
        Impact.MEDIUM,
        DATALOADER,
        advice=(
            "Use the largest batch that fits in GPU memory: where a job used less than half, "
            "a larger batch gives the GPU more work per step."
        ),
    ),
    RuleInfo(
        "data_parallel",
        "DistributedDataParallel instead of DataParallel",
        Impact.HIGH,
        CAREFUL_TWEAKS,
        advice=(
            "Use DistributedDataParallel, one process per GPU, rather than DataParallel, "
            "which drives every GPU from one process."
        ),
    ),
    RuleInfo(
        "debug_apis",
        "Debugging APIs turned off",
        Impact.HIGH,
        CAREFUL_TWEAKS,
        advice=(
            "Turn off anomaly detection and the autograd profiler (and its NVTX ranges) once "
            "the code works: they slow every step."
        ),
    ),
    RuleInfo(
        "mixed_precision",
        "Automatic mixed precision",
        Impact.MEDIUM,
        CAREFUL_TWEAKS,
        advice=(
            "Train and run models with automatic mixed precision (bfloat16 or float16) once "
            "the model is stable: the tensor cores do far more per cycle."
        ),
    ),
    RuleInfo(
        "no_grad_evaluation",
        "No gradients for validation and inference",
        Impact.MEDIUM,
        NO_BRAINER_TWEAKS,
        advice=(
            "Run validation and inference under torch.no_grad() (or inference_mode): no "
            "gradient bookkeeping for a backward pass that never comes."
        ),
    ),
    RuleInfo(
        "manual_attention",
        "scaled_dot_product_attention instead of hand-written attention",
        Impact.MEDIUM,
        NO_BRAINER_TWEAKS,
        advice=(
            "Use torch.nn.functional.scaled_dot_product_attention instead of attention "
            "written out by hand: one fused, memory-efficient kernel."
        ),
    ),
    RuleInfo(
        "cpu_augmentation",
        "Data augmentations on the GPU",
        Impact.MEDIUM,
        CAREFUL_TWEAKS,
        advice=(
            "Apply random augmentations to batches on the GPU rather than sample by sample in "
            "the CPU loader."
        ),
    ),
    RuleInfo(
        "cudnn_benchmark",
        "cuDNN benchmark mode",
        Impact.LOW,
        NO_BRAINER_TWEAKS,
        advice=(
            "Set torch.backends.cudnn.benchmark = True in programs with convolutions, so that "
            "cuDNN picks the fastest algorithm for each shape."
        ),
    ),
    RuleInfo(
        "tf32",
        "TF32 for matrix multiplications and convolutions",
        Impact.LOW,
        NO_BRAINER_TWEAKS,
        advice=(
            "Allow TF32 for float32 matrix multiplications "
            "(torch.backends.cuda.matmul.allow_tf32 = True): they then use the tensor cores."
        ),
    ),
    RuleInfo(
        "torch_compile",
        "torch.compile",
        Impact.LOW,
        CAREFUL_TWEAKS,
        advice=(
            "Compile the model with torch.compile once training runs correctly: fewer, fused "
            "GPU kernels."
        ),
    ),
    RuleInfo(
        "channels_last",
        "channels_last memory format for vision models",
        Impact.LOW,
        CAREFUL_TWEAKS,
        advice=(
            "Use the channels_last memory format for convolutional vision models and their "
            "inputs: faster convolutions on the tensor cores."
        ),
    ),
    RuleInfo(
        "tensor_created_then_moved",
        "Tensors created on the device",
        Impact.LOW,
        NO_BRAINER_TWEAKS,
        advice=(
            "Create tensors directly on the GPU (device=...) rather than on the CPU and then "
            "moving them."
        ),
    ),
    RuleInfo(
        "conv_bias_before_batchnorm",
        "No bias on a convolution followed by batch norm",
        Impact.LOW,
        NO_BRAINER_TWEAKS,
        advice=(
            "Build convolutions followed by a batch norm with bias=False: the batch norm "
            "cancels the bias."
        ),
    ),
    RuleInfo(
        "zero_grad_set_to_none",
        "zero_grad(set_to_none=True)",
        Impact.LOW,
        NO_BRAINER_TWEAKS,
        advice=(
            "Clear gradients with zero_grad(set_to_none=True), the default since PyTorch 2.0, "
            "rather than filling them with zeros."
        ),
    ),
)

RULES: dict[str, RuleInfo] = {r.key: r for r in _RULES}
