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
])
def test_a_known_message_names_the_category(tmp_path: Path, run: str, category: str, rank: int | None,
                                            signature: str) -> None:
    d = _diagnose(run, tmp_path)
    assert d.category.value == category, d.root_cause.summary
    assert d.primary_hit() is not None and d.primary_hit().signature_id == signature
    if rank is not None:
        assert d.first_failing_rank == rank
