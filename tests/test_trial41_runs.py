"""A new user's trial 41 (/work/trial41_inputs/REPORT.md): inputs the tool misread at first contact
(``tests/fixtures/trial41``: real torchrun / torch.multiprocessing.spawn runs on this machine)."""

from __future__ import annotations

from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.slow.logs import load_log_bundle
from diag_service.slow.offline import whole_log_episode

RUNS = Path(__file__).parent / "fixtures" / "trial41"


def test_a_gross_slowdown_with_a_noisy_stretch_is_found_in_a_short_log() -> None:
    """r04 (mp.spawn, 3 ranks, 70 steps): six CPU-bound processes started beside the job at step ~24 took its step
    time from 0.05-0.27 s to 0.4-6 s, varying with the co-tenants' load. Too few steps for the streaming baseline,
    and the stretch's own spread hid it from the change test: "No failure in these logs ... nothing here needs
    recovery"."""
    feed = load_log_bundle(RUNS / "r04_job.out")
    ep = whole_log_episode(feed.batch.step, feed.batch.step_time, feed.batch.weight, feed.batch.end)
    assert ep is not None and 22 <= ep.start_step <= 26 and ep.slowdown_factor > 5, ep
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r04_job.out"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_slow", "infrastructure"), d.root_cause.summary


def test_the_first_half_of_the_same_log_is_not_called_slow() -> None:
    """The first 18 steps, before the co-tenants started (the step time rises from step 20), alone: no stretch (the
    warm-up's slow first steps are no slowdown)."""
    feed = load_log_bundle(RUNS / "r04_job.out")
    keep = feed.batch.step <= 18
    assert whole_log_episode(feed.batch.step[keep], feed.batch.step_time[keep], feed.batch.weight[keep],
                             feed.batch.end[keep]) is None


def test_a_hangs_culprit_placed_on_its_node_has_that_node_in_the_json() -> None:
    """r02 (two torchrun agents as two nodes, py-spy dumps of every rank): rank 2 on node1 sleeps in the job's code
    while the others wait in the all-reduce. The text said "Rank 2 runs on node node1"; ``first_failing_node`` was
    null."""
    d = diagnose(DiagnoseRequest(path=str(RUNS / "r02"), kb=False, llm=False))
    assert (d.failure_mode.value, d.first_failing_rank, d.first_failing_node) == ("fail_hang", 2, "node1"), \
        d.root_cause.summary
    assert d.faulty_nodes == []  # the job's own code: nothing against the node to act on


def test_a_network_signature_the_hang_verdict_overruled_is_not_offered_to_the_summary() -> None:
    """r10 (torchrun, 4 ranks, one py-spy round): rank 1 skipped the evaluation's all_reduce and waited in a barrier
    (user_code, a collective mismatch). The evidence pack offered the connection-reset signature (network) as the
    deciding "known failure", and the model's summary read "Rank 1 hung ... due to a TCP connection reset"; the
    fallback said "Rank 1 failed first with" rank 0's timeout line."""
    from diag_service.llm.fallback import fallback_summary
    from diag_service.llm.pack import PackConfig, build_evidence_pack

    d = diagnose(DiagnoseRequest(path=str(RUNS / "r10"), kb=False, llm=False))
    assert (d.category.value, d.first_failing_rank) == ("user_code", 1), d.root_cause.summary
    pack = build_evidence_pack(d, PackConfig())
    assert pack.facts["signature"] is None
    assert not any(i.kind == "signature" and "Connection reset" in i.label for i in pack.items)
    text, _ = fallback_summary(pack)
    assert text.startswith("Rank 1 is the rank the job hung on; the first error, reported by a peer, was"), text
