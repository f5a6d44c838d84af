"""The zoo's labels (eval/zoo/labels.jsonl): schema, a recorded run for every label, the frozen split's rule.

No diagnosis is asserted here: eval/zoo_eval.py measures it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from diag_service.domain import Category, FailureMode

ZOO = Path(__file__).resolve().parents[1] / "eval" / "zoo"
KEYS = {"id", "script", "launcher", "ranks", "failure_mode", "category", "faulty_rank", "basis"}


def _labels() -> list[dict]:
    return [json.loads(line) for line in (ZOO / "labels.jsonl").read_text().splitlines() if line.strip()]


#: batch 4's fail_slow labels add the fault's onset and size (eval/zoo/README.md, "Batch 4")
#: batch 63's also say which kind of slowdown was injected (``kind``: persistent, intermittent, job-wide, data)
#: batch 69's transient slowdown also says where it ended (``end_step``, the last slow step)
SLOW_KEYS = {"onset_step", "intended_factor", "measured_factor", "measured_how", "duty", "kind", "end_step"}
#: batch 5: a recording's note (a kept re-recording and why), optional on any run
NOTE_KEYS = {"note"}
#: batch 12's labels also carry what the corpus's do (README, "Batch 12"): the cause in a sentence, substrings of the
#: run's files that carry it, the source of the fault kind, the recorder's own recovery words, the two-node run's node
DETAIL_KEYS = {"root_cause", "evidence", "source", "recovery_level", "faulty_node"}


def test_labels_schema():
    labels = _labels()
    assert len(labels) >= 30
    ids = [c["id"] for c in labels]
    assert len(ids) == len(set(ids))
    categories = {c.value for c in Category}
    modes = {m.value for m in FailureMode}
    for c in labels:
        assert KEYS <= set(c) <= KEYS | SLOW_KEYS | NOTE_KEYS | DETAIL_KEYS, c["id"]
        assert "note" not in c or (isinstance(c["note"], str) and c["note"]), c["id"]
        if "evidence" in c:
            files = "".join(p.read_text(errors="replace") for p in (ZOO / "runs" / c["id"]).rglob("*") if p.is_file())
            assert c["evidence"] and all(isinstance(e, str) and e in files for e in c["evidence"]), c["id"]
        if set(c) - KEYS - NOTE_KEYS - DETAIL_KEYS:  # batch 4's fail_slow runs: the injected and the measured size
            assert c["failure_mode"] == "fail_slow" and c["measured_factor"] > 1.0, c["id"]
        assert c["category"] in categories, c["id"]
        assert c["failure_mode"] in modes, c["id"]
        # 0: the launcher exited before it started any worker (b20_cfg_nproc_gpu_cpu_pool)
        assert isinstance(c["ranks"], int) and c["ranks"] >= 0, c["id"]
        assert c["faulty_rank"] is None or (isinstance(c["faulty_rank"], int) and 0 <= c["faulty_rank"] < c["ranks"]), c["id"]
        assert c["launcher"] and len(c["basis"]) > 40, c["id"]
        assert c["script"] == f"eval/zoo/scripts/{c['id']}.py"


def test_every_label_has_its_script_and_run():
    root = ZOO.parents[1]
    for c in _labels():
        assert (root / c["script"]).is_file(), c["id"]
        run = ZOO / "runs" / c["id"]
        # one terminal, or one per node when two launcher agents ran as two nodes (batch 2)
        consoles = [run / "console.log"] if (run / "console.log").is_file() else sorted(run.glob("console_node*.log"))
        assert consoles, c["id"]
        for con in consoles:
            assert con.read_text(errors="replace").startswith("$ "), c["id"]
    assert {p.name for p in (ZOO / "runs").iterdir()} == {c["id"] for c in _labels()}


def test_split_follows_its_rule_and_covers_every_label():
    split = json.loads((ZOO / "split.json").read_text())
    ids = {c["id"] for c in _labels()}
    assert set(split["dev"]) | set(split["test"]) == ids
    assert not set(split["dev"]) & set(split["test"])
    assert len(split["labels_commit"]) == 40
    # a run recorded as the twin of another batch's run (the same kind, by two recorders in parallel) takes its twin's
    # split, so that a rule written from a dev twin never meets its twin in test; every other run the hash rule's
    twins = {k: v for add in split.get("additions", []) for k, v in add.get("twins", {}).items()}
    for i in ids:
        if i in twins:
            assert twins[i] in ids and (i in split["test"]) == (twins[i] in split["test"]), i
            continue
        h = int(hashlib.sha256(i.encode()).hexdigest()[:8], 16) / 2**32
        assert (i in split["test"]) == (h < split["test_share"]), i


def test_additions_are_frozen_by_the_same_rule_and_in_the_unions():
    split = json.loads((ZOO / "split.json").read_text())
    seen = set()
    for add in split.get("additions", []):
        assert len(add["labels_commit"]) == 40 and add["date"]
        ids = set(add["dev"]) | set(add["test"])
        assert not ids & seen and not set(add["dev"]) & set(add["test"])
        assert set(add["dev"]) <= set(split["dev"]) and set(add["test"]) <= set(split["test"])
        seen |= ids
