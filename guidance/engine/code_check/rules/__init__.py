"""Every rule's function, grouped by subject. A located rule reads one file
(`rule(project, program, values)`); a program-wide rule reads the whole program once
(`rule(project)`). A new rule is one function here, its catalogue entry, and its tests."""

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
