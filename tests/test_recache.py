"""diag_service.recache: a pattern built from the cached code is the one re.compile gives."""

from __future__ import annotations

import re

import pytest

from diag_service.recache import ReCache


def _catalogue_patterns() -> list[str]:
    from diag_service.signatures import site_catalog

    sigs = site_catalog()
    return [p.pattern for c in sigs.signatures for p in (*c.patterns, *c.context)] + [sigs.any_pattern.pattern]


def test_patterns_from_the_cache_equal_re_compile(tmp_path) -> None:
    patterns = [*_catalogue_patterns(), r"(?P<a>x)(?P<b>y)?\1", r"(?i)caf\u00e9", r"(?m)^\s*$", r"(?s)a.b(?<=b)"]
    first = ReCache(tmp_path)
    built = [first.compile(p) for p in patterns]
    first.save()
    again = ReCache(tmp_path)
    assert len(again._codes) == len(set(patterns))  # every pattern came back from the file
    for p, b in zip(patterns, built, strict=True):
        got = again.compile(p)
        assert got == b == re.compile(p)
        assert (got.groups, dict(got.groupindex), got.flags) == (b.groups, dict(b.groupindex), b.flags)
    assert again.compile(r"(?P<x>\d+)-(?P<y>\w+)").match("12-ab").group("y") == "ab"


def test_a_bad_pattern_raises_and_a_damaged_file_is_passed_over(tmp_path) -> None:
    cache = ReCache(tmp_path)
    with pytest.raises(re.error):
        cache.compile("(unclosed")
    cache.compile("ok+")
    cache.save()
    (path,) = tmp_path.glob("re-*.marshal")
    path.write_bytes(path.read_bytes()[:-3])
    damaged = ReCache(tmp_path)
    assert damaged._codes == {} and damaged.compile("ok+") == re.compile("ok+")
    assert ReCache(None).compile("a|b") == re.compile("a|b")
