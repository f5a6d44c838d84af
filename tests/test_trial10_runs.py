"""Real failing gloo/CPU DDP runs from a new on-call user's trial (2026-12-05, `tests/fixtures/trial10/`).

Each run is a `torchrun` job (one node, or two agents on 127.0.0.1 writing `node0.log` / `node1.log`, each rank printing
`node=nodeN` at init) with one fault injected by its script; what an on-call engineer needs from each is asserted, not
the wording. The fault, per folder: `r1` rank 3 (node1) SIGKILLs itself at step 70; `r2` rank 2 (node1) sleeps 300 s at
step 50 while ranks 0, 1, 3 time out after 20 s (gloo); `r5` rank 1 passes a 17-element tensor to an `all_gather` of
32-element ones; `r9` node1's agent and workers are SIGKILLed at step 60; `r10` rank 0's DataLoader worker opens a data
shard that is not there; `r6` rank 3 sleeps 30 % extra per step from step 151 (timing feed timed around backward());
`r6b` the same with compute timed before backward, and the run completes.
"""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.slow.analyze import analyze_slow, load_feed

RUNS = Path(__file__).parent / "fixtures" / "trial10"


def _diag(run: str):
    return diagnose(DiagnoseRequest(path=str(RUNS / run), kb=False, llm=False))


def test_a_missing_data_shard_in_a_dataloader_worker_is_data_not_a_checkpoint_race() -> None:
    d = _diag("r10_dlworker_missing_shard_rank0")
    assert d.category.value == "data", d.root_cause.summary
    assert d.first_failing_rank == 0
    assert "checkpoint" not in d.root_cause.summary.split(".")[0].lower()
    assert d.signature_hits[0].details.get("context_rule") == "dataloader_data_file_missing"


def test_a_lost_node_is_taken_out_not_relaunched_on() -> None:
    d = _diag("r9_node1_lost")
    assert d.faulty_nodes == ["node1"] and d.category.value == "infrastructure"
    assert d.recovery is not None and d.recovery.rule_id == "node_lost_replace"
    assert d.recovery.level.value == "L3"
    assert any("node1" in c for c in d.recovery.commands), d.recovery.commands


def test_the_one_rank_that_never_timed_out_is_named_with_its_node() -> None:
    """Every rank prints `world_size=4` at init: the job's size, so 3 timeouts out of 4 leave rank 2. Its node is
    said (where to take stacks), but not made a faulty node: a rank stuck in the job's own loop says nothing against
    its node, and a faulty node counts in the recovery history towards a cordon (a new user's live trial: three
    such hangs made a healthy node a 'lemon')."""
    d = _diag("r2_hang_rank2")
    assert d.failure_mode.value == "fail_hang"
    assert d.first_failing_rank == 2
    assert "Rank 2 runs on node node1." in d.root_cause.summary
    assert d.faulty_nodes == []


def test_torchruns_localhost_is_not_a_node_when_the_file_names_one() -> None:
    d = _diag("r1_sigkill_node1")
    assert d.first_failing_rank == 3 and d.faulty_nodes == ["node1"]
    assert "localhost" not in d.input.nodes_seen, d.input.nodes_seen
    assert "localhost" not in d.root_cause.summary


def test_a_rank_dependent_tensor_size_in_all_gather_is_the_jobs_code_and_not_restarted() -> None:
    d = _diag("r5_shape_rank1")
    assert d.category.value == "user_code", d.root_cause.summary
    assert d.signature_hits[0].signature_id == "gloo_collective_argument_mismatch"
    assert d.first_failing_rank == 1
    assert d.recovery is not None and d.recovery.level.value == "L4"


def test_a_straggler_hidden_inside_backward_gets_a_hint_on_what_to_record() -> None:
    rep = analyze_slow(load_feed(RUNS / "r6_straggler_rank3" / "timing.jsonl"))
    assert rep.failure_mode is not None and rep.failure_mode.value == "fail_slow"
    assert not rep.stragglers
    assert any("comm_wait_s" in w and "backward" in w for w in rep.input.warnings), rep.input.warnings


def test_a_straggler_of_a_run_that_finished_is_not_drained_and_relaunched() -> None:
    d = _diag("r6b_straggler_rank3_splitfeed")
    assert d.failure_mode.value == "fail_slow" and d.first_failing_rank == 3
    assert d.recovery is not None and d.recovery.rule_id == "slow_after_completion"
    assert d.recovery.level.value == "L0"


def test_only_the_jobs_world_size_is_read_as_its_size_not_a_nodes() -> None:
    from diag_service.extract.events import STATED_WORLD

    said = {t: (m.group(1) if (m := STATED_WORLD.search(t)) else None) for t in (
        "2026-12-05 20:09:46,796 INFO [rank2] init done world_size=4 local_rank=0 node=node1",
        "World size: 16", "WORLD_SIZE=8 RANK=3", "local world size: 8", "LOCAL_WORLD_SIZE=8", "Local world size: 8")}
    assert said == {"2026-12-05 20:09:46,796 INFO [rank2] init done world_size=4 local_rank=0 node=node1": "4",
                    "World size: 16": "16", "WORLD_SIZE=8 RANK=3": "8", "local world size: 8": None,
                    "LOCAL_WORLD_SIZE=8": None, "Local world size: 8": None}
