"""Event sources of ``diag etpr``, behind one registry.

A source turns one input path into a *raw* frame of event rows (columns as found, aliases allowed); the
caller (:func:`diag_service.etpr.loaders.load_events`) validates and normalises it. Each source is
registered by name with :func:`register_source`, together with a ``detect`` test on the path; with
``source="auto"`` the first source (by ``priority``) whose test accepts the path reads it, the generic
``events`` source last.

Built-in sources (one module each): ``live`` (a live job's folder of ``diag serve``, the events its node
agents sent), ``lab`` (a fault-injection lab run folder, a folder of runs, or a run's own ``events.jsonl``),
``glm130b`` (the GLM-130B logbook CSV), ``stepfun`` (the StepFun InfiniteHBD node-fault trace), ``philly``
(Microsoft Philly ``cluster_job_log``), ``events`` (our JSONL / Parquet / CSV, a file or a folder of files).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from diag_service.etpr.schema import Issue
from diag_service.etpr.sources.base import EtprInputError, LoadOptions

#: ``load(path, issues, options) -> raw frame``; appends what it meets to ``issues``; raises
#: :class:`EtprInputError` only when the input cannot be read at all.
Loader = Callable[[Path, list[Issue], LoadOptions], pl.DataFrame]


@dataclass(frozen=True)
class Source:
    """One registered source: its ``name`` (the ``--format`` value), its ``load`` function, the ``detect``
    test used by auto-detection, its ``priority`` (lower is tried first) and a one-line ``description``."""

    name: str
    load: Loader
    detect: Callable[[Path], bool]
    priority: int
    description: str


_SOURCES: dict[str, Source] = {}


def register_source(name: str, *, detect: Callable[[Path], bool], priority: int, description: str
                    ) -> Callable[[Loader], Loader]:
    """Decorator: register ``load`` as source ``name``. Raises :class:`ValueError` if ``name`` is taken or is
    ``auto``."""
    if name == "auto" or name in _SOURCES:
        raise ValueError(f"event source {name!r} is reserved or already registered")

    def deco(load: Loader) -> Loader:
        _SOURCES[name] = Source(name=name, load=load, detect=detect, priority=priority, description=description)
        return load

    return deco


def sources() -> list[Source]:
    """The registered sources in detection order."""
    return sorted(_SOURCES.values(), key=lambda s: (s.priority, s.name))


def source_names() -> tuple[str, ...]:
    """``auto`` and the registered source names, in detection order."""
    return ("auto", *(s.name for s in sources()))


def get_source(name: str) -> Source:
    """The source registered as ``name``. Raises :class:`EtprInputError` for an unknown name."""
    try:
        return _SOURCES[name]
    except KeyError:
        raise EtprInputError(f"unknown format {name!r}; one of {', '.join(source_names())}") from None


def detect_source(path: Path) -> Source:
    """The first source (detection order) whose ``detect`` accepts ``path``. Raises :class:`EtprInputError`
    when none does (cannot happen with the built-in ``events`` source, which accepts everything)."""
    for s in sources():
        if s.detect(path):
            return s
    raise EtprInputError(f"{path}: no event source recognises this path")


# the built-in sources register themselves on import
from diag_service.etpr.sources import events, glm130b, lab, live, philly, stepfun  # noqa: E402, F401

__all__ = ["EtprInputError", "LoadOptions", "Loader", "Source", "detect_source", "get_source", "register_source",
           "source_names", "sources"]
