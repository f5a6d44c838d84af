"""FAISS vector index: exact for small stores, IVF above a threshold; atomic, verified files.

Kinds:

- ``flat``: ``IndexIDMap2(IndexFlatIP)``, exact cosine search (vectors are unit length). Used while
  the store holds fewer than ``IndexParams.approx_threshold`` records (default 50,000; a query then
  scans ≤ 50,000 × 384 floats, a few milliseconds).
- ``ivf``: ``IndexIVFFlat`` with inner product, ``nlist ≈ 4·√n`` lists (power of two, 64…65,536)
  trained by k-means on a fixed-seed sample of ≤ 64 vectors per list, ``nprobe`` lists probed per
  query (default 32). Chosen over HNSW after measuring both at 100,000 clustered 384-d vectors on
  this 2-core machine: IVF built in 5 s against 71 s, and found 99 % of the exact top 10 at
  nprobe 16 against 82 % for HNSW (M 32, efSearch 64) at a similar latency.

Files: an index is one immutable file ``index-<generation>.faiss`` plus the manifest
``index.json`` naming it, with the model name, dimension, kind, number of vectors, highest row id,
the store's vector epoch and the file's sha256. Both are written to a temporary file, fsynced and
renamed into place (the folder is fsynced too); the manifest is renamed last, so a reader that
follows the manifest always finds a complete, verified index. :func:`load_index` raises
:class:`IndexCorrupt` when the manifest or file is missing, unreadable, or fails the checksum; the
knowledge base then rebuilds from SQLite.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from diag_service.fsutil import atomic_write
from diag_service.kb.records import KB_EXTRA_HINT, KBError

MANIFEST = "index.json"



def _faiss():  # noqa: ANN202 - the faiss module, imported on first use (the [kb] extra)
    try:
        import faiss
    except ImportError as exc:
        raise KBError(f"{KB_EXTRA_HINT} ({exc})") from exc
    return faiss

class IndexCorrupt(KBError):
    """The on-disk index is missing, unreadable, or fails verification (rebuild it from the store)."""


class IndexParams(BaseModel):
    """When to switch to the approximate index, and how to size and probe it."""

    approx_threshold: int = Field(50_000, ge=1, description="Records from which the IVF index is used.")
    nprobe: int = Field(32, ge=1, description="IVF lists probed per query.")
    train_per_list: int = Field(64, ge=39, description="k-means training vectors per list.")
    seed: int = 1234


class Manifest(BaseModel):
    file: str
    kind: str
    model: str
    dim: int
    count: int
    max_rowid: int
    epoch: int
    sha256: str
    nlist: int | None = None


@dataclass
class LoadedIndex:
    """An index in memory with what it covers: rows ``<= max_rowid`` of vector epoch ``epoch``."""

    index: Any  # faiss.Index
    kind: str
    model: str
    dim: int
    max_rowid: int
    epoch: int
    count: int

    def search(self, queries: np.ndarray, k: int, nprobe: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """Scores and row ids, each ``(len(queries), k)``; missing neighbours have id -1."""
        if self.kind == "ivf":
            _faiss().extract_index_ivf(self.index).nprobe = nprobe
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Append vectors with their row ids (all ids must be above ``max_rowid``)."""
        if len(ids) == 0:
            return
        self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))
        self.max_rowid = max(self.max_rowid, int(np.max(ids)))
        self.count += len(ids)


def nlist_for(n: int) -> int:
    """IVF list count for ``n`` vectors: the power of two nearest ``4·√n``, within 64…65,536.

    :func:`build_index` also caps it at ``n / train_per_list`` so every list gets training points.
    """
    target = 4 * math.sqrt(max(n, 1))
    return int(min(65_536, max(64, 2 ** round(math.log2(target)))))


def build_index(
    ids: np.ndarray, vectors: np.ndarray, model: str, epoch: int, params: IndexParams | None = None
) -> LoadedIndex:
    """Build an index over ``vectors`` (float32 ``(n, dim)``, unit rows) with int64 row ``ids``.

    Flat below ``params.approx_threshold`` rows, IVF from there on. Raises ``ValueError`` on
    shape mismatch.
    """
    params = params or IndexParams()
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ids = np.asarray(ids, dtype=np.int64)
    if vectors.ndim != 2 or len(ids) != len(vectors):
        raise ValueError(f"vectors must be (n, dim) with n ids; got {vectors.shape} and {ids.shape}")
    n, dim = vectors.shape
    if n < params.approx_threshold:
        index = _faiss().IndexIDMap2(_faiss().IndexFlatIP(dim))
        kind = "flat"
    else:
        nlist = max(1, min(nlist_for(n), n // params.train_per_list))
        quantizer = _faiss().IndexFlatIP(dim)
        index = _faiss().IndexIVFFlat(quantizer, dim, nlist, _faiss().METRIC_INNER_PRODUCT)
        index.cp.seed = params.seed
        rng = np.random.default_rng(params.seed)
        sample = min(n, nlist * params.train_per_list)
        train = vectors[np.sort(rng.choice(n, size=sample, replace=False))] if sample < n else vectors
        index.train(train)
        kind = "ivf"
    if n:
        index.add_with_ids(vectors, ids)
    return LoadedIndex(index, kind, model, dim, int(ids.max()) if n else 0, epoch, n)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 23), b""):
            h.update(chunk)
    return h.hexdigest()


def save_index(directory: Path, li: LoadedIndex) -> Manifest:
    """Write ``li`` atomically into ``directory`` and point the manifest at it; delete files older than the previous one.

    The caller must hold the store's writer lock. Returns the new manifest.
    """
    directory.mkdir(parents=True, exist_ok=True)
    try:
        old = read_manifest(directory, missing_ok=True)
    except IndexCorrupt:
        old = None  # replaced below
    generation = 1
    if old is not None:
        try:
            generation = int(old.file.split("-")[1].split(".")[0]) + 1
        except (IndexError, ValueError):
            generation = 1
    name = f"index-{generation:08d}.faiss"
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        _faiss().write_index(li.index, tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the store is readable like its SQLite file
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        digest = _sha256(Path(tmp))
        os.replace(tmp, directory / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    nlist = _faiss().extract_index_ivf(li.index).nlist if li.kind == "ivf" else None
    man = Manifest(file=name, kind=li.kind, model=li.model, dim=li.dim, count=li.count, max_rowid=li.max_rowid,
                   epoch=li.epoch, sha256=digest, nlist=nlist)
    atomic_write(directory / MANIFEST, (man.model_dump_json(indent=2) + "\n").encode())
    # Keep the previous file too: a reader that read the old manifest a moment ago can still open it.
    keep = {name, old.file if old is not None else name}
    for p in directory.glob("index-*.faiss"):
        if p.name not in keep:
            p.unlink(missing_ok=True)
    for pattern in (".index-*.tmp", f".{MANIFEST}.*.tmp"):  # leftovers of writers that died mid-write
        for p in directory.glob(pattern):
            p.unlink(missing_ok=True)
    return man


def read_manifest(directory: Path, missing_ok: bool = False) -> Manifest | None:
    """The manifest in ``directory``; ``None`` if absent and ``missing_ok``. Raises :class:`IndexCorrupt`."""
    p = directory / MANIFEST
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return None
        raise IndexCorrupt(f"no index manifest at {p}") from None
    except OSError as exc:
        raise IndexCorrupt(f"cannot read {p}: {exc}") from exc
    try:
        return Manifest.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        raise IndexCorrupt(f"{p}: malformed manifest ({str(exc).splitlines()[0]})") from exc


def load_index(directory: Path) -> tuple[LoadedIndex, Manifest]:
    """Read and verify the index named by the manifest in ``directory``.

    Raises :class:`IndexCorrupt` when anything is missing, the checksum differs, FAISS cannot read
    the file, or the file disagrees with its manifest (dimension, count).
    """
    man = read_manifest(directory)
    assert man is not None
    path = directory / man.file
    if not path.is_file():
        raise IndexCorrupt(f"index file {path} named by the manifest is missing")
    digest = _sha256(path)
    if digest != man.sha256:
        raise IndexCorrupt(f"index file {path} fails its checksum (sha256 {digest[:12]}…, manifest {man.sha256[:12]}…)")
    try:
        index = _faiss().read_index(str(path))
    except RuntimeError as exc:
        raise IndexCorrupt(f"FAISS cannot read {path}: {str(exc).splitlines()[0]}") from exc
    if index.d != man.dim or index.ntotal != man.count:
        raise IndexCorrupt(
            f"index file {path} holds {index.ntotal} vectors of dim {index.d}; manifest says {man.count} of {man.dim}"
        )
    return LoadedIndex(index, man.kind, man.model, man.dim, man.max_rowid, man.epoch, man.count), man
