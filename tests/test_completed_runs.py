"""A run whose logs end with its own report of completion gets the verdict ``none`` (no failure), not the
inferred hang of a log that just stops: real clean runs of the zoo's dev split (``eval/zoo/clean``) and the
vendors' completion messages (``diag_service.extract.events.COMPLETION_VENDOR``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from diag_service.domain import Category, FailureMode
from diag_service.extract.events import completion_mark
from diag_service.limits import BundleLimits
from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.signatures.catalog import SignatureSpec

ROOT = Path(__file__).resolve().parents[1]
CLEAN = ROOT / "eval" / "zoo" / "clean"
DEV = set(json.loads((CLEAN / "split.json").read_text())["dev"])


def _diagnose(path: Path):
    return diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))


@pytest.mark.parametrize("run", ["clean_accel_ckpt", "clean_hf_nobar_lr", "clean_msstep_eval_4r"])
def test_clean_runs_that_report_completion_are_no_failure(run: str) -> None:
    """Real clean torchrun runs (dev split) ending 'training finished', with the Trainer's final
    ``train_runtime`` metrics, and at ``step 600/600``."""
    assert run in DEV
    d = _diagnose(CLEAN / "runs" / run)
    assert d.failure_mode is FailureMode.NONE and d.category is Category.UNKNOWN
    assert d.first_failing_rank is None and "No failure in these logs" in d.root_cause.summary
    assert d.recovery is not None and d.recovery.level.value == "L0" and d.recovery.rule_id == "run_completed"
    # the verdict says it: no second notice that the logs hold no failure (a new user's trial)
    assert not any(w.startswith("no failure evidence") for w in d.input.warnings), d.input.warnings


def test_clean_run_that_stops_without_a_completion_report_stays_an_inferred_hang() -> None:
    """clean_tqdm_warmup_cache ends on an epoch's bar at 100 %: an epoch's end is not the run's. Logs that just stop
    are an inferred hang, an abstention (``unknown``; right about a third of the time in that situation at first contact)."""
    d = _diagnose(CLEAN / "runs" / "clean_tqdm_warmup_cache")
    assert d.failure_mode is FailureMode.FAIL_HANG and d.category.value == "unknown" and d.confidence < 0.5


def test_completion_cut_off_by_the_excerpt_is_a_hang(tmp_path: Path) -> None:
    """The same real run with its last lines (the completion report) cut: the logs just stop."""
    src = (CLEAN / "runs" / "clean_accel_ckpt" / "console.log").read_text()
    assert src.rstrip().endswith("training finished")
    (tmp_path / "console.log").write_text(src[: src.rindex("Epoch 2 Batch 170/188")])
    d = _diagnose(tmp_path)
    assert d.failure_mode is FailureMode.FAIL_HANG


def test_an_error_after_completion_is_a_failure(tmp_path: Path) -> None:
    """A run that finished training and then crashed at exit (teardown) failed: the error decides."""
    run = tmp_path / "job"
    shutil.copytree(CLEAN / "runs" / "clean_accel_ckpt", run)
    with (run / "console.log").open("a") as f:
        f.write("[rank1]: Traceback (most recent call last):\n"
                '[rank1]:   File "/work/train.py", line 88, in <module>\n'
                "[rank1]:     dist.destroy_process_group()\n"
                "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
                "[10.0.0.2]:47810\n")
    d = _diagnose(run)
    assert d.failure_mode is not FailureMode.NONE


@pytest.mark.parametrize("after", [0, 3000])
def test_only_the_last_block_of_a_file_counts(tmp_path: Path, after: int) -> None:
    """Only a file's end counts: a run that printed 'Training completed' for a first phase and then went on
    for several blocks of output (64 KiB blocks here) and stopped is not complete."""
    lines = ["Epoch 1 Batch 10/100 loss=0.5 30.1 it/s"] * 10 + ["Training completed after 1 epochs"]
    lines += [f"step {i}/5000 | loss 0.4{i % 10} | 40.1 ms/step" for i in range(1, after + 1)]
    (tmp_path / "console.log").write_text("\n".join(lines) + "\n")
    d = diagnose(DiagnoseRequest(path=str(tmp_path), kb=False, llm=False, limits=BundleLimits(block_bytes=64 << 10)))
    assert (d.failure_mode is FailureMode.NONE) is (after == 0)


@pytest.mark.parametrize("tail, done", [
    # vendor messages (sources in COMPLETION_VENDOR's comment)
    ("INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. Waiting 300 "
     "seconds for other agents to finish.", True),
    ("INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (SUCCEEDED). Waiting 300 seconds "
     "for other agents to finish", True),
    ("Epoch 4: 100%|██████████| 1876/1876 [00:17<00:00, 107.85it/s, loss=0.0944]`Trainer.fit` stopped: `max_epochs=5` "
     "reached.", True),
    ("[2024-03-01 10:00:00,123] [INFO] [launch.py:351:main] Process 4242 exits successfully.", True),
    ("2024-03-01 10:00:00 | INFO | fairseq_cli.train | done training in 3661.2 seconds", True),
    ("[after training is done] datetime: 2024-03-01 10:00:00", True),
    ("{'train_runtime': 120.5, 'train_samples_per_second': 33.2, 'train_steps_per_second': 1.04, 'train_loss': 0.9}", True),
    ("step 600/600 | loss 0.4685 | 39.9 ms/step", True),
    ("Epoch [4/4], Step [150/150], Loss: 0.3341, Time: 0.029s", True),  # last step of the last epoch
    ("2026-12-05 02:11:09,103 [rank0] INFO Done! Final validation accuracy 0.9870", True),  # zoo clean5_spawn_eval_pause
    # not a completion
    ("Training finished iteration 3 at 2024-03-01 10:00:00. Total running time: 1min 2s", False),
    ("rank 0 waiting until training is done on the other ranks", False),
    ("Epoch 2 Batch 188/188 loss=0.3787 27.2 it/s", False),
    ("Epoch [3/4], Step [150/150], Loss: 0.3341, Time: 0.029s", False),  # an epoch's end, not the run's
    ("step 120/600 | loss 0.4685 | 39.9 ms/step", False),
    ("iter 5/5 warm-up", False),
    ("epoch 2 validation accuracy 0.9312 (1.8s)", False),  # an epoch's score, not the final one
])
def test_completion_mark(tail: str, done: bool) -> None:
    assert (completion_mark(("step 1/600 | loss 1.0\n" + tail + "\n").encode()) is not None) is done


def test_no_signature_may_claim_no_failure() -> None:
    with pytest.raises(ValidationError, match="only a diagnosis's verdict"):
        SignatureSpec(id="x", name="x", patterns=["x"], failure_mode="none", category="unknown", priority=1,
                      confidence=0.1, explanation="x", examples=["x"])


def test_a_run_that_finished_slowly_is_a_slowdown_without_the_completion_finding() -> None:
    """A real zoo run (dev split) whose Trainer reported completion after rank 0 slowed the job: fail_slow, and the
    'nothing here needs recovery' of the completion verdict is gone; what stays is that there is no job to restart
    (the policy's slow_after_completion)."""
    run = ROOT / "eval" / "zoo" / "runs" / "hf_slow_stopcont_rank0"
    assert "hf_slow_stopcont_rank0" in json.loads((ROOT / "eval" / "zoo" / "split.json").read_text())["dev"]
    d = _diagnose(run)
    assert d.failure_mode is FailureMode.FAIL_SLOW
    assert not any("nothing here needs recovery" in f for f in d.findings)
    assert any("there is no job to restart" in f for f in d.findings)


_NCCL_TESTS = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 536870912 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1
#
# Using devices
#  Rank  0 Group  0 Pid  12345 on gpu-node-001 device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  12346 on gpu-node-002 device  0 [0x07] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   268435456      67108864     float     sum      -1   125807    2.13    2.13      0   121575    2.21    2.21      0
   536870912     134217728     float     sum      -1   193909    2.77    2.77      0   192903    2.78    2.78      0
# Out of bounds values : {oob}
# Avg bus bandwidth    : 2.4725
#
"""


def test_a_completed_nccl_tests_run_is_not_a_failed_job(tmp_path: Path, corpus_dev_case) -> None:
    """nccl-tests' summary (src/common.cu) ends a benchmark that ran through every size: nothing stopped; the figure
    is the finding (a possible slowdown), unless its data check failed."""
    d = corpus_dev_case("n11a-004")  # all_reduce_perf / alltoall_perf on 8 nodes at ~0.5 GB/s
    assert d.failure_mode.value == "fail_slow" and d.category.value == "unknown"
    assert "Avg bus bandwidth 0.508 GB/s" in d.root_cause.summary
    d = diagnose(DiagnoseRequest(path=str(Path(__file__).resolve().parents[1] / "eval/corpus/logs/n11a-004.log"),
                                 kb=False, llm=False, recovery=True))
    assert d.recovery is not None and d.recovery.level.value == "L0"  # nothing to restart: check the fabric
    log = tmp_path / "nccl_tests.log"
    log.write_text(_NCCL_TESTS.format(oob="0 OK"))
    d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
    assert d.failure_mode.value == "fail_slow" and "2.47 GB/s" in d.root_cause.summary
    log.write_text(_NCCL_TESTS.format(oob="4 FAILED"))  # wrong values: not a completed benchmark
    assert diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False)).failure_mode.value != "fail_slow"
    # a paste whose last line is blank and has no newline (trailing spaces, a quote's ">") keeps the summary
    log.write_text(_NCCL_TESTS.format(oob="0 OK") + "  ")
    assert diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False)).failure_mode.value == "fail_slow"
    # the same run as kubectl logs --timestamps or mpirun --tag-output delivers it
    for prefix in ("2026-12-05T10:00:00.000000001Z ", "[1,0]<stdout>:"):
        log.write_text("".join(prefix + ln + "\n" for ln in _NCCL_TESTS.format(oob="0 OK").splitlines()))
        d = diagnose(DiagnoseRequest(path=str(log), kb=False, llm=False))
        assert d.failure_mode.value == "fail_slow" and "2.47 GB/s" in d.root_cause.summary, prefix


def test_a_cut_run_that_got_over_a_small_slowdown_is_not_read_as_slow() -> None:
    """clean6_logdir_eval_cut (dev): a healthy run whose logs were taken mid-run; the host slowed it 1.43x from step
    180 to 330 (0.67 s in all), then it was back at its pace. A slowdown over and under a second is a finding, as for a
    finished run; the verdict is the cut log's own (it may still be running), not fail_slow."""
    assert "clean6_logdir_eval_cut" in DEV
    d = _diagnose(CLEAN / "runs" / "clean6_logdir_eval_cut")
    assert d.failure_mode is not FailureMode.FAIL_SLOW, d.root_cause.summary
    assert any("too little to be the run's failure" in f for f in d.findings)
