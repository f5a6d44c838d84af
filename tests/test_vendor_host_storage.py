"""Host, storage, container-runtime and scheduler-node signatures (knowledge_base/signatures/vendor_host_storage.yaml):
each realistic multi-line log, as a job's output or the node's kernel log shows it, is decided by the new signature."""

from __future__ import annotations

import pytest
from catalog_checks import assert_signature_decides

from diag_service.domain import Category
from diag_service.kb.text import analyze_text
from diag_service.signatures import load_signatures

_STEP = "[rank3]:[2024-05-02 11:02:10] step 1200 | loss 2.314 | lr 3.0e-4 | 412 samples/s\n"

CASES = [
    (
        "h_oom_reaper",
        Category.HOST_OOM,
        _STEP
        + "[ 8123.400001] python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), "
        "order=0, oom_score_adj=0\n"
        + "[ 8123.400210] oom_reaper: reaped process 4242 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB\n",
    ),
    (
        "h_nfs_server_not_responding",
        Category.STORAGE,
        _STEP
        + "[ 9001.100000] nfs: server nfs01.cluster.local not responding, still trying\n"
        + "[ 9121.200000] INFO: task python:4242 blocked for more than 120 seconds.\n"
        + '[ 9121.200001] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.\n',
    ),
    (
        "h_lustre_evicted",
        Category.STORAGE,
        "[ 7700.000001] Lustre: lustre-OST0003-osc-ffff8f2a3b4c5000: Connection to lustre-OST0003 (at 10.0.0.5@o2ib) "
        "was lost; in progress operations using this service will wait for recovery to complete\n"
        + "[ 7777.123456] LustreError: 167-0: lustre-OST0003-osc-ffff8f2a3b4c5000: This client was evicted by "
        "lustre-OST0003; in progress operations using this service will fail.\n",
    ),
    (
        "h_ext4_fs_error",
        Category.STORAGE,
        "[ 3456.780000] blk_update_request: I/O error, dev nvme0n1, sector 123456 op 0x1:(WRITE) "
        "flags 0x800 phys_seg 1 prio class 0\n"
        + "[ 3456.789012] EXT4-fs error (device nvme0n1p1): ext4_journal_check_start:83: Detected aborted journal\n"
        + "[ 3456.789013] EXT4-fs (nvme0n1p1): Remounting filesystem read-only\n",
    ),
    (
        "h_s3_clock_skew",
        Category.INFRASTRUCTURE,
        "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 301, in save_checkpoint\n'
        "    s3.upload_file(path, bucket, key)\n"
        '  File "/usr/local/lib/python3.10/dist-packages/boto3/s3/transfer.py", line 292, in upload_file\n'
        "    raise S3UploadFailedError(\n"
        "boto3.exceptions.S3UploadFailedError: Failed to upload /tmp/ckpt.pt to bucket/ckpt/step_1200.pt: "
        "An error occurred (RequestTimeTooSkewed) when calling the PutObject operation: "
        "The difference between the request time and the current time is too large.\n",
    ),
    (
        "h_gcs_throttled_unavailable",
        Category.STORAGE,
        "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 288, in save\n'
        "    blob.upload_from_filename(local)\n"
        '  File "/usr/local/lib/python3.10/dist-packages/google/cloud/storage/blob.py", line 2959, in upload_from_filename\n'
        "    self._handle_filename_and_upload(\n"
        "google.api_core.exceptions.TooManyRequests: 429 POST https://storage.googleapis.com/upload/storage/v1/b/my-bucket/o"
        "?uploadType=resumable: The rate of change requests to the object my-bucket/ckpt/latest exceeds the rate limit. "
        "Please reduce the rate of create, update, and delete requests.\n",
    ),
    (
        "h_container_storage_full",
        Category.INFRASTRUCTURE,
        "Unable to find image 'nvcr.io/nvidia/pytorch:24.03-py3' locally\n"
        "24.03-py3: Pulling from nvidia/pytorch\n"
        "docker: write /var/lib/docker/tmp/GetImageBlob123456789: no space left on device.\n"
        "See 'docker run --help'.\n",
    ),
    (
        "h_container_cuda_requirement",
        Category.CONFIG,
        "docker: Error response from daemon: failed to create task for container: failed to create shim task: "
        "OCI runtime create failed: runc create failed: unable to start container process: error during container init: "
        "error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a "
        "newer version, or use an earlier cuda container: unknown.\n",
    ),
    (
        "h_slurm_prolog_failed",
        Category.INFRASTRUCTURE,
        "slurmstepd: error: TaskProlog failed status=127\n"
        "srun: error: gpu-node-021: tasks 0-7: Exited with exit code 127\n",
    ),
    (
        "h_mce_fatal",
        Category.INFRASTRUCTURE,
        _STEP
        + "[ 6543.210987] mce: [Hardware Error]: CPU 12: Machine Check Exception: 5 Bank 7: be00000000800400\n"
        + "[ 6543.210990] mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff8a2b3c4d> {intel_idle+0x8d/0x130}\n"
        + "[ 6543.211000] Kernel panic - not syncing: Fatal machine check\n",
    ),
    (
        "h_edac_uncorrected",
        Category.INFRASTRUCTURE,
        "[ 4444.000001] EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 "
        "(channel:1 slot:0 page:0x12345 offset:0x0 grain:32 syndrome:0x0)\n"
        "[ 4444.000002] Memory failure: 0x12345: recovery action for dirty LRU page: Recovered\n",
    ),
]


@pytest.mark.parametrize(("sig_id", "category", "text"), CASES, ids=[c[0] for c in CASES])
def test_host_storage_signature_decides(sig_id: str, category: Category, text: str) -> None:
    assert_signature_decides(text, sig_id, category)


def test_ids_prefixed_and_sourced() -> None:
    sigs = load_signatures()
    mine = [c.spec for c in sigs.signatures if c.spec.id.startswith("h_")]
    assert len(mine) >= 25
    for spec in mine:
        assert spec.source and spec.source.startswith("https://"), spec.id


def test_corrected_errors_do_not_fire() -> None:
    d = analyze_text("[ 4444.000003] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0\n")
    assert "h_edac_uncorrected" not in [h.signature_id for h in d.signature_hits]
    d = analyze_text("chronyd[812]: System clock wrong by -0.004222 seconds, adjustment started\n")
    assert "h_clock_wrong" not in [h.signature_id for h in d.signature_hits]
