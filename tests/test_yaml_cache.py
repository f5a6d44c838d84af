"""yamlio.parse_yaml reads a text parsed before back from the cache folder: the same document."""

from __future__ import annotations

import math

import pytest

from diag_service import yamlio
from diag_service.errors import DiagError


class _Err(DiagError):
    pass


def test_a_parsed_text_comes_back_from_the_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DIAG_CACHE_DIR", str(tmp_path))
    text = "a: 1\nb: [x, 2.5, true, null]\nc: {d: e}\nf: &k [1, 2]\ng: *k\n"
    first, _ = yamlio.parse_yaml(text, "t.yaml", _Err)
    assert len(list((tmp_path / "yaml").glob("*.marshal"))) == 1

    def no_parse(*_a, **_k):
        raise AssertionError("parsed again")

    monkeypatch.setattr(yamlio.yaml, "load", no_parse)
    again, node = yamlio.parse_yaml(text, "t.yaml", _Err)
    assert again == first == {"a": 1, "b": ["x", 2.5, True, None], "c": {"d": "e"}, "f": [1, 2], "g": [1, 2]}
    assert type(again["b"][2]) is bool and yamlio.line_of(node, ("c", "d")) == 3


def test_what_the_cache_cannot_hold_is_parsed_each_time(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DIAG_CACHE_DIR", str(tmp_path))
    doc, _ = yamlio.parse_yaml("x: .nan\nwhen: 2024-11-14\n", "t.yaml", _Err)
    assert math.isnan(doc["x"]) and not list(tmp_path.glob("yaml/*.marshal"))
    with pytest.raises(_Err, match="invalid YAML"):
        yamlio.parse_yaml("a: [1, 2\n", "bad.yaml", _Err)
    (tmp_path / "yaml").mkdir(exist_ok=True)
    yamlio.parse_yaml("z: 3\n", "t.yaml", _Err)
    (path,) = (tmp_path / "yaml").glob("*.marshal")
    path.write_bytes(path.read_bytes()[:-2])  # damaged: parsed again
    assert yamlio.parse_yaml("z: 3\n", "t.yaml", _Err)[0] == {"z": 3}
