"""Small file-system helpers shared by the stores that write atomically (knowledge base, label ledger)."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(d: Path) -> None:
    """Flush a directory entry (after a rename) to disk. Best effort: a directory that cannot be
    opened or whose file system refuses ``fsync`` on directories is left as it is."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
