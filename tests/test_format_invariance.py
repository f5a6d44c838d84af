"""The same run, as a log collector delivers it, gets the same answer: ``kubectl logs --timestamps`` puts an
exact stamp on every line, so the peers' reports of a lost rank (a reset connection) carry exact times that
precede the lost rank's own report (its launcher's next poll, or its own next send). Real zoo dev runs
(``eval/zoo/runs``); the transforms are ``eval/format_eval.py``'s."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import run_diagnose

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "eval"))

from format_eval import transformed  # noqa: E402


def _answer(path: Path) -> tuple[str, str, int | None]:
    d = run_diagnose(path)
    return d.category.value, d.failure_mode.value, d.first_failing_rank


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        # a rank SIGTERMed from outside: torchelastic reports it 8 s after its peers' connection resets
        ("inf_peer_sigterm", ("infrastructure", "fail_stop", 1)),
        # ss -K on rank 2: its peers read the reset 1.5 s before rank 2 reads its own ECONNABORTED
        ("net_ss_kill_twonode", ("network", "fail_stop", 2)),
        ("oom_cgroup_rank_cache", ("host_oom", "fail_stop", 2)),
    ],
)
@pytest.mark.parametrize("transform", ["k8s", "cri", "docker_json", "crlf", "ansi", "gz"])
def test_collected_logs_keep_their_answer(run: str, expected: tuple, transform: str, tmp_path: Path) -> None:
    src = REPO / "eval" / "zoo" / "runs" / run
    assert _answer(src) == expected
    assert _answer(transformed(src, tmp_path / "b", transform)) == expected
