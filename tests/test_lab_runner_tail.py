"""The lab runner's view of a rank's progress: the last complete record of its ``timing-rank-R.jsonl`` (as the
lab's train.py writes it), read from the file's last 4 KiB with the package's JSONL reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diag_service.lab.runner import _last_line, _last_line_step

RECS = [{"rank": 1, "node": "node0", "step": s, "start": 1764771000.0 + s, "end": 1764771000.8 + s, "compute_s": 0.61,
         "comm_s": 0.12, "data_s": 0.02, "attempt": 0} for s in range(60)]  # ~9 KiB: the tail starts mid-line


# (a number over Python's 4,300-digit conversion limit cannot fit in the 4 KiB tail)
@pytest.mark.parametrize("bad", ["[" * 3000, '{"rank": 1, "step": 60, "st'], ids=["deep nesting", "cut last line"])
def test_the_last_complete_record_before_a_bad_last_line(tmp_path: Path, bad: str) -> None:
    p = tmp_path / "timing-rank-1.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in RECS) + bad)
    assert _last_line(p) == RECS[-1]
    assert _last_line_step(p) == 59


def test_a_missing_or_empty_timing_file_has_no_step(tmp_path: Path) -> None:
    assert _last_line_step(tmp_path / "timing-rank-0.jsonl") is None
    (tmp_path / "timing-rank-0.jsonl").write_text("")
    assert _last_line_step(tmp_path / "timing-rank-0.jsonl") is None
