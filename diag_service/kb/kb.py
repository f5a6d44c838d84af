"""The knowledge base: build from YAML, search by diagnosis or text, learn from operator feedback.

Layout of a store folder (default ``$DIAG_HOME/kb``, see :func:`default_home`)::

    kb.sqlite        records, vectors, feedback, model name and dimension, novelty calibration
    index/index.json manifest naming the current FAISS file, with its checksum
    index/index-N.faiss
    kb.lock          the writer lock (one writer at a time, across processes and threads)

Guarantees:

- **One writer.** ``build``, ``add_feedback`` and index persistence hold ``kb.lock``; a writer that
  cannot get it within ``lock_timeout_s`` raises :class:`KBLocked`. Readers take no lock.
- **Readers never see a half-written index** (manifest renamed last, see :mod:`diag_service.kb.index`)
  and always see every committed record: rows newer than the loaded index are added from SQLite
  on each search.
- **Missing or corrupt index** (no manifest, checksum or FAISS read failure, other model, stale
  vector epoch): rebuilt from SQLite and written back when the writer lock is free, else rebuilt in
  memory for this process.
- **Model mismatch** between the store and the embedder raises :class:`ModelMismatch` at open.
- **Records are never lost**: no code path deletes a record; build updates seed records in place
  and keeps stored records that left the YAML.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout
from pydantic import BaseModel, Field

from diag_service.domain import Category, Diagnosis, FailureMode, RecoveryLevel, SimilarIncident
from diag_service.kb import index as ix
from diag_service.kb.embed import Embedder, default_embedder
from diag_service.kb.records import FEEDBACK_PREFIX, IncidentRecord, KBError, Recovery, load_records
from diag_service.kb.store import ModelMismatch, Store, StoredRecord
from diag_service.kb.text import TEXT_VERSION, diagnosis_text, text_for_log, texts_for_logs
from diag_service.redact import redact
from diag_service.resources import data_home

#: Used when the store cannot calibrate (fewer than 5 known and 5 novel samples). The value is the
#: one calibrated on the seed knowledge base with the default embedder (0.663; see docs/kb.md).
DEFAULT_NOVELTY_THRESHOLD = 0.66
#: Novelty calibration calls at most this share of *known* incidents new. Youden's J is flat over a
#: wide range of thresholds on the seed set (within 0.01 from 0.66 to 0.80 with the default embedder),
#: where the share of known incidents flagged new goes from 0.29 to 0.56; a flag that calls half of
#: the known kinds new is no use to an operator, so the calibration keeps to the low end. Youden,
#: "Index for rating diagnostic tests", Cancer 3(1), 1950; scikit-learn's ROC docs
#: (https://scikit-learn.org/stable/modules/model_evaluation.html).
DEFAULT_MAX_FALSE_NOVEL = 0.3
#: A feedback record at least this similar to a stored record of the same category is merged into it.
DEFAULT_MERGE_THRESHOLD = 0.95
MAX_K = 100

log = logging.getLogger(__name__)


class KBLocked(KBError):
    """Another process holds the writer lock for longer than the timeout."""


def default_home() -> Path:
    """``$DIAG_HOME``, else ``$XDG_DATA_HOME/diag``, else ``~/.local/share/diag``."""
    return data_home()


class KBConfig(BaseModel):
    """Where the store lives and how it behaves. ``home``: the data folder (the store is ``home/kb``)."""

    home: Path = Field(default_factory=default_home)
    novelty_threshold: float | None = Field(
        default=None, ge=-1, le=1, description="Override of the calibrated threshold (cosine similarity)."
    )
    merge_threshold: float = Field(default=DEFAULT_MERGE_THRESHOLD, ge=0, le=1)
    index: ix.IndexParams = Field(default_factory=ix.IndexParams)
    lock_timeout_s: float = Field(default=120, ge=0)
    persist_every: int = Field(default=1000, ge=1, description="IVF: write the index after this many new rows.")

    @property
    def store_dir(self) -> Path:
        return self.home / "kb"


class Calibration(BaseModel):
    """Novelty threshold fitted by leave-one-out over records that carry a ``family``.

    For each such record, its best similarity to the rest of its family is a *known* sample, and
    its best similarity to every other record (its whole family held out) a *novel* sample. The
    threshold maximises Youden's J (true-novel rate minus false-novel rate).
    """

    threshold: float
    auroc: float
    youden_j: float
    known: int
    novel: int


class SearchHit(BaseModel):
    """One retrieved record: cosine ``score`` in [-1, 1], ``count`` of confirmed occurrences."""

    record: IncidentRecord
    score: float
    count: int
    source: str


class SearchResult(BaseModel):
    hits: list[SearchHit]
    is_novel: bool
    threshold: float
    query_text: str


class BuildReport(BaseModel):
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    kept_not_in_source: list[str] = Field(default_factory=list)
    total: int = 0
    index_kind: str = ""
    model: str = ""
    novelty_threshold: float = DEFAULT_NOVELTY_THRESHOLD
    calibration: Calibration | None = None
    warnings: list[str] = Field(default_factory=list)
    seconds: float = 0.0


class AddResult(BaseModel):
    record_id: str
    merged: bool
    count: int
    score: float | None
    verdict: str
    feedback_id: int


class KBInfo(BaseModel):
    path: str
    records: int
    by_source: dict[str, int]
    by_category: dict[str, int]
    feedback: int
    model: str | None
    dim: int | None
    index_kind: str | None
    index_count: int | None
    novelty_threshold: float


def calibrate(
    vectors: np.ndarray, families: list[str | None], max_false_novel: float = DEFAULT_MAX_FALSE_NOVEL
) -> Calibration | None:
    """Fit the novelty threshold on unit ``vectors`` (``(n, dim)``) with their families (``None``: no family).

    Leave-one-out over the records with a family, scored the way a query is scored (best cosine
    similarity to the rest of the store): a record whose family has another member gives a *known*
    sample (its best score against all other records) and a *novel* sample (its best score with its
    whole family removed); a record alone in its family gives a *novel* sample. The threshold
    maximises Youden's J among those that call at most ``max_false_novel`` of the known samples
    new (see :data:`DEFAULT_MAX_FALSE_NOVEL`). Returns ``None`` with fewer than 5 samples of either
    kind. At most 5,000 records are used (the first ones).
    """
    from sklearn.metrics import roc_auc_score

    idx = [i for i, f in enumerate(families) if f][:5000]
    if len(idx) < 10:
        return None
    v = vectors[idx]
    fam = np.array([families[i] for i in idx])
    sims = v @ v.T
    np.fill_diagonal(sims, -np.inf)
    same = fam[:, None] == fam[None, :]
    np.fill_diagonal(same, False)
    has_mate = same.any(axis=1)
    best = sims.max(axis=1)
    outside = np.where(same, -np.inf, sims).max(axis=1)
    known = best[has_mate]
    novel = np.concatenate([outside[has_mate], best[~has_mate]])
    novel = novel[np.isfinite(novel)]
    if len(known) < 5 or len(novel) < 5:
        return None
    scores = np.concatenate([known, novel])
    labels = np.concatenate([np.zeros(len(known)), np.ones(len(novel))])  # 1 = novel
    auroc = float(roc_auc_score(labels, -scores))
    best_t, best_j = float(np.median(scores)), -1.0
    for t in np.unique(scores):
        if np.mean(known < t) > max_false_novel:
            break  # thresholds only grow from here, and so does the share of known incidents called new
        j = float(np.mean(novel < t) - np.mean(known < t))
        if j > best_j:
            best_t, best_j = float(t), j
    # Midway between the chosen score and the next lower one: a query equal to a known sample is known.
    lower = scores[scores < best_t]
    thr = (best_t + float(lower.max())) / 2 if len(lower) else best_t
    return Calibration(threshold=round(thr, 4), auroc=round(auroc, 4), youden_j=round(best_j, 4),
                       known=len(known), novel=len(novel))


class KnowledgeBase:
    """A knowledge-base store opened with one embedder.

    Raises :class:`~diag_service.kb.store.ModelMismatch` when the store was embedded with another
    model or dimension, :class:`~diag_service.kb.store.StoreError` when the SQLite file is unusable.
    Safe to share between threads; several processes may open the same store.
    """

    def __init__(self, config: KBConfig | None = None, embedder: Embedder | None = None, check_model: bool = True) -> None:
        self.config = config or KBConfig()
        self.embedder: Embedder = embedder if embedder is not None else default_embedder()
        self.dir = self.config.store_dir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.index_dir = self.dir / "index"
        self.store = Store(self.dir / "kb.sqlite")
        if check_model:  # off only to re-embed a store with another model: build(reembed=True)
            self.store.check_model(self.embedder.name, self.embedder.dim)
        self._writer = FileLock(str(self.dir / "kb.lock"))
        self._mem = threading.RLock()
        self._loaded: ix.LoadedIndex | None = None
        self.rebuilds = 0  # how many times this instance rebuilt the index (observability, tests)

    # -- locking ------------------------------------------------------------------------------------

    @contextmanager
    def _lock(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the writer lock (re-entrant within a thread). Raises :class:`KBLocked` after ``timeout`` s."""
        t = self.config.lock_timeout_s if timeout is None else timeout
        try:
            self._writer.acquire(timeout=t)
        except Timeout as exc:
            raise KBLocked(f"another writer holds {self.dir / 'kb.lock'} (waited {t:.0f} s); retry later") from exc
        try:
            yield
        finally:
            self._writer.release()

    # -- index management ---------------------------------------------------------------------------

    def _fresh_from_store(self, epoch: int) -> ix.LoadedIndex:
        ids, vecs = self.store.vectors(dim=self.embedder.dim)
        return ix.build_index(ids, vecs, self.embedder.name, epoch, self.config.index)

    def _rebuild(self, epoch: int, persist: bool = True) -> ix.LoadedIndex:
        """Build from SQLite; write it back if the writer lock is free (else keep it in memory)."""
        self.rebuilds += 1
        li = self._fresh_from_store(epoch)
        if persist:
            try:
                self._writer.acquire(timeout=0)
            except Timeout:
                return li
            try:
                if int(self.store.meta().get("epoch", "0")) == epoch:
                    ix.save_index(self.index_dir, li)
            finally:
                self._writer.release()
        return li

    def _index(self) -> ix.LoadedIndex:
        """The current in-memory index, loaded, verified, rebuilt or caught up as needed. Call under ``_mem``.

        Raises :class:`ModelMismatch` if the store now holds vectors of another model (re-embedded
        by another process, or opened with ``check_model=False``).
        """
        epoch, model, dim, max_rowid = self.store.state()
        if model is not None and (model != self.embedder.name or dim != self.embedder.dim):
            self.store.check_model(self.embedder.name, self.embedder.dim)
        # The index in memory stays valid while the vector epoch is unchanged: newer rows are added
        # below from SQLite, so a file rewritten by another writer need not be reloaded.
        if self._loaded is None or self._loaded.epoch != epoch:
            li: ix.LoadedIndex | None = None
            for _attempt in range(2):  # a writer may swap files between manifest and file read: retry once
                try:
                    li, man = ix.load_index(self.index_dir)
                    if man.model != self.embedder.name or man.dim != self.embedder.dim or man.epoch != epoch:
                        li = None  # stale or foreign: rebuild below
                    break
                except ix.IndexCorrupt:
                    li = None
            if li is None:
                li = self._rebuild(epoch)
            self._loaded = li
        li = self._loaded
        if max_rowid > li.max_rowid:
            ids, vecs = self.store.vectors(after_rowid=li.max_rowid, dim=self.embedder.dim)
            if len(ids):
                li.add(ids, vecs)
        return li

    def _maybe_persist(self) -> None:
        """Write the index after new rows (always for the flat index, every ``persist_every`` rows for IVF).

        Switches to the approximate index once the store crosses the threshold. Call holding the writer lock.
        """
        with self._mem:
            li = self._index()
            try:
                man = ix.read_manifest(self.index_dir, missing_ok=True)
            except ix.IndexCorrupt:
                man = None
            on_disk = man.count if man is not None and man.epoch == li.epoch else -1
            if li.kind == "flat" and li.count >= self.config.index.approx_threshold:
                li = self._fresh_from_store(li.epoch)
                self._loaded = li
            elif li.kind == "ivf" and on_disk >= 0 and li.count - on_disk < self.config.persist_every:
                return
            ix.save_index(self.index_dir, li)

    # -- build --------------------------------------------------------------------------------------

    def build(
        self, records: list[IncidentRecord] | None = None, source_dir: str | Path | None = None, reembed: bool = False
    ) -> BuildReport:
        """Insert or update ``records`` (default: :func:`load_records` of ``source_dir``) and rebuild the index.

        ``reembed``: re-embed every stored record with this embedder (required to switch models).
        Raises :class:`~diag_service.kb.records.RecordError` for invalid YAML, :class:`KBLocked`.
        """
        t0 = time.perf_counter()
        recs = records if records is not None else load_records(source_dir)
        report = BuildReport(model=self.embedder.name)
        texts = texts_for_logs(["\n".join(r.evidence) for r in recs])
        for i, r in enumerate(recs):
            if not texts[i]:
                report.warnings.append(f"{r.id}: nothing usable in its evidence; embedding its title")
                texts[i] = r.title
        vecs = self.embedder.encode(texts) if texts else np.zeros((0, self.embedder.dim), dtype=np.float32)
        with self._lock():
            meta = self.store.meta()
            if not reembed and "model" in meta:
                self.store.check_model(self.embedder.name, self.embedder.dim)
            stored = self.store.all_records()
            given = {r.id for r in recs}
            with self.store.connect() as db, self.store.tx(db):
                if reembed and stored:
                    others = [s for s in stored if s.record.id not in given]
                    new = self.embedder.encode([s.text for s in others]) if others else []
                    for s, v in zip(others, new, strict=True):
                        self.store.upsert(db, s.record, s.source, s.text, v)
                    db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='epoch'")
                for r, t, v in zip(recs, texts, vecs, strict=True):
                    res = self.store.upsert(db, IncidentRecord.model_validate(r.model_dump()), "seed", t, v)
                    setattr(report, res, getattr(report, res) + 1)
                self.store.set_meta(db, model=self.embedder.name, dim=str(self.embedder.dim), text_version=TEXT_VERSION)
            report.kept_not_in_source = [s.record.id for s in stored if s.source == "seed" and s.record.id not in given]
            cal = self._calibrate()
            with self.store.connect() as db, self.store.tx(db):
                if cal is not None:
                    self.store.set_meta(db, novelty_threshold=str(cal.threshold), calibration=cal.model_dump_json())
            with self._mem:
                epoch = int(self.store.meta().get("epoch", "0"))
                li = self._fresh_from_store(epoch)
                ix.save_index(self.index_dir, li)
                self._loaded = li
        report.total = self.store.count()
        report.index_kind = li.kind
        report.calibration = cal
        report.novelty_threshold = self.novelty_threshold
        report.seconds = round(time.perf_counter() - t0, 3)
        return report

    def _calibrate(self) -> Calibration | None:
        fam = self.store.families()
        ids, vecs = self.store.vectors(dim=self.embedder.dim)
        pos = {int(r): i for i, r in enumerate(ids)}
        families: list[str | None] = [None] * len(ids)
        for rowid, f, _cat in fam:
            if rowid in pos:
                families[pos[rowid]] = f
        return calibrate(vecs, families)

    @property
    def novelty_threshold(self) -> float:
        """The override in the config, else the store's calibrated value, else :data:`DEFAULT_NOVELTY_THRESHOLD`."""
        if self.config.novelty_threshold is not None:
            return self.config.novelty_threshold
        v = self.store.meta().get("novelty_threshold")
        return float(v) if v is not None else DEFAULT_NOVELTY_THRESHOLD

    # -- search -------------------------------------------------------------------------------------

    def search_vectors(self, queries: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Raw FAISS search: scores and row ids ``(len(queries), k)``; id -1 where fewer than k records."""
        if not 1 <= k <= MAX_K:
            raise ValueError(f"k must be within 1..{MAX_K}, got {k}")
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.embedder.dim:
            raise ValueError(f"queries must be (n, {self.embedder.dim}); got {q.shape}")
        with self._mem:
            li = self._index()
            return li.search(q, k, self.config.index.nprobe)

    def search_text(self, embedded_text: str, k: int = 5) -> SearchResult:
        """Search with an already-prepared text (see :mod:`diag_service.kb.text`); empty text finds nothing."""
        thr = self.novelty_threshold
        if not embedded_text.strip():
            return SearchResult(hits=[], is_novel=True, threshold=thr, query_text="")
        vec = self.embedder.encode([embedded_text])
        scores, rowids = self.search_vectors(vec, k)
        found = [(int(r), float(s)) for r, s in zip(rowids[0], scores[0], strict=True) if r >= 0]
        recs = self.store.get_by_rowids([r for r, _ in found])
        hits = [SearchHit(record=recs[r].record, score=round(s, 4), count=recs[r].count, source=recs[r].source)
                for r, s in found if r in recs]
        is_novel = not hits or hits[0].score < thr
        return SearchResult(hits=hits, is_novel=is_novel, threshold=thr, query_text=embedded_text)

    def search(self, text: str, k: int = 5) -> SearchResult:
        """Search with free log text (lines as a framework prints them); it is analysed and masked first.

        Raises :class:`~diag_service.kb.text.TextError` on empty text, ``ValueError`` on a bad ``k``.
        """
        return self.search_text(text_for_log(text), k)

    def search_diagnosis(self, diagnosis: Diagnosis, k: int = 5) -> SearchResult:
        """Search with the masked root-cause events of ``diagnosis`` (:func:`~diag_service.kb.text.diagnosis_text`)."""
        return self.search_text(diagnosis_text(diagnosis), k)

    def similar_incidents(self, diagnosis: Diagnosis, k: int = 5) -> tuple[list[SimilarIncident], bool]:
        """Top-``k`` similar incidents of ``diagnosis`` and whether it looks novel."""
        res = self.search_diagnosis(diagnosis, k)
        return [to_similar(h) for h in res.hits], res.is_novel

    def get(self, record_id: str) -> StoredRecord | None:
        return self.store.get(record_id)

    # -- feedback -----------------------------------------------------------------------------------

    def add_feedback(
        self,
        diagnosis: Diagnosis,
        *,
        category: Category | None = None,
        root_cause: str | None = None,
        action: str | None = None,
        level: RecoveryLevel | None = None,
        title: str | None = None,
        failure_mode: FailureMode | None = None,
    ) -> AddResult:
        """Record an operator's confirmation (``category`` absent or equal) or correction of ``diagnosis``.

        The diagnosis becomes a record, unless a stored record of the same category is at least
        ``merge_threshold`` similar: then that record's count is incremented (a near-duplicate).
        Either way a feedback row keeps what the operator said. Raises ``ValueError`` when the
        diagnosis has no events to embed or ``action`` is missing and the diagnosis has no recovery
        plan, :class:`KBLocked` when the writer lock is busy. The operator's text (``root_cause``,
        ``action``, ``title``) is redacted before it is stored.
        """
        root_cause, action, title = (redact(x) if x else x for x in (root_cause, action, title))
        text = diagnosis_text(diagnosis)
        if not text:
            raise ValueError("the diagnosis has no events to learn from (diagnosis.events is empty)")
        cat = category or diagnosis.category
        verdict = "confirmed" if cat == diagnosis.category else "corrected"
        if action is None and diagnosis.recovery is not None:
            action = diagnosis.recovery.action
            level = level or diagnosis.recovery.level
        if not action:
            raise ValueError("an action is required (what fixed it): pass action=… (CLI: --action)")
        rc = root_cause or diagnosis.root_cause.summary
        lvl = level or RecoveryLevel.L2
        vec = self.embedder.encode([text])
        with self._lock():
            scores, rowids = self.search_vectors(vec, 10)
            cands = [(int(r), float(s)) for r, s in zip(rowids[0], scores[0], strict=True) if r >= 0]
            recs = self.store.get_by_rowids([r for r, _ in cands])
            dup = next(((recs[r], s) for r, s in cands if r in recs and s >= self.config.merge_threshold
                        and recs[r].record.category == cat), None)
            with self.store.connect() as db, self.store.tx(db):
                if dup is not None:
                    rid, merged, score = dup[0].record.id, True, dup[1]
                    count = self.store.bump_count(db, rid)
                else:
                    digest = hashlib.sha256(f"{cat.value}\n{text}\n{rc}".encode()).hexdigest()[:12]
                    rid, merged, score, count = f"{FEEDBACK_PREFIX}{digest}", False, (cands[0][1] if cands else None), 1
                    evidence = [e.text[:2000] for e in diagnosis.root_cause.evidence if len(e.text) >= 3][:20] or [text[:2000]]
                    rec = IncidentRecord(
                        id=rid, title=(title or _title(diagnosis, cat))[:200],
                        failure_mode=failure_mode or diagnosis.failure_mode, category=cat, evidence=evidence,
                        root_cause=rc[:4000] if len(rc) >= 10 else f"{rc} (operator)",
                        recovery=Recovery(level=lvl, action=action[:2000]), tags=["feedback"],
                    )
                    if self.store.upsert(db, rec, "feedback", text, vec[0]) != "added":
                        count = self.store.bump_count(db, rid)  # the same feedback given twice
                        merged = True
                fid = self.store.add_feedback(
                    db, job_id=diagnosis.job_id, verdict=verdict, diagnosed_category=diagnosis.category, category=cat,
                    record_id=rid, merged=merged, score=score, root_cause=rc, action=action, level=lvl.value,
                    diagnosis_json=diagnosis.model_dump_json(),
                )
                self.store.set_meta(db, model=self.embedder.name, dim=str(self.embedder.dim), text_version=TEXT_VERSION)
            self._maybe_persist()
        return AddResult(record_id=rid, merged=merged, count=count, score=None if score is None else round(score, 4),
                         verdict=verdict, feedback_id=fid)

    # -- info ---------------------------------------------------------------------------------------

    def info(self) -> KBInfo:
        meta = self.store.meta()
        with self.store.connect() as db:
            by_source = dict(db.execute("SELECT source, COUNT(*) FROM records GROUP BY source").fetchall())
            by_cat = dict(db.execute("SELECT category, COUNT(*) FROM records GROUP BY category").fetchall())
            fb = db.execute("SELECT COUNT(*) FROM feedback").fetchone()[0]
        try:
            man = ix.read_manifest(self.index_dir, missing_ok=True)
        except ix.IndexCorrupt:
            man = None
        return KBInfo(
            path=str(self.dir), records=sum(by_source.values()), by_source=by_source, by_category=by_cat, feedback=fb,
            model=meta.get("model"), dim=int(meta["dim"]) if "dim" in meta else None,
            index_kind=man.kind if man else None, index_count=man.count if man else None,
            novelty_threshold=self.novelty_threshold,
        )


def _title(d: Diagnosis, cat: Category) -> str:
    root = next((h for h in d.signature_hits if h.category == cat), None) or (d.signature_hits[0] if d.signature_hits else None)
    return f"{root.name} ({d.job_id})" if root else f"{cat.value} incident ({d.job_id})"


def to_similar(h: SearchHit) -> SimilarIncident:
    """The domain view of a hit."""
    r = h.record
    return SimilarIncident(
        incident_id=r.id, title=r.title, score=h.score, category=r.category, root_cause=r.root_cause,
        action=r.recovery.action, recovery_level=r.recovery.level.value, count=int(getattr(h, "count", 1) or 1),
    )


def vote_category(incidents: list[SimilarIncident], min_score: float) -> tuple[Category | None, float]:
    """Score-weighted category vote among ``incidents`` scoring at least ``min_score``.

    Returns the winning category and its share of the weight (0-1), or ``(None, 0.0)`` when no
    incident qualifies. Ties go to the category of the best-scoring incident.
    """
    weights: dict[Category, float] = {}
    for inc in incidents:
        if inc.score >= min_score:
            weights[inc.category] = weights.get(inc.category, 0.0) + max(inc.score, 0.0)
    total = sum(weights.values())
    if not weights or total <= 0:
        return None, 0.0
    order = {inc.category: i for i, inc in reversed(list(enumerate(incidents)))}
    best = max(weights, key=lambda c: (weights[c], -order.get(c, 0)))
    return best, round(weights[best] / total, 4)


# -- the process-wide default knowledge base (what the pipeline calls) ------------------------------

_open: dict[tuple[str, str], KnowledgeBase] = {}
_open_lock = threading.Lock()


def open_kb(home: str | Path | None = None, embedder: Embedder | None = None) -> KnowledgeBase:
    """The knowledge base at ``home`` (default :func:`default_home`) with ``embedder`` (default
    :func:`~diag_service.kb.embed.default_embedder`), built from the seed incidents on first use if the
    store is empty. Cached per process and per (home, embedder name): the model loads once (~8 s).

    Seed records embedded from an older :data:`~diag_service.kb.text.TEXT_VERSION` are rebuilt from the
    YAML (feedback records are kept as they are). A store embedded with another model is re-embedded
    (``build(reembed=True)``, a warning is logged) when it holds seed records only and no feedback,
    since those are rebuilt from the YAML and nothing is lost; a store with operator feedback raises
    :class:`~diag_service.kb.store.ModelMismatch` (re-embed it deliberately with ``diag kb build --reembed``).
    """
    root = Path(home).expanduser() if home is not None else default_home()
    with _open_lock:
        if embedder is None:
            # one default embedder per process, whatever the home (the model is the expensive part)
            embedder = next((kb.embedder for (h, n), kb in _open.items() if n == "default"), None) or default_embedder()
            name = "default"
        else:
            name = embedder.name
        key = (str(root), name)
        kb = _open.get(key)
        if kb is None:
            cfg = KBConfig(home=root)
            try:
                kb = KnowledgeBase(cfg, embedder)
            except ModelMismatch as exc:
                kb = KnowledgeBase(cfg, embedder, check_model=False)
                info = kb.info()
                if info.feedback or set(info.by_source) - {"seed"}:
                    raise
                log.warning("%s Seed records only: re-embedding them now.", exc)
                kb.build(reembed=True)
            if kb.store.count() == 0 or kb.store.meta().get("text_version") != TEXT_VERSION:
                kb.build()  # empty, or seeds embedded from an older text shape: re-embed them from the YAML
            _open[key] = kb
        return kb


def default_kb() -> KnowledgeBase:
    """:func:`open_kb` at :func:`default_home` (``$DIAG_HOME/kb``) with the default embedder."""
    return open_kb()


def similar_incidents(diagnosis: Diagnosis, k: int = 5) -> tuple[list[SimilarIncident], bool]:
    """The ``k`` stored incidents most similar to ``diagnosis``, best first, and whether it looks novel.

    What is compared: the deduplicated, masked root-cause events of the diagnosis and the names of
    their signatures (:func:`~diag_service.kb.text.diagnosis_text`), embedded with all-MiniLM-L6-v2
    plus lexical hashing (:func:`~diag_service.kb.embed.default_embedder`), against every record of
    the default store (:func:`default_kb`). ``score`` is the blended cosine similarity in [-1, 1]
    (0.7 · MiniLM cosine + 0.3 · lexical cosine). ``is_novel`` is ``True`` when the best score is below the calibrated novelty
    threshold, or when the diagnosis has no events (nothing to compare: ``([], True)``).

    Raises :class:`~diag_service.kb.records.KBError` subclasses when the store or model is unusable
    (model mismatch, unreadable store, missing model package) and ``ValueError`` when ``k`` is not
    within 1..100. First call in a process: ~8 s to load the model (+ a build of the seed store if
    it is empty); later calls: tens of milliseconds.
    """
    return DefaultRetriever().similar_incidents(diagnosis, k)


class DefaultRetriever:
    """The :class:`~diag_service.contracts.Retriever` of this package: the knowledge base at ``home``
    (default :func:`default_home`, resolved when the retriever is built, so a later change of
    ``$DIAG_HOME`` does not move it) with ``embedder`` (default: MiniLM + lexical), opened through
    :func:`open_kb` on the first diagnosis that has events to compare (never for one without).
    ``similar_incidents`` raises as :func:`similar_incidents`."""

    def __init__(self, home: str | Path | None = None, embedder: Embedder | None = None) -> None:
        self.home = Path(home).expanduser() if home is not None else default_home()
        self.embedder = embedder

    def similar_incidents(self, diagnosis: Diagnosis, k: int = 5) -> tuple[list[SimilarIncident], bool]:
        if not 1 <= k <= MAX_K:
            raise ValueError(f"k must be within 1..{MAX_K}, got {k}")
        if not diagnosis_text(diagnosis):
            return [], True
        return open_kb(self.home, self.embedder).similar_incidents(diagnosis, k)
