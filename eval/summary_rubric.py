#!/usr/bin/env python3
"""Score narrative summaries with the fixed rubric of ``docs/summary_rubric.md`` on a split of the corpus.

For each case of the chosen split of ``eval/corpus`` (split by :func:`corpus_eval.assign`; ``dev`` by
default; ``test`` only with ``--split test --why ...``, which appends a line to
``eval/corpus/test_looks.jsonl`` like ``corpus_eval.py --test``), the log is diagnosed (signatures,
knowledge base, no summary), summarised by :func:`diag_service.llm.summarize_detailed` (summary cache
off), and four summaries are scored: ``pipeline`` (what a user sees), ``model_written`` (the cases where
the model's summary was kept), ``deterministic`` (:func:`~diag_service.llm.fallback_summary` of the same
pack) and ``raw_model`` (the model's first answer before any check). Criteria (each a share of the scored cases): ``key_term``,
``rank_right``, ``no_unsupported_claim``, ``no_internal_identifier`` and ``all_four``.

Per-case rows go to ``eval/results/summary_rubric_dev_cases.jsonl`` as they are computed (``--resume``
skips the cases already there); the aggregate to ``eval/results/summary_rubric_dev.json``. On the test
split only the aggregate is kept in the repository (``eval/results/summary_rubric_test.json``); its
per-case rows go to the system's temporary folder (for ``--resume``), since test results are
aggregates (``eval/corpus_eval.py``). The key-term rule's document frequencies come from the dev
cases on either split (the rubric's rule as written).

    .venv/bin/python eval/summary_rubric.py                      # dev, configured model
    .venv/bin/python eval/summary_rubric.py --backend none       # deterministic summaries only
    .venv/bin/python eval/summary_rubric.py --limit 20 --resume
    .venv/bin/python eval/summary_rubric.py --every 3            # every third dev case (a fixed sample)
    .venv/bin/python eval/summary_rubric.py --split test --every 4 --why "..."   # counted as a look at test
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "eval"))
sys.path.insert(0, str(REPO / "eval" / "corpus"))

from check import load_labels  # noqa: E402
from corpus_eval import CORPUS, RESULTS, _commit, assign, record_test_look  # noqa: E402
from llm_eval import pct  # noqa: E402

#: A word must be in the labelled evidence of at most this share of dev cases to count as distinctive
#: (docs/summary_rubric.md, criterion 1).
DISTINCTIVE_SHARE = 0.10
#: Exception classes too generic to be a key term.
GENERIC_CLASSES = frozenset({"runtimeerror", "exception", "error", "baseexception"})
#: Words that are never a key term: function words and words every training log has.
STOPWORDS = frozenset({
    "with", "from", "that", "this", "these", "those", "then", "than", "after", "before", "because", "there",
    "their", "which", "were", "have", "been", "into", "also", "same", "each", "only", "when", "where", "what",
    "will", "would", "could", "should", "does", "while", "your", "please", "more", "most", "some", "other",
    "rank", "ranks", "local", "global", "node", "nodes", "error", "errors", "exception", "failed", "fails",
    "failure", "process", "processes", "worker", "workers", "torch", "distributed", "python", "line", "file",
    "traceback", "call", "last", "recent", "module", "self", "none", "true", "false", "info", "warning",
    "home", "user", "site", "packages", "main", "train", "training", "time", "name", "type", "value", "such",
    "code", "long", "void", "char", "unsigned", "class",
})
_CLASS = re.compile(r"\b(?:\w+\.)*([A-Z]\w*(?:Error|Exception|Interrupt|Timeout|Failure|Warning))\b")
_MARKER = re.compile(r"\s*\[E\d+(?:,\s*E\d+)*\]")
_RANK = re.compile(r"(?i)\brank\s+(\d+)\b")
_QUOTED = re.compile(r"""(?:(?<=[\s(])|^)(["'`])(.{8,}?)\1""")
_CITE_MARK = re.compile(r"\[(E\d+(?:,\s*E\d+)*)\]")


def sentences(text: str) -> list[tuple[str, str, list[str]]]:
    """``(sentence, body, ids)``: ``text`` split after each citation that ends a sentence (``[E1].``), so
    that dots and capitals inside quoted log text do not split it; body without its markers, unchanged
    otherwise (a quote stays as the log wrote it)."""
    out = []
    for sent in (p for p in re.split(r"(?<=\]\.)\s+", text.strip()) if p):
        ids = [i.strip() for m in _CITE_MARK.finditer(sent) for i in m.group(1).split(",")]
        body = re.sub(r"\s+", " ", _CITE_MARK.sub(" ", sent)).strip()
        out.append((sent, body, list(dict.fromkeys(ids))))
    return out


def split_cases(which: str) -> list[dict[str, Any]]:
    """The labelled cases of split ``which`` (``dev`` or ``test``), in label order."""
    labels = load_labels(CORPUS)
    split = assign(labels)
    return [c for c in labels if split[c["id"]] == which]


def dev_cases() -> list[dict[str, Any]]:
    """The labelled cases of the dev split, in label order (never a test case)."""
    return split_cases("dev")


def _words(text: str) -> list[str]:
    parts = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)  # CamelCase parts as words too
    return [w for w in re.findall(r"[a-z]{4,}", (text + " " + parts).lower()) if w not in STOPWORDS]


def evidence_df(cases: list[dict[str, Any]]) -> Counter[str]:
    """In how many cases' labelled evidence each word occurs (for :func:`key_terms`)."""
    df: Counter[str] = Counter()
    for c in cases:
        df.update(set(_words(" ".join(c.get("evidence") or []))))
    return df


def key_terms(evidence: list[str], df: Counter[str], n_cases: int) -> dict[str, list[str]]:
    """``{"classes": [...], "words": [...]}``: the key terms of a case (criterion 1) from its labelled evidence."""
    text = " ".join(evidence)
    classes = sorted({m.group(1) for m in _CLASS.finditer(text) if m.group(1).lower() not in GENERIC_CLASSES})
    limit = max(1, int(DISTINCTIVE_SHARE * n_cases))
    words = sorted({w for w in _words(text) if df[w] <= limit})
    return {"classes": classes, "words": words}


def names_key_term(text: str, terms: dict[str, list[str]]) -> bool | None:
    """Criterion 1 (None when the case has no key term)."""
    if not terms["classes"] and not terms["words"]:
        return None
    bare = _MARKER.sub("", text).lower()
    if any(c.lower() in bare for c in terms["classes"]):
        return True
    stems = {w[:5] for w in re.findall(r"[a-z]{4,}", bare)}
    return any(w[:5] in stems for w in terms["words"])


def rank_right(text: str, rank: int | None) -> bool:
    """Criterion 2 against the diagnosis' first failing rank ``rank`` (quoted log text does not count)."""
    text = _QUOTED.sub(" ", _MARKER.sub("", text))
    named = [int(m.group(1)) for m in _RANK.finditer(text)]
    if rank is not None:
        return bool(named) and named[0] == rank
    first = sentences(text)
    return not first or _RANK.search(_QUOTED.sub(" ", first[0][1])) is None


def unsupported_claims(text: str, pack: Any) -> list[str]:
    """Criterion 3 (automated part): ``'reason: sentence'`` for each sentence that fails it."""
    from diag_service.llm.output import (
        _RESEMBLE,
        evidence_sources,
        known_ranks,
        ungrounded_token,
        unsupported_words,
    )

    corpus = pack.corpus()
    valid = pack.ids()
    ranks = known_ranks(pack)
    out: list[str] = []
    for sentence, body, cited in sentences(text):
        ids = [i for i in cited if i in valid]
        if not ids:
            if valid:  # with an empty pack there is nothing to cite ("no failure evidence was found")
                out.append(f"uncited: {sentence}")
            continue
        for m in _QUOTED.finditer(body):  # a quote shortened with "..." is compared without it
            q = m.group(2)
            if q.endswith("...") and q[:-3].strip().lower() in corpus:
                body = body.replace(m.group(0), " ")
        bad = ungrounded_token(body, corpus)
        if bad is not None:
            out.append(f"ungrounded ({bad}): {sentence}")
            continue
        claimed = {int(x) for x in re.findall(r"(?i)\branks?\s+(\d+)", body)}
        if claimed - ranks:
            out.append(f"unknown rank: {sentence}")
            continue
        evidence, background = evidence_sources(pack, ids, _RESEMBLE.search(body) is not None, "")
        missing = unsupported_words(body, evidence, background)
        if missing:
            out.append(f"not in the cited log lines ({', '.join(missing[:3])}): {sentence}")
    return out


def score_text(text: str, pack: Any, terms: dict[str, list[str]], rank: int | None) -> dict[str, Any]:
    """The four criteria of one summary, plus what failed."""
    from diag_service.llm.output import internal_identifiers

    claims = unsupported_claims(text, pack)
    internal = internal_identifiers(text, pack)
    row = {"key_term": names_key_term(text, terms), "rank_right": rank_right(text, rank),
           "no_unsupported_claim": not claims, "no_internal_identifier": not internal}
    row["all_four"] = all(v for v in row.values() if v is not None)
    if claims:
        row["unsupported"] = claims
    if internal:
        row["internal"] = internal
    return row


CRITERIA = ("key_term", "rank_right", "no_unsupported_claim", "no_internal_identifier", "all_four")


def aggregate(rows: list[dict[str, Any]], which: str) -> dict[str, Any]:
    """Share of scored cases meeting each criterion for the summaries under ``which`` in ``rows``."""
    scored = [r[which] for r in rows if r.get(which)]
    out: dict[str, Any] = {"cases": len(scored)}
    for k in CRITERIA:
        vals = [s[k] for s in scored if s.get(k) is not None]
        out[k] = round(sum(map(bool, vals)) / len(vals), 3) if vals else None
        if k == "key_term":
            out["key_term_cases"] = len(vals)
    return out


def case_row(case: dict[str, Any], cfg: Any, df: Counter[str], n_cases: int) -> dict[str, Any]:
    """Diagnose, summarise and score one case."""
    from diag_service.llm import fallback_summary, parse_answer, summarize_detailed
    from diag_service.pipeline import DiagnoseRequest, diagnose

    terms = key_terms(case.get("evidence") or [], df, n_cases)
    row: dict[str, Any] = {"id": case["id"], "key_terms": terms, "label_faulty_rank": case.get("faulty_rank")}
    try:
        d = diagnose(DiagnoseRequest(path=str(CORPUS / "logs" / f"{case['id']}.log"), kb=True, llm=False, recovery=False))
    except Exception as exc:  # noqa: BLE001 - a crash on a real log is a result to report
        return row | {"error": f"{type(exc).__name__}: {exc}"[:300]}
    rank = d.first_failing_rank
    r = summarize_detailed(d, cfg)
    pack = r.pack
    n = r.narrative
    det_text = fallback_summary(pack)[0]
    row |= {"first_failing_rank": rank, "source": n.source, "text": n.text, "deterministic_text": det_text,
            "latency_s": n.latency_s, "model_called": bool(r.attempts), "fallback_reason": r.fallback_reason,
            "dropped": r.dropped}
    row["pipeline"] = score_text(n.text, pack, terms, rank)
    row["deterministic"] = score_text(det_text, pack, terms, rank)
    if n.source == "model":
        row["model_written"] = row["pipeline"]
    if r.attempts:
        try:
            raw = parse_answer(r.attempts[0].text).summary
        except Exception:  # noqa: BLE001 - an unparseable answer is scored as such
            raw = None
        row["raw_text"] = raw
        if raw is not None:
            row["raw_model"] = score_text(raw, pack, terms, rank)
    label_rank = case.get("faulty_rank")
    if isinstance(label_rank, int):
        row["names_label_rank"] = {"pipeline": re.search(rf"\brank {label_rank}\b", n.text, re.I) is not None,
                                   "deterministic": re.search(rf"\brank {label_rank}\b", det_text, re.I) is not None}
    return row


def summarise(rows: list[dict[str, Any]], cfg: Any, wall_s: float, load: tuple[float, ...],
              split: str = "dev") -> dict[str, Any]:
    """The aggregate document written to ``summary_rubric_<split>.json``."""
    ok = [r for r in rows if "error" not in r]
    lat = [r["latency_s"] for r in ok if r.get("model_called") and r.get("latency_s") is not None]
    label_rows = [r["names_label_rank"] for r in ok if "names_label_rank" in r]
    return {
        "split": split,
        "rubric": "docs/summary_rubric.md",
        "cases": len(rows),
        "errors": len(rows) - len(ok),
        "model_rate": round(sum(r["source"] == "model" for r in ok) / len(ok), 3) if ok else None,
        "raw_model_parsed": sum("raw_model" in r for r in ok),
        **{w: aggregate(ok, w) for w in ("pipeline", "model_written", "deterministic", "raw_model")},
        "label_rank_named": {k: round(sum(x[k] for x in label_rows) / len(label_rows), 3) if label_rows else None
                             for k in ("pipeline", "deterministic")} | {"cases": len(label_rows)},
        "model_latency_s": {"p50": pct(lat, 0.5), "p95": pct(lat, 0.95), "n": len(lat)},
        "wall_s": round(wall_s, 1),
        "load_average_start_end": list(load),
        "config": {"backend": cfg.backend, "model": cfg.model, "max_new_tokens": cfg.generation.max_new_tokens,
                   "pack_budget_tokens": cfg.pack.budget_tokens, "cache": cfg.cache},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None, help="auto, llamacpp, transformers, openai, none")
    ap.add_argument("--split", choices=("dev", "test"), default="dev",
                    help="test only with --why: each run is recorded in eval/corpus/test_looks.jsonl")
    ap.add_argument("--why", default="", help="why the test split is looked at (required with --split test)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N cases of the split")
    ap.add_argument("--every", type=int, default=1,
                    help="only every N-th case in label order (a fixed sample across all shards, when time is short)")
    ap.add_argument("--resume", action="store_true", help="keep the rows already in --cases-out, score the rest")
    ap.add_argument("--cases-out", default=None,
                    help="per-case rows (default eval/results/summary_rubric_dev_cases.jsonl; for test, the temporary folder)")
    ap.add_argument("--out", default=None, help="aggregate (default eval/results/summary_rubric_<split>.json)")
    args = ap.parse_args(argv)
    if args.split == "test" and not args.why.strip():
        ap.error("--split test needs --why: every look at the test split is recorded with its reason")
    if args.cases_out is None:
        args.cases_out = str(RESULTS / "summary_rubric_dev_cases.jsonl") if args.split == "dev" else \
            str(Path(tempfile.gettempdir()) / "summary_rubric_test_cases.jsonl")
    if args.out is None:
        args.out = str(RESULTS / f"summary_rubric_{args.split}.json")
    from diag_service.llm import LlmConfig

    cfg = LlmConfig.load(cache=False, **({"backend": args.backend} if args.backend else {}))
    cases = dev_cases()
    df = evidence_df(cases)  # the key-term rule is defined on the dev cases' evidence, for either split
    scored = cases if args.split == "dev" else split_cases("test")
    todo = scored[:: max(1, args.every)]
    todo = todo[: args.limit] if args.limit else todo
    cases_out = Path(args.cases_out)
    done: dict[str, dict[str, Any]] = {}
    if args.resume and cases_out.exists():
        for line in cases_out.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["id"]] = row
    else:
        cases_out.write_text("")
    commit = _commit()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with cases_out.open("a") as fh:
        for i, case in enumerate(todo, 1):
            if case["id"] in done:
                rows.append(done[case["id"]])
                continue
            row = case_row(case, cfg, df, len(cases))
            rows.append(row)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(f"[{i}/{len(todo)}] {case['id']} {row.get('source', 'error')} {row.get('latency_s')}", file=sys.stderr)
    res = summarise(rows, cfg, time.perf_counter() - t0, (load0, os.getloadavg()[0]), split=args.split)
    res["sample"] = {f"{args.split}_cases": len(scored), "every": max(1, args.every), "limit": args.limit,
                     "rule": "every N-th case of the split in label order (load_labels), from the first"}
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    if args.split == "test":
        record_test_look(args.why, commit)
    print(json.dumps({k: v for k, v in res.items() if k != "config"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
