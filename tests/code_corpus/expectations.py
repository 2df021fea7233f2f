"""What the training-code checker must say about each corpus program, written from the rule
contract (notes: code-check-spec, "The rule contract") before the checker was run on any of them.

Each finding is (rule, kind, file, line). The line is None only for the program-wide rules
(cudnn_benchmark, tf32, mixed_precision, torch_compile, channels_last), whose line is where the
fix would go and is left unchecked; their file is the entry file. Where a case is about that
place, the line is given, and "afters" names, per rule, a line the fix's after must hold as
written (indentation included): a process-wide setting at the start of main, a model-level fix
right after the trained model is built. A finding the contract places
at a framework's own argument (Lightning precision=, Accelerator(mixed_precision=)) keeps that
argument's line. Anything the checker says beyond these is a false alarm.
"""

C, Q, D = "change", "question", "default"

# The program-wide rules, for a program that misses all of them.
WIDE = ("cudnn_benchmark", "tf32", "mixed_precision", "torch_compile", "channels_last")


def wide(file: str, *rules: str) -> set[tuple]:
    return {(rule, C, file, None) for rule in rules}


EXPECTED = {
    # A dict of loader options updated after creation: num_workers and pin_memory unknown.
    "plain_mnist.py": {
        "entry": "plain_mnist.py",
        "findings": {
            ("dataloader_num_workers", Q, "plain_mnist.py", 84),
            ("dataloader_num_workers", Q, "plain_mnist.py", 85),
            ("dataloader_pin_memory", Q, "plain_mnist.py", 84),
            ("dataloader_pin_memory", Q, "plain_mnist.py", 85),
            ("zero_grad_set_to_none", D, "plain_mnist.py", 33),
        }
        | wide("plain_mnist.py", *WIDE),
    },
    # Module-level tutorial loop; evaluation under no_grad without .eval(): rule 8 has no .eval().
    "cifar_tutorial_loop.py": {
        "entry": "cifar_tutorial_loop.py",
        "findings": {
            ("dataloader_pin_memory", C, "cifar_tutorial_loop.py", 17),
            ("dataloader_pin_memory", C, "cifar_tutorial_loop.py", 19),
            ("dataloader_persistent_workers", C, "cifar_tutorial_loop.py", 17),
            ("dataloader_persistent_workers", C, "cifar_tutorial_loop.py", 19),
            ("dataloader_prefetch_factor", C, "cifar_tutorial_loop.py", 17),
            ("dataloader_prefetch_factor", C, "cifar_tutorial_loop.py", 19),
            ("zero_grad_set_to_none", D, "cifar_tutorial_loop.py", 47),
        }
        | wide("cifar_tutorial_loop.py", *WIDE),
    },
    # Two classes with self.conv1/self.bn1: only ResNet's stem conv keeps its bias.
    "cifar_resnet_augment.py": {
        "entry": "cifar_resnet_augment.py",
        "findings": {
            ("conv_bias_before_batchnorm", C, "cifar_resnet_augment.py", 39),
            ("cpu_augmentation", C, "cifar_resnet_augment.py", 71),
            ("dataloader_persistent_workers", C, "cifar_resnet_augment.py", 82),
            ("dataloader_prefetch_factor", C, "cifar_resnet_augment.py", 82),
            ("dataloader_prefetch_factor", C, "cifar_resnet_augment.py", 84),
            ("no_grad_evaluation", C, "cifar_resnet_augment.py", 122),
        }
        | wide("cifar_resnet_augment.py", "tf32", "torch_compile", "channels_last"),
    },
    # Conv+BN in a list literal and in Sequentials; a Conv, ReLU, BN triple is not "directly".
    "vgg_sequential_bn.py": {
        "entry": "vgg_sequential_bn.py",
        "findings": {
            ("conv_bias_before_batchnorm", C, "vgg_sequential_bn.py", 21),
            ("conv_bias_before_batchnorm", C, "vgg_sequential_bn.py", 30),
            ("conv_bias_before_batchnorm", C, "vgg_sequential_bn.py", 36),
        }
        | wide("vgg_sequential_bn.py", "torch_compile"),
    },
    "torchvision_finetune.py": {
        "entry": "torchvision_finetune.py",
        "findings": {
            ("cpu_augmentation", C, "torchvision_finetune.py", 20),
            ("dataloader_pin_memory", C, "torchvision_finetune.py", 41),
            ("dataloader_persistent_workers", C, "torchvision_finetune.py", 41),
            ("dataloader_prefetch_factor", C, "torchvision_finetune.py", 41),
            ("zero_grad_set_to_none", D, "torchvision_finetune.py", 53),
        }
        | wide("torchvision_finetune.py", *WIDE),
    },
    # args.workers defaults to 4 (argparse): enough workers; pin_memory from args is a question.
    # channels_last and compile behind flags still count as used.
    "timm_train.py": {
        "entry": "timm_train.py",
        "findings": {
            ("dataloader_pin_memory", Q, "timm_train.py", 94),
            ("zero_grad_set_to_none", D, "timm_train.py", 46),
        },
    },
    # bn(conv(x)) in forward; bn(pool(conv(x))) is not directly followed.
    "conv_bn_forward.py": {
        "entry": "conv_bn_forward.py",
        "findings": {
            ("conv_bias_before_batchnorm", C, "conv_bn_forward.py", 16),
            ("dataloader_num_workers", C, "conv_bn_forward.py", 52),
            ("dataloader_pin_memory", C, "conv_bn_forward.py", 52),
            ("tensor_created_then_moved", C, "conv_bn_forward.py", 63),
            ("tensor_created_then_moved", C, "conv_bn_forward.py", 64),
            ("zero_grad_set_to_none", C, "conv_bn_forward.py", 66),
        }
        | wide(
            "conv_bn_forward.py", "cudnn_benchmark", "mixed_precision", "channels_last"
        ),
    },
    # Softmax over masked q @ k^T scores; the softmax over logits in generate() is not attention.
    "gpt_manual_attention.py": {
        "entry": "gpt_manual_attention.py",
        "findings": {("manual_attention", C, "gpt_manual_attention.py", 71)}
        | wide("gpt_manual_attention.py", "tf32", "mixed_precision", "torch_compile"),
    },
    # Follows the advice; its hand-written attention is only the fallback beside SDPA.
    "gpt_sdpa.py": {"entry": "gpt_sdpa.py", "findings": set()},
    "ddp_torchrun.py": {
        "entry": "ddp_torchrun.py",
        "findings": {
            ("cpu_augmentation", C, "ddp_torchrun.py", 27),
            ("tensor_created_then_moved", C, "ddp_torchrun.py", 82),
        }
        | wide("ddp_torchrun.py", "torch_compile", "channels_last"),
    },
    # persistent_workers=False with num_workers from args (argparse's default 2: enough);
    # matmul precision "highest" is not TF32.
    "ddp_mp_spawn.py": {
        "entry": "ddp_mp_spawn.py",
        "findings": {
            ("dataloader_persistent_workers", C, "ddp_mp_spawn.py", 44),
            ("zero_grad_set_to_none", D, "ddp_mp_spawn.py", 57),
        }
        | wide("ddp_mp_spawn.py", "tf32", "mixed_precision", "torch_compile"),
    },
    "data_parallel_legacy.py": {
        "entry": "data_parallel_legacy.py",
        "findings": {
            ("data_parallel", C, "data_parallel_legacy.py", 32),
            ("dataloader_persistent_workers", C, "data_parallel_legacy.py", 26),
            ("dataloader_prefetch_factor", C, "data_parallel_legacy.py", 26),
            ("zero_grad_set_to_none", D, "data_parallel_legacy.py", 58),
        }
        | wide("data_parallel_legacy.py", "tf32", "torch_compile", "channels_last"),
    },
    # Lightning 1.x: precision=16 is mixed precision; no benchmark=True.
    "lightning_v1.py": {
        "entry": "lightning_v1.py",
        "findings": {
            ("conv_bias_before_batchnorm", C, "lightning_v1.py", 44),
            ("cpu_augmentation", C, "lightning_v1.py", 18),
            ("dataloader_pin_memory", C, "lightning_v1.py", 33),
            ("dataloader_pin_memory", C, "lightning_v1.py", 36),
            ("dataloader_persistent_workers", C, "lightning_v1.py", 33),
            ("dataloader_persistent_workers", C, "lightning_v1.py", 36),
            ("dataloader_prefetch_factor", C, "lightning_v1.py", 33),
            ("dataloader_prefetch_factor", C, "lightning_v1.py", 36),
        }
        | wide(
            "lightning_v1.py",
            "cudnn_benchmark",
            "tf32",
            "torch_compile",
            "channels_last",
        ),
    },
    "lightning_v2_exemplary.py": {
        "entry": "lightning_v2_exemplary.py",
        "findings": set(),
    },
    # Trainer(precision=args.precision): a question at that argument; benchmark=True counts.
    "lightning_args.py": {
        "entry": "lightning_args.py",
        "findings": {
            ("cpu_augmentation", C, "lightning_args.py", 42),
            ("dataloader_num_workers", Q, "lightning_args.py", 55),
            ("dataloader_num_workers", Q, "lightning_args.py", 65),
            ("mixed_precision", Q, "lightning_args.py", 114),
        }
        | wide("lightning_args.py", "tf32", "torch_compile", "channels_last"),
    },
    # deterministic cuDNN chosen: a question; precision="32" explicitly: a change at it.
    "lightning_unet_precision32.py": {
        "entry": "lightning_unet_precision32.py",
        "findings": {
            ("dataloader_prefetch_factor", C, "lightning_unet_precision32.py", 94),
            ("dataloader_prefetch_factor", C, "lightning_unet_precision32.py", 95),
            ("cudnn_benchmark", Q, "lightning_unet_precision32.py", None),
            ("mixed_precision", C, "lightning_unet_precision32.py", 100),
        }
        | wide("lightning_unet_precision32.py", "torch_compile", "channels_last"),
    },
    # No dataloader_num_workers: the Trainer's loaders run with 0 workers.
    "hf_trainer_classification.py": {
        "entry": "hf_trainer_classification.py",
        "findings": {("dataloader_num_workers", C, "hf_trainer_classification.py", 32)}
        | wide("hf_trainer_classification.py", "tf32", "torch_compile"),
    },
    "hf_seq2seq_exemplary.py": {"entry": "hf_seq2seq_exemplary.py", "findings": set()},
    # dataloader_num_workers=args.num_workers, whose argparse default is 0: the change is there.
    "hf_args_driven.py": {
        "entry": "hf_args_driven.py",
        "findings": {
            ("dataloader_num_workers", C, "hf_args_driven.py", 23),
            ("mixed_precision", Q, "hf_args_driven.py", 56),
            ("torch_compile", Q, "hf_args_driven.py", None),
            ("tf32", C, "hf_args_driven.py", None),
        },
    },
    # Evaluation calls are under no_grad in the same function as .eval(): quiet.
    "accelerate_glue.py": {
        "entry": "accelerate_glue.py",
        "findings": {
            ("dataloader_num_workers", C, "accelerate_glue.py", 34),
            ("dataloader_num_workers", C, "accelerate_glue.py", 35),
            ("dataloader_pin_memory", C, "accelerate_glue.py", 34),
            ("dataloader_pin_memory", C, "accelerate_glue.py", 35),
            ("zero_grad_set_to_none", D, "accelerate_glue.py", 55),
        }
        | wide("accelerate_glue.py", "tf32", "torch_compile"),
    },
    # 1-D convolutions: cudnn.benchmark applies, channels_last (2-D) does not.
    "accelerate_yaml_audio.py": {
        "entry": "accelerate_yaml_audio.py",
        "findings": {
            ("mixed_precision", Q, "accelerate_yaml_audio.py", 57),
            ("dataloader_num_workers", Q, "accelerate_yaml_audio.py", 60),
            ("dataloader_pin_memory", Q, "accelerate_yaml_audio.py", 60),
            ("conv_bias_before_batchnorm", C, "accelerate_yaml_audio.py", 20),
            ("no_grad_evaluation", C, "accelerate_yaml_audio.py", 85),
        }
        | wide("accelerate_yaml_audio.py", "cudnn_benchmark"),
    },
    # **loader_kwargs from a literal dict with prefetch_factor=2; MEAN.to(device) is not a factory.
    "segmentation_loader_kwargs.py": {
        "entry": "segmentation_loader_kwargs.py",
        "findings": {
            ("dataloader_prefetch_factor", C, "segmentation_loader_kwargs.py", 56),
            ("dataloader_prefetch_factor", C, "segmentation_loader_kwargs.py", 57),
        }
        | wide("segmentation_loader_kwargs.py", "tf32"),
    },
    # Inference only: no torch.compile finding (it does not train), mixed precision applies.
    "inference_classify.py": {
        "entry": "inference_classify.py",
        "findings": {
            ("dataloader_persistent_workers", C, "inference_classify.py", 21),
            ("dataloader_prefetch_factor", C, "inference_classify.py", 21),
        }
        | wide(
            "inference_classify.py",
            "cudnn_benchmark",
            "tf32",
            "mixed_precision",
            "channels_last",
        ),
    },
    # Module-level .eval() with the model called outside no_grad; model.half() is reduced precision.
    "inference_embeddings.py": {
        "entry": "inference_embeddings.py",
        "findings": {
            ("tensor_created_then_moved", C, "inference_embeddings.py", 28),
            ("dataloader_num_workers", C, "inference_embeddings.py", 31),
            ("dataloader_pin_memory", C, "inference_embeddings.py", 31),
            ("no_grad_evaluation", C, "inference_embeddings.py", 33),
        }
        | wide("inference_embeddings.py", "tf32"),
    },
    # Every debugging API once; enabled=args.profile is a question, set_detect_anomaly(False) fine.
    "debug_anomaly_profiler.py": {
        "entry": "debug_anomaly_profiler.py",
        "findings": {
            ("debug_apis", C, "debug_anomaly_profiler.py", 15),
            ("debug_apis", C, "debug_anomaly_profiler.py", 63),
            ("debug_apis", Q, "debug_anomaly_profiler.py", 68),
            ("debug_apis", C, "debug_anomaly_profiler.py", 69),
            ("debug_apis", C, "debug_anomaly_profiler.py", 75),
            ("tensor_created_then_moved", C, "debug_anomaly_profiler.py", 76),
            ("dataloader_pin_memory", C, "debug_anomaly_profiler.py", 41),
            ("dataloader_persistent_workers", C, "debug_anomaly_profiler.py", 41),
            ("dataloader_prefetch_factor", C, "debug_anomaly_profiler.py", 41),
            ("zero_grad_set_to_none", D, "debug_anomaly_profiler.py", 52),
        }
        | wide("debug_anomaly_profiler.py", "tf32", "mixed_precision", "torch_compile"),
    },
    "exemplary_cnn.py": {"entry": "exemplary_cnn.py", "findings": set()},
    "exemplary_ddp_vision.py": {"entry": "exemplary_ddp_vision.py", "findings": set()},
    # Workers from the job's CPUs read five ways (the script checker's advice): none is asked
    # about; the one read as a bare environment variable is a string, changed where it is read.
    "slurm_job_workers.py": {
        "entry": "slurm_job_workers.py",
        "findings": {("dataloader_num_workers", C, "slurm_job_workers.py", 116)},
    },
    # Neither trains nor evaluates (no model): no program-wide rule, but its own lines are read
    # like any other (issue 41, "no gates"): a loader in the main process, zeros made then moved.
    "dataset_statistics.py": {
        "entry": "dataset_statistics.py",
        "findings": {
            ("dataloader_num_workers", C, "dataset_statistics.py", 12),
            ("dataloader_pin_memory", C, "dataset_statistics.py", 12),
            ("tensor_created_then_moved", C, "dataset_statistics.py", 14),
            ("tensor_created_then_moved", C, "dataset_statistics.py", 15),
        },
    },
    # torch.nn.DataParallel twice, ConvTranspose2d + BN, cudnn.benchmark through an alias.
    "dcgan_faces.py": {
        "entry": "dcgan_faces.py",
        "findings": {
            ("data_parallel", C, "dcgan_faces.py", 97),
            ("data_parallel", C, "dcgan_faces.py", 98),
            ("conv_bias_before_batchnorm", C, "dcgan_faces.py", 57),
            ("conv_bias_before_batchnorm", C, "dcgan_faces.py", 80),
            ("tensor_created_then_moved", C, "dcgan_faces.py", 114),
            ("zero_grad_set_to_none", D, "dcgan_faces.py", 113),
            ("zero_grad_set_to_none", D, "dcgan_faces.py", 124),
        }
        | wide(
            "dcgan_faces.py",
            "tf32",
            "mixed_precision",
            "torch_compile",
            "channels_last",
        ),
    },
    # Three files: findings land in the file they are about; program-wide ones in the entry.
    "resnet_project": {
        "entry": "train.py",
        "findings": {
            ("conv_bias_before_batchnorm", C, "model.py", 28),
            ("cpu_augmentation", C, "data.py", 14),
            ("dataloader_num_workers", Q, "data.py", 30),
            ("dataloader_num_workers", Q, "data.py", 31),
            ("zero_grad_set_to_none", D, "train.py", 40),
            ("no_grad_evaluation", C, "train.py", 12),
        }
        | wide("train.py", "cudnn_benchmark", "tf32", "torch_compile", "channels_last"),
    },
    "lightning_project": {
        "entry": "train.py",
        "findings": {
            ("manual_attention", C, "model.py", 24),
            ("dataloader_num_workers", Q, "data.py", 33),
            ("dataloader_pin_memory", C, "data.py", 33),
        }
        | wide("train.py", "torch_compile"),
    },
    # --- issue 41: created-then-moved through nesting, no gates, tabs ----------------------
    # Made then moved through torch.exp and arithmetic, torch.cumprod, .long(), .cuda(), and a
    # helper's result moved by its caller, and a local (`betas`) made on one line and moved on
    # the next; the batch and randn_like moves are not this rule.
    "ddpm_mnist.py": {
        "entry": "ddpm_mnist.py",
        "findings": {
            ("tensor_created_then_moved", C, "ddpm_mnist.py", 16),
            ("tensor_created_then_moved", C, "ddpm_mnist.py", 23),
            ("tensor_created_then_moved", C, "ddpm_mnist.py", 24),
            ("tensor_created_then_moved", C, "ddpm_mnist.py", 49),
            ("tensor_created_then_moved", C, "ddpm_mnist.py", 50),
            ("tensor_created_then_moved", C, "ddpm_mnist.py", 72),
        }
        | wide("ddpm_mnist.py", "mixed_precision", "tf32", "torch_compile"),
    },
    # Helpers alone, nothing trains: each latent or label tensor is made on the CPU and moved.
    "gan_sampling.py": {
        "entry": "gan_sampling.py",
        "findings": {
            ("tensor_created_then_moved", C, "gan_sampling.py", 8),
            ("tensor_created_then_moved", C, "gan_sampling.py", 12),
            ("tensor_created_then_moved", C, "gan_sampling.py", 17),
        },
    },
    # A model module alone: conv1, the shortcut's conv and the stem's keep a bias the batch
    # norm cancels; conv2 already has bias=False.
    "resnet_blocks.py": {
        "entry": "resnet_blocks.py",
        "findings": {
            ("conv_bias_before_batchnorm", C, "resnet_blocks.py", 12),
            ("conv_bias_before_batchnorm", C, "resnet_blocks.py", 19),
            ("conv_bias_before_batchnorm", C, "resnet_blocks.py", 30),
        },
    },
    # An attention module alone, returning its attention maps.
    "attention_block.py": {
        "entry": "attention_block.py",
        "findings": {("manual_attention", C, "attention_block.py", 22)},
    },
    # Tab-indented throughout: the no_grad fix wraps the loop with tabs, not spaces.
    "tabs_fashion_mnist.py": {
        "entry": "tabs_fashion_mnist.py",
        "findings": {
            ("conv_bias_before_batchnorm", C, "tabs_fashion_mnist.py", 14),
            ("no_grad_evaluation", C, "tabs_fashion_mnist.py", 27),
            ("zero_grad_set_to_none", D, "tabs_fashion_mnist.py", 51),
        }
        | wide("tabs_fashion_mnist.py", *WIDE),
    },
    # --- issue 41: program-wide fixes where they hold for the whole run ---------------------
    # TF32 is set in the Transformer variant's constructor only: a GRU run goes without it.
    "tf32_model_variant.py": {
        "entry": "tf32_model_variant.py",
        "findings": {("tf32", C, "tf32_model_variant.py", 50)},
        "afters": {"tf32": "    torch.backends.cuda.matmul.allow_tf32 = True"},
    },
    # TF32 and cudnn.benchmark under `if checkpoint is None:`: off on every resumed run.
    "tf32_fresh_start_only.py": {
        "entry": "tf32_fresh_start_only.py",
        "findings": {
            ("tf32", C, "tf32_fresh_start_only.py", 20),
            ("cudnn_benchmark", C, "tf32_fresh_start_only.py", 20),
        },
        "afters": {
            "tf32": "    torch.backends.cuda.matmul.allow_tf32 = True",
            "cudnn_benchmark": "    torch.backends.cudnn.benchmark = True",
        },
    },
    # torch.compile wraps the encoder inside the model: the model trained is not compiled.
    "compile_sub_block.py": {
        "entry": "compile_sub_block.py",
        "findings": {("torch_compile", C, "compile_sub_block.py", 75)},
        "afters": {"torch_compile": "    model = torch.compile(model)"},
    },
    # CNN encoder and LSTM decoder in one model, the decoder built first: the model-level fixes
    # go on the model trained, never on the decoder.
    "caption_lstm_decoder.py": {
        "entry": "caption_lstm_decoder.py",
        "findings": {
            ("torch_compile", C, "caption_lstm_decoder.py", 73),
            ("channels_last", C, "caption_lstm_decoder.py", 73),
        },
        "afters": {
            "torch_compile": "    model = torch.compile(model)",
            "channels_last": "    model = model.to(memory_format=torch.channels_last)",
        },
    },
    # --- Hydra: the Trainer and the datamodule built from YAML configs (session 20) -------------
    # train.yaml composes trainer/gpu.yaml over trainer/default.yaml, whose precision: 32 and
    # missing benchmark are the Trainer's own arguments: the fixes go there, in YAML. The
    # datamodule's loaders take num_workers from self.hparams, which Hydra fills from
    # data/cifar.yaml's num_workers: 0.
    "hydra_lightning": {
        "entry": "src/train.py",
        "findings": {
            ("mixed_precision", C, "configs/trainer/default.yaml", 12),
            ("cudnn_benchmark", C, "configs/trainer/default.yaml", 1),
            ("dataloader_num_workers", C, "configs/data/cifar.yaml", 4),
            ("tf32", C, "src/train.py", None),
            ("torch_compile", C, "src/models/classifier.py", None),
            ("channels_last", C, "src/models/classifier.py", None),
        },
    },
}
