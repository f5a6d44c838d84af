"""Does a harmless line change a diagnosis?  Injects lines that working jobs print into real failing runs.

    .venv/bin/python eval/noise_eval.py                      # dev lines only
    .venv/bin/python eval/noise_eval.py --test --why "..."   # test lines (counted in eval/noise/test_looks.jsonl)

Runs: the zoo's dev runs (``eval/zoo/runs``, ids of ``split.json``'s ``dev``; never its test runs), the lab
fixtures (``tests/fixtures/lab_*``) and the bundled example. Lines: ``eval/noise/benign_lines.jsonl`` (real
lines from public threads, collected blind to the rules; ``eval/noise/README.md``), each with a ``context``:
``start-up`` lines go after a console's command line, ``training`` lines before the first traceback or frame
line of the largest log file (at its start when it has none), ``shutdown`` lines at its end. Lines are split by thread
(``source_url``) with the corpus's rule (sha256 of the URL, first 8 hex digits / 2**32 < 0.42 -> test): tune on
dev; a run with ``--test`` is recorded as a look. A line's ISO dates take the year of the file's first date (a line from another
year would reorder the run's events).

For each run the answer (category, failure mode, first failing rank) of ``diagnose(kb=False, llm=False)`` is
taken as is, then with all lines of one context injected at once; where that changes the answer, each line
of the context is tried alone to name the culprits. A flip is a (line, run) pair whose category or first
failing rank differs; a change of failure mode alone between two ``unknown`` answers (a run without a known
cause read as stopped instead of alive) is counted apart as a mode flip. The JSON result has per-line and
per-run flips, the flip rate (flips / (lines x runs)) and the commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from diag_service.logformat import parse_timestamp  # noqa: E402
from diag_service.pipeline import DiagnoseRequest, diagnose  # noqa: E402

sys.path.insert(0, str(REPO / "eval"))
from corpus_eval import _commit, record_test_look  # noqa: E402

NOISE = REPO / "eval" / "noise"
LOOKS = NOISE / "test_looks.jsonl"
TEST_SHARE = 0.42  # eval/corpus/README.md's split rule


def split_of(rec: dict) -> str:
    """``test`` or ``dev`` by the line's thread: sha256(source_url) first 8 hex digits / 2**32 < TEST_SHARE."""
    h = int(hashlib.sha256(rec.get("source_url", rec["id"]).encode()).hexdigest()[:8], 16)
    return "test" if h / 2**32 < TEST_SHARE else "dev"

CONTEXTS = ("start-up", "training", "shutdown")
_ISO = re.compile(r"(?<!\d)(?:19|20)\d\d[-/]\d\d[-/]\d\d([ T_])\d\d:\d\d:\d\d")
_RANK_PREFIX = re.compile(r"^((?:\([^()\n]{0,80}\) )?)\[rank\d+\]:")
_JOB_FACT = re.compile(r"\bnranks \d+")
_GLOG = re.compile(r"(?<![\w])([IWEF])\d{3,4} \d\d:\d\d:\d\d")


def answer(path: Path) -> tuple[str, str, int | None]:
    """(category, failure mode, first failing rank) of one bundle, without the knowledge base or the model."""
    d = diagnose(DiagnoseRequest(path=str(path), kb=False, llm=False, recovery=False))
    return d.category.value, d.failure_mode.value, d.first_failing_rank


def copy_bundle(src: Path, dst: Path) -> Path:
    """Copy bundle ``src`` (a folder, or one log file) to the new folder ``dst``; returns ``dst``."""
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        dst.mkdir(parents=True)
        shutil.copy(src, dst / src.name)
    return dst


def inject(src: Path, dst: Path, lines: list[str], context: str) -> Path:
    """Copy bundle ``src`` to ``dst`` with ``lines`` written into its largest log file at ``context``'s place."""
    copy_bundle(src, dst)
    logs = [f for f in dst.rglob("*") if f.is_file() and f.suffix in (".log", ".txt", ".out", "")]
    target = max(logs, key=lambda f: f.stat().st_size)
    text = target.read_text(errors="replace").split("\n")
    if context == "start-up":
        at = 1 if text and text[0].startswith("$ ") else 0
    elif context == "training":
        # before the first traceback or frame line (a paste may start inside a traceback), else at the start
        at = next((i for i, ln in enumerate(text) if "Traceback (most recent call last)" in ln
                   or ln.lstrip().startswith('File "')), 1 if text and text[0].startswith("$ ") else 0)
    else:
        at = len(text) - 1 if text and text[-1] == "" else len(text)
    target.write_text("\n".join([*text[:at], *_aligned(_rank0(lines), text, at), *text[at:]]))
    return dst


def _aligned(lines: list[str], text: list[str], at: int) -> list[str]:
    """``lines`` with their timestamps (ISO date-times, glog's ``W1204 16:54:11``) set to the time of the run's
    nearest stamped line before ``at`` (else after it): a harmless line stamped months away from the run would
    reorder its events, which is not what the test asks. Lines of a run without stamps are kept as they are."""
    year = time.gmtime().tm_year
    order = [*range(at - 1, -1, -1), *range(at, len(text))]
    ts = next((t for i in order for t in [parse_timestamp(text[i], year)] if t is not None), None)
    if ts is None:
        return lines
    g = time.gmtime(ts)
    iso = time.strftime("%Y-%m-%d %H:%M:%S", g)
    glog = f"{g.tm_mon}{g.tm_mday:02d} {time.strftime('%H:%M:%S', g)}"
    out = []
    for ln in lines:
        ln = _ISO.sub(lambda m: iso[:10] + m.group(1) + iso[11:], ln)
        out.append(_GLOG.sub(lambda m: m.group(1) + glog, ln))
    return out


def _rank0(lines: list[str]) -> list[str]:
    """A ``[rankN]:`` prefix (at the start, or behind Ray's ``(name pid=N)``) names a rank of the thread's job;
    written as rank 0, which every run has."""
    return [_RANK_PREFIX.sub(r"\1[rank0]:", ln) for ln in lines]


def runs(corpus_dev: bool = False) -> list[Path]:
    """The zoo's dev runs, the lab fixtures and the example; with ``corpus_dev`` also the public corpus's dev
    logs (``eval/corpus``, dev ids of its frozen split; never a test log), which get start-up and training lines
    only (a paste may end inside a traceback)."""
    zoo = REPO / "eval" / "zoo"
    dev = json.loads((zoo / "split.json").read_text())["dev"]
    out = [zoo / "runs" / i for i in sorted(dev)]
    out += sorted(p for p in (REPO / "tests" / "fixtures").glob("lab_*") if p.is_dir())
    out += sorted(p for p in (REPO / "examples").iterdir() if p.is_dir())
    if corpus_dev:
        from corpus_eval import CORPUS, frozen_split

        out += [CORPUS / "logs" / f"{i}.log" for i, sp in sorted(frozen_split().items()) if sp == "dev"]
    return out


def evaluate(lines: list[dict], bundles: list[Path]) -> dict:
    per_line: dict[str, list[dict]] = {rec["id"]: [] for rec in lines}
    per_run: dict[str, int] = {}
    mode_flips: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        n = 0
        for b in bundles:
            name = str(b.relative_to(REPO))
            base = answer(b)
            per_run[name] = 0
            # a paste may end inside a traceback: a shutdown line after it would read as its exception line
            for ctx in CONTEXTS if "corpus" not in b.parts else CONTEXTS[:2]:
                group = [rec for rec in lines if rec.get("context", "start-up") == ctx]
                if not group:
                    continue
                n += 1
                if answer(inject(b, Path(tmp) / f"{n}", [r["line"] for r in group], ctx)) == base:
                    continue
                for rec in group:
                    n += 1
                    got = answer(inject(b, Path(tmp) / f"{n}", [rec["line"]], ctx))
                    if got == base:
                        continue
                    if got[0] == base[0] == "unknown" and got[2] == base[2]:
                        mode_flips.append({"line": rec["id"], "run": name, "was": base[1], "now": got[1]})
                        continue
                    per_line[rec["id"]].append({"run": name, "was": list(base), "now": list(got)})
                    per_run[name] += 1
            print(f"{name}: {per_run[name]} flip(s)", flush=True)
    flips = sum(len(v) for v in per_line.values())
    return {
        "lines": len(lines), "runs": len(bundles), "flips": flips,
        "flip_rate": round(flips / max(1, len(lines) * len(bundles)), 5),
        "lines_that_flip": {k: v for k, v in per_line.items() if v},
        "runs_with_flips": {k: v for k, v in per_run.items() if v},
        "mode_flips": len(mode_flips), "mode_flip_examples": mode_flips[:20],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=Path, default=NOISE / "benign_lines.jsonl")
    ap.add_argument("--test", action="store_true", help="score the test lines instead (recorded as a look)")
    ap.add_argument("--why", default="", help="with --test: why test is looked at (recorded)")
    ap.add_argument("--out", type=Path, default=None, help="default eval/results/noise_{dev,test}.json")
    ap.add_argument("--corpus-dev", action="store_true", help="also inject into the public corpus's dev logs")
    args = ap.parse_args()
    split = "test" if args.test else "dev"
    lines = [json.loads(x) for x in args.lines.read_text().splitlines() if x.strip()]
    lines = [r for r in lines if split_of(r) == split and not _JOB_FACT.search(r["line"])]
    commit = _commit()
    res = {"split": split, **evaluate(lines, runs(args.corpus_dev)), "corpus_dev": args.corpus_dev, "commit": commit,
           "lines_file": str(args.lines.relative_to(REPO)) if args.lines.is_relative_to(REPO) else str(args.lines)}
    if args.test:
        record_test_look(args.why, commit, LOOKS)
    out = args.out or REPO / "eval" / "results" / f"noise_{split}.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{split}: {res['flips']} flip(s) over {res['lines']} lines x {res['runs']} runs (rate {res['flip_rate']}); "
          f"{res['mode_flips']} mode flip(s) between unknown answers")
    for k, v in res["lines_that_flip"].items():
        rec = next(r for r in lines if r["id"] == k)
        print(f"  {k} ({len(v)} runs): {rec['line'][:100]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
