"""Check eval/noise/benign_lines.jsonl: schema, unique ids, anonymisation.

Usage: python eval/noise/check.py [path]   (exit 1 on any problem)
"""

from __future__ import annotations

import ipaddress
import json
import re
import sys
from pathlib import Path

DEFAULT = Path(__file__).with_name("benign_lines.jsonl")
KEYS = {"id", "line", "source_url", "emitter", "why_benign", "context"}
CONTEXTS = {"start-up", "training", "shutdown"}
ID_RE = re.compile(r"^b-\d{3}$")
IPV4_RE = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")
# /home/<name>, /Users/<name>, /data/users/<name>: only the placeholder "user" may appear.
HOME_RE = re.compile(r"(?:/home/|/Users/|/data/users/)([^/\s]+)")
# NCCL_DEBUG prefix "host:pid:tid [dev] NCCL" (optionally after a "host: " pdsh prefix).
NCCL_HOST_RE = re.compile(r"^(?:(\S+): )?(\S+):\d+:\d+ \[\d+\] NCCL ")
NODE_RE = re.compile(r"^gpu-node-\d{3}$")
# Raw host names seen in the source threads; none may survive anonymisation.
RAW_HOSTS = (
    "zkti", "VM-0-14", "MLVM", "testpc", "ds-ml-01", "ip-172-", "algo-1", "ravg10", "nid0", "como:",
    "qh100", "myles-", "kolyoz", "tj5-sc", "task272", "73e9f9f45158", "x08j01357", "tbsite",
    "gokdeniz", "andgu", "bobos", "036260b61d3a", "cluster_name", "h100clust", "sh9-machine", "patient-giraffe",
)


def ip_ok(text: str) -> bool:
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return True  # not an address (e.g. a 4-part version number out of range)
    if ip.is_loopback or ip.is_unspecified:
        return True
    return text.startswith("10.0.")


def check(path: Path) -> tuple[list[str], int, int]:
    """Return (problems, number of records, number of distinct source URLs)."""
    errors: list[str] = []
    urls: set[str] = set()
    ids: set[str] = set()
    lines: set[str] = set()
    raw = path.read_text(encoding="utf-8").splitlines()
    for n, text in enumerate(raw, 1):
        where = f"{path.name}:{n}"
        if not text.strip():
            errors.append(f"{where}: blank line")
            continue
        try:
            rec = json.loads(text)
        except json.JSONDecodeError as exc:
            errors.append(f"{where}: invalid JSON ({exc})")
            continue
        if not isinstance(rec, dict) or set(rec) != KEYS:
            errors.append(f"{where}: keys {sorted(rec) if isinstance(rec, dict) else type(rec)} != {sorted(KEYS)}")
            continue
        if not all(isinstance(rec[k], str) for k in KEYS):
            errors.append(f"{where}: every field must be a string")
            continue
        rid, line = rec["id"], rec["line"]
        urls.add(rec["source_url"])
        if not ID_RE.match(rid):
            errors.append(f"{where}: bad id {rid!r}")
        if rid in ids:
            errors.append(f"{where}: duplicate id {rid}")
        ids.add(rid)
        if not line.strip():
            errors.append(f"{where}: empty line field")
        if "\n" in line or "\r" in line:
            errors.append(f"{where}: line field spans several lines")
        if line in lines:
            errors.append(f"{where}: duplicate line text")
        lines.add(line)
        if not rec["source_url"].startswith("https://"):
            errors.append(f"{where}: source_url not https")
        if rec["context"] not in CONTEXTS:
            errors.append(f"{where}: context {rec['context']!r} not in {sorted(CONTEXTS)}")
        for k in ("emitter", "why_benign"):
            if not rec[k].strip():
                errors.append(f"{where}: empty {k}")
        for ip in IPV4_RE.findall(line):
            if not ip_ok(ip):
                errors.append(f"{where}: raw IP {ip}")
        for name in HOME_RE.findall(line):
            if name != "user":
                errors.append(f"{where}: home path of {name!r}")
        m = NCCL_HOST_RE.match(line)
        if m:
            for host in filter(None, m.groups()):
                if not NODE_RE.match(host):
                    errors.append(f"{where}: NCCL host {host!r} not anonymised")
        for h in RAW_HOSTS:
            if h.lower() in line.lower():
                errors.append(f"{where}: raw host/user name {h!r}")
        if re.search(r"fe80::[0-9a-f]", line, re.I):
            errors.append(f"{where}: link-local IPv6 address")
    if not raw:
        errors.append(f"{path.name}: empty file")
    return errors, len(ids), len(urls)


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT
    errors, n_records, n_urls = check(path)
    for e in errors:
        print(e)
    print(f"{n_records} well-formed records, {n_urls} distinct sources, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
