"""Checker of the public real-failure corpus (``eval/corpus/README.md`` has the schema).

Usage: ``python eval/corpus/check.py [--corpus DIR]``; exit 0 when every case passes, 1 otherwise,
with one line per problem (``<id>: <problem>``) on stdout.

Checks, per case: the label's schema (fields, types, enums), ``unconfirmed:`` on unconfirmed root
causes, the log file (present, UTF-8, non-empty, at most 1 MiB), every evidence string occurring
verbatim in the log, and anonymisation (IPv4 outside ``10.0.x.y`` / loopback, home paths of a named
user, e-mail addresses, common token shapes, host names in the positions where launchers and NCCL
print them). Across cases: unique ids and one case per thread (``source_url``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent

FAILURE_MODES = {"fail_stop", "fail_hang", "fail_slow"}
CATEGORIES = {"gpu_hardware", "network", "gpu_oom", "host_oom", "user_code", "config", "data",
              "storage", "framework", "infrastructure", "unknown"}
LAUNCHERS = {"torchrun", "slurm", "deepspeed", "kubernetes", "ray", "accelerate", "lightning",
             "mpirun", "python", "other", "unknown"}
LEVELS = {"L0", "L1", "L2", "L3", "L4"}
TAGS = {"cascade", "same_message_different_cause", "one_line", "multi_rank", "multi_node", "truncated"}
REQUIRED: dict[str, type | tuple[type, ...]] = {
    "id": str, "source_url": str, "source_repo": str, "launcher": str, "failure_mode": str,
    "category": str, "confirmed": bool, "root_cause": str, "evidence": list,
    "faulty_rank": (int, type(None)), "faulty_node": (str, type(None)), "recovery_level": str,
    "tags": list, "label_basis": str,
}
MAX_LOG_BYTES = 1 << 20

_IPV4 = re.compile(r"(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w.]*\d)")
_HOME = re.compile(r"(?:/home/|/Users/|/data/home/|C:\\Users\\)([A-Za-z0-9_.-]+)")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_TOKEN = re.compile(r"\b(?:hf_[A-Za-z0-9]{30,}|ghp_[A-Za-z0-9]{30,}|sk-[A-Za-z0-9]{30,}|xox[bpa]-[A-Za-z0-9-]{20,}"
                    r"|AKIA[0-9A-Z]{16})\b")
# Host names where launchers print them: torchelastic's failure summary and NCCL's line prefix.
_ELASTIC_HOST = re.compile(r"^\s*(?:\[\d+\]:?\s*)?hostname\s*:\s*(\S+)")
_NCCL_HOST = re.compile(r"^(?:\[?[\w-]+\]?:\s*)?([A-Za-z][\w.-]*):\d+:\d+ \[\d+\] (?:NCCL|[\w./]+:\d+ NCCL)")
_ANON_HOST = re.compile(r"^gpu-node-\d{3}$")
_ALLOWED_HOME = {"user"}
_URL = re.compile(r"^https?://\S+$")


def _ip_ok(parts: tuple[str, ...]) -> bool:
    a, b, c, d = (int(p) for p in parts)
    if max(a, b, c, d) > 255:
        return True  # not an address (a version or a size)
    return (a, b) == (10, 0) or a == 127 or (a, b, c, d) == (0, 0, 0, 0) or a == 255 or (a, b) == (255, 255)


def check_log(text: str) -> list[str]:
    """Anonymisation problems of one log's text, one message each (empty when clean)."""
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in _IPV4.finditer(line):
            before = line[max(0, m.start() - 12):m.start()].lower()
            if not _ip_ok(m.groups()) and not re.search(r"(version|==|\bv)\s*$", before):
                problems.append(f"line {n}: IPv4 address {m.group(0)} not anonymised (10.0.x.y)")
        for m in _HOME.finditer(line):
            if m.group(1) not in _ALLOWED_HOME:
                problems.append(f"line {n}: home path of {m.group(1)!r} not anonymised (user)")
        for m in _EMAIL.finditer(line):
            problems.append(f"line {n}: e-mail address {m.group(0)!r}")
        if _TOKEN.search(line):
            problems.append(f"line {n}: token-shaped secret")
        for rx in (_ELASTIC_HOST, _NCCL_HOST):
            m = rx.match(line)
            if m and not _ANON_HOST.match(m.group(1).rstrip(",")):
                problems.append(f"line {n}: host name {m.group(1)!r} not anonymised (gpu-node-NNN)")
    return problems


def check_label(label: dict[str, Any]) -> list[str]:
    """Schema problems of one label (empty when valid)."""
    problems: list[str] = []
    for key, typ in REQUIRED.items():
        if key not in label:
            problems.append(f"missing field {key}")
        elif not isinstance(label[key], typ) or (typ is str and not label[key].strip()):
            problems.append(f"field {key} has the wrong type or is empty")
    if problems:
        return problems
    extra = set(label) - set(REQUIRED)
    if extra:
        problems.append(f"unknown fields {sorted(extra)}")
    for key, allowed in (("failure_mode", FAILURE_MODES), ("category", CATEGORIES), ("launcher", LAUNCHERS),
                         ("recovery_level", LEVELS)):
        if label[key] not in allowed:
            problems.append(f"{key} {label[key]!r} not one of {sorted(allowed)}")
    bad_tags = set(label["tags"]) - TAGS
    if bad_tags:
        problems.append(f"unknown tags {sorted(bad_tags)}")
    if not _URL.match(label["source_url"]):
        problems.append("source_url is not a URL")
    if not label["confirmed"] and not label["root_cause"].startswith("unconfirmed:"):
        problems.append("root_cause of an unconfirmed case must start with 'unconfirmed:'")
    if label["confirmed"] and label["root_cause"].startswith("unconfirmed"):
        problems.append("confirmed case with an 'unconfirmed' root cause")
    if not label["evidence"] or not all(isinstance(e, str) and e.strip() for e in label["evidence"]):
        problems.append("evidence must be a non-empty list of non-empty strings")
    if isinstance(label["faulty_rank"], bool):
        problems.append("faulty_rank must be an int or null")
    if label["faulty_node"] is not None and not _ANON_HOST.match(label["faulty_node"]):
        problems.append("faulty_node must be an anonymised gpu-node-NNN name")
    return problems


def normalise_url(url: str) -> str:
    """The thread a URL belongs to: no fragment, query or trailing slash, lower-case host and path."""
    url = url.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    return url.lower()


def load_labels(corpus: Path = CORPUS) -> list[dict[str, Any]]:
    """Every label of every shard, in shard then line order. Raises ValueError on a line that is not JSON."""
    labels: list[dict[str, Any]] = []
    for shard in sorted((corpus / "labels").glob("*.jsonl")):
        for n, line in enumerate(shard.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{shard.name}:{n}: not JSON ({exc})") from exc
            if not isinstance(obj, dict):
                raise ValueError(f"{shard.name}:{n}: not a JSON object")
            labels.append(obj)
    return labels


def check_corpus(corpus: Path = CORPUS) -> list[str]:
    """Every problem of the corpus as ``<id>: <problem>`` lines (empty when it passes)."""
    problems: list[str] = []
    try:
        labels = load_labels(corpus)
    except ValueError as exc:
        return [str(exc)]
    ids: dict[str, int] = {}
    urls: dict[str, str] = {}
    for label in labels:
        cid = str(label.get("id", "?"))
        ids[cid] = ids.get(cid, 0) + 1
        problems += [f"{cid}: {p}" for p in check_label(label)]
        url = normalise_url(str(label.get("source_url", "")))
        if url in urls:
            problems.append(f"{cid}: same thread as {urls[url]} ({url})")
        else:
            urls[url] = cid
        log = corpus / "logs" / f"{cid}.log"
        if not log.is_file():
            problems.append(f"{cid}: log file logs/{cid}.log missing")
            continue
        raw = log.read_bytes()
        if not raw.strip():
            problems.append(f"{cid}: log is empty")
            continue
        if len(raw) > MAX_LOG_BYTES:
            problems.append(f"{cid}: log larger than {MAX_LOG_BYTES} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{cid}: log is not UTF-8")
            continue
        for ev in label.get("evidence") or []:
            if isinstance(ev, str) and ev not in text:
                problems.append(f"{cid}: evidence not in the log: {ev[:80]!r}")
        if label.get("faulty_node") and label["faulty_node"] not in text:
            problems.append(f"{cid}: faulty_node {label['faulty_node']!r} does not occur in the log")
        problems += [f"{cid}: {p}" for p in check_log(text)]
    problems += [f"{cid}: id used {n} times" for cid, n in ids.items() if n > 1]
    known = {f"{cid}.log" for cid in ids}
    problems += [f"{p.stem}: log without a label" for p in sorted((corpus / "logs").glob("*.log")) if p.name not in known]
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    problems = check_corpus(args.corpus)
    try:
        labels = load_labels(args.corpus)
    except ValueError:
        labels = []
    for p in problems:
        print(p)
    print(f"{len(labels)} cases, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
