"""The pre-filter's candidate lines found by a multi-literal scan (Hyperscan) instead of RE2's DFA over every byte.

The extractor's pre-filter is one RE2 union of ~800 alternatives (:func:`diag_service.extract.events.prefilter_with`)
run with ``finditer`` over each block; a candidate line is a line where one of its matches starts. RE2's DFA reads
the bytes one at a time (0.4-0.7 GB/s on the bench machine whatever the pattern); Hyperscan's SIMD literal matcher
finds the ~3,000 literals below at ~3 GB/s. :class:`LiteralScan` gives the same line starts as the RE2 scan over an
ASCII block, running RE2 only on the lines where a match can be:

- every alternative has a set of literals one of which each of its matches contains (:func:`required_literals`,
  read from Python's parse of it). Hyperscan finds them all; a match of an alternative that cannot take a newline
  (:func:`can_match_newline`) lies on the line of one of its literals;
- RE2 (the same union) searches those lines, with the whole block as context (``^``, ``$`` and ``\\b`` see the
  neighbouring bytes), nearby lines in one call; after a match it goes on from the next line. When no match crosses
  a line, a line holds a match start exactly when the union matches inside it, so the lines are the RE2 scan's;
- an alternative that can take a newline (``\\s*$``, ``[^`]*``, ``exitcode\\s*[:=]\\s*-6``; 23 of the catalogue's)
  could cross a line: in a block holding one of its literals, Hyperscan runs its crossing patterns
  (:func:`crossing_patterns`: each way it can take a newline, made to take one). If one matches, :meth:`LiteralScan.
  candidate_lines` returns None and the caller scans that block with RE2.

Only for ASCII blocks: Hyperscan runs without its UTF-8 mode, and on ASCII text its classes and case folding take at
least what RE2's do (``\\s`` also takes ``\\v``). If an alternative cannot be read by Python's parser (RE2-only
syntax), can match the empty string or has no required literal, or Hyperscan refuses a pattern, no
:class:`LiteralScan` is built and the RE2 scan stays.

``hyperscan`` is a dependency on Linux x86_64 (its wheels); elsewhere the RE2 scan runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from re import _constants as _C  # type: ignore[attr-defined]
from re import _parser as _P  # type: ignore[attr-defined]
from typing import Any

from diag_service.fsutil import atomic_write
from diag_service.re2fast import start_finder

_hs: Any = None  # the hyperscan module, imported on first use (literal_scan_available)
_hs_tried = False

#: The largest set of exact strings a sub-pattern is expanded to (``[Ee]rror`` -> Error, error) before only a
#: required literal of it is kept
_EXACT_LIMIT = 64
#: ASCII characters that are not word characters (``\\W`` on ASCII text), and the most literals a ``\\b`` after a
#: required literal may be spelled out into
_NON_WORD = "".join(chr(c) for c in range(128) if not (chr(c).isalnum() or chr(c) == "_"))
_BOUNDARY_LIMIT = 2048
#: Words that routine training output prints on every line of a kind (the per-step loss / step / iter line that
#: PROGRESS_PATTERN and TRAINING_LINE read, NCCL's INFO lines): a literal inside this text would make the scan stop
#: on most lines of a healthy log, so another required literal of the same alternative is preferred. Only speed
#: depends on this choice, never the lines found.
_ROUTINE = "loss Loss step Step iter Iter epoch Epoch NCCL INFO"
_ROUTINE_WORD = re.compile("|".join(w for w in _ROUTINE.split() if w.islower()), re.IGNORECASE)
#: RE2's case folding beyond ASCII that reaches an ASCII letter (Unicode simple case folding orbits):
#: k ~ KELVIN SIGN, s ~ LATIN SMALL LETTER LONG S. Required literals of a ``(?i)`` pattern include them.
_FOLD_EXTRA = {"k": "\u212a", "s": "\u017f"}
_RE2_ONLY = re.compile(r"\[:\^?[a-z]+:\]|\\[pPCzQE]|\(\?[a-zA-Z]*U")
#: Blocks of fewer bytes than this in a whole run do not pay for looking up the literal scan (importing hyperscan and
#: loading the scan from the cache, :meth:`LiteralScan.cached`: ~6 ms; building it, once per catalogue and machine,
#: ~0.25 s on the bench machine). RE2's DFA is built lazily, state by state, and the union's is large: a fresh
#: process's first MiB of the bench bundle's console took 49 ms through RE2 and 27 ms through the lookup and the
#: literal scan (4 MiB: 61 vs 37 ms; its first 15 MiB: 101 vs 14 ms after the lookup), so 1 MiB, not 16 as before
BUILD_AFTER_BYTES = 1 << 20
_CACHE_KEEP = 8
#: Candidate lines this close (bytes) are searched by one RE2 call over the lines between them: RE2 reads 2 KiB in
#: about the time one more call from Python takes (~4 us, bench machine)
_MERGE_GAP = 2048


def can_match_newline(items: Iterable, flags: int) -> bool:
    """Whether a match of the parsed sequence ``items`` can contain ``\\n``."""
    for op, av in items:
        if op is _C.LITERAL:
            if av == 10:
                return True
        elif op is _C.NOT_LITERAL:
            if av != 10:
                return True
        elif op is _C.ANY:
            if flags & re.DOTALL:
                return True
        elif op is _C.IN:
            if _in_matches(av, 10):
                return True
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
            if av[1] > 0 and can_match_newline(av[2], flags):
                return True
        elif op is _C.SUBPATTERN:
            _g, add, dele, sub = av
            if can_match_newline(sub, (flags | add) & ~dele):
                return True
        elif op is _C.BRANCH:
            if any(can_match_newline(b, flags) for b in av[1]):
                return True
        elif op is _C.ATOMIC_GROUP:
            if can_match_newline(av, flags):
                return True
        elif op in (_C.AT, _C.ASSERT, _C.ASSERT_NOT):
            pass
        else:  # GROUPREF and anything unknown: assume it can
            return True
    return False


_NL_CATEGORIES = (_C.CATEGORY_SPACE, _C.CATEGORY_NOT_DIGIT, _C.CATEGORY_NOT_WORD, _C.CATEGORY_LINEBREAK,
                  _C.CATEGORY_UNI_SPACE, _C.CATEGORY_UNI_NOT_DIGIT, _C.CATEGORY_UNI_NOT_WORD, _C.CATEGORY_UNI_LINEBREAK)


def _in_matches(av: list, ch: int) -> bool:
    neg = bool(av) and av[0][0] is _C.NEGATE
    hit = any(
        (op is _C.LITERAL and a == ch) or (op is _C.RANGE and a[0] <= ch <= a[1]) or (op is _C.CATEGORY and a in _NL_CATEGORIES)
        for op, a in av
    )
    return hit != neg


def _variants(ch: str, icase: bool) -> set[str]:
    if not icase:
        return {ch}
    out = {ch, ch.lower(), ch.upper()}
    low = ch.lower()
    if low in _FOLD_EXTRA:
        out.add(_FOLD_EXTRA[low])
    for k, v in _FOLD_EXTRA.items():
        if ch == v:
            out |= {k, k.upper()}
    return out


def _cost(atoms: set[str]) -> tuple[bool, int, int, int]:
    """Order of preference between required literal sets: no literal shorter than 3 characters (``:``, ``is``
    are on most lines), fewer routine words, a longer shortest literal, fewer literals."""
    shortest = min(len(a) for a in atoms)
    return (shortest < 3, sum(1 for a in atoms if a in _ROUTINE), -shortest, len(atoms))


def _best(cands: list[set[str] | None]) -> set[str] | None:
    good = [c for c in cands if c and "" not in c]
    return min(good, key=_cost) if good else None


def _atoms(exact: set[str] | None) -> set[str] | None:
    return None if exact is None or "" in exact else set(exact)


def _seq(items: Iterable, flags: int) -> tuple[set[str] | None, set[str] | None]:
    """``(exact, required)`` of a sequence: the set of strings it matches when small, else a set of literals
    one of which every match contains (None: none known)."""
    cur: set[str] = {""}
    cands: list[set[str] | None] = []
    exact = True
    boundary = False  # a \b right after ``cur``, whose strings end in a word character

    def flush() -> None:
        atoms = _atoms(cur)
        if atoms and boundary and len(atoms) * len(_NON_WORD) <= _BOUNDARY_LIMIT:
            # the character after the literal is not a word character (or the text ends there: LiteralScan always
            # looks at a block's last line): "INF" + one of them is not found in every "[INFO]"
            atoms = {a + c for a in atoms for c in _NON_WORD}
        cands.append(atoms)

    for op, av in items:
        if op is _C.AT and av in (_C.AT_BOUNDARY, _C.AT_UNI_BOUNDARY) and cur != {""}:
            boundary = all(a[-1:].isascii() and (a[-1:].isalnum() or a[-1:] == "_") for a in cur)
            continue
        e, r = _node(op, av, flags)
        if e is not None and len(cur) * len(e) <= _EXACT_LIMIT:
            cur = {a + b for a in cur for b in e}
            boundary = False
            continue
        exact = False
        flush()
        boundary = False
        if e is not None:
            cur = e
        else:
            cands.append(r)
            cur = {""}
    if exact:
        return cur, None
    flush()
    return None, _best(cands)


def _node(op: object, av: object, flags: int) -> tuple[set[str] | None, set[str] | None]:
    icase = bool(flags & re.IGNORECASE)
    if op is _C.LITERAL:
        return _variants(chr(av), icase), None  # type: ignore[arg-type]
    if op is _C.IN:
        if av and av[0][0] is _C.NEGATE:  # type: ignore[index]
            return None, None
        chars: set[str] = set()
        for o, a in av:  # type: ignore[attr-defined]
            if o is _C.LITERAL:
                chars |= _variants(chr(a), icase)
            elif o is _C.RANGE and a[1] - a[0] < 16:
                for c in range(a[0], a[1] + 1):
                    chars |= _variants(chr(c), icase)
            else:
                return None, None
        return (chars, None) if len(chars) <= 16 else (None, None)
    if op is _C.AT:
        return {""}, None
    if op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
        lo, hi, sub = av  # type: ignore[misc]
        e, r = _seq(sub, flags)
        if e is not None and hi <= 3:
            out: set[str] = set()
            for k in range(lo, hi + 1):
                s = {""}
                for _ in range(k):
                    s = {a + b for a in s for b in e}
                out |= s
                if len(out) > _EXACT_LIMIT:
                    return None, (None if lo == 0 else _atoms(e))
            return out, None
        if lo == 0:
            return None, None
        return None, (r if e is None else _atoms(e))
    if op is _C.SUBPATTERN:
        _g, add, dele, sub = av  # type: ignore[misc]
        return _seq(sub, (flags | add) & ~dele)
    if op is _C.BRANCH:
        es, rs = [], []
        for b in av[1]:  # type: ignore[index]
            e, r = _seq(b, flags)
            es.append(e)
            rs.append(r if e is None else _atoms(e))
        if all(e is not None for e in es):
            u: set[str] = set().union(*es)  # type: ignore[arg-type]
            if len(u) <= _EXACT_LIMIT:
                return u, None
        if any(r is None for r in rs):
            return None, None
        return None, set().union(*rs)  # type: ignore[arg-type]
    return None, None  # any character, a negated literal, a class category, look-arounds, references


def required_literals(pattern: str | object, flags: int = re.MULTILINE) -> set[str] | None:
    """A set of literals one of which every match of ``pattern`` (or of its parse) contains (case variants spelled
    out), or None."""
    t = _P.parse(pattern, flags) if isinstance(pattern, str) else pattern
    e, r = _seq(t.data, t.state.flags)  # type: ignore[attr-defined]
    return _atoms(e) if e is not None else r


_AT = {
    _C.AT_BEGINNING: "^", _C.AT_BEGINNING_LINE: "^", _C.AT_END: "$", _C.AT_END_LINE: "$",
    _C.AT_BEGINNING_STRING: "\\A", _C.AT_END_STRING: "\\z",
    _C.AT_BOUNDARY: "\\b", _C.AT_NON_BOUNDARY: "\\B", _C.AT_UNI_BOUNDARY: "\\b", _C.AT_UNI_NON_BOUNDARY: "\\B",
}
_CATEGORY = {
    _C.CATEGORY_DIGIT: "\\d", _C.CATEGORY_NOT_DIGIT: "\\D", _C.CATEGORY_SPACE: "\\s", _C.CATEGORY_NOT_SPACE: "\\S",
    _C.CATEGORY_WORD: "\\w", _C.CATEGORY_NOT_WORD: "\\W", _C.CATEGORY_UNI_DIGIT: "\\d", _C.CATEGORY_UNI_NOT_DIGIT: "\\D",
    _C.CATEGORY_UNI_SPACE: "\\s", _C.CATEGORY_UNI_NOT_SPACE: "\\S", _C.CATEGORY_UNI_WORD: "\\w",
    _C.CATEGORY_UNI_NOT_WORD: "\\W",
}


def _char(c: int) -> str:
    return f"\\x{c:02x}"


def _unparse(items: Iterable) -> str:
    """A Hyperscan (PCRE) pattern for the parsed sequence ``items``, matching at least what it matches on ASCII text,
    with counted repeats widened (see :func:`widen`). ValueError for what it cannot write."""
    out: list[str] = []
    for op, av in items:
        if op is _C.LITERAL:
            out.append(_char(av) if av < 0x80 else chr(av))
        elif op is _C.NOT_LITERAL:
            out.append(f"[^{_char(av)}]" if av < 0x80 else "[\\x00-\\x7f]")
        elif op is _C.ANY:
            out.append(".")
        elif op is _C.IN:
            body = []
            for o, a in av:
                if o is _C.NEGATE:
                    body.insert(0, "^")
                elif o is _C.LITERAL:
                    if a < 0x80:
                        body.append(_char(a))
                elif o is _C.RANGE:
                    if a[0] < 0x80:
                        body.append(f"{_char(a[0])}-{_char(min(a[1], 0x7F))}")
                elif o is _C.CATEGORY and a in _CATEGORY:
                    body.append(_CATEGORY[a])
                else:
                    raise ValueError(f"class member {o} {a}")
            if not [b for b in body if b != "^"]:
                raise ValueError("class without an ASCII member")
            out.append("[" + "".join(body) + "]")
        elif op is _C.AT:
            if av not in _AT:
                raise ValueError(f"assertion {av}")
            out.append(_AT[av])
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            q = "*" if lo == 0 else "+"
            if (lo, hi) == (0, 1):
                q = "?"
            elif lo == hi == 1:
                q = ""
            out.append(f"(?:{_unparse(sub)}){q}")
        elif op is _C.SUBPATTERN:
            _g, add, dele, sub = av
            out.append(f"(?{_flags(add)}{'-' + _flags(dele) if _flags(dele) else ''}:{_unparse(sub)})")
        elif op is _C.BRANCH:
            out.append("(?:" + "|".join(_unparse(b) for b in av[1]) + ")")
        else:
            raise ValueError(f"operator {op}")
    return "".join(out)


def _flags(f: int) -> str:
    return ("i" if f & re.IGNORECASE else "") + ("s" if f & re.DOTALL else "")


def _top(t: object) -> tuple[list, int]:
    """The parsed alternative's top-level sequence (inside the group ``_anonymous`` wraps it in) and its flags."""
    items = list(t.data)  # type: ignore[attr-defined]
    flags = t.state.flags  # type: ignore[attr-defined]
    while len(items) == 1 and items[0][0] is _C.SUBPATTERN:
        _g, add, dele, sub = items[0][1]
        flags = (flags | add) & ~dele
        items = list(sub)
    return items, flags


def _wrap(body: str, flags: int) -> str:
    return f"(?{_flags(flags)}:{body})" if _flags(flags) else body


def _fixed(op: object, av: object, flags: int) -> bool:
    """An item of bounded width that cannot take a newline (a character, class, assertion, or groups of them)."""
    if can_match_newline([(op, av)], flags):
        return False
    if op in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN, _C.AT):
        return True
    if op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
        return av[1] <= 3 and all(_fixed(o, a, flags) for o, a in av[2])  # type: ignore[index]
    if op is _C.SUBPATTERN:
        return all(_fixed(o, a, (flags | av[1]) & ~av[2]) for o, a in av[3])  # type: ignore[index]
    if op is _C.BRANCH:
        return all(_fixed(o, a, flags) for b in av[1] for o, a in b)  # type: ignore[index]
    return False


def crossing_patterns(t: object, local: bool = False) -> list[str]:
    """For a parsed alternative that can match a newline: Hyperscan patterns one of which matches wherever one of its
    matches contains a newline. Each way its top-level sequence can take a newline (an item that admits one, inside
    repeats, groups and branches) is one pattern: the whole alternative with that item made to take a ``\\n``, or
    with ``local``, that item between the bounded items next to it only (for an alternative with a routine word such
    as ``loss``, which Hyperscan would otherwise look for first: 3.7 ms against 0.55 ms per 4 MiB of the bench's
    console)."""
    items, flags = _top(t)
    if not local:
        return [_wrap(x, flags) for x in _forced(items, flags)]
    out = []
    for i, (op, av) in enumerate(items):
        if not can_match_newline([(op, av)], flags):
            continue
        a = i
        while a > 0 and _fixed(*items[a - 1], flags):
            a -= 1
        b = i + 1
        while b < len(items) and _fixed(*items[b], flags):
            b += 1
        head, tail = _unparse(items[a:i]), _unparse(items[i + 1 : b])
        out.extend(_wrap(head + f"(?:{m})" + tail, flags) for m in _forced([(op, av)], flags))
    return out


def _forced(items: list, flags: int) -> list[str]:
    """Patterns for the matches of the sequence ``items`` that contain a newline (one per item that can take it)."""
    out = []
    for i, (op, av) in enumerate(items):
        if not can_match_newline([(op, av)], flags):
            continue
        head, tail = _unparse(items[:i]), _unparse(items[i + 1 :])
        if op in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN):
            mids = ["\\n"]
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
            sub = f"(?:{_unparse(av[2])})*"
            mids = [sub + m + sub for m in _forced(list(av[2]), flags)]
        elif op is _C.SUBPATTERN:
            _g, add, dele, sub_items = av
            f2 = (flags | add) & ~dele
            mids = [f"(?{_flags(add)}{'-' + _flags(dele) if _flags(dele) else ''}:{m})" for m in _forced(list(sub_items), f2)]
        elif op is _C.BRANCH:
            mids = [m for b in av[1] for m in _forced(list(b), flags)]
        else:
            raise ValueError(f"operator {op}")
        out.extend(head + f"(?:{m})" + tail for m in mids)
    return out


def literal_scan_available() -> bool:
    """Whether ``hyperscan`` is installed (imported here, on first use: a small input never loads it)."""
    global _hs, _hs_tried
    if not _hs_tried:
        _hs_tried = True
        try:
            import hyperscan
        except ImportError:  # pragma: no cover - no wheel off Linux x86_64: the RE2 scan is the fallback
            hyperscan = None
        _hs = hyperscan
    return _hs is not None


class LiteralScan:
    """Candidate line starts of a union of ``parts`` over ASCII bytes (see the module's docstring).

    ``marks``: literals the caller would otherwise look for in every block with a substring search of its own
    (``mark in data``, ~4 GB/s, i.e. ~0.2 s per mark over the 1 GB bench bundle); they ride along in the same
    Hyperscan pass and :meth:`scan` says where the block holds them. They never make a line a candidate."""

    def __init__(self, parts: list[str], marks: tuple[str, ...] = ()) -> None:
        if not literal_scan_available():
            raise RuntimeError("hyperscan is not installed")
        literals: dict[str, set[int]] = {}  # literal -> the alternatives that can take a newline it belongs to
        self._crossing: list[list[str]] = []  # per alternative that can take a newline: its crossing patterns
        for p in parts:
            if _RE2_ONLY.search(p):
                raise ValueError(f"RE2-only syntax: {p!r}")
            t = _P.parse(p, re.MULTILINE)
            if t.getwidth()[0] == 0:
                raise ValueError(f"alternative matches the empty string: {p!r}")
            atoms = required_literals(t)
            if not atoms:
                raise ValueError(f"no required literal: {p!r}")
            nl = None
            if can_match_newline(t.data, t.state.flags):
                nl = len(self._crossing)
                self._crossing.append(crossing_patterns(t, local=_ROUTINE_WORD.search(p) is not None))
            for a in atoms:
                if not a.isascii():  # never in an ASCII block (KELVIN SIGN for a (?i) "k")
                    continue
                owners = literals.setdefault(a, set())
                if nl is not None:
                    owners.add(nl)
        lits = _drop_containing(literals)
        self._owners = [tuple(sorted(literals[a])) for a in lits]
        self._sure = sure_literals(parts, lits)
        self.marks = tuple(marks)
        self._n_lits = len(lits)
        exprs = [_literal(a) for a in lits] + [_literal(m) for m in self.marks]
        self._db = _compile(exprs, [0] * len(exprs))
        #: per set of alternatives that can take a newline: their crossing patterns compiled (on first use), or
        #: None when Hyperscan refused them (those blocks are scanned with RE2)
        self._crossing_dbs: dict[tuple[int, ...], object | None] = {}
        self._cache: tuple[Path, str] | None = None  # (folder, key) when kept in the cache (LiteralScan.cached)
        #: what the scan holds
        self.counts = {"alternatives": len(parts), "literals": len(lits), "newline_alternatives": len(self._crossing),
                       "crossing_patterns": sum(map(len, self._crossing)), "sure_literals": len(self._sure),
                       "marks": len(self.marks)}

    @classmethod
    def cached(cls, parts: list[str], cache_dir: Path | None, marks: tuple[str, ...] = ()) -> LiteralScan:
        """The scan of ``parts``, loaded from ``cache_dir`` when it was built before (the serialised Hyperscan
        database and its tables, keyed by the SHA-256 of the alternatives, this module's source and Hyperscan's
        version), else built and saved there. A cache that cannot be read or written is passed over."""
        if not literal_scan_available():
            raise RuntimeError("hyperscan is not installed")
        key = hashlib.sha256(json.dumps([Path(__file__).read_bytes().decode("utf-8", "replace"),
                                         getattr(_hs, "__version__", ""), parts, list(marks)]).encode()).hexdigest()[:32]
        if cache_dir is not None:
            try:
                meta = json.loads((cache_dir / f"{key}.json").read_text())
                blob = (cache_dir / f"{key}.hsdb").read_bytes()
                if hashlib.sha256(blob).hexdigest() == meta["db_sha256"]:
                    self = cls.__new__(cls)
                    self._owners = [tuple(o) for o in meta["owners"]]
                    self._sure = frozenset(meta["sure"])
                    self._crossing = meta["crossing"]
                    self.counts = meta["counts"]
                    self.marks = tuple(marks)
                    self._n_lits = meta["n_lits"]
                    self._crossing_dbs = {}
                    self._db = _load_db(blob)
                    self._cache = (cache_dir, key)
                    return self
            except (OSError, ValueError, KeyError, TypeError, _hs.error):  # type: ignore[union-attr]
                pass
        self = cls(parts, marks)
        if cache_dir is not None:
            try:
                blob = _hs.dumpb(self._db)  # type: ignore[union-attr]
                meta = {"owners": self._owners, "sure": sorted(self._sure), "crossing": self._crossing, "counts": self.counts,
                        "n_lits": self._n_lits, "db_sha256": hashlib.sha256(blob).hexdigest()}
                cache_dir.mkdir(parents=True, exist_ok=True)
                atomic_write(cache_dir / f"{key}.hsdb", blob)
                atomic_write(cache_dir / f"{key}.json", json.dumps(meta).encode())
                self._cache = (cache_dir, key)
                # keep the last few catalogues' scans (each ~0.5 MB, with their crossing databases)
                mains = [q for q in cache_dir.glob("*.json") if "." not in q.stem]
                for old in sorted(mains, key=lambda q: q.stat().st_mtime)[:-_CACHE_KEEP]:
                    for q in cache_dir.glob(f"{old.stem}.*"):
                        q.unlink(missing_ok=True)
            except (OSError, _hs.error):  # type: ignore[union-attr]
                pass
        return self

    def _scratch(self, db: object) -> object:
        """This thread's scratch space for ``db``: Hyperscan refuses a scratch in use by another scan (the service
        diagnoses in several threads, with one scan per catalogue)."""
        local = self.__dict__.setdefault("_local", threading.local())
        spaces = local.__dict__.setdefault("spaces", {})
        sc = spaces.get(id(db))
        if sc is None:
            sc = spaces[id(db)] = _hs.Scratch(db)  # type: ignore[union-attr]
        return sc

    def _crossing_db(self, ks: tuple[int, ...]) -> object | None:
        """The crossing patterns of the alternatives ``ks`` in one database: from the cache when this set was
        compiled before (~35 ms each, a few sets per bundle), else compiled and saved."""
        if ks not in self._crossing_dbs:
            path = None
            if self._cache is not None:
                path = self._cache[0] / f"{self._cache[1]}.x{'-'.join(map(str, ks))}.hsdb"
                try:
                    self._crossing_dbs[ks] = _load_db(path.read_bytes())
                    return self._crossing_dbs[ks]
                except (OSError, _hs.error):  # type: ignore[union-attr]
                    pass
            exprs = [x for k in ks for x in self._crossing[k]]
            try:
                db = _compile(exprs, [_hs.HS_FLAG_MULTILINE | _hs.HS_FLAG_SINGLEMATCH] * len(exprs))  # type: ignore[union-attr]
            except _hs.error:  # type: ignore[union-attr]
                db = None
            if db is not None and path is not None:
                with contextlib.suppress(OSError, _hs.error):  # type: ignore[union-attr]
                    atomic_write(path, _hs.dumpb(db))  # type: ignore[union-attr]
            self._crossing_dbs[ks] = db
        return self._crossing_dbs[ks]

    def candidate_lines(self, regex: object, data: bytes) -> list[int] | None:
        """The line starts ``_candidate_lines(regex, data, data)`` yields, for ASCII ``data`` (``regex``: the RE2
        union of this scan's parts); None when a match of an alternative may cross a line here (the caller scans
        the block with RE2)."""
        return self.scan(regex, data)[0]

    def scan(self, regex: object, data: bytes) -> tuple[list[int] | None, dict[str, list[int]] | None]:
        """``(candidate_lines(regex, data), {mark: the end offset of each of its occurrences in data, in order}
        for the marks data holds)``; the marks are None when the scan failed (the caller then searches for them
        itself)."""
        ends: list[int] = []
        ids: list[int] = []

        def on_hit(i: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
            ids.append(i)
            ends.append(to)

        # A literal spelled out with the character after a \b cannot stand at the very end of a text without a final
        # newline ("loss: \nnan"): such a text is scanned with one after it, so that its hits, and the crossing check
        # they call for, are not missed (a block from the reader always ends with a newline: no copy there)
        hay = data if not data or data[-1:] == b"\n" else data + b"\n"
        try:
            self._db.scan(hay, match_event_handler=on_hit, scratch=self._scratch(self._db))  # type: ignore[attr-defined]
        except _hs.error:  # type: ignore[union-attr]  # (not expected) the caller scans the block with RE2
            return None, None
        if hay is not data:
            n = len(data)
            ends = [min(to, n) for to in ends]
        n_lits = self._n_lits
        marks: dict[str, list[int]] = {}
        if self.marks and ids and max(ids) >= n_lits:  # a mark's hit: taken out, it makes no line a candidate
            for i, to in zip(ids, ends, strict=True):
                if i >= n_lits:
                    marks.setdefault(self.marks[i - n_lits], []).append(to)
            for v in marks.values():
                v.sort()
            kept = [(i, to) for i, to in zip(ids, ends, strict=True) if i < n_lits]
            ids, ends = [i for i, _ in kept], [to for _, to in kept]
        return self._lines(regex, data, ids, ends, hay), marks

    def _lines(self, regex: object, data: bytes, ids: list[int], ends: list[int], hay: bytes) -> list[int] | None:
        owners = self._owners
        nl = {k for i in set(ids) for k in owners[i]}
        if nl:
            db = self._crossing_db(tuple(sorted(nl)))
            if db is None:
                return None
            crossed: list[int] = []
            try:
                db.scan(hay, match_event_handler=lambda *_a: crossed.append(1), scratch=self._scratch(db))  # type: ignore[attr-defined]
            except _hs.error:  # type: ignore[union-attr]
                return None
            if crossed:
                return None
        n = len(data)
        rfind, find = data.rfind, data.find
        # a line holding a sure literal holds a match of the union (sure_literals): RE2 is not asked about it
        sure_lines: set[int] = set()
        sure = self._sure
        if sure:
            unsure: list[int] = []
            for i, to in zip(ids, ends, strict=True):
                if i in sure:
                    sure_lines.add(rfind(b"\n", 0, to - 1) + 1)
                else:
                    unsure.append(to)
            ends = unsure
        ends.append(n)  # the block's last line: a literal spelled out with the character after a \b ends there
        ends.sort()
        out: list[int] = []
        last = -1
        rs = re_ = -1
        search = start_finder(regex)  # type: ignore[arg-type]
        for to in ends:
            b = to - 1
            if b <= re_:  # on the region's lines (its end is a newline or the block's end)
                continue
            if sure_lines and rfind(b"\n", 0, b) + 1 in sure_lines:
                continue  # a sure line (RE2 may still pass over it when it lies inside a region)
            if rs >= 0 and b - re_ <= _MERGE_GAP:  # a line near the region: it grows over the lines between
                re_ = find(b"\n", b)
                if re_ == -1:
                    re_ = n
                continue
            if rs >= 0:
                last = _match_starts(search, data, rs, re_, out, last)
            rs = rfind(b"\n", 0, b) + 1
            re_ = find(b"\n", b)
            if re_ == -1:
                re_ = n
        _match_starts(search, data, rs, re_, out, last)
        if sure_lines:
            return sorted(sure_lines.union(out))
        return out


_CONTEXT_OPS = frozenset({_C.AT, _C.ASSERT, _C.ASSERT_NOT, _C.GROUPREF, _C.GROUPREF_EXISTS})
#: An inline flag group that turns a flag off (``(?-i)``, ``(?s-i:``): in the union it could narrow the alternatives
#: after it, where re2 lets a group-less flag run on
_FLAG_OFF = re.compile(r"\(\?[a-zA-Z]*-")


def _context_free(items: Iterable) -> bool:
    """Whether the parsed sequence ``items`` has no assertion (``^ $ \b``, look-arounds) nor back-reference: a
    match of it is one wherever the text it matches stands."""
    for op, av in items:
        if op in _CONTEXT_OPS:
            return False
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
            if not _context_free(av[2]):
                return False
        elif op is _C.SUBPATTERN:
            if not _context_free(av[3]):
                return False
        elif op is _C.BRANCH:
            if not all(_context_free(b) for b in av[1]):
                return False
        elif op is _C.ATOMIC_GROUP and not _context_free(av):
            return False
    return True


def sure_literals(parts: list[str], lits: list[str]) -> frozenset[int]:
    """The indices of the literals in ``lits`` that an alternative of ``parts`` without assertions matches as a
    whole (RE2's own match of that alternative alone, over the literal's bytes): wherever such a literal stands,
    that alternative matches there, so the union of ``parts`` matches on its line and RE2 need not be asked.
    (In the union a flag of an earlier alternative may run on into this one, which only widens it, unless a part
    turns a flag off: then no literal is sure.)"""
    import re2

    if any(_FLAG_OFF.search(p) for p in parts):
        return frozenset()
    free = []
    for p in parts:
        if _context_free(_P.parse(p, re.MULTILINE).data):
            try:
                free.append(re2.compile(p))
            except re2.error:
                continue
    return frozenset(i for i, a in enumerate(lits)
                     if "\n" not in a and any(r.fullmatch(a.encode("ascii")) is not None for r in free))


def _literal(a: str) -> str:
    """``a`` as a Hyperscan pattern (every character but letters and digits as ``\\xHH``)."""
    return "".join(c if c.isalnum() else _char(ord(c)) for c in a)


def _drop_containing(literals: dict[str, set[int]]) -> list[str]:
    """The literals (sorted) but those that contain another one and trigger no crossing check (``literals[a]``
    empty): wherever such a literal occurs, the one it contains occurs on the same line, so its hits add no line.
    (3,795 -> ~3,000 literals for the catalogue of 2026-12-04; the scan is ~30 % faster.)"""
    lits = sorted(literals)
    db = _compile([_literal(a) for a in lits], [0] * len(lits))
    keep = []
    inside: list[int] = []
    for i, a in enumerate(lits):
        if not literals[a]:
            inside.clear()
            db.scan(a.encode("ascii"), match_event_handler=lambda j, _f, _t, _fl, _c: inside.append(j))  # type: ignore[attr-defined]
            if any(j != i for j in inside):
                continue
        keep.append(a)
    return keep


def _load_db(blob: bytes) -> object:
    """A serialised block-mode database, ready to scan (a loaded database has no scratch space of its own)."""
    db = _hs.loadb(blob, _hs.HS_MODE_BLOCK)  # type: ignore[union-attr]
    db.scratch = _hs.Scratch(db)  # type: ignore[union-attr]
    return db


def _compile(exprs: list[str], flags: list[int]) -> object:
    assert _hs is not None
    db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
    db.compile(expressions=[e.encode("utf-8") for e in exprs], ids=list(range(len(exprs))), elements=len(exprs),
               flags=flags)
    return db


def _match_starts(search: Callable[[bytes, int, int], int], data: bytes, pos: int, endpos: int, out: list[int],
                  last: int) -> int:
    """Append the line start of each match of ``regex.finditer(data, pos, endpos)`` to ``out`` (once per line;
    ``last``: the line start appended last); return the new ``last``. ``search``: ``start_finder(regex)``.

    After a match the search goes on from the next line: no match crosses a line here, so the first match
    ``finditer`` would find starting on a later line is the leftmost one from that line's start."""
    while pos < endpos:
        s = search(data, pos, endpos)
        if s < 0:
            break
        ls = data.rfind(b"\n", 0, s) + 1
        if ls != last:
            last = ls
            out.append(ls)
        pos = data.find(b"\n", s) + 1
        if pos == 0:
            break
    return last
