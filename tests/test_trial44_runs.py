"""A new user's trial 44 (/work/trial44_inputs/REPORT.md): inputs the tool misread at first contact
(``tests/fixtures/trial44``: real runs recorded on this machine)."""

from __future__ import annotations

import shutil
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.slow.analyze import analyze_slow

RUNS = Path(__file__).parent / "fixtures" / "trial44"


def test_a_timing_feed_per_rank_is_read_as_one_job() -> None:
    """r11 (torchrun, 2 ranks, each writing its own timing-rank<R>.jsonl in the documented record format): rank 1's
    compute x1.35 from step 120. Only timing-rank0.jsonl was read, and rank 0's wait for rank 1 read as a network
    slowdown in the communication phase with no rank named; read together, rank 1 is the compute straggler."""
    rep = analyze_slow(RUNS / "r11_per_rank_feeds")
    assert [(s.rank, s.kind.value) for s in rep.stragglers][:1] == [(1, "compute")], rep.summary
    assert 110 <= rep.stragglers[0].first_step <= 130 and "persistent" in rep.summary
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r11_per_rank_feeds"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_slow", 1)
    assert d.category.value != "network"


def test_feeds_that_hold_the_same_ranks_are_not_merged(tmp_path: Path) -> None:
    """Two files with the same rank's records (a copy, or another attempt of the run) are not one job's ranks side by
    side: the preferred one is read alone, as before."""
    shutil.copy(RUNS / "r11_per_rank_feeds" / "timing-rank0.jsonl", tmp_path / "timing.jsonl")
    shutil.copy(RUNS / "r11_per_rank_feeds" / "timing-rank0.jsonl", tmp_path / "timing-copy.jsonl")
    rep = analyze_slow(tmp_path)
    assert rep.input.source.endswith("timing-copy.jsonl") and rep.input.ranks == 1


def test_a_reset_connection_to_127_0_1_1_is_not_a_loopback_misconfiguration() -> None:
    """p04 (pytorch/pytorch #132644, torchrun --nproc-per-node 4 on one machine, a pipelining deadlock fixed upstream):
    rank 0's "Read error [127.0.1.1]:42417: Connection reset by peer" was read as "a rank connects to a loopback
    address ... set MASTER_ADDR to a routable address" (config, 0.53). The connection had been made (a reset ends an
    open connection): loopback worked, as between ranks of one machine it does."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "p04_pipelining_reset_loopback.log"), kb=False, llm=False))
    assert d.category.value != "config" and "MASTER_ADDR" not in d.root_cause.summary
    assert not any(h.details.get("context_rule") == "peer_address_is_loopback" for h in d.signature_hits)


def test_the_one_rank_waiting_in_another_collective_than_the_peers_that_lost_it_is_named() -> None:
    """r06 (torchrun --tee 3, 3 ranks): rank 1 skipped one step's gradient all-reduces and ran a step ahead; it
    finished its loop and timed out alone in the final barrier, while ranks 0 and 2, still in step 120's all_reduce,
    saw its connection close. With only rank 1's timeout as a wait site nobody was named; the lost-peer reports say
    where ranks 0 and 2 waited, and rank 1 is the one in another collective."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r06_skip_sync_console.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank) == ("fail_hang", 1)
    assert "rank 1 in barrier" in d.root_cause.summary


def test_the_memory_cgroups_own_oom_kill_count_confirms_the_kill(tmp_path: Path) -> None:
    """Trial 45 r07: a rank SIGKILLed by its memory cgroup; beside the console the user saved the cgroup's
    memory.oom_control ("oom_kill 1"). Without it the kill stayed unconfirmed (restart as it is, the platform acts);
    the cgroup's count is the OOM killer's own word (kernel cgroup-v2 docs, memory.events: oom_kill)."""
    console = ("[rank1] step 40 | rss 410 MB\n"
               "E1207 20:31:02.113000 4242 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
               "(exitcode: -9) local_rank: 1 (pid: 4301) of binary: /opt/venv/bin/python3.11\n")
    for sub in ("bare", "with_cgroup"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "console.log").write_text(console)
    (tmp_path / "with_cgroup" / "cgroup_memory_after.txt").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    bare = diagnose(DiagnoseRequest(path=str(tmp_path / "bare"), kb=False, llm=False))
    d = diagnose(DiagnoseRequest(path=str(tmp_path / "with_cgroup"), kb=False, llm=False))
    assert d.category.value == "host_oom" and d.confidence > bare.confidence
    assert d.recovery is not None and d.recovery.rule_id != bare.recovery.rule_id  # type: ignore[union-attr]


def test_diag_slow_honours_the_bundles_diagignore(tmp_path: Path) -> None:
    """Trial 45: `diag slow` on a folder read a file its .diagignore excluded (the diagnosis did not)."""
    (tmp_path / "train.log").write_text("".join(f"step {s} | loss 2.3 | 0.250s/it\n" for s in range(1, 61)))
    (tmp_path / "old_run.txt").write_text("".join(f"step {s} | loss 2.3 | 0.900s/it\n" for s in range(100, 160)))
    (tmp_path / ".diagignore").write_text("old_run.txt\n")
    rep = analyze_slow(tmp_path)
    assert rep.input.records == 60 and rep.input.last_step == 60


def test_a_missing_data_file_named_bin_is_not_a_checkpoint_race(tmp_path: Path) -> None:
    """Session 27's clean-clone check: FileNotFoundError on a data file '/données/été.bin' read as "Checkpoint path
    missing on this rank (save/rotate race)" because of its .bin suffix (Megatron's indexed datasets are .bin/.idx
    pairs); a checkpoint's own .bin names (pytorch_model.bin, optimizer.bin) still are."""
    def run(path: str) -> str:
        log = tmp_path / f"{abs(hash(path))}.log"
        log.write_text("Traceback (most recent call last):\n"
                       '  File "/home/user/proj/train.py", line 40, in <module>\n'
                       "    data = np.memmap(path, dtype=np.uint16, mode='r')\n"
                       f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'\n")
        d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
        return d.signature_hits[0].signature_id if d.signature_hits else ""
    assert run("/data/corpus_text_document.bin") != "checkpoint_path_race"
    assert run("/ckpt/step_500/pytorch_model.bin") == "checkpoint_path_race"
