"""What the catalogue's per-message tests share: a vendor line placed in a job's log, and the check that a log ending in
a known message is decided by it."""

from __future__ import annotations

import re

from diag_service.domain import Category, Diagnosis
from diag_service.kb.text import analyze_text
from diag_service.signatures.catalog import SignatureError, SignatureFile, SignatureSpec, default_signature_dir
from diag_service.yamlio import load_yaml_model


def assert_signature_decides(text: str, signature_id: str, category: Category) -> Diagnosis:
    """Diagnose ``text`` (the pipeline's one chain, no knowledge base or model) and assert that
    ``signature_id`` is among the hits and the diagnosis has ``category``. Returns the diagnosis."""
    d = analyze_text(text)
    hits = [h.signature_id for h in d.signature_hits]
    assert signature_id in hits, hits
    assert d.category is category, (d.category, hits)
    return d


#: A training step's line and a traceback's head: a vendor line is checked as it appears in a job's log.
STEP = "[rank0]:[2026-05-02 11:02:10] step 1200 | loss 2.314 | lr 3.0e-4 | 412 samples/s\n"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 88, in <module>\n'
    "    main()\n"
    '  File "/usr/local/lib/python3.11/dist-packages/somepkg/core.py", line 120, in run\n'
    "    raise err\n"
)
#: an exception's last line (``ValueError: ...``, ``torch.distributed.DistStoreError: ...``)
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt): ")


def in_a_log(line: str) -> str:
    """``line`` after a training step, under a traceback when it is an exception's line."""
    return STEP + (TRACEBACK if EXCEPTION_LINE.match(line) else "") + line + "\n"


def catalogue_specs(name: str) -> list[SignatureSpec]:
    """The entries of one signature file of the shipped catalogue (``knowledge_base/signatures/<name>``)."""
    parsed, _text, _node = load_yaml_model(default_signature_dir() / name, SignatureFile, SignatureError, name=name,
                                           empty={})
    return parsed.signatures
