"""A new user's trial 37 (/work/trial37_inputs/REPORT.md): inputs the tool misread at first contact
(``tests/fixtures/trial37``: real torchrun runs on this machine; Ray's messages in the words of its source)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

RUNS = Path(__file__).parent / "fixtures" / "trial37"


def test_the_rank_whose_last_line_says_it_finished_left_the_loop_first() -> None:
    """r06 (torchrun, 2 ranks): rank 1's shard ran out at step 32 ("rank 1 training finished at step 32"), it waited in
    a barrier while rank 0 trained on in DDP's all-reduce. It said "which rank left the common path is not in these
    reports"; and a rank's own "training finished" is no report that the job completed (no shutdown-hang reading)."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r06_bundle"), kb=False, llm=False))
    assert d.failure_mode.value == "fail_hang" and d.first_failing_rank == 1, d.root_cause.summary
    assert "rank 1's own last line says it stopped" in d.root_cause.summary
    assert not d.root_cause.summary.startswith("Training had completed")


def test_two_ranks_step_lines_glued_together_keep_their_milliseconds() -> None:
    """r10 (2 ranks print the same step lines, no prefixes): where two lines were written at once the newline was lost
    ("step_time 25.6 msstep 605/2000 ..."), the unit was dropped and 25.6 read as seconds: "49.61x slower ... costing
    994.5s" for a 70 s run."""
    from diag_service.slow.analyze import analyze_slow

    rep = analyze_slow(RUNS / "r10_train_output.txt")
    assert rep.job_slowdown
    assert max(e.slowdown_factor for e in rep.job_slowdown) < 5
    assert rep.time_lost_s < 70


#: Ray Train's controller echoing a worker's death (Ray 2.4x, the shape of trial 37's g05 from ray#63807)
RAY_ACTOR_DIED = """\
The actor died unexpectedly before finishing this task.
\tclass_name: RayTrainWorker
\tactor_id: 4473bb2424de8ebfec88acc402000000
\tpid: 6420
\tnamespace: c53c8492-c985-4b6e-9247-fdf5ea623abd
\tip: 10.0.56.3
The actor is dead because its node has died. Node Id: 677df2a9020c5db45e755b0078c469e2ce51e05ea093ed3b283505a0
"""


def test_a_ray_node_death_is_no_set_up_failure(tmp_path: Path) -> None:
    """g05/g06 (Ray Train's controller echoing the worker's death, each line behind its Ray prefix): a node's death
    before any training step was handed to the owner as a set-up failure ("Stop ... hand to the job owner"). A node
    does not die of the job's set-up: it is restarted."""
    p = tmp_path / "job.log"
    p.write_text("".join(f"(TrainController pid=79312) {ln}\n" for ln in RAY_ACTOR_DIED.splitlines()))
    d = diagnose(DiagnoseRequest(path=str(p), kb=False, llm=False))
    assert "vs_ray_node_died" in {h.signature_id for h in d.signature_hits}, d.root_cause.summary
    assert d.category.value == "infrastructure"
    assert d.recovery is not None and d.recovery.rule_id != "failed_before_training"


def test_a_ray_node_drained_for_preemption_is_resumed_on_new_capacity(tmp_path: Path) -> None:
    """g05 (Ray's drain for preemption; gcs_actor_manager.cc words it "the actor's node was preempted: <reason>"): it
    read a node death before training and handed it to the owner ("Stop ... hand to the job owner")."""
    p = tmp_path / "job.log"
    text = RAY_ACTOR_DIED.replace("The actor is dead because", "The actor died because") + (
        "\tthe actor's node was preempted: spot instance reclaimed\n")
    p.write_text("".join(f"(TrainController pid=79312) {ln}\n" for ln in text.splitlines()))
    d = diagnose(DiagnoseRequest(path=str(p), kb=False, llm=False))
    assert "vs_ray_node_preempted" in {h.signature_id for h in d.signature_hits}
    assert d.recovery is not None and d.recovery.rule_id == "cloud_preemption_resume"


def test_why_the_actor_died_inside_its_exceptions_message_is_read(tmp_path: Path) -> None:
    """g06 (ray#43751's shape): the same message raised as RayActorError, so its lines are one exception's message and
    signatures see only its first line ("The actor died unexpectedly ..."); it read unknown, a set-up failure for the
    owner. The message's later line says the node died (a context rule reads it)."""
    p = tmp_path / "job.log"
    p.write_text('Traceback (most recent call last):\n  File "/home/user/train.py", line 41, in <module>\n'
                 "    result = trainer.fit()\nray.exceptions.RayActorError: " + RAY_ACTOR_DIED)
    d = diagnose(DiagnoseRequest(path=str(p), kb=False, llm=False))
    assert d.category.value == "infrastructure", d.root_cause.summary
    assert d.recovery is not None and d.recovery.rule_id != "failed_before_training"
