"""The signature catalog is data: validated at load, complete for the failure kinds we promise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diag_service.domain import Category, EventRole
from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.signatures import SignatureError, default_signature_dir, load_signatures

REQUIRED = {
    "cuda_oom", "nccl_watchdog_timeout", "nccl_ib_completion_error", "nccl_system_error", "nccl_internal_error",
    "nccl_remote_error", "nccl_unhandled_cuda_error", "xid", "uncorrectable_ecc", "illegal_memory_access",
    "unspecified_launch_failure", "device_side_assert", "nan_loss", "process_sigkill", "host_oom_killer",
    "sigbus_shm", "segfault", "import_error", "shape_mismatch", "checkpoint_corrupt", "checkpoint_io_error",
    "no_space_left", "permission_denied", "rendezvous_timeout", "address_in_use", "child_failed",
    "connection_reset", "dataloader_worker_killed", "c10d_store_timeout", "version_mismatch",
}
XID_CODES = {13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120}


def test_catalog_loads_and_covers_required_kinds() -> None:
    sigs = load_signatures()
    ids = {c.spec.id for c in sigs.signatures}
    assert ids >= REQUIRED, REQUIRED - ids
    assert {int(k) for k in sigs.tables["xid"]} >= XID_CODES
    for c in sigs.signatures:
        assert c.spec.source and c.spec.source.startswith("https://"), c.spec.id


@pytest.mark.parametrize(
    ("code", "category", "role"),
    [(79, Category.GPU_HARDWARE, EventRole.ROOT), (48, Category.GPU_HARDWARE, EventRole.ROOT),
     (13, Category.USER_CODE, EventRole.ROOT), (45, Category.GPU_HARDWARE, EventRole.SYMPTOM),
     (74, Category.GPU_HARDWARE, EventRole.ROOT), (119, Category.GPU_HARDWARE, EventRole.ROOT)],
)
def test_xid_code_table(tmp_path: Path, code: int, category: Category, role: EventRole) -> None:
    log = tmp_path / "gpu-node-007.dmesg.log"
    log.write_text(f"[Tue Jul 26 13:20:01 2024] NVRM: Xid (PCI:0000:3b:00): {code}, pid=4242, name=python, Ch 0000000c\n")
    d = diagnose(DiagnoseRequest(path=str(log)))
    hit = next(h for h in d.signature_hits if h.signature_id == "xid")
    assert hit.details["code"] == str(code)
    assert hit.category is category and hit.role is role
    if role is EventRole.ROOT:
        assert d.category is category
        if category is Category.GPU_HARDWARE:
            assert d.faulty_nodes == ["gpu-node-007"]


def _copy_catalog(tmp_path: Path) -> Path:
    dst = tmp_path / "signatures"
    shutil.copytree(default_signature_dir(), dst)
    return dst


def test_new_failure_kind_is_a_data_change(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                   "    fs.open(path)\nLustreQuotaError: OST0003 is full for project 42\n")
    assert diagnose(DiagnoseRequest(path=str(log))).category is Category.UNKNOWN
    d = tmp_path / "site"
    d.mkdir()
    (d / "site.yaml").write_text(
        "version: 1\nsignatures:\n  - id: lustre_quota\n    name: Lustre project quota\n"
        "    patterns: ['LustreQuotaError']\n    category: storage\n    priority: 70\n    confidence: 0.9\n"
        "    explanation: The project's Lustre quota is exhausted.\n    source: https://doc.lustre.org/\n"
        "    examples: ['LustreQuotaError: OST0003 is full']\n"
    )
    res = diagnose(DiagnoseRequest(path=str(log), signatures_dir=str(d)))
    assert res.category is Category.STORAGE
    assert res.signature_hits[0].signature_id == "lustre_quota"


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        ("patterns: ['(unclosed']", "does not compile"),
        ("patterns: ['nothing-like-it']", "example does not match"),
        ("patterns: ['LustreQuotaError']\n    colour: blue", "colour"),
        ("patterns: ['LustreQuotaError']\n    cascade_name: '{message} on {node}'", "may only use {message}"),
    ],
)
def test_malformed_signature_is_refused_with_a_clear_error(tmp_path: Path, snippet: str, message: str) -> None:
    d = _copy_catalog(tmp_path)
    (d / "bad.yaml").write_text(
        "version: 1\nsignatures:\n  - id: bad_one\n    name: Bad\n    " + snippet + "\n    category: storage\n"
        "    priority: 10\n    confidence: 0.5\n    explanation: x\n    examples: ['LustreQuotaError: full']\n"
    )
    with pytest.raises(SignatureError) as exc:
        load_signatures(d)
    assert "bad.yaml" in str(exc.value) and message in str(exc.value)


def test_duplicate_id_is_refused(tmp_path: Path) -> None:
    d = _copy_catalog(tmp_path)
    (d / "dup.yaml").write_text((d / "gpu.yaml").read_text())
    with pytest.raises(SignatureError, match="already defined"):
        load_signatures(d)


_SITE = (
    "version: 1\nsignatures:\n  - id: lustre_quota\n    name: Lustre project quota\n"
    "    patterns: ['LustreQuotaError']\n    category: storage\n    priority: 70\n    confidence: 0.9\n"
    "    explanation: The project's Lustre quota is exhausted.\n    source: https://doc.lustre.org/\n"
    "    examples: ['LustreQuotaError: OST0003 is full']\n"
)


def test_site_signatures_on_the_search_path_add_to_the_built_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "lustre.yaml").write_text(_SITE)
    builtin = load_signatures()
    monkeypatch.setenv("DIAG_SIGNATURES_PATH", str(site))
    layered = load_signatures()
    assert len(layered) == len(builtin) + 1
    assert layered.by_id("lustre_quota").category is Category.STORAGE
    assert layered.by_id("cuda_oom").category is Category.GPU_OOM  # the built-ins are still there
    log = tmp_path / "job.log"
    log.write_text("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                   "    fs.open(path)\nLustreQuotaError: OST0003 is full for project 42\n")
    assert diagnose(DiagnoseRequest(path=str(log))).category is Category.STORAGE
    monkeypatch.setenv("DIAG_SIGNATURES_PATH", str(site / "lustre.yaml"))  # one file named directly
    assert load_signatures().by_id("lustre_quota").category is Category.STORAGE
    monkeypatch.setenv("DIAG_SIGNATURES_PATH", str(tmp_path / "missing"))
    with pytest.raises(SignatureError, match="does not exist"):
        load_signatures()


def test_a_site_file_cannot_redefine_a_built_in_signature(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "mine.yaml").write_text(_SITE.replace("lustre_quota", "cuda_oom"))
    monkeypatch.setenv("DIAG_SIGNATURES_PATH", str(site))
    with pytest.raises(SignatureError, match="'cuda_oom' already defined"):
        load_signatures()


def test_an_example_the_extractor_never_passes_on_fails_validation(tmp_path: Path) -> None:
    # re2 (the extractor's pre-filter) has no look-arounds, so this pattern adds nothing to the
    # pre-filter, and the example has none of the built-in trigger words: it would never be matched.
    d = _copy_catalog(tmp_path)
    (d / "site.yaml").write_text(_SITE.replace("['LustreQuotaError']", "['Lustre(?=Quota)']")
                                 .replace("LustreQuotaError: OST0003 is full", "LustreQuota OST0003 is full"))
    with pytest.raises(SignatureError, match="never reaches the signature stage"):
        load_signatures(d)
    # the same signature with a pattern re2 can run is accepted
    (d / "site.yaml").write_text(_SITE.replace("LustreQuotaError: OST0003 is full", "LustreQuotaError OST0003 is full"))
    assert load_signatures(d).by_id("lustre_quota")


def _diagnose_text(tmp_path: Path, text: str) -> object:
    log = tmp_path / "rank0.log"
    log.write_text(text)
    return diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False, recovery=False))


def test_an_exception_whose_message_starts_on_the_next_line_is_keyed_on_that_message(tmp_path: Path) -> None:
    # safetensors raises RuntimeError("""\n  Some tensors share memory ..."""): the exception line is bare
    d = _diagnose_text(tmp_path, (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/safetensors/torch.py", line 481, in _flatten\n'
        "    raise RuntimeError(\n"
        "RuntimeError: \n"
        "            Some tensors share memory, this will lead to duplicate memory on disk and potential"
        " differences when loading them again: [{'unet.conv_in.weight', 'conv_in.weight'}].\n"
        "            A potential way to correctly save your model is to use `save_model`.\n"
    ))
    assert [h.signature_id for h in d.signature_hits][0] == "safetensors_shared_tensors"
    assert d.category is Category.FRAMEWORK


# Messages as the vendors document them (the source of each is the signature's `source`): each gets
# the category its documentation gives, not `unknown`.
VENDOR_LINES = [
    ("RuntimeError: CUDA error: the launch timed out and was terminated", Category.INFRASTRUCTURE),
    ("RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing,"
     " you must use the 'spawn' start method", Category.USER_CODE),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate"
     " 17179869184 bytes.", Category.GPU_OOM),
    ("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.20 GiB for an array with shape"
     " (1000, 1000, 430) and data type float64", Category.HOST_OOM),
    ("slurmstepd: error: *** JOB 608 ON gpu-node-001 CANCELLED AT 2022-08-12T02:06:12 DUE TO JOB REQUEUE ***",
     Category.INFRASTRUCTURE),
    ("botocore.exceptions.ReadTimeoutError: Read timeout on endpoint URL:"
     ' "https://s3.amazonaws.com/bucket/shard-0001.tar"', Category.STORAGE),
    ("OSError: [Errno 107] Transport endpoint is not connected: '/mnt/data/shard-0001.parquet'", Category.STORAGE),
    ("ray.exceptions.ObjectStoreFullError: Failed to put object ffffffff in object store because it is full.",
     Category.HOST_OOM),
    ("A process or daemon was unable to complete a TCP connection", Category.NETWORK),
    ("gpu-node-001:1234:5678 [0] NCCL WARN NET/IB : Unable to open device mlx5_0", Category.NETWORK),
    ("RuntimeError: unable to open shared memory object </torch_1234_5678> in read-write mode:"
     " Too many open files (24)", Category.CONFIG),
    ("Illegal instruction (core dumped)", Category.CONFIG),  # a binary built for another CPU: the build, not the node
    # TensorFlow's check on a kernel launch that could not get device memory
    ("Non-OK-status: GpuLaunchKernel (FillPhiloxRandomKernelLaunch <Distribution>, num_blocks, block_size, 0,"
     " d.stream (), gen, data, size, dist) status: Internal: out of memory", Category.GPU_OOM),
    # bash's report of a job killed by SIGKILL, and a container's exit status 128 + 9
    ("/usr/local/bin/train.sh: line 18:    36 Killed                  python3 train.py --epochs 10",
     Category.HOST_OOM),
    ("Training process finished. Exit code: 137", Category.HOST_OOM),
]


@pytest.mark.parametrize(("cid", "category", "mode"), [
    ("n10-003", Category.CONFIG, "fail_stop"),  # NCCL watchdog at Timeout(ms)=1: the timeout, not a lost peer
    ("n10-011", Category.GPU_OOM, "fail_stop"),  # TF: 'Non-OK-status: GpuLaunchKernel ... out of memory'
    ("n10-012", Category.HOST_OOM, "fail_stop"),  # FfDL learner: 'line 18: 36 Killed', exit code 137
])
def test_public_corpus_dev_cases_of_vendor_messages(cid: str, category: Category, mode: str, corpus_dev_case) -> None:
    d = corpus_dev_case(cid)
    assert (d.category, d.failure_mode.value) == (category, mode)


@pytest.mark.parametrize(("line", "category"), VENDOR_LINES)
def test_documented_vendor_messages_get_their_documented_category(tmp_path: Path, line: str, category: Category) -> None:
    assert _diagnose_text(tmp_path, line + "\n").category is category


def test_an_enotconn_socket_error_is_not_a_lost_mount(tmp_path: Path) -> None:
    d = _diagnose_text(tmp_path, "OSError: [Errno 107] Transport endpoint is not connected\n")
    assert "fuse_mount_disconnected" not in [h.signature_id for h in d.signature_hits]
