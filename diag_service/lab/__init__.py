"""Fault-injection lab: real torch.distributed (gloo, CPU) runs with injected faults and ground truth.

See ``eval/lab/README.md`` for the scenario format and the capture formats. Running scenarios needs the
``[lab]`` extra (torch, psutil); listing and validating them does not (:func:`require_lab`).
"""

from __future__ import annotations

from importlib.util import find_spec

from diag_service.errors import DiagError, ErrorKind

#: What to tell a user whose install lacks the lab's packages.
LAB_EXTRA_HINT = ("the fault-injection lab needs the [lab] extra: pip install torch==2.13.0 (a CPU build), "
                  "then pip install 'diag-service[lab]'")
#: Import names the lab's runs need (torch in every rank, psutil in the runner).
LAB_PACKAGES = ("torch", "psutil")


class LabUnavailable(DiagError):
    """A lab run was asked for on an install without the ``[lab]`` extra."""

    kind = ErrorKind.UNAVAILABLE


def require_lab() -> None:
    """Raise :class:`LabUnavailable` (naming the extra and the missing packages) unless the packages of
    :data:`LAB_PACKAGES` are importable by this interpreter (the one that launches torchrun). Looks them
    up without importing them."""
    missing = [name for name in LAB_PACKAGES if _absent(name)]
    if missing:
        raise LabUnavailable(f"{LAB_EXTRA_HINT} (missing: {', '.join(missing)})")


def _absent(name: str) -> bool:
    try:
        return find_spec(name) is None
    except (ImportError, ValueError):  # a broken install, or a module whose __spec__ is unset
        return True


__all__ = ["LAB_EXTRA_HINT", "LAB_PACKAGES", "LabUnavailable", "require_lab"]
