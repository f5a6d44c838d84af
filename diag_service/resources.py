"""Where the built-in knowledge and model configs are: one look-up for every loader.

Two layouts are supported:

* an installed wheel: ``setup.py`` copies ``knowledge_base/``, ``models/`` and the lab's scenarios
  (``eval/lab/scenarios/``) into the package as ``diag_service/_data/<root>``, found with
  :mod:`importlib.resources`;
* a source checkout (``pip install -e``): the folders of :data:`DATA_SOURCES` in the source tree.

:func:`builtin` returns the first of the two that exists. Raises :class:`FileNotFoundError` (naming
both places) when neither does, so a broken install fails at the loader with a clear message.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: Data folders shipped with the package: the name under ``diag_service/_data/`` -> the folder in a source
#: checkout (``setup.py`` holds the same mapping; ``tests/test_packaging.py`` checks that they agree).
DATA_SOURCES = {"knowledge_base": "knowledge_base", "models": "models", "lab_scenarios": "eval/lab/scenarios"}
DATA_ROOTS = tuple(DATA_SOURCES)


def _packaged(root: str) -> Path | None:
    try:
        base = resources.files("diag_service") / "_data" / root
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - the package itself is importable here
        return None
    p = Path(str(base))
    return p if p.is_dir() else None


def _source(root: str) -> Path:
    return Path(__file__).resolve().parents[1] / DATA_SOURCES[root]


def builtin(root: str, *parts: str) -> Path:
    """The path of ``<root>/<parts...>`` among the built-in data (``root`` in :data:`DATA_ROOTS`).

    Raises :class:`ValueError` for another ``root`` and :class:`FileNotFoundError` when the package
    ships no such folder (neither as installed data nor in a source checkout)."""
    if root not in DATA_ROOTS:
        raise ValueError(f"unknown data root {root!r}; one of {', '.join(DATA_ROOTS)}")
    base = _packaged(root)
    if base is None:
        src = _source(root)
        if not src.is_dir():
            raise FileNotFoundError(
                f"built-in {root}/ not found: neither diag_service/_data/{root} (installed wheel) nor {src} "
                "(source checkout); reinstall the package"
            )
        base = src
    return base.joinpath(*parts)


def data_home() -> Path:
    """Where this machine's data lives (knowledge-base store, service database and uploads): ``$DIAG_HOME``,
    else the platform's user data folder for ``diag`` (platformdirs; on Linux ``$XDG_DATA_HOME/diag``,
    else ``~/.local/share/diag``)."""
    import os

    env = os.environ.get("DIAG_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("diag", appauthor=False))


def cache_home() -> Path:
    """Where rebuildable files go (assembled model weights, summaries): ``$DIAG_CACHE_DIR``, else the
    platform's user cache folder for ``diag`` (on Linux ``$XDG_CACHE_HOME/diag``, else ``~/.cache/diag``)."""
    import os

    env = os.environ.get("DIAG_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("diag", appauthor=False))


__all__ = ["DATA_ROOTS", "builtin", "cache_home", "data_home"]
