"""Snapshot the full diagnosis of every known input, to check that a speed change changed no answer.

    .venv/bin/python eval/bench/diagnosis_identity.py snapshot /tmp/before.jsonl [--bundle DIR ...]
    (change the code)
    .venv/bin/python eval/bench/diagnosis_identity.py snapshot /tmp/after.jsonl [--bundle DIR ...]
    .venv/bin/python eval/bench/diagnosis_identity.py compare /tmp/before.jsonl /tmp/after.jsonl

Inputs: the bundled example (``examples/``), the log fixtures of ``tests/fixtures`` (lab consoles, hang,
Flight Recorder, debug-server, slow and ETPR lab runs), every layout of ``tests/bundles.py`` (written to a
temporary folder), the corpus's dev logs (the dev ids of every frozen batch of ``eval/corpus/split.json``; no other
corpus log is read), the shared ``incidents_dev`` logs and the Loghub 2k samples when present, and any
``--bundle`` (e.g. a kept ``bench_diagnose.py`` bundle).

Per input one JSON line: the whole :class:`~diag_service.domain.Diagnosis` (``diagnose(..., kb=False,
llm=False)``) without any ``timings_ms``, and the SHA-256 of the extractor's own output (every
:class:`~diag_service.contracts.RawEvent` in order and the :class:`~diag_service.contracts.ProgressLog`),
which is stricter than the diagnosis. ``compare`` prints each input whose line differs and exits 1 if any
does (0 when all are identical).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def _shared() -> Path | None:
    for base in (REPO.parent, REPO.parent.parent):
        if (base / "shared" / "data").is_dir():
            return base / "shared" / "data"
    return None


def _dev_ids() -> set[str]:
    """The corpus cases frozen in the dev split (``split.json``: the first freeze and every addition). A case in
    no frozen batch is left out, like the test split: only dev logs are read."""
    split = json.loads((REPO / "eval" / "corpus" / "split.json").read_text())
    return {cid for part in [split, *split.get("additions", [])] for cid in part.get("dev", [])}


def inputs(tmp: Path, extra: list[str]) -> Iterator[tuple[str, Path]]:
    """``(name, path)`` of every input, in a fixed order."""
    for p in sorted((REPO / "examples").iterdir()):
        if p.is_dir():
            yield f"examples/{p.name}", p
    fx = REPO / "tests" / "fixtures"
    for pattern in ("lab_*", "hang/*", "flight_recorder/*", "slow/*", "etpr/lab_*", "debug_server"):
        for p in sorted(fx.glob(pattern)):
            if p.is_dir():
                yield f"fixtures/{p.relative_to(fx)}", p
    import bundles as B

    layouts = {
        "torchrun_logdir": B.torchrun_logdir,
        "torchrun_logdir_gz": lambda t: B.torchrun_logdir(t, gzip_members=True),
        "combined_rank_file": B.combined_rank_file,
        "combined_no_prefix": lambda t: B.combined_rank_file(t, rank_prefix=False),
        "combined_default_file": B.combined_default_file,
        "srun_file": B.srun_file,
        "pdsh_file": B.pdsh_file,
        "per_pod_dir": B.per_pod_dir,
        "per_pod_dir_ts": lambda t: B.per_pod_dir(t, timestamps=True),
        "archived_tar_gz": lambda t: B.archived_logdir(t, "tar.gz"),
        "rank_stderr_file": B.rank_stderr_file,
    }
    for name, build in layouts.items():
        d = tmp / name
        d.mkdir()
        yield f"bundles/{name}", build(d).path
    dev = _dev_ids()
    for p in sorted((REPO / "eval" / "corpus" / "logs").glob("*.log")):
        if p.stem in dev:
            yield f"corpus/{p.name}", p
    shared = _shared()
    if shared is not None:
        for p in sorted((shared / "incidents_dev" / "logs").glob("*")):
            yield f"incidents_dev/{p.name}", p
        for p in sorted((shared / "loghub").glob("*/*_2k.log")):
            yield f"loghub/{p.name}", p
    for b in extra:
        yield f"bundle/{Path(b).name}", Path(b)


def _events_digest(path: Path) -> str:
    """SHA-256 of the extractor's events and progress observations for ``path``."""
    from diag_service.contracts import ProgressLog
    from diag_service.extract import extract_events
    from diag_service.ingest.open import open_bundle
    from diag_service.signatures import site_catalog

    sigs = site_catalog(None)
    progress = ProgressLog()
    h = hashlib.sha256()
    for ev in extract_events(open_bundle(str(path)).blocks(), progress, sigs.prefilter_patterns()):
        h.update(json.dumps(dataclasses.asdict(ev) if dataclasses.is_dataclass(ev) else ev.model_dump(mode="json"),
                            sort_keys=True, default=str).encode())
    prog = dataclasses.asdict(progress)
    prog["series"] = {repr(k): list(v) for k, v in sorted(progress.series.items(), key=repr)}
    prog["ranks"] = sorted(progress.ranks)
    prog["source_nodes"] = sorted(progress.source_nodes)  # a set of str: its order changes with the hash seed
    prog["platforms"] = dict(progress.platforms)  # asdict() rebuilds a Counter from its items as keys
    h.update(json.dumps(prog, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _without_timings(doc: object) -> object:
    """``doc`` without any ``timings_ms`` key at any depth (the slow report has its own)."""
    if isinstance(doc, dict):
        return {k: _without_timings(v) for k, v in doc.items() if k != "timings_ms"}
    if isinstance(doc, list):
        return [_without_timings(v) for v in doc]
    return doc


def snapshot(out: Path, extra: list[str]) -> None:
    """Write one JSON line per input to ``out``."""
    from diag_service.errors import DiagError
    from diag_service.pipeline import DiagnoseRequest, diagnose

    with tempfile.TemporaryDirectory(prefix="diag_identity_") as t, out.open("w") as f:
        for name, path in inputs(Path(t), extra):
            try:
                d = diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False))
                doc = _without_timings(d.model_dump(mode="json"))
                # the temporary folder's name is in paths and the job id: keep the input's own name
                text = json.dumps(doc, sort_keys=True).replace(t, "TMP")
                digest = _events_digest(path)
            except DiagError as exc:  # an input the pipeline refuses: its message is the answer
                text, digest = json.dumps({"error": str(exc).replace(t, "TMP")}), ""
            f.write(json.dumps({"name": name, "diagnosis": json.loads(text), "extract_sha256": digest}) + "\n")
            print(name, flush=True)


def compare(a: Path, b: Path) -> int:
    """Print the inputs whose snapshot differs; 1 if any does."""
    left = {d["name"]: d for d in map(json.loads, a.read_text().splitlines())}
    right = {d["name"]: d for d in map(json.loads, b.read_text().splitlines())}
    bad = 0
    for name in sorted(left.keys() | right.keys()):
        x, y = left.get(name), right.get(name)
        if x != y:
            bad += 1
            what = "missing" if x is None or y is None else ", ".join(
                k for k in ("diagnosis", "extract_sha256") if x[k] != y[k])
            if x is not None and y is not None and x["diagnosis"] != y["diagnosis"]:
                keys = sorted(k for k in x["diagnosis"].keys() | y["diagnosis"].keys()
                              if x["diagnosis"].get(k) != y["diagnosis"].get(k))
                what += f" (fields: {', '.join(keys)})"
            print(f"DIFFERS {name}: {what}")
    print(f"{len(left)} vs {len(right)} inputs, {bad} differ")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("out")
    s.add_argument("--bundle", action="append", default=[], help="another bundle to include (repeatable)")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    a = ap.parse_args(argv)
    if a.cmd == "snapshot":
        snapshot(Path(a.out), a.bundle)
        return 0
    return compare(Path(a.a), Path(a.b))


if __name__ == "__main__":
    sys.exit(main())
