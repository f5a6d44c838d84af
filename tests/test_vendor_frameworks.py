"""knowledge_base/signatures/vendor_frameworks.yaml: framework and launcher messages in a realistic log.

Each case is a short log as the framework or launcher prints it, ending in the message the signature
knows; the analysis must report the signature and the category it stands for.
"""

from __future__ import annotations

import pytest
from catalog_checks import assert_signature_decides

from diag_service.domain import Category

DS_OFFLOAD = (
    "[2024-05-02 10:11:12,345] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.14.0\n"
    "[2024-05-02 10:11:12,900] [INFO] [logging.py:96:log_dist] [Rank 0] Using client Optimizer as basic optimizer\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 210, in <module>\n'
    "    model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, optimizer=optimizer)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/engine.py", line 1249, in _configure_optimizer\n'
    "    raise ZeRORuntimeException(msg)\n"
    "deepspeed.runtime.zero.utils.ZeRORuntimeException: You are using ZeRO-Offload with a client provided "
    "optimizer (<class 'torch.optim.adamw.AdamW'>) which in most cases will yield poor performance. Please either "
    "use deepspeed.ops.adam.DeepSpeedCPUAdam or set an optimizer in your ds-config "
    "(https://www.deepspeed.ai/docs/config-json/#optimizer-parameters).\n"
)

DS_DP_RESUME = (
    "[2024-05-02 10:20:00,001] [INFO] [engine.py:3000:_load_checkpoint] Loading checkpoint /ckpt/global_step2000\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/zero/stage_1_and_2.py", line 2270, '
    "in _load_legacy_checkpoint\n"
    "    raise ZeRORuntimeException(\n"
    "deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a DP world size of 16 "
    "but the current world size is 8. Automatic adjustment of ZeRO's optimizer state partitioning with a new "
    "world size is not currently supported.\n"
)

MCORE_SHAPE = (
    " > loading checkpoint from /ckpt/gpt-7b at iteration 5000\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/megatron-lm/megatron/training/checkpointing.py", line 1100, in load_checkpoint\n'
    "    state_dict = dist_checkpointing.load(sharded_state_dict, checkpoint_name, load_strategy)\n"
    '  File "/opt/megatron-lm/megatron/core/dist_checkpointing/strategies/torch.py", line 600, in _validate\n'
    "    raise CheckpointingException(_msg)\n"
    "megatron.core.dist_checkpointing.core.CheckpointingException: Global shape mismatch for loaded "
    "(torch.Size([32000, 4096])) and expected ((32256, 4096)) tensor for key embedding.word_embeddings.weight\n"
)

PEFT_TARGETS = (
    "Loading checkpoint shards: 100%|##########| 2/2 [00:04<00:00,  2.10s/it]\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/sft.py", line 88, in <module>\n'
    "    model = get_peft_model(model, lora_config)\n"
    '  File "/usr/local/lib/python3.10/site-packages/peft/tuners/tuners_utils.py", line 500, in inject_adapter\n'
    "    raise ValueError(\n"
    "ValueError: Target modules {'q_proj', 'v_proj'} not found in the base model. "
    "Please check the target modules and try again.\n"
)

LIGHTNING_NTASKS = (
    "GPU available: True (cuda), used: True\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 40, in <module>\n'
    "    trainer = L.Trainer(devices=8, num_nodes=2, strategy='ddp')\n"
    '  File "/usr/local/lib/python3.10/site-packages/lightning/fabric/plugins/environments/slurm.py", line 180, '
    "in _validate_srun_variables\n"
    "    raise RuntimeError(\n"
    "RuntimeError: You set `--ntasks=16` in your SLURM bash script, but this variable is not supported. "
    "HINT: Use `--ntasks-per-node=16` instead.\n"
)

SLURM_MEM = (
    "Epoch 3:  41%|####      | 812/1980 [20:11<29:03,  1.49s/it, loss=2.31]\n"
    "slurmstepd: error: Job 412233 exceeded memory limit (270336000 > 268435456), being killed\n"
    "slurmstepd: error: Exceeded job memory limit\n"
)

OMPI_SLOTS = (
    "+ mpirun -np 16 -H gpu-node-001:8,gpu-node-002:4 python train_hvd.py\n"
    "--------------------------------------------------------------------------\n"
    "There are not enough slots available in the system to satisfy the 16\n"
    "slots that were requested by the application:\n"
    "\n"
    "  python\n"
    "\n"
    "Either request fewer slots for your application, or make more slots available\n"
    "for use.\n"
    "--------------------------------------------------------------------------\n"
)

K8S_NODE_SHUTDOWN = (
    "Name:             pytorchjob-llm-worker-3\n"
    "Namespace:        training\n"
    "Status:           Failed\n"
    "Reason:           Terminated\n"
    "Message:          Pod was terminated in response to imminent node shutdown.\n"
)

NCCL_NET = (
    "gpu-node-001:2211:2211 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.11<0>\n"
    "gpu-node-001:2211:2211 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n"
    "gpu-node-001:2211:2211 [0] NCCL INFO NET/IB : No device found.\n"
    "gpu-node-001:2211:2211 [0] init.cc:189 NCCL WARN Error: network IB not found.\n"
)

TRITON_CC = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.11/site-packages/triton/runtime/build.py", line 32, in _build\n'
    "    raise RuntimeError(\n"
    "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.\n"
)

FLASH_HEAD_DIM = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 301, in train_step\n'
    "    loss.backward()\n"
    '  File "/usr/local/lib/python3.10/dist-packages/flash_attn/flash_attn_interface.py", line 160, '
    "in _flash_attn_backward\n"
    "    dq, dk, dv, softmax_d, = flash_attn_cuda.bwd(\n"
    "RuntimeError: FlashAttention backward for head dim > 192 requires A100/A800 or H100/H800\n"
)

RAY_RUNTIME_ENV = (
    "2024-06-01 12:00:01,000 INFO worker.py:1600 -- Connecting to existing Ray cluster at address: 10.0.0.2:6379\n"
    "(raylet) Runtime env creation failed for 'pip': Failed to install pip requirements\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/launch.py", line 30, in <module>\n'
    "    ray.get(trainer.fit.remote())\n"
    "ray.exceptions.RuntimeEnvSetupError: Failed to set up runtime environment.\n"
)

# ZeRO-3's fetch_sub_module found a parameter its module needs still partitioned (partitioned_param_coordinator.py)
DS_ZERO3_NOT_AVAILABLE = (
    "[2024-05-02 10:30:00,001] [INFO] [logging.py:96:log_dist] [Rank 0] step=1, skipped=0, lr=[1e-05]\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/finetune.py", line 300, in <module>\n'
    "    outputs = model(**batch)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/zero/parameter_offload.py", line 392, '
    "in _pre_forward_module_hook\n"
    "    self.pre_sub_module_forward_function(module)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/zero/partitioned_param_coordinator.py", '
    "line 353, in fetch_sub_module\n"
    "    assert param.ds_status == ZeroParamStatus.AVAILABLE, param.ds_summary()\n"
    "AssertionError: {'id': 853, 'status': 'NOT_AVAILABLE', 'numel': 0, 'ds_numel': 0, 'shape': (0,), "
    "'ds_shape': (0,), 'requires_grad': True, 'grad_shape': None, 'persist': True, 'active_sub_modules': {7}}\n"
)


@pytest.mark.parametrize(
    ("log", "signature", "category"),
    [
        (DS_ZERO3_NOT_AVAILABLE, "zero3_inflight_params", Category.FRAMEWORK),
        (DS_OFFLOAD, "f_ds_zero_offload_client_optimizer", Category.CONFIG),
        (DS_DP_RESUME, "f_ds_ckpt_dp_world_size", Category.CONFIG),
        (MCORE_SHAPE, "f_mcore_ckpt_shape_mismatch", Category.CONFIG),
        (PEFT_TARGETS, "f_peft_target_modules_missing", Category.CONFIG),
        (LIGHTNING_NTASKS, "f_lightning_slurm_ntasks", Category.CONFIG),
        (SLURM_MEM, "f_slurm_memory_limit_kill", Category.HOST_OOM),
        (OMPI_SLOTS, "f_ompi_not_enough_slots", Category.CONFIG),
        (K8S_NODE_SHUTDOWN, "f_k8s_node_shutdown", Category.INFRASTRUCTURE),
        (NCCL_NET, "f_nccl_net_not_found", Category.CONFIG),
        (TRITON_CC, "f_compile_no_c_compiler", Category.CONFIG),
        (FLASH_HEAD_DIM, "f_flash_attn_bwd_head_dim", Category.CONFIG),
        (RAY_RUNTIME_ENV, "f_ray_runtime_env_setup", Category.CONFIG),
    ],
    ids=lambda v: v if isinstance(v, str) and v.startswith(("f_", "zero3")) else None,
)
def test_vendor_framework_message(log: str, signature: str, category: Category) -> None:
    assert_signature_decides(log, signature, category)
