"""Diagnoses of real failing runs of the zoo's dev split (eval/zoo/runs/<id>, recorded on this machine type by
someone who had not read the rules). Only dev runs are asserted: the test split is measured by eval/zoo_eval.py.
Each run is copied to a folder named ``job`` first, as the evaluator does, so its id cannot reach the diagnosis.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from diag_service.pipeline import DiagnoseRequest, diagnose

#: A parameter saying "no rank is named" (None in the parameters means the rank is not checked).
NO_RANK = -1

ZOO = Path(__file__).resolve().parents[1] / "eval" / "zoo"
DEV = set(json.loads((ZOO / "split.json").read_text())["dev"])


def _diagnose(run: str, tmp_path: Path):
    assert run in DEV, f"{run} is not a dev run"
    job = tmp_path / "job"
    shutil.copytree(ZOO / "runs" / run, job)
    return diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))


@pytest.mark.parametrize(("run", "category", "rank", "signature"), [
    # DDP's construction check per parameter (verify_params_across_processes), not only the count check
    ("uc_ddp_vocab_mismatch", "user_code", 3, "ddp_model_mismatch"),
    # gloo's EnforceNotMet abort: "Received data size doesn't match expected size. Is there a distributed
    # collective mismatch in your code?" (one rank sent more bytes than the other's collective posted)
    ("uc_pipeline_recv_shape", "user_code", 1, "gloo_collective_size_mismatch"),
    ("uc_allreduce_size_mismatch", "user_code", 0, "gloo_collective_size_mismatch"),
    # RandomSampler refuses an empty dataset: the rank found no data (not a library refusing a setting)
    ("data_empty_shard", "data", 3, "d_empty_dataset_sampler"),
    # torch.load's zip reader fails on a truncated checkpoint with a bare OSError
    ("st_corrupt_resume", "storage", None, "checkpoint_reader_failed"),
    # torchrun's first observed failure is a SIGTERM: it came from outside the job
    ("inf_peer_sigterm", "infrastructure", 1, "sigterm_first_failure"),
    # ECONNABORTED on the rank whose sockets were killed (ss -K), its peers' resets are the consequence; on two
    # nodes the peers' resets borrow an earlier time than the abort, which may not make the abort "later"
    ("net_ss_kill_rank1", "network", 1, "connection_aborted_locally"),
    ("net_ss_kill_twonode", "network", 2, "connection_aborted_locally"),
    # a DataLoader worker's KeyError on a record field: the data lacks it
    ("data_schema_missing_key", "data", 2, "python_user_exception"),
    # nll_loss's own target-shape check
    ("uc_target_shape", "user_code", None, "shape_mismatch"),
    # node 1's ephemeral port range used up by per-step metric posts: rank 1's urllib 'Cannot assign requested
    # address' (connect(2) EADDRNOTAVAIL); node 0's rank only loses its peer
    ("b10_net_ephemeral_ports_node1", "network", 1, "h_no_ephemeral_port"),
    # OneCycleLR sized for optimizer steps, stepped per micro-batch under gradient accumulation: both ranks raise
    # at the same step (the label names no rank)
    ("b11_uc_onecycle_accum_steps", "user_code", None, "onecycle_steps_exceeded"),
    # ranks 0 and 1 end on signal 24 under RLIMIT_CPU, rank 2 is torn down with SIGTERM: setrlimit(2), the
    # environment's CPU-time limit (the label names no rank)
    ("b10_inf_cpu_time_limit_sigxcpu", "infrastructure", None, "resource_limit_signal"),
    # every rank ended by SIGUSR1 (exitcode -10): a scheduler's warning signal the job installed no handler for
    ("b12_inf_sigusr1_default_kill", "infrastructure", None, "user_signal_death"),
    # a breakpoint() left on rank 1's loss-spike branch: pdb's location line and prompt; ranks 0 and 2 time out,
    # so the rank at the prompt is the one they waited for
    ("b12_hang_breakpoint_left_r1", "user_code", 1, "pdb_breakpoint_left"),
    # rank 2's ZeroDivisionError; a non-daemon thread kept the processes alive until Ctrl-C: the interrupt
    # (torchrun's "Received 2 death signal") is the operator's response, not the scheduler's cancellation
    ("b12_hang_nondaemon_uploader_r2", "user_code", 2, "python_user_exception"),
    # ReduceLROnPlateau.step() called without its metric through accelerate's forwarding wrapper: the job's call
    ("b12_uc_plateau_step_no_metric", "user_code", None, "python_user_exception"),
    # os.environ["DATA_ROOT"] on a shell without the cluster's job template: KeyError from os's __getitem__ (config)
    # (every rank raised the same KeyError at once: no rank is singled out, as the run's label says)
    ("b14_cfg_missing_env_var", "config", NO_RANK, "python_user_exception"),
    # mp.spawn reports its first abnormal exit; SIGTERM there came from outside (it terminates the rest only after)
    ("b14_inf_sigterm_spawn_r1", "infrastructure", 1, "spawn_sigterm_first_failure"),
    # auto-resume from a 0-byte checkpoint: torch.load's weights-only unpickler raises a bare EOFError (storage)
    ("b14_st_resume_empty_ckpt", "storage", None, "empty_file_on_load"),
    # the same end-of-file error from numpy.load in a DataLoader worker's __getitem__: an empty sample file (data)
    ("b14_data_empty_sample_worker_r3", "data", 3, "empty_file_on_load"),
    # resume from a DCP checkpoint directory whose .metadata (written last by the coordinator) is missing: the save
    # that wrote it never finished (storage), not ranks racing on a path in the library's save code
    ("b15_st_dcp_resume_no_metadata", "storage", NO_RANK, "checkpoint_path_race"),
    # DCP's save on a read-only remount: its CheckpointException lists ranks 0 and 1 (both failed alike), so mp.spawn's
    # "process 1 terminated" does not single rank 1 out
    ("b31_st_dcp_ro_remount_spawn", "storage", NO_RANK, "read_only_fs"),
    # Trainer resumed from the run's output directory instead of a checkpoint-N folder in it: a wrong argument
    ("b31_cfg_trainer_resume_outdir", "config", NO_RANK, "vs_hf_resume_checkpoint_incomplete"),
    ("b22_cfg_hf_resume_missing_ckpt_accel", "config", NO_RANK, "vs_hf_resume_checkpoint_incomplete"),
])
def test_a_known_message_names_the_category(tmp_path: Path, run: str, category: str, rank: int | None,
                                            signature: str) -> None:
    d = _diagnose(run, tmp_path)
    assert d.category.value == category, d.root_cause.summary
    assert d.primary_hit() is not None and d.primary_hit().signature_id == signature
    if rank is not None:
        assert d.first_failing_rank == (None if rank == NO_RANK else rank)


def test_a_dataloader_workers_original_traceback_is_the_cause(tmp_path: Path) -> None:
    # "IndexError: Caught IndexError in DataLoader worker process 0." carries the worker's "Original Traceback",
    # which ends in the script's own __getitem__: one event keyed by the original exception (torch/_utils.py)
    d = _diagnose("uc_dataset_indexerror_worker", tmp_path)
    assert d.category.value == "user_code" and d.first_failing_rank == 1
    ev = d.root_cause.evidence[0]
    assert ev.text.startswith("IndexError: index 101 is out of bounds"), ev.text


@pytest.mark.parametrize(("run", "rank", "category", "finding", "evidence"), [
    # monitored_barrier's rank 0 names the rank that never arrived (the evidence: that report)
    ("hang_monitored_barrier", 2, "unknown", "monitored_barrier reports that rank(s) [2] never reached it",
     "Rank 2 failed to pass monitoredBarrier"),
    # two ranks, only rank 0 times out: rank 1 never entered the collective (the evidence: rank 0's timeout)
    ("hang_wait_for_file", 1, "unknown", "only rank 0 timed out waiting in a collective: rank 1 never entered it",
     "Timed out waiting 15000ms"),
    # ranks 1 and 2 time out in barrier, rank 0 in DDP's backward all-reduce (it ran one more step)
    ("hang_uneven_shards", 0, "user_code", "rank 0 in _engine_run_backward", "Timed out waiting 15000ms"),
    # three ranks (torchrun --nproc-per-node 3), ranks 0 and 1 time out, rank 2 (its memory cgroup frozen) is silent
    ("b9_hang_oom_paused_r2", 2, "unknown", "every one but rank 2 timed out waiting in a collective: rank 2 never",
     "Timed out waiting 15000ms"),
    # Ray Train, two workers: rank 1's gloo timeout and its traceback cut by Ray's re-print; rank 0 never entered it
    ("b13_hang_ray_task_no_cpu_r0", 0, "unknown", "only rank 1 timed out waiting in a collective: rank 0 never",
     "Timed out waiting 20000ms"),
])
def test_a_hang_names_the_rank_the_others_wait_for(tmp_path: Path, run: str, rank: int, category: str,
                                                   finding: str, evidence: str) -> None:
    d = _diagnose(run, tmp_path)
    assert d.failure_mode.value == "fail_hang"
    assert d.first_failing_rank == rank
    assert d.category.value == category
    assert any(finding in f for f in d.findings), d.findings
    first = d.root_cause.evidence[0]  # the report that names the culprit, or the culprit's own
    assert evidence in first.text and first.rank == {"hang_uneven_shards": rank, "b9_hang_oom_paused_r2": 1,
                                                                            "b13_hang_ray_task_no_cpu_r0": 1}.get(run, 0), first


def test_a_node_whose_logs_just_stop_while_its_peers_lose_connections_was_lost(tmp_path: Path) -> None:
    # node 0 (its agent, the store and ranks 0-1) SIGKILLed at once: console_node0.log just stops; node 1's
    # ranks report "Connection closed by peer" and node 1's agent names its own rank 2 as first failure
    d = _diagnose("inf_node0_lost_twonode", tmp_path)
    assert d.category.value == "infrastructure"
    assert d.faulty_nodes == ["node0"]
    assert d.first_failing_rank is None  # a node, not node 1's rank 2 that its agent saw fail


def test_two_ranks_in_different_collectives_are_a_mismatch(tmp_path: Path) -> None:
    """Batch 3's restart_hang_eval_recurs: rank 0 alone runs an evaluation all_reduce while rank 1 waits in
    barrier; both gloo timeouts' tracebacks end in different collectives. With two ranks no site has a majority,
    so no rank is named, but the mismatch is the job's own code (PyTorch distributed docs: every rank calls the
    same collectives in the same order)."""
    d = _diagnose("restart_hang_eval_recurs", tmp_path)
    assert (d.category.value, d.failure_mode.value, d.first_failing_rank) == ("user_code", "fail_hang", None)
    assert "different collectives" in d.root_cause.summary


def test_one_collective_called_from_two_lines_of_the_job_is_a_mismatch(tmp_path: Path) -> None:
    """Batch 2's hang_two_group_order: both gloo timeouts end in ``all_reduce``, but rank 0 called it at train.py:20
    (the gradient group) and rank 1 at train.py:23 (the statistics group). Two calls of the same collective from two
    lines of the job's own code are two collectives (PyTorch distributed docs: every rank calls the same
    collectives in the same order): the job's code."""
    d = _diagnose("hang_two_group_order", tmp_path)
    assert (d.category.value, d.failure_mode.value, d.first_failing_rank) == ("user_code", "fail_hang", None)
    assert "train.py:20" in d.root_cause.summary and "train.py:23" in d.root_cause.summary


def test_the_same_call_of_a_collective_on_every_rank_is_no_mismatch(tmp_path: Path) -> None:
    """The counter-example: the same run's log with rank 1's frame moved to rank 0's line (both ranks of the job time
    out in the same call) names no mismatch: both joined the collective, so the link between them is suspected."""
    job = tmp_path / "job"
    job.mkdir()
    log = (ZOO / "runs" / "hang_two_group_order" / "console.log").read_text()
    assert 'train.py", line 23, in main' in log
    (job / "console.log").write_text(log.replace('train.py", line 23, in main', 'train.py", line 20, in main'))
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang"
    assert d.category.value == "network" and d.first_failing_rank is None
    assert "different collectives" not in d.root_cause.summary


@pytest.mark.parametrize("run", ["b7_net_partition_twonode", "b6_net_link_down_twonode", "b5_net_link_dead_r1"])
def test_every_rank_waiting_in_the_same_call_is_the_link(tmp_path: Path, run: str) -> None:
    """Batches 5-7: the link between the ranks dropped (a partition of two nodes, a veth link set down, a dead
    loopback path); every rank of the job (4, 2, 2 by the torchrun command) times out in gloo's recv/send from the
    same line of train.py. None is missing and none is in another collective: network, no rank, below 0.5."""
    d = _diagnose(run, tmp_path)
    assert (d.category.value, d.failure_mode.value, d.first_failing_rank) == ("network", "fail_hang", None)
    assert d.confidence < 0.5
    assert any("timed out waiting in the same collective" in f for f in d.findings), d.findings


def test_a_rank_missing_from_the_timeouts_is_not_the_link(tmp_path: Path) -> None:
    """The counter-example: b7_net_partition_twonode with rank 3's traceback taken out of node 1's console. Three
    of four ranks time out and rank 3 says nothing: the rule needs every rank, so the link is not claimed."""
    src = ZOO / "runs" / "b7_net_partition_twonode"
    job = tmp_path / "job"
    shutil.copytree(src, job)
    node1 = job / "console_node1.log"
    lines = node1.read_text().splitlines(keepends=True)
    assert any(ln.startswith("[rank3]: ") for ln in lines)
    node1.write_text("".join(ln for ln in lines if not ln.startswith("[rank3]: ")))
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang"
    assert d.category.value != "network"
    assert not any("timed out waiting in the same collective" in f for f in d.findings)


def test_one_snapshot_places_the_ranks_of_a_hang_the_logs_report(tmp_path: Path) -> None:
    """Batch 5's b5_hang_pyspy_abba_r1: two threads of rank 1 deadlock on their locks; the gloo timeout in the logs
    shows the hang, and one py-spy dump per rank (dumps/<snapshot>/rank-R.txt) shows rank 0 waiting in DDP's
    backward all-reduce and rank 1 in the job's own Uploader.submit (train.py:41): rank 1, the job's code."""
    d = _diagnose("b5_hang_pyspy_abba_r1", tmp_path)
    assert (d.category.value, d.failure_mode.value, d.first_failing_rank) == ("user_code", "fail_hang", 1)
    assert d.hang is not None and d.hang.snapshots == 1 and d.hang.stuck_since is None
    assert "Uploader.submit" in d.root_cause.summary


def test_one_snapshot_alone_calls_no_hang(tmp_path: Path) -> None:
    """The counter-example: the same dumps without the logs that report the hang are one moment of a job that may
    be running; one snapshot cannot tell stuck from busy."""
    job = tmp_path / "job"
    shutil.copytree(ZOO / "runs" / "b5_hang_pyspy_abba_r1" / "dumps", job / "dumps")
    (job / "console.log").write_text("step 10 loss 0.52\nstep 20 loss 0.48\n")
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert d.hang is not None and not d.hang.hung
    assert d.first_failing_rank is None and d.category.value == "unknown"


def test_ranks_waiting_in_main_process_first_wait_for_the_main_process(tmp_path: Path) -> None:
    """Batch 5's b5_accel_main_first_timeout: rank 0 preprocesses inside accelerate's main_process_first() for longer
    than the 15 s timeout while rank 1 waits in its barrier (_goes_first): the timeout set against that work
    (config), and the rank waited for is rank 0, not rank 1 whose timeout ended the job."""
    d = _diagnose("b5_accel_main_first_timeout", tmp_path)
    assert (d.category.value, d.failure_mode.value, d.first_failing_rank) == ("config", "fail_hang", 0)
    assert any(h.details.get("context_rule") == "timeout_waiting_for_main_process_first" for h in d.signature_hits)


def test_a_failure_after_the_job_was_started_again_is_the_later_attempts(tmp_path: Path) -> None:
    """Batch 5's b5_inf_sigterm_during_save_r0: a shell loop runs torchrun twice; in the first attempt rank 0 is
    SIGTERMed while it writes a checkpoint, the second attempt fails loading that half-written file. The second
    torchrun banner (a launch after the first failure) marks the later attempt: the SIGTERM from outside is the
    cause (infrastructure), the corrupt checkpoint its consequence."""
    d = _diagnose("b5_inf_sigterm_during_save_r0", tmp_path)
    assert (d.category.value, d.failure_mode.value, d.first_failing_rank) == ("infrastructure", "fail_stop", 0)
    assert any("started again" in f and "failed too" in f for f in d.findings), d.findings


def test_all_but_one_rank_timing_out_names_it_only_when_the_jobs_size_is_known(tmp_path: Path) -> None:
    # the same console without its "$ torchrun --nproc-per-node 3" line and without torchelastic's failure table:
    # three ranks seen, but nothing says the job had three (an excerpt of a larger job looks the same), so the silent
    # rank is not named; with the table (ranks 0, 1, 2 of one agent, local = global) the job's size is said again
    text = (ZOO / "runs" / "b9_hang_oom_paused_r2" / "console.log").read_text()
    assert text.startswith("$ torchrun --nproc-per-node 3 ") and "Failures:" in text
    p = tmp_path / "console.log"
    p.write_text(text.split("\n", 1)[1].split("Failures:")[0])
    d = diagnose(DiagnoseRequest(path=str(p), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang"
    assert d.first_failing_rank is None
    assert not any("never entered it" in f for f in d.findings), d.findings
    p.write_text(text.split("\n", 1)[1])
    d = diagnose(DiagnoseRequest(path=str(p), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 2, d.root_cause.summary


def test_an_interrupted_launcher_after_a_stuck_progress_bar_is_a_hang(tmp_path: Path) -> None:
    # the Trainer's bar stops at 20/400 and torchrun is interrupted (SIGINT): not a scheduler's cancellation
    d = _diagnose("hf_hang_rank0_callback", tmp_path)
    assert d.failure_mode.value == "fail_hang"
    assert d.category.value != "infrastructure"
    assert any(h.signature_id == "elastic_agent_death_signal" and h.details.get("context_rule") == "elastic_agent_interrupted"
               for h in d.signature_hits)


def test_a_checkpoint_exception_listing_one_rank_names_it(tmp_path: Path) -> None:
    # torch.distributed.checkpoint gathers every rank's local failure and re-raises it on all of them as
    # "CheckpointException ranks:dict_keys([...])": a list of one rank is that rank's failure, whatever mp.spawn's
    # report says (the real run lists [0, 1]; here its listing is narrowed to rank 0)
    d = _diagnose("b31_st_dcp_ro_remount_spawn", tmp_path)
    assert d.first_failing_rank is None
    job = tmp_path / "one"
    shutil.copytree(ZOO / "runs" / "b31_st_dcp_ro_remount_spawn", job)
    log = job / "console.log"
    text = log.read_text()
    assert text.count("ranks:dict_keys([0, 1])") == 2
    log.write_text(text.replace("ranks:dict_keys([0, 1])", "ranks:dict_keys([0])"))
    d = diagnose(DiagnoseRequest(path=str(job), kb=False, llm=False))
    assert d.first_failing_rank == 0 and d.category.value == "storage"
    assert any("failed on rank 0 alone" in f for f in d.findings), d.findings


def test_python_loggings_dash_format_names_the_rank_of_its_error_line(tmp_path: Path) -> None:
    # "%(asctime)s - %(levelname)s - %(name)s - %(message)s" (the HF example scripts' format) with the script's own
    # "[RANK 1]": node 1's data mount is missing, rank 1 logs "no training shards ... matched 0 files" and exits 2
    # without a traceback; that line is rank 1's and leads the suspects (it was read as no rank's)
    d = _diagnose("b33_inf_data_mount_missing_accel_twonode_n1", tmp_path)
    assert d.first_failing_rank == 1
    assert "no training shards for process 1" in d.root_cause.evidence[0].text and d.root_cause.evidence[0].rank == 1


def test_a_spawn_processes_name_is_its_rank_and_its_skip_warning_names_the_rank_out_of_step(tmp_path: Path) -> None:
    # mp.spawn with "%(asctime)s %(processName)s %(levelname)s": SpawnProcess-2 (rank 1) logs "validation at step 150
    # failed: ZeroDivisionError" and skips the validation all-reduce; gloo aborts rank 0 ("Received data size doesn't
    # match"), spawn reports process 0. multiprocessing numbers spawn's children from 1 in start order
    d = _diagnose("b33_uc_warn_skip_auc_spawn_r1", tmp_path)
    assert (d.category.value, d.first_failing_rank) == ("user_code", 1), d.root_cause.summary
    assert "validation at step 150 failed" in d.root_cause.summary


@pytest.mark.parametrize(("run", "rank"), [
    # "TypeError: cannot pickle 'dict_keys' object" in all_gather_object's _object_to_tensor (read framework: the
    # innermost frame is torch's)
    ("b45_uc_gather_object_dict_keys_spawn_r1", 1),
    # "_pickle.PicklingError: Can't pickle <function <lambda> ...>" in broadcast_object_list (read unknown: a
    # PicklingError was no catalogued exception)
    ("b45_uc_broadcast_object_lambda_plan_r0", 0),
])
def test_an_object_pickle_refuses_in_an_object_collective_is_the_jobs_own(run: str, rank: int, tmp_path: Path) -> None:
    d = _diagnose(run, tmp_path)
    assert (d.category.value, d.first_failing_rank) == ("user_code", rank), d.root_cause.summary
    assert "unpicklable_local_object" in {h.details.get("context_rule") for h in d.signature_hits}


def test_the_imagenet_examples_progress_meter_lines_are_step_times(tmp_path: Path) -> None:
    """b46 cpu-hog run: pytorch/examples' ImageNet ProgressMeter ("Epoch: [0][ 10/300]\\tTime  0.146 ( 0.119)\\tData
    0.001 ( 0.001)\\t..."), every 10 batches on 3 ranks: "no step timing ... nothing to analyse". Each line's own value
    (before the running average in brackets) is the batch's time."""
    from diag_service.slow.logs import load_log_bundle

    assert "b46_slow_cpu_hog_job_avgmeter" in DEV
    feed = load_log_bundle(ZOO / "runs" / "b46_slow_cpu_hog_job_avgmeter" / "console.log")
    assert feed.stats.format == "logs:imagenet_progress" and feed.stats.ranks == 3
    assert list(feed.batch.step[:3]) == [0, 10, 20] and abs(float(feed.batch.step_time[1]) - 0.143) < 0.005


def test_a_rank_waiting_on_its_own_multiprocessing_pool_is_not_read_as_a_hung_mount(tmp_path: Path) -> None:
    """b46 decode-pool run: rank 1's Dataset decodes clips in a multiprocessing.Pool; a pool worker segfaulted on a bad
    clip (only the host's kernel log says so) and Pool.map waited forever under the in-process DataLoader fetch. It
    read storage, "the read of its data blocks (a hung network mount ...)"."""
    d = _diagnose("b46_hang_decode_pool_worker_segv_pyspy_r1", tmp_path)
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1), d.root_cause.summary
    assert d.category.value == "unknown" and "multiprocessing.Pool waiting forever" in d.root_cause.summary


def test_the_jobs_own_torch_stack_of_unequal_tensors_is_its_code_not_its_data(tmp_path: Path) -> None:
    """b47 restart run: the evaluation stacks per-batch predictions with torch.stack and the last batch is smaller
    ('stack expects each tensor to be equal size, but got [64] at entry 0 and [40] at entry 7', raised at
    train_sentiment.py:42, not in the DataLoader's collate): it read data, "default_collate cannot stack samples"."""
    d = _diagnose("b47_uc_restart_eval_stack_recurs", tmp_path)
    assert d.category.value == "user_code", d.root_cause.summary
    assert "stack_in_jobs_own_code" in {h.details.get("context_rule") for h in d.signature_hits}


def test_a_ranks_forward_and_backward_named_apart_on_ms_per_step_lines_name_the_straggler(tmp_path: Path) -> None:
    """b46 quota run: "[r1] step 20/300 loss 0.3892 | 64.2 ms/step | fwd 11.1 bwd 25.0 allreduce 26.7 opt 1.4" on
    every rank; rank 1 in a CPU quota from step 140. "[r1]" was no rank marker and a "ms/step" line's phases were not
    read: "0 ranks", the job's slowdown found and no rank named."""
    d = _diagnose("b46_slow_rank_quota_r1_phases", tmp_path)
    assert d.slow is not None and [(s.rank, s.kind.value) for s in d.slow.stragglers] == [(1, "compute")]
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_slow", 1), d.root_cause.summary


def test_a_restart_storm_in_torchelastics_attempt_folders_stops_the_restarts(tmp_path: Path) -> None:
    """b55 (dev, first contact after diag_service.localize.attempts was written, before its logs were read): a bad
    label at step 57 of rank 2's shard; torchrun --max-restarts 3 resumed from the step-40 checkpoint each time and
    each attempt failed on the same sample. Three restarts without getting past the first attempt: a storm (L4,
    stop restarting), not another restart. The recovering run of the same batch (attempt 1 trained to the end)
    has no restart without progress."""
    d = _diagnose("b55_data_restart_storm_label_oob_step57_c10d_logdir_r2", tmp_path)
    assert (d.category.value, d.first_failing_rank) == ("data", 2)
    assert d.restarts is not None and (d.restarts.count, d.restarts.without_progress) == (3, 3)
    assert d.recovery is not None and (d.recovery.rule_id, d.recovery.level.value) == ("restart_storm", "L4")
    ok = _diagnose("b55_st_restart_ckpt_volume_full_transient_recovers_c10d", tmp_path / "ok")
    assert ok.restarts is not None and (ok.restarts.count, ok.restarts.without_progress) == (1, 0)


def test_a_numpy_short_write_is_the_disk_or_quota_running_out(tmp_path: Path) -> None:
    """b68 (dev, first contact unknown): rank 2's np.save to a scratch directory at the user's quota fails as numpy
    words a short fwrite, "OSError: 327680 requested and 120800 written" (convert.c, PyArray_ToFile): no errno is
    printed, but a write cut short on a regular file is the file system or the quota running out."""
    d = _diagnose("b68_st_user_quota_edquot_r2", tmp_path)
    assert (d.category.value, d.first_failing_rank) == ("storage", 2), d.root_cause.summary
    assert d.signature_hits[0].signature_id == "no_space_left"


def test_a_rank_whose_lost_peer_was_raised_in_the_collective_the_others_timed_out_in_was_there(tmp_path: Path) -> None:
    """b59 (dev, first contact read 'every one but rank 0 timed out: rank 0 never entered it'): a firewall drops node
    1's data ports from step 200; ranks 1-3 time out at train_churn.py:27's backward, rank 0's "Connection closed by
    peer" is raised at the very same call. Every rank was in the collective: the link failed (network), no rank is
    the one that never came."""
    d = _diagnose("b59_hang_fw_drop_data_ports_node1_twonode_n1", tmp_path)
    assert (d.failure_mode.value, d.category.value, d.first_failing_rank) == ("fail_hang", "network", None)
    assert "All 4 ranks of the job waited" in d.root_cause.summary


@pytest.mark.parametrize(("run", "rank", "frame"), [
    ("b67_hang_torch_ext_stale_lock_pyspy_r0", 0, "FileBaton.wait (torch/utils/file_baton.py:50)"),
    ("b67_hang_filelock_orphan_holder_node1_pyspy_twonode_n1", 2, "filelock/_core/_acquire.py"),
])
def test_a_rank_stuck_polling_a_lock_file_is_named_with_the_lock_as_the_reason(run: str, rank: int, frame: str,
                                                                              tmp_path: Path) -> None:
    """b67 (dev, first contact: unknown / user_code): py-spy places the one rank that never reached the barrier in
    torch_extensions' FileBaton.wait (a lock left by a preempted build) or in filelock's acquire loop (a leftover
    process holds the cache lock). The stack says why: a lock file nobody releases, a storage-side state (as the
    catalogue's file_lock_timeout), not the job's own code."""
    d = _diagnose(run, tmp_path)
    assert (d.failure_mode.value, d.first_failing_rank, d.category.value) == ("fail_hang", rank, "storage")
    assert "waiting for a lock file" in d.root_cause.summary and frame in d.root_cause.summary


def test_a_crash_on_another_nodes_clock_is_named_by_its_own_error_not_by_the_first_timestamp(tmp_path: Path) -> None:
    """b65 (dev, first contact: fail_slow, "Throughput collapsed about 3x", no rank): two nodes of
    torch.multiprocessing.spawn, node 1's logging clock 8.3 s ahead. Rank 3 (node 1's spawn process 1) raises
    "RuntimeError: selected index k out of range"; ranks 0-2 fail with "Connection closed by peer", stamped earlier.
    A job whose rank raised an error of its own (not a lost peer: incidents_dev dev-013 slowed, then lost a peer, and
    stays fail_slow) is fail_stop whatever its last steps' pace; node 1's "Process 1" is its local rank, not rank 1;
    and the one rank that raised an error of its own while the others lost a peer is the rank that failed."""
    d = _diagnose("b65_uc_empty_hard_negatives_r3_clock_ahead_spawn_twonode_n1", tmp_path)
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_stop", 3), d.root_cause.summary
    assert "Throughput collapsed" not in d.root_cause.summary
