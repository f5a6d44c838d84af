"""Vendor CUDA / cuDNN / NVML / PyTorch-distributed signatures (knowledge_base/signatures/vendor_cuda_torch.yaml):
each one, seen at the end of a realistic traceback, decides the diagnosis."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_checks import assert_signature_decides

from diag_service.domain import Category
from diag_service.signatures import load_signatures

_TRAIN = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/workspace/train.py", line 212, in <module>\n'
    "[rank1]:     main(cfg)\n"
    '[rank1]:   File "/workspace/train.py", line 181, in main\n'
    "[rank1]:     loss = step(model, batch)\n"
)
_TORCH = (
    '[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1532, in _wrapped_call_impl\n'
    "[rank1]:     return self._call_impl(*args, **kwargs)\n"
)
_ASYNC = (
    "[rank1]: CUDA kernel errors might be asynchronously reported at some other API call, "
    "so the stacktrace below might be incorrect.\n"
    "[rank1]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
)

CASES = [
    (
        "v_cuda_stream_capture",
        Category.USER_CODE,
        _TRAIN + _TORCH + "[rank1]: RuntimeError: CUDA error: operation not permitted when stream is capturing\n" + _ASYNC,
    ),
    (
        "v_cuda_mps",
        Category.INFRASTRUCTURE,
        _TRAIN
        + '[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py", line 319, in _lazy_init\n'
        + "[rank1]:     torch._C._cuda_init()\n"
        + "[rank1]: RuntimeError: CUDA error: MPS client failed to connect to the MPS control daemon or the MPS server\n",
    ),
    (
        "v_cuda_stub_library",
        Category.CONFIG,
        _TRAIN + _TORCH + "[rank1]: RuntimeError: CUDA error: CUDA driver is a stub library\n" + _ASYNC,
    ),
    (
        "cuda_device_config",  # the built-in signature keeps this message: config (gpu-018 of the dev corpus)
        Category.CONFIG,
        _TRAIN
        + '[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py", line 408, in set_device\n'
        + "[rank1]:     torch._C._cuda_setDevice(device)\n"
        + "[rank1]: RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n"
        + _ASYNC,
    ),
    (
        "v_cuda_library_alloc_failed",
        Category.GPU_OOM,
        _TRAIN
        + '[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/conv.py", line 456, in _conv_forward\n'
        + "[rank1]:     return F.conv2d(input, weight, bias, self.stride,\n"
        + "[rank1]: RuntimeError: Unable to find a valid cuDNN algorithm to run convolution\n",
    ),
    (
        "v_cudnn_version_mismatch",
        Category.CONFIG,
        _TRAIN
        + '[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/backends/cudnn/__init__.py", line 91, in _init\n'
        + "[rank1]:     raise RuntimeError(\n"
        + "[rank1]: RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but found "
        "runtime version (8, 4, 0). PyTorch already comes bundled with cuDNN.\n",
    ),
    (
        "v_nvml_driver_not_loaded",
        Category.INFRASTRUCTURE,
        "+ nvidia-smi\nFailed to initialize NVML: Driver Not Loaded\n"
        "srun: error: gpu-node-004: task 0: Exited with exit code 9\n",
    ),
    (
        "v_ddp_static_graph_changed",
        Category.USER_CODE,
        _TRAIN
        + '[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/_tensor.py", line 525, in backward\n'
        + "[rank1]:     torch.autograd.backward(\n"
        + "[rank1]: RuntimeError: Your training graph has changed in this iteration, e.g., one parameter is unused in "
        "first iteration, but then got used in the second iteration. this is not compatible with static_graph set to True.\n",
    ),
    (
        "v_dist_backend_not_built",
        Category.CONFIG,
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 1302, '
        "in _new_process_group_helper\n"
        "    raise RuntimeError(\"Distributed package doesn't have NCCL built in\")\n"
        "RuntimeError: Distributed package doesn't have NCCL built in\n",
    ),
    (  # PyTorch's own default its Windows build cannot honour (pytorch/pytorch#139990; corpus dev n13b-004)
        "v_c10d_libuv_unavailable",
        Category.FRAMEWORK,
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 189, in _create_c10d_store\n'
        "    return TCPStore(\n"
        "torch.distributed.DistStoreError: use_libuv was requested but PyTorch was build without libuv support, "
        "run with USE_LIBUV=0 to disable it.\n",
    ),
    (  # FSDP2: a sharded submodule called outside the root's forward (zoo dev b6_uc_fsdp2_submodule_eval)
        "v_dtensor_mixed_with_tensor",
        Category.USER_CODE,
        _TRAIN
        + '[rank1]:   File "/home/user/proj/train.py", line 77, in evaluate\n'
        + "[rank1]:     emb = model.tok(probe)\n"
        + '[rank1]:   File "/opt/venv/lib/python3.11/site-packages/torch/distributed/tensor/_dispatch.py", line 386, '
        "in _try_replicate_spec_for_scalar_tensor\n"
        + "[rank1]: RuntimeError: aten.embedding.default got mixed torch.Tensor and DTensor, need to convert all "
        "torch.Tensor to DTensor before calling distributed operators!\n",
    ),
    (  # the last batch of rank 2's part holds one row: rank 2's lines of the real zoo dev run b7_uc_bn_last_batch_r2
        "v_batchnorm_single_sample",
        Category.USER_CODE,
        "".join(ln for ln in (Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs" / "b7_uc_bn_last_batch_r2"
                              / "console.log").read_text().splitlines(keepends=True) if ln.startswith("[default2]:")),
    ),
    (
        "v_torch_op_no_cuda_kernel",
        Category.CONFIG,
        _TRAIN
        + '[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torchvision/ops/boxes.py", line 41, in nms\n'
        + "[rank1]:     return torch.ops.torchvision.nms(boxes, scores, iou_threshold)\n"
        + "[rank1]: NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. "
        "This could be because the operator doesn't exist for this backend.\n",
    ),
    (
        "v_dtype_mismatch",
        Category.USER_CODE,
        _TRAIN + _TORCH
        + "[rank1]: RuntimeError: expected mat1 and mat2 to have the same dtype, but got: float != c10::BFloat16\n",
    ),
]


@pytest.mark.parametrize(("sig_id", "category", "text"), CASES, ids=[c[0] for c in CASES])
def test_vendor_signature_decides(sig_id: str, category: Category, text: str) -> None:
    assert_signature_decides(text, sig_id, category)


def test_vendor_ids_are_prefixed_and_cite_a_source() -> None:
    ours = [c.spec for c in load_signatures().signatures if c.spec.id.startswith("v_")]
    assert len(ours) >= 25
    for spec in ours:
        assert spec.source and spec.source.startswith("https://"), spec.id
