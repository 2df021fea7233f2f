"""Every rule's function, grouped by subject. A located rule reads one file
(`rule(project, program, values)`); a program-wide rule reads the whole program once
(`rule(project)`). A new rule is one function here, what it reports in REPORTS, its catalogue
entry, and its tests."""

from collections.abc import Callable

from guidance.engine.code_check.rules.augmentation import check_cpu_augmentation
from guidance.engine.code_check.rules.debugging import check_data_parallel, check_debug_apis
from guidance.engine.code_check.rules.gradients import check_no_grad_evaluation, check_zero_grad
from guidance.engine.code_check.rules.layers import check_conv_bias, check_manual_attention
from guidance.engine.code_check.rules.loading import (
    check_batch_size,
    check_hf_dataloader,
    check_num_workers,
    check_persistent_workers,
    check_pin_memory,
    check_prefetch_factor,
)
from guidance.engine.code_check.rules.program_wide import (
    check_channels_last,
    check_cudnn_benchmark,
    check_mixed_precision,
    check_tf32,
    check_torch_compile,
)
from guidance.engine.code_check.rules.tensors import check_tensor_created_then_moved

LOCATED = (
    check_num_workers,
    check_pin_memory,
    check_persistent_workers,
    check_prefetch_factor,
    check_batch_size,
    check_hf_dataloader,
    check_data_parallel,
    check_debug_apis,
    check_zero_grad,
    check_no_grad_evaluation,
    check_conv_bias,
    check_manual_attention,
    check_tensor_created_then_moved,
    check_cpu_augmentation,
)
PROGRAM_WIDE = (
    check_mixed_precision,
    check_cudnn_benchmark,
    check_tf32,
    check_torch_compile,
    check_channels_last,
)
# The catalogue's rules each function reports: one that a cluster has switched off for all of
# them is not run at all.
REPORTS: dict[Callable, frozenset[str]] = {
    check_num_workers: frozenset({"dataloader_num_workers"}),
    check_pin_memory: frozenset({"dataloader_pin_memory"}),
    check_persistent_workers: frozenset({"dataloader_persistent_workers"}),
    check_prefetch_factor: frozenset({"dataloader_prefetch_factor"}),
    check_batch_size: frozenset({"batch_size"}),
    check_hf_dataloader: frozenset({"dataloader_num_workers", "dataloader_pin_memory"}),
    check_data_parallel: frozenset({"data_parallel"}),
    check_debug_apis: frozenset({"debug_apis"}),
    check_zero_grad: frozenset({"zero_grad_set_to_none"}),
    check_no_grad_evaluation: frozenset({"no_grad_evaluation"}),
    check_conv_bias: frozenset({"conv_bias_before_batchnorm"}),
    check_manual_attention: frozenset({"manual_attention"}),
    check_tensor_created_then_moved: frozenset({"tensor_created_then_moved"}),
    check_cpu_augmentation: frozenset({"cpu_augmentation"}),
    check_mixed_precision: frozenset({"mixed_precision"}),
    check_cudnn_benchmark: frozenset({"cudnn_benchmark"}),
    check_tf32: frozenset({"tf32"}),
    check_torch_compile: frozenset({"torch_compile"}),
    check_channels_last: frozenset({"channels_last"}),
}
