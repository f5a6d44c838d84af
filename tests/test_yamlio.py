"""All four kinds of knowledge file fail the same way: the error names the file and the offending line."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from diag_service.calibrate import CalibrationError, default_calibration_path, load_calibration
from diag_service.errors import ErrorKind
from diag_service.kb.records import RecordError, default_incidents_dir, load_records
from diag_service.recovery import PolicyError, default_policy_path, load_policy
from diag_service.signatures import SignatureError, default_signature_dir, load_signatures


def _break(text: str, needle: str, extra: str) -> tuple[str, int]:
    """``text`` with ``extra`` appended to the first line holding ``needle``; and that line's number."""
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if needle in line)
    lines[i] = lines[i] + extra
    return "\n".join(lines) + "\n", i + 1


def _line(msg: str, name: str) -> int:
    m = re.search(re.escape(name) + r":(\d+):", msg)
    assert m, msg
    return int(m.group(1))


def test_a_bad_signature_file_names_its_line(tmp_path: Path) -> None:
    d = tmp_path / "sigs"
    shutil.copytree(default_signature_dir(), d)
    text, line = _break((d / "gpu.yaml").read_text(), "priority:", "0000")  # priority 950000: out of range
    (d / "gpu.yaml").write_text(text)
    with pytest.raises(SignatureError) as ei:
        load_signatures(d)
    assert _line(str(ei.value), "gpu.yaml") == line and ei.value.kind is ErrorKind.CONFIG


def test_a_bad_incident_file_names_its_line(tmp_path: Path) -> None:
    d = tmp_path / "inc"
    shutil.copytree(default_incidents_dir(), d)
    text, line = _break((d / "network.yaml").read_text(), "category: network", "ing")
    (d / "network.yaml").write_text(text)
    with pytest.raises(RecordError) as ei:
        load_records(d)
    assert _line(str(ei.value), "network.yaml") == line and ei.value.kind is ErrorKind.CONFIG


def test_a_bad_policy_names_its_line(tmp_path: Path) -> None:
    text, line = _break(default_policy_path().read_text(), "level: L", "9")
    (tmp_path / "policy.yaml").write_text(text)
    with pytest.raises(PolicyError) as ei:
        load_policy(tmp_path / "policy.yaml")
    assert _line(str(ei.value), "policy.yaml") == line


def test_a_bad_calibration_names_its_line_and_bad_yaml_too(tmp_path: Path) -> None:
    src = default_calibration_path().read_text()
    text, line = _break(src, "  - 0.", "x")  # a knot's probability that is not a number
    (tmp_path / "cal.yaml").write_text(text)
    with pytest.raises(CalibrationError) as ei:
        load_calibration(tmp_path / "cal.yaml")
    assert _line(str(ei.value), "cal.yaml") == line
    (tmp_path / "cal.yaml").write_text(src + "extra: [unclosed\n")
    with pytest.raises(CalibrationError, match=r"cal\.yaml:\d+: invalid YAML"):
        load_calibration(tmp_path / "cal.yaml")


def test_a_key_repeated_in_one_mapping_is_refused_with_its_line(tmp_path) -> None:
    # PyYAML keeps the last value silently: a rule pasted over another's id line merged the two entries
    from diag_service.errors import DiagError
    from diag_service.yamlio import parse_yaml

    text = "context_rules:\n  - id: a\n    refines: [x]\n    name: A\n    refines: [y]\n"
    with pytest.raises(DiagError, match=r"t\.yaml:5: invalid YAML \(found duplicate key 'refines'\)"):
        parse_yaml(text, "t.yaml", DiagError)


def test_a_merged_key_may_be_overridden_and_an_unhashable_key_is_a_clear_error() -> None:
    from diag_service.errors import DiagError
    from diag_service.yamlio import parse_yaml

    doc, _ = parse_yaml("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n", "t.yaml", DiagError)
    assert doc["d"] == {"x": 3, "y": 2}  # YAML's merge: the mapping's own key wins, not a duplicate
    with pytest.raises(DiagError, match=r"t\.yaml:1: invalid YAML \(found unhashable key\)"):
        parse_yaml("? [1, 2]\n: x\n", "t.yaml", DiagError)
