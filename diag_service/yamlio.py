"""One YAML loader for every knowledge file (signatures, incidents, recovery policy, calibration): read,
parse, validate with a pydantic model, and say where a problem is as ``<file>:<line>: <field>: <message>``.

Errors are raised as the caller's :class:`~diag_service.errors.DiagError` subclass (``SignatureError``,
``RecordError``, ``PolicyError``, ``CalibrationError``), so each loader keeps its own error kind.
"""

from __future__ import annotations

import hashlib
import marshal
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from diag_service.errors import DiagError

M = TypeVar("M", bound=BaseModel)


#: libyaml's C parser when PyYAML was built with it (the wheels are): the catalogue's 16 files parse in
#: about 0.1 s instead of 0.7 s with the pure-Python one, which every cold `diag diagnose` paid.
_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a key repeated in one mapping (YAML 1.2 requires keys to be unique; PyYAML
    keeps the last value silently, so a block pasted over another's id line merged two entries)."""


def _unique_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    """The mapping, after checking that no scalar key is written twice in it (same resolved tag and text). Keys
    a ``<<`` merge brings in may be overridden, as YAML allows; an unhashable key is the safe loader's error."""
    seen: set[tuple[str, str]] = set()
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
            ident = (key_node.tag, key_node.value)
            if ident in seen:
                raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                        f"found duplicate key {key_node.value!r}", key_node.start_mark)
            seen.add(ident)
    return loader.construct_mapping(node, deep=True)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)
_LOADER: Any = _Loader


class LazyNode:
    """The node tree of a YAML text, composed only when asked (for an error's line number)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._node: yaml.Node | None = None
        self._done = False

    def get(self) -> yaml.Node | None:
        if not self._done:
            self._node, self._done = yaml.compose(self.text, Loader=_LOADER), True
        return self._node


def line_of(node: yaml.Node | LazyNode | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at pydantic error location ``loc`` (the deepest node found)."""
    if isinstance(node, LazyNode):
        node = node.get()
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            nxt = node.value[key]
        else:
            nxt = None
        if nxt is None:
            break
        node = nxt
        line = node.start_mark.line + 1
    return line


def validation_message(name: str, node: yaml.Node | LazyNode | None, exc: ValidationError,
                       base: tuple[Any, ...] = ()) -> str:
    """``"<name>:<line>: <field>: <message>"`` for the first error of ``exc``, with how many more there are
    (``base``: the location of the validated object inside the document)."""
    first = exc.errors(include_url=False)[0]
    loc = (*base, *first["loc"])
    line = line_of(node, loc)
    where = ".".join(str(x) for x in loc) or "(document)"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{name}:{line if line is not None else '?'}: {where}: {first['msg']}{more}"


#: Parsed documents kept in the cache folder (``<cache>/yaml``, one file per text), at most this many
_DOC_CACHE_KEEP = 256


def _doc_cache() -> Path | None:
    try:
        from diag_service.resources import cache_home

        return cache_home() / "yaml"
    except Exception:  # noqa: BLE001 - no cache folder: parse each time
        return None


def _cached_doc(text: str) -> tuple[Path | None, Any]:
    """``(the cache file of text's document, the document or _MISSING)``. The file holds the SHA-256 of its body
    and the body, ``marshal`` of the document: plain data only (a document marshal cannot hold is not kept)."""
    folder = _doc_cache()
    if folder is None:
        return None, _MISSING
    path = folder / (hashlib.sha256(f"{yaml.__version__}|{_BASE_LOADER.__name__}|{text}".encode("utf-8", "surrogatepass"))
                     .hexdigest()[:40] + ".marshal")
    try:
        blob = path.read_bytes()
    except OSError:
        return path, _MISSING
    if hashlib.sha256(blob[32:]).digest() != blob[:32]:
        return path, _MISSING
    try:
        return path, marshal.loads(blob[32:])
    except (ValueError, EOFError, TypeError):
        return path, _MISSING


def _keep_doc(path: Path, doc: Any) -> None:
    try:
        body = marshal.dumps(doc)
        if marshal.loads(body) != doc:  # (a float NaN, a shared or recursive structure: parse it each time)
            return
        from diag_service.fsutil import atomic_write

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, hashlib.sha256(body).digest() + body)
        kept = sorted(path.parent.glob("*.marshal"), key=lambda q: q.stat().st_mtime)
        for old in kept[:-_DOC_CACHE_KEEP]:
            old.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001, S110 - a document marshal cannot hold, or a cache that cannot be written
        pass


_MISSING = object()


def parse_yaml(text: str, name: str, error: type[DiagError]) -> tuple[Any, LazyNode]:
    """``(document, node tree)`` of YAML ``text`` (the tree composed when first asked for, to name a line).
    Raises ``error`` naming ``name`` and the line.

    A text parsed before is read back from the cache folder (libyaml took ~0.06 CPU-s of every cold
    ``diag diagnose`` for the signature catalogue alone): the same text gives the same document."""
    path, doc = _cached_doc(text)
    if doc is not _MISSING:
        return doc, LazyNode(text)
    try:
        doc = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)
        node = LazyNode(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = str(mark.line + 1) if mark is not None else "?"
        raise error(f"{name}:{where}: invalid YAML ({getattr(exc, 'problem', None) or exc})") from exc
    if path is not None:
        _keep_doc(path, doc)
    return doc, node


def load_yaml_model(path: str | Path, model: type[M], error: type[DiagError], name: str | None = None,
                    empty: Any = None) -> tuple[M, str, LazyNode]:
    """Read ``path``, parse it and validate it as ``model``: ``(object, text, node tree)``.

    ``name``: how messages name the file (default: the path). ``empty``: the document to validate when
    the file is empty (default: an error). Raises ``error`` for an unreadable file, invalid YAML, a
    document that is not a mapping, or a validation error, with file and line.
    """
    p = Path(path)
    label = name or str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{label}: cannot read ({getattr(exc, 'strerror', None) or exc})") from exc
    doc, node = parse_yaml(text, label, error)
    if doc is None and empty is not None:
        doc = empty
    if not isinstance(doc, dict):
        raise error(f"{label}:1: expected a mapping, got {type(doc).__name__}")
    try:
        return model.model_validate(doc), text, node
    except ValidationError as exc:
        raise error(validation_message(label, node, exc)) from exc


__all__ = ["LazyNode", "line_of", "load_yaml_model", "parse_yaml", "validation_message"]
