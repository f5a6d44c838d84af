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


def test_a_rank_that_finished_while_its_peers_trained_is_named_as_the_one_they_lost() -> None:
    """b25_cfg_epochs_node1_twonode: node 1 was started with ``--epochs 2`` (node 0: 3); node 1's rank logged
    "training finished" and left, node 0's rank failed "Connection closed by peer" in its next backward. The answer
    named rank 0 and said only "connection reset / closed by peer". The finished rank is the one its peer lost, and the
    ranks disagree on how long to train."""
    run = "b25_cfg_epochs_node1_twonode"
    assert run in DEV
    d = diagnose(DiagnoseRequest(path=str(ZOO / "runs" / run), kb=False, llm=False))
    assert d.first_failing_rank == 1, d.root_cause.summary
    assert any("reports the end of training" in f and "disagree on how many steps" in f for f in d.findings), d.findings
