"""Public corpus dev cases (``eval/corpus/logs``, dev split) answered by a catalogue entry written from the vendor's
own text: each log as pasted in its thread goes through the pipeline, and the named signature decides.

Only dev cases are listed here (``eval/corpus/split.json``); test cases are never looked at to write rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from diag_service.pipeline import DiagnoseRequest, diagnose

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("case", "category", "signature"), [
    # a Spot VM's worker: Compute Engine's preemption notice, then the ACPI soft-off systemd-logind logs as "Power key
    # pressed" (a 2-line paste; no training line, so no "set-up failure" either)
    ("n60b-001", "infrastructure", "h_cloud_gce_preempt_soft_off"),
    # t5x's Orbax checkpointing on a TPU pod without jax.distributed.initialize(): JAX's own ValueError
    ("n61a-001", "config", "jax_distributed_not_initialized"),
    # JAX's TPU backend still waiting for the pod's other hosts after 60 s (a UserWarning, the job never starts)
    ("n61a-002", "config", "jax_tpu_init_all_hosts"),
    # torch.distributed.launch's CalledProcessError for a child that exited 2 (argparse refused --local_rank=3)
    ("n61a-008", "config", "launcher_child_exit_status_2"),
    # TensorFlow's grouped errors: "(0) Data loss:  corrupted record at 0"
    ("n61b-002", "data", "vs_data_record_store_corrupt"),
    # PaddleDetection on 4 GPUs: the DataLoader's reader thread cannot map a worker's batch back from shared memory
    ("n58b-004", "storage", "vs_paddle_shm_mmap_failed"),
    # the HF Trainer's own rename of tmp-checkpoint-* into checkpoint-N losing a race (a source checkout of transformers)
    ("n56b-013", "framework", "checkpoint_path_race"),
    # the same rename's error line alone, with no frames
    ("n56b-014", "framework", "checkpoint_path_race"),
    # a site's Slurm submit filter refuses a GPU partition job without --gres: its message, then "Unspecified error"
    ("n55b-013", "config", "f_slurm_submit_rejected"),
    # submitit's FailedJobError carrying sbatch's refusal of an untyped GPU GRES request
    ("n55b-016", "config", "f_slurm_submit_rejected"),
    # Python 2's gzip raising IOError "Not a gzipped file" on a bad MNIST download (BadGzipFile's older form)
    ("n55b-006", "data", "d_compressed_stream_truncated"),
    # nanotron's ParallelContext: the config's parallel layout needs 8 processes, torchrun started 4
    ("n37a-013", "config", "size_divisibility_check"),
    # a TPU program out of SMEM, which XLA's own message calls its bug (not the model's size in HBM)
    ("n34a-006", "framework", "xla_scoped_memory_exhausted"),
    # Mask2Former on ROCm: four workers' MIOpen databases on one shared home fail SQLite's locking protocol
    ("n36b-008", "storage", "miopen_db_sqlite_error"),
    # StyleTTS2 under accelerate with 3 processes still wraps a sub-module in DataParallel over every GPU
    ("n36c-005", "user_code", "dataparallel_device_mismatch"),
    # torch_xla's xmp.spawn started on one host of a v3-64 pod: the TPU runtime sees 1 of the slice's hosts
    ("n34a-007", "config", "f_tpu_pod_hosts_missing"),
    # Neuron collectives on a trn1 node without EFA: fewer channels than the replica group needs
    ("n34a-013", "config", "f_neuron_comm_fewer_channels"),
    # hipCaffe on four MI25s: ROCm's runtime aborts on a GPU page fault (its form of CUDA's illegal memory access)
    ("n30b-002", "framework", "rocm_memory_access_fault"),
    # ms-swift's vLLM rollout: world size 8 is not tensor-parallel 4 x pipeline-parallel 1
    ("n31b-023", "config", "size_divisibility_check"),
    # SageMaker smp: 8 MPI processes per host on a 4-GPU instance
    ("n31a-010", "config", "size_divisibility_check"),
    # a RayCluster GPU worker pod rejected by the kubelet's device admission
    ("n31a-005", "infrastructure", "k8s_device_admission_failed"),
    # a datasets cache moved to a network file system: ECOMM on its .incomplete folder, then a missing arrow file
    ("n30c-011", "storage", "checkpoint_io_error"),
    # Open MPI (NeMo on Kubernetes) could not create its session directory under /tmp: the node, not a path in
    # the job's config, although the same lines say "No such file or directory"
    ("n20a-010", "infrastructure", "openmpi_session_dir_failed"),
    # CPython's none_dealloc abort after vLLM woke its weights: a C extension's reference-count bug
    ("n20a-025", "framework", "python_fatal_c_extension"),
    # vLLM's CPU gloo group could not connect its workers (the paste cut inside "failed")
    ("n20a-023", "network", "gloo_full_mesh_failed"),
    # Horovod in Docker without ptrace: every shared-memory single copy refused (errno 38), the job crawled
    ("n20b-011", "config", "openmpi_cma_unavailable"),
    # one node's ranks put their allreduce on the CPU: the nodes' environments differ
    ("n20b-017", "config", "f_horovod_device_mismatch"),
    # the collective timed out while the main process's tokenizer bar (~100 columns of bar) was still running
    ("n20a-027", "config", "nccl_watchdog_timeout"),
    # c10d's store client gave up ("poll for socket ... returned 0, likely a timeout") inside a tokenizing bar
    ("hf-045", "config", "c10d_store_wait_timeout"),
    # NCCL bootstrapped on ib0's IPv6 link-local address and could not bind it (EADDRNOTAVAIL)
    ("n21a-017", "network", "nccl_socket_bind_address"),
    # pyxis could not start the container: enroot's 98-nvidia.sh hook found no nvidia-container-cli on the node
    ("n21b-006", "infrastructure", "pyxis_container_start_failed"),
    # UCX could not build the RoCE address handle to the other node (intra-node runs worked)
    ("n21b-024", "network", "ucx_ib_address_handle_failed"),
    # accelerate's prepare_model: an 8-bit model spread over GPUs while the accelerate config declares a distributed mode
    ("n22a-007", "config", "f_accelerate_quantized_model_distributed"),
    # fairscale FSDP's state assertion with the trunk's parameters frozen
    ("n22a-009", "framework", "f_fsdp_training_state_assert"),
    # ZeRO-3's allocator-cache flush warning, every step: memory pressure slows the job (the job ran on)
    ("n22a-031", "config", "f_ds_zero3_allocator_cache_flushes"),
    # SIGFPE (integer divide by zero) inside cublasLt's heuristic, a UCX-style native backtrace
    ("n23b-019", "framework", "sigfpe"),
    # the driver API's CUresult 2 (CUDA_ERROR_OUT_OF_MEMORY) printed by torch_memory_saver
    ("n23b-021", "gpu_oom", "cuda_oom"),
    # AMD-Vi IO page faults for a GPU's PCI device on a host whose multi-GPU jobs hang (NCCL's ACS/IOMMU guidance)
    ("n23a-017", "infrastructure", "h_iommu_dma_fault"),
    # NCCL's init.cc refusing a rank outside the communicator (rank 2 of 2) on an AML Kubernetes compute
    ("n24b-003", "config", "nle_invalid_rank"),
    # Coqui's trainer started as one process with two GPUs visible
    ("n25b-004", "config", "f_coqui_several_gpus_one_process"),
    # NCCL INFO's error trace from its socket code (misc/socket.cc -> 2) after a Docker bridge interface was chosen
    ("n26a-012", "network", "nccl_network_error_trace"),
    # the same trace out of NCCL's shared-memory transport (transport/shm.cc:101 -> 2) in a container
    ("n27b-011", "storage", "nccl_shm_error_trace"),
    # aws-ofi-nccl on the tcp provider in a container started without the EFA devices
    ("n28b-001", "config", "nccl_ofi_not_efa"),
    # the optimizer's foreach grouping found a parameter's state on another device or dtype (FSDP under the
    # Trainer's gradient accumulation, a transformers release fixed upstream): one line pasted
    ("n50b-005", "framework", "v_torch_optim_foreach_mixed_state"),
    # DALI's GPU JPEG decoder in a data-parallel ImageNet run: nvJPEG's allocator failure as memory grew step by step
    ("n52a-020", "gpu_oom", "v_nvjpeg_allocator_failure"),
    # the deepspeed launcher's --include names GPU slot 2 of a host the hostfile gives two slots (its older spelling)
    ("n54b-005", "config", "vs_ds_hostfile_invalid"),
])
def test_a_vendor_message_names_the_category(case: str, category: str, signature: str) -> None:
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{case}.log"), kb=False, llm=False))
    assert d.category.value == category, d.root_cause.summary
    assert d.signature_hits and d.signature_hits[0].signature_id == signature, [h.signature_id for h in d.signature_hits]


def test_a_traceback_cut_inside_main_process_firsts_wait_is_the_preprocessing_timeout() -> None:
    """A rank's traceback cut at ``with training_args.main_process_first(...)`` -> contextlib ``__enter__`` while the
    main process's tokeniser bar stood at 29:55 (dev case n26a-007, LLaMA-Factory): the wait, not the work, failed;
    config (raise ddp_timeout or preprocess once), not 'no signature'. The same cut traceback inside the ``with``
    body's ``dataset.map`` is not this rule (the rule's counter-example, checked at catalogue load)."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n26a-007.log"), kb=False, llm=False))
    assert d.category.value == "config", d.root_cause.summary
    top = d.signature_hits[0]
    assert top.details.get("context_rule") == "cut_short_in_main_process_first", [h.details for h in d.signature_hits]
    assert "ddp_timeout" in d.root_cause.summary


@pytest.mark.parametrize("case", ["n27a-028", "n27a-030"])
def test_a_timeout_printed_into_a_data_preparation_bar_is_the_preparation_outliving_the_timeout(case: str) -> None:
    """Dev cases n27a-028 (Gloo's monitored_barrier message printed into a datasets `Map (num_proc=14)` bar at 6:39:53)
    and n27a-030 (an NCCL watchdog timeout printed into DeepSpeed-Chat's `Creating dataset split` bar at 29:56): config,
    as the rule's datasets-library bars already were. In n27a-028 the waiting rank got no answer from rank 0, whose
    logs name no missing rank: rank 0 is the one that never took part (ProcessGroupGloo's monitoredBarrier)."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{case}.log"), kb=False, llm=False))
    assert d.category.value == "config", d.root_cause.summary
    assert d.signature_hits[0].details.get("context_rule") == "timeout_during_dataset_preparation"
    if case == "n27a-028":
        assert d.first_failing_rank == 0


def test_horovods_stall_warning_is_named_as_such_with_every_missing_rank_counted() -> None:
    """A Horovod stall listing 15 missing ranks (a Keras/Horovod paste, dev case n2fw-009) is worded as Horovod's, not
    as monitored_barrier's, and the ranks beyond the eight shown are counted; without the job's size no rank is
    named (the coordinator's lines alone cannot tell a 16-rank job from a 32-rank one)."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n2fw-009.log"), kb=False, llm=False))
    assert "Horovod's stall warning reports that rank(s) [1, 2, 3, 4, 5, 6, 7, 8, ... (15 in all)]" in d.root_cause.summary
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank is None


@pytest.mark.parametrize(("case", "rank"), [("n13a-005", 16), ("n45a-004", 3)])
def test_horovods_older_ready_ranks_list_names_the_rank_absent_from_it(case: str, rank: int) -> None:
    """Horovod before 0.16 lists the ranks that did submit a stalled tensor ("[ready ranks: 21, 25, ...]",
    operations.cc): the one rank below the highest listed that is absent never submitted it (dev cases n13a-005, 31
    of 32 listed, and n45a-004, 15 of 16), and it is named; the cause stays unknown (neither thread settled it)."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{case}.log"), kb=False, llm=False))
    assert d.first_failing_rank == rank, d.root_cause.summary
    assert f"Horovod's stall warning reports that rank(s) [{rank}] never reached it" in d.root_cause.summary
    assert d.failure_mode.value == "fail_hang" and d.category.value == "unknown"


def test_a_guard_worded_valueerror_without_frames_is_a_configuration_refusal() -> None:
    """LLaMA-Factory's guard "DeepSpeed ZeRO-3 or FSDP is incompatible with PTQ-quantized models." pasted with its
    frame cut (dev case n22a-021): the library's wording decides, as when its frame is shown."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n22a-021.log"), kb=False, llm=False))
    assert d.category.value == "config", d.root_cause.summary


@pytest.mark.parametrize(("case", "signature"), [
    ("n24a-005", "nccl_system_error"),          # "unhandled system error" with no Last-error reason of its own
    ("n27b-002", "nccl_unhandled_cuda_error"),  # "unhandled cuda error" with no CUDA error or Xid beside it
    ("n29b-013", "segfault"),                   # Paddle's SIGSEGV inside ncclCommInitAll, never explained
])
def test_an_error_class_that_says_where_not_why_is_unknown_with_its_line_as_evidence(case: str, signature: str) -> None:
    """NCCL's bare error classes and a segmentation fault name where a failure surfaced, not its cause: the answer
    is ``unknown`` (dev cases, the threads split over several causes), and the line is still the evidence."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{case}.log"), kb=False, llm=False))
    assert d.category.value == "unknown", d.root_cause.summary
    assert d.signature_hits[0].signature_id == signature
    assert d.root_cause.evidence, d.root_cause.summary


@pytest.mark.parametrize("case", ["n29a-012", "n29a-013", "n27c-005"])
def test_a_traceback_cut_beside_a_collective_timeout_is_the_timeouts_own(case: str) -> None:
    """A watchdog's collective timeout and a traceback cut before its exception (through ``backward()`` or a
    broadcast; dev cases from YOLOv5/v7 and a DDP stall): the timeout is the one error the log names, so the job
    hung, not a framework failure read from the frame the paste stopped in."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{case}.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert d.category.value == "unknown", d.root_cause.summary


@pytest.mark.parametrize(("case", "category", "signature"), [
    ("n29c-013", "storage", "ray_session_disk_full"),         # the raylet: /tmp/ray over 95 % full, 0 GB available
    ("n29c-020", "infrastructure", "ray_node_marked_dead"),   # an actor's owner died with its node ("node has crashed")
    ("n29c-017", "config", "trl_vllm_server_endpoint_missing"),  # GRPO's vLLM client got 404 from a plain vLLM server
])
def test_rays_and_trls_own_words_decide(case: str, category: str, signature: str) -> None:
    """Ray's raylet and GCS state the cause themselves (file_system_monitor.cc at no space left; gcs_actor_manager's
    "Owner's node has crashed"), and TRL's vLLM client its server's 404: dev cases from RLinf, EasyR1 and trl runs."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{case}.log"), kb=False, llm=False))
    assert d.category.value == category, d.root_cause.summary
    assert d.signature_hits[0].signature_id == signature


@pytest.mark.parametrize("case", ["n29b-008", "n27c-006"])
def test_a_paste_without_any_error_or_exit_is_a_job_that_was_alive(case: str) -> None:
    """BytePS's ZMQ start-up lines, Lightning Fabric's launch lines under Slurm (dev cases whose threads report a
    hang): no line is an error, an exit or a launcher's failure report, so the job was still running (a hang or a
    slowdown), and the input warning says that no line is failure evidence."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{case}.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert d.category.value == "unknown"
    assert "The logs end without an error" in d.root_cause.summary
    assert any(w.startswith("no failure evidence") for w in d.input.warnings), d.input.warnings


def test_a_failure_report_record_pasted_without_its_heading_names_its_rank(tmp_path: Path) -> None:
    """n31c-010: the paste starts at the record's ``time :`` line (no "Root Cause" heading, no "[0]:"); the record
    and its closing rule still say which rank died. A record followed by the next ``[n]:`` entry is one of the
    report's other failures, not its root cause."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs/n31c-010.log"), kb=False, llm=False))
    assert d.first_failing_rank == 0
    assert [e.first.text for e in d.events if e.kind.value == "elastic_summary"] == [
        "torchelastic first observed failure: rank 0 (local_rank 0) exitcode: -11"]
    lines = (ROOT / "eval/corpus/logs/n31c-010.log").read_text().splitlines()
    other = tmp_path / "other.log"
    other.write_text("\n".join([*lines[:6], "[1]:", *lines[:6]]) + "\n")
    reports = sorted(e.first.text for e in diagnose(DiagnoseRequest(path=str(other), kb=False, llm=False)).events
                     if e.kind.value == "elastic_summary")
    assert reports == ["torchelastic failure: rank 0 (local_rank 0) exitcode: -11",
                       "torchelastic first observed failure: rank 0 (local_rank 0) exitcode: -11"]


@pytest.mark.parametrize(("case", "category", "rule"), [
    # Lightning Fabric on MIG slices: cut inside get_device_capability (one MIG instance visible per process)
    ("n14a-009", "config", "cut_short_in_cuda_device_setup"),
    # accelerate's PartialState -> torch.cuda.set_device(local rank) on a node with fewer visible GPUs
    ("n26c-010", "config", "cut_short_in_cuda_device_setup"),
    # srun tasks whose GPU binding clashes with the job's device index: cut in get_device_properties
    ("n8-017", "config", "cut_short_in_cuda_device_setup"),
    # torch.save's zip writer on a Windows volume, and Megatron's checkpoint save, both cut inside serialization.py
    ("n14b-018", "storage", "cut_short_in_checkpoint_save"),
    ("n20a-031", "storage", "cut_short_in_checkpoint_save"),
])
def test_a_traceback_cut_in_a_known_library_step_says_what_the_step_was(case: str, category: str, rule: str) -> None:
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs" / f"{case}.log"), kb=False, llm=False))
    hit = d.primary_hit()
    assert hit is not None and hit.signature_id == "traceback_cut_short"
    assert hit.details.get("context_rule") == rule, hit.details
    assert d.category.value == category


def test_nccls_own_bind_failure_is_not_read_as_the_c10d_port() -> None:
    """n33b-012: NCCL's socket.h 'Call to bind failed : Address already in use' after a killed two-node run. The
    port is NCCL's own (ephemeral unless NCCL_COMM_ID fixes it), so the c10d MASTER_PORT explanation and its
    confidence (config 0.79 at first contact; the thread never settled the cause) do not apply."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs/n33b-012.log"), kb=False, llm=False))
    hits = [h for h in d.signature_hits if h.signature_id == "address_in_use"]
    assert hits and hits[0].details.get("context_rule") == "nccl_bind_address_in_use"
    assert d.confidence < 0.5
    assert "TCPStore" not in d.root_cause.summary


def test_a_few_step_lines_and_no_error_read_as_a_job_that_was_progressing(tmp_path: Path) -> None:
    """n24a-021: three Megatron iteration lines (elapsed time per iteration) and nothing else, pasted to show its
    speed: the job was making progress, so fail_slow with its pace, L0 (keep it running); the summary still says
    what to do had it stopped. The same lines repeated until the whole-log change test can read them (no change
    found) are a job that ran at its pace: the earlier reading (alive, hang or slow) stays."""
    log = ROOT / "eval/corpus/logs/n24a-021.log"
    d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
    assert d.failure_mode.value == "fail_slow" and d.category.value == "unknown"
    assert "3 timed step lines" in d.root_cause.summary and "stack dumps" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.rule_id == "slow_pace_unjudged" and d.recovery.level.value == "L0"
    lines = [ln for ln in log.read_text().splitlines() if "elapsed time per iteration" in ln]
    first = int(lines[0].split("iteration")[1].split("/")[0])
    longer = tmp_path / "longer.log"
    longer.write_text("\n".join(lines[0].replace(f"iteration {first:>8}/", f"iteration {first + 10 * k:>8}/", 1)
                                for k in range(12)) + "\n")
    d2 = diagnose(DiagnoseRequest(path=str(longer), kb=False, llm=False))
    assert d2.failure_mode.value == "fail_hang", d2.root_cause.summary


@pytest.mark.parametrize(("case", "category", "primary"), [
    # the launcher's kill report and nothing a rank wrote: the rank died without a word (a signal), host memory
    ("mem-030", "host_oom", "deepspeed_launcher_killed"),
    ("n28a-011", "host_oom", "deepspeed_launcher_killed"),
    # a rank's own error before the launcher's report decides (the report has the lowest priority of any root)
    ("n30a-006", "storage", "checkpoint_corrupt"),
    ("n30c-009", "config", "file_not_found"),
])
def test_deepspeeds_kill_report_decides_only_when_no_rank_said_anything(case: str, category: str,
                                                                        primary: str) -> None:
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs" / f"{case}.log"), kb=False, llm=False))
    hit = d.primary_hit()
    assert hit is not None and hit.signature_id == primary
    assert d.category.value == category


def test_torch_1x_blocking_wait_timeout_is_a_collective_timeout() -> None:
    """torch 1.8-1.10 with NCCL_BLOCKING_WAIT raises "[Rank N] Caught collective operation timeout: WorkNCCL(...) ran
    for N milliseconds" from the waiting call (ProcessGroupNCCL.cpp, WorkNCCL::synchronizeInternal), not the watchdog's
    "Watchdog caught ..." line. Dev case n29a-006 (YOLOv8, rank 1's broadcast outlived by rank 0's validation) is that
    one line: a hang, read as the watchdog's timeout, its SeqNum and OpType parsed."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs/n29a-006.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert d.signature_hits[0].signature_id == "nccl_watchdog_timeout"
    assert "BROADCAST" in d.root_cause.summary or any("BROADCAST" in e for e in d.root_cause.evidence)


def test_a_spawn_report_cut_after_terminated_with_still_names_the_process() -> None:
    """icefall on two GPUs (dev case n36c-006): the paste ends at mp.spawn's "ProcessExitedException: process 1
    terminated with" (its exit code or signal cut off). The report still names spawn index 1, the failed rank."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs/n36c-006.log"), kb=False, llm=False))
    assert d.first_failing_rank == 1, d.root_cause.summary


def test_a_warning_that_reports_a_caught_error_is_read_for_that_error(tmp_path: Path) -> None:
    """n52a-007: FSDP's state_dict warns that cloning lm_head.weight failed and quotes the caught CUDA OOM; the run
    is out of GPU memory at save time, not a job whose logs end without an error. A warning that only names a risk
    (no caught error) still decides nothing."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs/n52a-007.log"), kb=False, llm=False))
    assert d.category.value == "gpu_oom" and d.failure_mode.value == "fail_stop"
    risk = tmp_path / "risk.log"
    risk.write_text("UserWarning: reserved memory is large; if CUDA out of memory happens, set "
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n")
    d2 = diagnose(DiagnoseRequest(path=str(risk), kb=False, llm=False))
    assert d2.category.value != "gpu_oom"


def test_megatrons_rerun_check_names_the_rank_but_not_data() -> None:
    """n54a-005 (a dependency update's CI run): Megatron-Core's rerun state machine logs "Unexpected result nan on rank
    3 at iteration #3": the rank is the line's subject (faulty rank 3); the check does not tell data from settings, a
    library or the device, so the category stays unknown (n27a-021, n45b-017: unsettled)."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs/n54a-005.log"), kb=False, llm=False))
    assert d.first_failing_rank == 3, d.root_cause.summary
    assert d.category.value == "unknown"
    assert "vs_megatron_rerun_nan_grad" in {h.signature_id for h in d.signature_hits}


def test_an_unpicklable_sample_in_a_dataloader_worker_is_data_not_a_checkpoint(tmp_path: Path) -> None:
    """n58b-002 (GameFormer, rank 6): np.load falls back to pickle in a DataLoader worker and finds an invalid load
    key; the paste cuts the key itself ("invalid load ke"). Whole, that line is the corrupt-checkpoint signature's;
    raised in a DataLoader worker (torch's "Caught UnpicklingError in DataLoader worker process N") the file is a
    dataset sample's: data, rank 6. The same line from torch.load in the main process stays a checkpoint (storage)."""
    log = (ROOT / "eval/corpus/logs/n58b-002.log").read_text()
    assert log.rstrip().endswith("invalid load ke")
    whole = tmp_path / "whole.log"
    whole.write_text(log.rstrip() + "y, '\\x00'.\n")
    d = diagnose(DiagnoseRequest(path=str(whole), kb=False, llm=False))
    assert d.category.value == "data", d.root_cause.summary
    assert d.first_failing_rank == 6
    resume = tmp_path / "resume.log"
    resume.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/user/proj/train.py", line 50, in <module>\n'
        '    state = torch.load(args.resume, map_location="cpu")\n'
        '  File "/opt/venv/lib/python3.11/site-packages/torch/serialization.py", line 1040, in load\n'
        "    return _legacy_load(opened_file, map_location, pickle_module, **pickle_load_args)\n"
        "_pickle.UnpicklingError: invalid load key, '\\x00'.\n")
    d2 = diagnose(DiagnoseRequest(path=str(resume), kb=False, llm=False))
    assert d2.category.value == "storage", d2.root_cause.summary


def test_a_watchdog_timeout_hard_wrapped_mid_word_is_still_a_collective_timeout() -> None:
    """n59b-002 (Flow-GRPO, 2025): the paste is hard-wrapped at a fixed width, splitting "Watchdog caught collective
    operatio" from "n timeout: WorkNCCL(SeqNum=63, OpType=ALLREDUCE, ...) ran for 600088 milliseconds before timing
    out." The WorkNCCL report alone is the watchdog's timeout (ProcessGroupNCCL.cpp words nothing else this way): a
    hang in an ALLREDUCE, not a stop."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval/corpus/logs/n59b-002.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert "nccl_watchdog_timeout" in {h.signature_id for h in d.signature_hits}


def test_a_spot_reclaim_is_the_platforms_to_resume_not_a_set_up_failure() -> None:
    """n60b-001 (a Taskcluster worker on a GCP spot VM, 2 lines): with no training step in the paste, the
    failed_before_training rule handed the preemption to the job owner as a set-up failure ("restart fails the same
    way"). A provider's reclaim is resumed from the last checkpoint on new capacity, by the platform."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n60b-001.log"), kb=False, llm=False))
    assert (d.category.value, d.responsible.value) == ("infrastructure", "platform")
    assert d.recovery is not None and d.recovery.level.value == "L2", d.recovery


def test_a_gaudi_graph_workspace_allocation_failure_is_device_memory() -> None:
    """n65b-001 (optimum-habana, 8 Gaudi cards, LoRA DDP): "FATAL ERROR :: MODULE:PT_SYNHELPER workspace Allocation of
    size ::9618705792 failed!" is the bridge's graph workspace in device memory, as PT_DEVMEM's failure is (the thread's
    fix: the model had been placed on the device before DDP). It read unknown."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n65b-001.log"), kb=False, llm=False))
    assert d.category.value == "gpu_oom", d.root_cause.summary
    assert "gaudi_device_memory_exhausted" in {h.signature_id for h in d.signature_hits}


@pytest.mark.parametrize("cid", ["n66a-004", "n48b-005", "n48b-006", "n3net-024"])
def test_a_gdb_backtrace_of_a_process_that_did_not_end_is_a_hang(cid: str) -> None:
    """Pastes of gdb / pstack backtraces (MPI_Bcast waiting in MPIC_Wait, TensorFlow's session waiting on a condition
    variable, NCCL's socket thread in recv) were read as stops: the backtrace is of a live process attached while it
    hung (the py-spy rule: stack dumps and no process's end)."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{cid}.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary


def test_a_gdb_backtrace_beside_its_processs_crash_stays_a_stop() -> None:
    """n2hw-022: ncclShmOpen's backtrace beside the SIGBUS that ended the process: a crash, not a hang."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n2hw-022.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_stop", d.root_cause.summary


def test_a_gdb_backtrace_behind_a_collectors_timestamps_is_still_a_hang(tmp_path: Path) -> None:
    """n66a-004 as `kubectl logs --timestamps` gives it (an RFC 3339 stamp before each line): the backtrace's innermost
    frame no longer starts its line, and the hang read as a stop (eval/format_eval.py's k8s, CRI and Docker JSON
    transforms flipped the four gdb cases)."""
    src = (ROOT / "eval" / "corpus" / "logs" / "n66a-004.log").read_text().splitlines()
    (tmp_path / "pod.log").write_text("".join(f"2025-03-01T10:00:{i % 60:02d}.123456789Z {line}\n"
                                              for i, line in enumerate(src)))
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary


@pytest.mark.parametrize(("cid", "says"), [
    # worker_count=8 for world_size=4: more processes than the group's size joined its store key
    ("n40a-006", "8 processes checked in for a group of 4"),
    # 2 of 8 ranks checked in; the log then holds a traceback cut before its exception line (read "framework")
    ("n67b-005", "2 of 8 had (6 missing)"),
])
def test_logs_ending_in_the_store_barriers_waiting_lines_are_a_hang_before_training(cid: str, says: str) -> None:
    """torch's _store_based_barrier logs "Waiting in store based barrier to initialize process group ..." every 10 s
    until its timeout; logs that end on it were read as stops with nothing matched (n40a-006, n62b-008) or as the cut
    traceback's framework error (n67b-005)."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{cid}.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_hang", "unknown"), d.root_cause.summary
    assert "The job hung creating a process group" in d.root_cause.summary and says in d.root_cause.summary
    # (the policy's hang_process_group_init: the group never formed, so a relaunch as it is waits the same way)
    assert d.recovery is not None and (d.recovery.rule_id, d.recovery.level.value) == ("hang_process_group_init", "L4")


def test_a_callers_report_that_an_nccl_call_failed_is_an_error_not_a_warning() -> None:
    """XLA's glog line "Execution of replica 0 failed: INTERNAL: NCCL operation ncclAllReduce(...) failed: invalid
    argument" (n69b-003, a Flax job's first train_step) reports an NCCL call that returned an error: the job stopped.
    It was read as NCCL chatter, so the logs "end without an error" and the job was called hung. NCCL's own WARN lines
    stay warnings in that test (a rank still retrying)."""
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n69b-003.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_stop", d.root_cause.summary
    assert "The logs end without an error" not in d.root_cause.summary
    # n69b-008 ends on NCCL's own "NCCL WARN Duplicate GP" (cut): a warning no rank turned into an error
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n69b-008.log"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang", d.root_cause.summary
    assert "NCCL warnings that no rank turned into an error" in d.root_cause.summary


@pytest.mark.parametrize("case", ["n44b-009", "n31c-005", "n70a-003"])
def test_a_wait_for_the_roots_nccl_unique_id_says_the_root_was_late(case: str) -> None:
    # ProcessGroupNCCL's "retrieving ncclUniqueId from [0] via c10d key-value store ... got error: Socket Timeout":
    # rank 0 had not reached the group's first collective (n44b-009: still tokenising 2.3 M samples; fixed by a longer
    # timeout), not a store that cannot be reached
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / f"{case}.log"), kb=False, llm=False))
    top = d.signature_hits[0]
    assert top.details.get("context_rule") == "nccl_unique_id_wait", [h.details for h in d.signature_hits]
    assert d.category.value == "config" and "root rank" in d.root_cause.summary


def test_deepspeeds_quoted_command_does_not_name_the_failed_rank() -> None:
    # n21a-007: "['/usr/bin/python3', '-u', 'main.py', '--local_rank=1', ...] exits with return code = -7". DeepSpeed's
    # sigkill_handler logs the spawn loop's last `cmd` (deepspeed/launcher/launch.py), the highest local rank whichever
    # child failed: no rank is named from it, and the answer says so
    d = diagnose(DiagnoseRequest(path=str(ROOT / "eval" / "corpus" / "logs" / "n21a-007.log"), kb=False, llm=False))
    assert d.first_failing_rank is None
    assert "does not name the failed rank" in d.root_cause.summary
