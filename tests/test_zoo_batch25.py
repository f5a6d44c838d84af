"""Zoo batch 25's dev runs (real gloo/CPU runs recorded blind, ``eval/zoo/runs``) that first contact got wrong and a
general reading now gets right."""

from __future__ import annotations

import json
from pathlib import Path

from diag_service.pipeline import DiagnoseRequest, diagnose

ZOO = Path(__file__).parents[1] / "eval" / "zoo"
DEV = set(json.loads((ZOO / "split.json").read_text())["dev"])


def test_a_resume_path_that_names_a_directory_is_the_jobs_configuration() -> None:
    """b25_cfg_resume_dir_not_file: ``--resume checkpoints/conformer-s/step_4000`` names the step's directory and
    torch.load raised ``IsADirectoryError: [Errno 21] Is a directory`` on both ranks; the answer was unknown (0.19).
    open(2)'s EISDIR: a file was expected where the path names a directory, a path the job was given: config."""
    run = "b25_cfg_resume_dir_not_file"
    assert run in DEV
    d = diagnose(DiagnoseRequest(path=str(ZOO / "runs" / run), kb=False, llm=False))
    assert d.category.value == "config" and d.failure_mode.value == "fail_stop", d.root_cause.summary
