"""Does the way logs were collected change a diagnosis?  Rewrites real failing runs as collectors deliver them.

    .venv/bin/python eval/format_eval.py [--corpus-dev] [--out eval/results/format.json]

Runs: the zoo's dev runs, the lab fixtures and the bundled example (``eval/noise_eval.py``'s set; with
``--corpus-dev`` also the public corpus's dev logs). Transforms, each applied to every file of a run:

* ``k8s``: ``kubectl logs --timestamps`` / ``docker logs -t``: an RFC 3339 stamp with nanoseconds in front of every
  line, the time of the line's own stamp when it has one, else of the last stamped line before it (the
  collector reads lines as they are written; a traceback's lines arrive with the line before them);
* ``cri``: the kubelet's files on the node (containerd, CRI-O): ``<stamp> stderr F <line>``;
* ``docker_json``: Docker's ``json-file`` driver, one ``{"log": ..., "stream": ..., "time": ...}`` object per line;
* ``quoted``: a Markdown quote of the paste (``> `` before every line: a reply quoting the log);
* ``wrapped``: lines hard-wrapped at 120 characters (a terminal or mail client copy);
* ``crlf``: Windows line ends (a log copied through a Windows machine or a web form);
* ``ansi``: colour codes around exception names, ``ERROR``/``WARNING`` and ``Traceback`` (rich, colorama,
  loguru consoles);
* ``gz``: every file gzip-compressed (a log shipper's archive).

A flip is a run whose (category, failure mode, first failing rank) differs from the untouched run's. The JSON
result lists the flips per transform and the commit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))

from corpus_eval import _commit  # noqa: E402
from noise_eval import answer, copy_bundle, runs  # noqa: E402

from diag_service.logformat import parse_timestamp  # noqa: E402


def k8s(text: str) -> str:
    """Every line behind a collector's RFC 3339 stamp (nanoseconds, ``Z``) at the line's own time or the last
    stamped line's before it (the first stamp in the file for the lines above it)."""
    year = time.gmtime().tm_year
    lines = text.split("\n")
    last = next((t for ln in lines for t in [parse_timestamp(ln, year)] if t is not None), 1.7e9)
    out = []
    for i, ln in enumerate(lines):
        if i == len(lines) - 1 and ln == "":
            out.append(ln)
            continue
        t = parse_timestamp(ln, year)
        if t is not None:
            last = t
        ns = int(round((last % 1) * 1e6)) * 1000 + i % 1000  # distinct, increasing within one stamp
        out.append(time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(last)) + f".{ns:09d}Z {ln}")
    return "\n".join(out)


def cri(text: str) -> str:
    """The kubelet's own files (containerd / CRI-O, ``/var/log/pods/...``): ``<stamp> stderr F <line>``."""
    out = []
    for ln in k8s(text).split("\n"):
        stamp, _, rest = ln.partition(" ")
        out.append(f"{stamp} stderr F {rest}" if stamp else ln)
    return "\n".join(out)


def docker_json(text: str) -> str:
    """Docker's ``json-file`` driver: ``{"log": "<line>\\n", "stream": "stderr", "time": "<stamp>"}`` per line."""
    out = []
    lines = k8s(text).split("\n")
    for i, ln in enumerate(lines):
        if i == len(lines) - 1 and ln == "":
            out.append(ln)
            continue
        stamp, _, rest = ln.partition(" ")
        out.append(json.dumps({"log": rest + "\n", "stream": "stderr", "time": stamp}))
    return "\n".join(out)


def quoted(text: str) -> str:
    """A paste quoted in Markdown (a reply that quotes the log): ``> `` before every line."""
    return "\n".join(("> " + ln) if ln else ">" for ln in text.split("\n"))


def wrapped(text: str, width: int = 120) -> str:
    """Lines hard-wrapped at ``width`` characters (a terminal or mail client copy)."""
    out = []
    for ln in text.split("\n"):
        while len(ln) > width:
            out.append(ln[:width])
            ln = ln[width:]
        out.append(ln)
    return "\n".join(out)


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


_COLOUR = re.compile(r"Traceback \(most recent call last\):|\b\w*(?:Error|Exception)\b|\bERROR\b|\bWARNING\b")


def ansi(text: str) -> str:
    return _COLOUR.sub(lambda m: "\x1b[1;31m" + m.group(0) + "\x1b[0m", text)


TEXT_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "k8s": k8s, "cri": cri, "docker_json": docker_json, "crlf": crlf, "ansi": ansi, "quoted": quoted, "wrapped": wrapped,
}


def transformed(src: Path, dst: Path, name: str) -> Path:
    """A copy of bundle ``src`` at ``dst`` with transform ``name`` applied to every log file. Stack dumps (a
    ``dumps/`` folder of ``py-spy dump`` files) are files a person saved, not output a log collector delivers:
    they stay as they are."""
    copy_bundle(src, dst)
    for f in [x for x in dst.rglob("*") if x.is_file() and "dumps" not in x.relative_to(dst).parts[:-1]]:
        if name == "gz":
            data = f.read_bytes()
            f.unlink()
            (f.parent / (f.name + ".gz")).write_bytes(gzip.compress(data))
        else:
            f.write_bytes(TEXT_TRANSFORMS[name](f.read_text(errors="replace")).encode())
    return dst


def evaluate(bundles: list[Path]) -> dict:
    names = [*TEXT_TRANSFORMS, "gz"]
    flips: dict[str, list[dict]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for i, b in enumerate(bundles):
            base = answer(b)
            for n in names:
                got = answer(transformed(b, Path(tmp) / f"{i}-{n}", n))
                if got != base:
                    flips[n].append({"run": str(b.relative_to(REPO)), "was": list(base), "now": list(got)})
    return {"runs": len(bundles), "flips": {n: len(v) for n, v in flips.items()}, "details": flips}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus-dev", action="store_true", help="also the public corpus's dev logs")
    ap.add_argument("--out", type=Path, default=REPO / "eval" / "results" / "format.json")
    args = ap.parse_args()
    res = {**evaluate(runs(args.corpus_dev)), "corpus_dev": args.corpus_dev, "commit": _commit()}
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{res['runs']} runs; flips per transform: {res['flips']}")
    for n, v in res["details"].items():
        for f in v[:10]:
            print(f"  {n}: {f['run']} {f['was']} -> {f['now']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
