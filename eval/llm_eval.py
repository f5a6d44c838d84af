#!/usr/bin/env python3
"""Score the narrative summaries on the labelled development cases (and lab runs, when given).

:func:`evaluate_llm` diagnoses every case, summarises it (:func:`diag_service.llm.summarize_detailed`),
and returns a dict (the scorecard calls it):

- ``citations_valid_rate``: share of summaries whose every citation is an id of their evidence pack
  *and* whose every ``[E#]`` marker in the text is among the citations (must be 1.0);
- ``key_term_rate``: share of summaries whose wording names the labelled root cause's key term, by the
  fixed check below; also given for model-written summaries alone (``key_term_rate_model``) and for
  the deterministic fallback summary of the same cases (``key_term_rate_fallback_baseline``: what the
  model is compared with);
- ``model_rate``: share of summaries written by the model (the rest fell back);
- ``rank_named_rate`` (lab runs): share naming the true faulty rank (``rank N``) when the truth has one;
- ``latency_s``: p50 and p95 of the summary latency; ``cases``: per-case details.

**The key-term check** (fixed, not judged by a model): for each development case, :data:`DEV_KEY_TERMS`
holds a case-insensitive regular expression written from the case's labelled ``root_cause`` and
``evidence`` (``labels.jsonl``): the words an engineer would need to see to recognise the cause
(e.g. ``ECC`` for dev-002, ``rendezvous`` for dev-015). Four were widened once with synonyms of the
label's own words (dev-003 "two ranks on one GPU", dev-004/009 "race", dev-008 "port ... in use"),
the same for the model and for the fallback baseline; they are fixed since. For lab runs, :data:`LAB_KEY_TERMS` holds one
per scenario (``truth.json``'s ``scenario``). The summary text, with citation markers removed, is
searched for it. A case without a key term is not scored.

Usage::

    .venv/bin/python eval/llm_eval.py                            # dev cases, configured backend
    .venv/bin/python eval/llm_eval.py --lab /path/to/suite --out /tmp/llm_eval.json
    .venv/bin/python eval/llm_eval.py --backend none             # fallback only (no model)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV_DIR = ROOT.parent / "shared" / "data" / "incidents_dev"

#: Key term of each development case's labelled root cause (see the module doc).
DEV_KEY_TERMS: dict[str, str] = {
    "dev-001": r"all-?reduce|collective|watchdog",  # ALLREDUCE never completes (uneven batches: not in the log)
    "dev-002": r"\becc\b",
    "dev-003": r"duplicate gpu|same (cuda )?(device|gpu)|both on cuda device|two ranks on one gpu",
    "dev-004": r"filenotfound|no such file|race",
    "dev-005": r"device-side assert|image ids|22306|8271",
    "dev-006": r"dataloader worker|killed by signal|out of memory|\boom\b",
    "dev-007": r"different collectives|mismatch|broadcast",
    "dev-008": r"address already in use|port.{0,30}(in use|taken|bound)|failed to bind|errno: 98",
    "dev-009": r"parent directory|does not exist|race",
    "dev-010": r"broken pipe|socket|network error|remote process",
    "dev-011": r"unknown error|inaccessible|device handle|fell off|defunct",
    "dev-012": r"status=12|retry|completion|infiniband|roce|net/ib|\bib\b",
    "dev-013": r"connection reset|read error|slow|throughput",
    "dev-014": r"\becc\b",
    "dev-015": r"rendezvous",
    "dev-016": r"out of memory|\boom\b",
}

#: Key term of each lab scenario (``eval/lab/scenarios``).
LAB_KEY_TERMS: dict[str, str] = {
    "stop_shape_mismatch": r"shape|mat1",
    "stop_import_error": r"import|modulenotfound|no module",
    "stop_config_keyerror": r"keyerror|key",
    "stop_nan_loss": r"\bnan\b|not a number|non-finite",
    "stop_ckpt_disk_full": r"no space|disk full|enospc",
    "stop_ckpt_readonly": r"read-only|readonly|erofs",
    "stop_dataloader_worker_killed": r"dataloader|worker.*killed|killed",
    "stop_rendezvous_port_in_use": r"address already in use|port|bind",
    "stop_sigkill_oom": r"sigkill|killed|signal 9|oom|out of memory",
    "stop_sigkill_restart": r"sigkill|killed|signal 9",
    "hang_collective_mismatch": r"mismatch|different collective|collective",
    "hang_collective_skip": r"skip|collective|all-?reduce|barrier",
    "hang_data_loading": r"data|loader",
    "hang_lock_deadlock": r"lock|deadlock",
    "hang_sleep_before_allreduce": r"sleep|all-?reduce|stuck|hung|hang",
    "slow_rank_comm": r"slow|straggler",
    "slow_rank_compute": r"slow|straggler",
    "slow_rank_compute_intermittent": r"slow|straggler|intermittent",
    "slow_job_compute": r"slow|slowdown",
}

_MARKER = re.compile(r"\s*\[E\d+(?:,\s*E\d+)*\]")


def names_key_term(text: str, pattern: str) -> bool:
    """True when ``text`` (citation markers removed) matches ``pattern``, case-insensitively."""
    return re.search(pattern, _MARKER.sub("", text), re.I) is not None


def citations_valid(text: str, citations: list[str], ids: set[str]) -> bool:
    """Every citation is an evidence-pack id, and every ``[E#]`` marker of the text is a citation."""
    in_text = {i.strip() for m in re.finditer(r"\[(E\d+(?:,\s*E\d+)*)\]", text) for i in m.group(1).split(",")}
    return set(citations) <= ids and in_text <= set(citations)


def pct(xs: list[float], q: float) -> float | None:
    """The ``q`` quantile of ``xs`` by linear interpolation (None for no values), rounded to 3 places."""
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return round(s[lo] + (s[hi] - s[lo]) * (k - lo), 3)


def _dev_cases(dev_dir: Path) -> list[dict[str, Any]]:
    out = []
    labels = dev_dir / "labels.jsonl"
    if not labels.is_file():
        return out
    for line in labels.read_text().splitlines():
        if line.strip():
            case = json.loads(line)
            out.append({"id": case["id"], "path": dev_dir / "logs" / f"{case['id']}.log",
                        "key_term": DEV_KEY_TERMS.get(case["id"]), "faulty_rank": case.get("faulty_rank")})
    return out


def _lab_cases(lab_dirs: list[Path]) -> list[dict[str, Any]]:
    out = []
    for base in lab_dirs:
        runs = [base] if (base / "truth.json").is_file() else sorted(p.parent for p in base.glob("*/truth.json"))
        for run in runs:
            truth = json.loads((run / "truth.json").read_text())
            if truth.get("control"):
                continue
            out.append({"id": f"lab:{run.name}", "path": run, "key_term": LAB_KEY_TERMS.get(truth.get("scenario", "")),
                        "faulty_rank": truth.get("faulty_rank"), "exclude": ["truth.json", "run.json", "events.jsonl"]})
    return out


def evaluate_llm(config: Any = None, dev_dir: Path | str | None = DEV_DIR, lab_dirs: list[Path | str] | None = None,
                 backend: Any = None, limit: int | None = None) -> dict[str, Any]:
    """Summarise every case and score the summaries (see the module doc). Returns a JSON-ready dict.

    ``config``: an :class:`~diag_service.llm.LlmConfig` (default ``models/llm.yaml``); ``backend``: a
    backend object overriding the configured one; ``lab_dirs``: lab suite or run folders with
    ``truth.json``; ``limit``: score only the first N cases.
    """
    from diag_service.llm import LlmConfig, build_evidence_pack, fallback_summary, summarize_detailed
    from diag_service.pipeline import DiagnoseRequest, diagnose

    cfg = config or LlmConfig.load()
    cases = (_dev_cases(Path(dev_dir)) if dev_dir else []) + _lab_cases([Path(p) for p in lab_dirs or []])
    if limit:
        cases = cases[:limit]
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for case in cases:
        d = diagnose(DiagnoseRequest(path=str(case["path"]), exclude=case.get("exclude", [])))
        r = summarize_detailed(d, cfg, backend=backend)
        n = r.narrative
        base_text, _ = fallback_summary(build_evidence_pack(d, cfg.pack))
        term = case.get("key_term")
        rank = case.get("faulty_rank")
        rows.append({
            "id": case["id"],
            "source": n.source,
            "model": n.model,
            "text": n.text,
            "citations": n.citations,
            "citations_valid": citations_valid(n.text, n.citations, r.pack.ids()),
            "key_term": term,
            "key_term_named": names_key_term(n.text, term) if term else None,
            "fallback_key_term_named": names_key_term(base_text, term) if term else None,
            "faulty_rank": rank,
            "rank_named": (re.search(rf"\brank {rank}\b", n.text, re.I) is not None) if isinstance(rank, int) else None,
            "suggested_category": n.suggested_category.value if n.suggested_category else None,
            "latency_s": n.latency_s,
            "cache_hit": r.cache_hit,
            "fallback_reason": r.fallback_reason,
        })

    def rate(key: str, subset: list[dict[str, Any]] | None = None) -> float | None:
        vals = [x[key] for x in (rows if subset is None else subset) if x[key] is not None]
        return round(sum(bool(v) for v in vals) / len(vals), 3) if vals else None

    model_rows = [x for x in rows if x["source"] == "model"]
    lat = [x["latency_s"] for x in rows if x["latency_s"] is not None and not x["cache_hit"]]
    return {
        "cases": len(rows),
        "model_rate": round(len(model_rows) / len(rows), 3) if rows else None,
        "citations_valid_rate": rate("citations_valid"),
        "key_term_rate": rate("key_term_named"),
        "key_term_rate_model": rate("key_term_named", model_rows),
        "key_term_rate_fallback_baseline": rate("fallback_key_term_named"),
        "rank_named_rate": rate("rank_named"),
        "latency_s": {"p50": pct(lat, 0.5), "p95": pct(lat, 0.95), "n": len(lat)},
        "wall_s": round(time.perf_counter() - t0, 1),
        "config": {"backend": cfg.backend, "model": cfg.model, "max_new_tokens": cfg.generation.max_new_tokens,
                   "pack_budget_tokens": cfg.pack.budget_tokens},
        "key_term_check": "case-insensitive regex per case (eval/llm_eval.py DEV_KEY_TERMS / LAB_KEY_TERMS) on the text "
                          "without [E#] markers",
        "details": rows,
    }


def evaluate(**kwargs: Any) -> dict[str, Any]:
    """The scorecard's entry point: :func:`evaluate_llm` with the configured model (``models/llm.yaml``)."""
    return evaluate_llm(**kwargs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Score narrative summaries on incidents_dev (and lab runs).")
    ap.add_argument("--dev", default=str(DEV_DIR))
    ap.add_argument("--lab", action="append", default=[], help="lab suite or run folder (repeatable)")
    ap.add_argument("--backend", default=None, help="auto, llamacpp, transformers, openai, none")
    ap.add_argument("--model", default=None)
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from diag_service.llm import LlmConfig

    over: dict[str, Any] = {}
    if args.backend:
        over["backend"] = args.backend
    if args.model:
        over["model"] = args.model
    if args.no_cache:
        over["cache"] = False
    res = evaluate_llm(LlmConfig.load(**over), dev_dir=args.dev or None, lab_dirs=args.lab, limit=args.limit)
    text = json.dumps(res, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
