"""Vendor-source sweep signatures (knowledge_base/signatures/vendor_sweep.yaml): every example, printed after a
training step (an exception's line under a traceback), is decided by its signature; healthy lines of the same
frameworks match none of them."""

from __future__ import annotations

import re

import pytest
from catalog_checks import assert_signature_decides, in_a_log

from diag_service.domain import Category, EventRole
from diag_service.kb.text import analyze_text
from diag_service.signatures import load_signatures
from diag_service.signatures.catalog import SignatureError, SignatureFile, default_signature_dir
from diag_service.yamlio import load_yaml_model


def _sweep():
    parsed, _text, _node = load_yaml_model(
        default_signature_dir() / "vendor_sweep.yaml", SignatureFile, SignatureError, name="vendor_sweep.yaml", empty={}
    )
    return parsed.signatures


_SPECS = _sweep()
_CASES = [(s.id, s.category, s.role, ex) for s in _SPECS for ex in s.examples]


@pytest.mark.parametrize(("sig_id", "category", "role", "line"), _CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_CASES)])
def test_vendor_sweep_signature_decides(sig_id: str, category: Category, role: EventRole, line: str) -> None:
    text = in_a_log(line)
    if role is EventRole.ROOT:
        assert_signature_decides(text, sig_id, category)
    else:  # a consequence: named, never the decision's category on its own
        hits = [h.signature_id for h in analyze_text(text).signature_hits]
        assert sig_id in hits, hits


def test_ids_prefixed_and_sourced() -> None:
    assert len(_SPECS) >= 40
    for spec in _SPECS:
        assert spec.id.startswith("vs_"), spec.id
        assert spec.source and re.match(r"https://github\.com/[\w.-]+/[\w.-]+/blob/", spec.source), spec.id
    loaded = {c.spec.id for c in load_signatures().signatures}
    assert {s.id for s in _SPECS} <= loaded


#: Lines healthy runs of the same frameworks print (INFO / WARNING): none may match a sweep signature.
HARMLESS = [
    "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
    "INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group",
    "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:",
    "WARNING:torch.distributed.elastic.utils.distributed:port: 29500 already in use, attempt: [1/3]",
    "W0502 11:00:01.123000 4242 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each "
    "process to be 1 in default, to avoid your system being overloaded",
    "[2026-05-02 11:00:05,120] [INFO] [config.py:1000:print]   train_batch_size ............. 256",
    "[2026-05-02 11:00:05,121] [INFO] [config.py:1000:print]   zero_allow_untested_optimizer  False",
    "[2026-05-02 11:00:02,001] [INFO] [runner.py:607:main] Using IP address of 10.0.0.1 for node node1",
    "[2026-05-02 11:00:02,002] [INFO] [launch.py:146:main] WORLD INFO DICT: {'node1': [0, 1, 2, 3]}",
    "[2026-05-02 12:00:00,000] [INFO] [engine.py:3596:_save_checkpoint] Saving model checkpoint: "
    "/ckpt/global_step1000/mp_rank_00_model_states.pt",
    "[INFO|trainer.py:4003] 2026-05-02 12:00:00,000 >> Saving model checkpoint to /out/checkpoint-500",
    "[INFO|trainer.py:2400] 2026-05-02 11:00:00,000 >> ***** Running training *****",
    "Loading checkpoint shards: 100%|██████████| 4/4 [00:05<00:00,  1.30s/it]",
    "  Continuing training from checkpoint, will skip to saved global_step",
    "The following values were not passed to `accelerate launch` and had defaults used instead:",
    "GPU available: True (cuda), used: True",
    "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]",
    "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/16",
    "> initializing tensor model parallel with size 4",
    "> initializing pipeline model parallel with size 2",
    "Started training worker group of size 8:",
    "(RayTrainWorker pid=4242) Setting up process group for: env:// [rank=0, world_size=8]",
    "(TorchTrainer pid=4100) Wrapping provided model in DistributedDataParallel.",
    "INFO 05-02 11:00:00 [api_server.py:1024] Server is up!",
]


@pytest.mark.parametrize("line", HARMLESS)
def test_healthy_lines_match_no_sweep_signature(line: str) -> None:
    sigs = load_signatures()
    hit = [c.spec.id for c in sigs.signatures if c.spec.id.startswith("vs_") and c.search(line)]
    assert hit == [], (line, hit)


def test_prefilter_union_fits_re2_dfa_budget() -> None:
    """The extractor's pre-filter is one re2 union of every catalogue pattern; past re2's DFA memory budget
    (``_SCAN_OPTIONS.max_mem``) re2 logs "DFA out of memory" and falls back to a scan ~50x slower. The catalogue
    (with this file's ~200 patterns) sat at program size ~123k of the ~127k that a 64 MiB budget allowed when this
    test was written; the budget is 256 MiB since (docs/pipeline.md)."""
    import subprocess
    import sys

    code = (
        "from diag_service.signatures.catalog import load_signatures\n"
        "from diag_service.extract.events import prefilter_with\n"
        "pre = prefilter_with(load_signatures().prefilter_patterns())\n"
        "pre.search('step 1 | loss 2.0\\n' * 50)\n"
        "print(pre.programsize)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "DFA out of memory" not in r.stderr, f"pre-filter union too large for re2's DFA: {r.stdout.strip()}"
