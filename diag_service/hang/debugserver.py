"""Stack snapshots from PyTorch's debug server (``torch.distributed.debug.start_debug_server``).

With ``dump_dir=`` and ``dump_interval=`` the server's periodic dumper writes, every interval, one file
per enabled handler named ``<handler>_<YYYYmmdd_HHMMSS>.txt`` (``torch/distributed/debug/_frontend.py``,
``PeriodicDumper``): ``stacks_*`` holds every rank's ``faulthandler`` traceback and ``pyspy_dump_*``
every rank's ``py-spy dump``, each rank as a section headed ``=== Rank <i>: <worker url> ===`` (a
failed fetch reads ``Error: <status>``). :func:`debug_server_dumps` turns such a folder into
:class:`~diag_service.ingest.members.StackDumps` (one snapshot per timestamp, py-spy preferred over
faulthandler) for the stack-invariance analysis.
"""

from __future__ import annotations

import re
from pathlib import Path

from diag_service.fsutil import UnsafePathError, read_regular
from diag_service.ingest.members import MAX_DUMP_BYTES, DumpFile, StackDumps

DUMP_FILE = re.compile(r"^(?P<kind>stacks|pyspy_dump)_(?P<ts>\d{8}_\d{6})\.txt$")
SECTION = re.compile(r"^=== Rank (\d{1,7}): .* ===$", re.MULTILINE)
#: Snapshot files read at most (the newest; a day at a 60 s interval is 1,440).
MAX_FILES = 2000


def debug_server_dumps(folder: str | Path) -> tuple[StackDumps | None, list[str]]:
    """The debug server's periodic stack dumps directly in ``folder`` (None when it holds none), and
    warnings (unreadable files, ranks whose fetch failed)."""
    root = Path(folder)
    try:
        names = sorted(p.name for p in root.iterdir() if DUMP_FILE.match(p.name))
    except OSError as exc:
        return None, [f"cannot list {root}: {exc}"]
    if not names:
        return None, []
    by_ts: dict[str, dict[str, str]] = {}
    for n in names:
        m = DUMP_FILE.match(n)
        assert m is not None
        by_ts.setdefault(m.group("ts"), {})[m.group("kind")] = n
    warnings: list[str] = []
    dumps = StackDumps(where=str(root))
    failed: set[int] = set()
    for ts in sorted(by_ts)[-MAX_FILES:]:
        files = by_ts[ts]
        name = files.get("pyspy_dump") or files["stacks"]
        p = root / name
        try:
            # not a link, a device or a pipe, checked as it is opened
            text = read_regular(p, MAX_DUMP_BYTES * 64).decode("utf-8", errors="replace")
        except UnsafePathError as exc:
            warnings.append(str(exc))
            continue
        except OSError as exc:
            warnings.append(f"{name}: unreadable ({exc})")
            continue
        heads = list(SECTION.finditer(text))
        for i, h in enumerate(heads):
            body = text[h.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip("\n")
            rank = int(h.group(1))
            if body.startswith("Error:") or not body.strip():
                failed.add(rank)
                continue
            dumps.snapshots.setdefault(ts, {})[rank] = [DumpFile(name=f"{name}#rank{rank}.txt",
                                                                 data=body.encode()[:MAX_DUMP_BYTES])]
    if failed:
        warnings.append("the debug server could not fetch the stacks of rank(s) "
                        + ",".join(map(str, sorted(failed)[:32])) + " in some snapshots")
    return (dumps if dumps.snapshots else None), warnings
