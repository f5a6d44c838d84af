"""A new user's trial 46 (2026-12-07): real inputs it found wrong or misleading, as fixtures.

- p02: a public OpenRLHF paste (issue 1050): the last PPO epoch's tqdm lines, then the colocated vLLM engine's
  "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62". Read unknown 0.32 with
  "no training step ... most likely failed in set-up".
- p03: a public RLinf paste: an SGLang scheduler's traceback forwarded by Ray, cut right after a bare
  "(SGLangWorker pid=8544)" prefix, then the actor's "killed by `ray.kill`": the bare prefix was read as the
  traceback's exception line and shown as the most suspicious event.
- r01: a clean recorded run with checkpoint pauses whose folder also holds copies of the tool's own live output in
  ``_live/``, excluded by a ``.diagignore`` line written as for git (``_live/``), which matched no file: read
  fail_stop / user_code from those copies.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

FIX = Path(__file__).resolve().parent / "fixtures" / "trial46"


def test_a_cuda_check_macros_out_of_memory_is_a_gpu_oom_and_a_named_loss_is_training() -> None:
    d = diagnose(DiagnoseRequest(path=str(FIX / "p02_openrlhf_vllm_wakeup_oom.log"), kb=False, llm=False))
    assert (d.failure_mode.value, d.category.value) == ("fail_stop", "gpu_oom"), d.root_cause.summary
    assert d.signature_hits[0].signature_id == "cuda_oom"
    assert d.recovery is not None and "failed_before_training" not in d.recovery.rule_id


def test_a_diagignore_folder_pattern_written_as_for_git_keeps_the_folder_out(tmp_path: Path) -> None:
    run = tmp_path / "r01"
    shutil.copytree(FIX / "r01_clean_ckpt", run)
    assert (run / ".diagignore").read_text().splitlines()[-1] == "_live/"
    d = diagnose(DiagnoseRequest(path=str(run), kb=False, llm=False))
    assert d.failure_mode.value == "none", d.root_cause.summary
    assert not any("_live/" in (e.first.file or "") for e in d.events)
    (run / ".diagignore").write_text("SOURCE.md\n")  # without it the tool's own copies are read as the job's lines
    worse = diagnose(DiagnoseRequest(path=str(run), kb=False, llm=False))
    assert worse.failure_mode.value != "none"


def test_a_bare_ray_prefix_ending_a_cut_traceback_is_no_exception_line() -> None:
    d = diagnose(DiagnoseRequest(path=str(FIX / "p03_rlinf_sglang_scheduler_raykill.log"), kb=False, llm=False))
    top = max(d.events, key=lambda e: e.suspicion)
    assert top.template.startswith("Traceback (incomplete)"), top.template
    assert not any(e.template.startswith("(SGLangWorker") for e in d.events)
    assert top.template == "Traceback (incomplete): return fn(obj)"  # the innermost frame shown (sglang/utils.py)
