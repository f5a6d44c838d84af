"""Incident knowledge base: records, store, index files, locking, feedback, CLI.

These tests use the deterministic :class:`HashingEmbedder` (the real model is exercised in
``tests/test_kb_model.py``). Stores live under ``tmp_path``; nothing touches the network.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
from pathlib import Path

import numpy as np
import pytest
from filelock import FileLock
from typer.testing import CliRunner

from diag_service.domain import Category, Diagnosis, EventRole, RecoveryLevel
from diag_service.kb import (
    HashingEmbedder,
    IndexParams,
    KBConfig,
    KBLocked,
    KnowledgeBase,
    ModelMismatch,
    RecordError,
    analyze_text,
    calibrate,
    diagnosis_text,
    load_records,
    vote_category,
)
from diag_service.kb import index as ix
from diag_service.kb.cli import app as kb_app
from diag_service.kb.records import default_incidents_dir

SEED = load_records()
FAMILIES = {"ib-retry-exceeded", "gpu-uncorrectable-ecc", "cuda-oom", "disk-full", "master-port-in-use", "dataloader-worker-oom",
            "collective-timeout", "shape-mismatch"}
SMALL = [r for r in SEED if r.family in FAMILIES]

IB_LOG = ("trn-9:1:2 [1] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.9.9.9<4242> with status=12 "
          "opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.9.9.8 remoteGids::ffff:10.9.9.9\n")


def _kb(home: Path, dim: int = 256, **cfg) -> KnowledgeBase:
    return KnowledgeBase(KBConfig(home=home, **cfg), HashingEmbedder(dim))


@pytest.fixture
def built(tmp_path: Path) -> Path:
    _kb(tmp_path).build(records=SMALL)
    return tmp_path


def _diag(text: str) -> Diagnosis:
    return analyze_text(text)


# -- seed records and YAML validation --------------------------------------------------------------


def test_seed_kb_covers_every_category_with_usable_evidence() -> None:
    assert len(SEED) >= 80
    assert {r.category for r in SEED} == set(Category)
    assert {r.recovery.level for r in SEED} == set(RecoveryLevel)
    assert all(r.references and r.family for r in SEED)
    from diag_service.kb.text import texts_for_logs

    texts = texts_for_logs(["\n".join(r.evidence) for r in SEED])
    empty = [r.id for r, t in zip(SEED, texts, strict=True) if not t]
    assert not empty, f"evidence gives nothing to embed: {empty}"
    # The evidence is what frameworks print: most records must produce a catalogued (signature) event.
    with_sig = sum(1 for t in texts if ". " in t.split("|")[0])
    assert with_sig / len(SEED) >= 0.7


def _write(d: Path, name: str, text: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(text)
    return p


GOOD = """version: 1
incidents:
  - id: sample-one
    title: A sample incident
    failure_mode: fail_stop
    category: network
    evidence: ['NCCL WARN NET/IB : Got completion from peer 10.0.0.1<1> with error 12']
    root_cause: The link between two nodes dropped packets.
    recovery: {level: L3, action: Cordon the node and restart from checkpoint.}
    references: [https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html]
"""


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (lambda s: s.replace("level: L3", "level: L5"), "recovery.level"),
        (lambda s: s.replace("    category: network\n", ""), "category"),
        (lambda s: s.replace("category: network", "category: networking"), "category"),
        (lambda s: s.replace("    title: A sample incident\n", "    title: A sample incident\n    colour: red\n"), "colour"),
        (lambda s: s.replace("[https://docs", "[docs"), "reference must be an http(s) URL"),
        (lambda s: s.replace("id: sample-one", "id: fb-sample"), "reserved for operator feedback"),
        (lambda s: s.replace("evidence: [", "evidence: []\n    x: ["), "evidence"),
        (lambda s: s.replace("version: 1", "version: 2"), "version"),
        (lambda s: s + "  - [unclosed\n", "invalid YAML"),
    ],
)
def test_yaml_errors_name_the_file_and_field(tmp_path: Path, mutation, expected: str) -> None:
    _write(tmp_path, "bad.yaml", mutation(GOOD))
    with pytest.raises(RecordError) as ei:
        load_records(tmp_path)
    msg = str(ei.value)
    assert "bad.yaml" in msg and expected in msg, msg


def test_yaml_duplicate_id_names_both_files(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", GOOD)
    _write(tmp_path, "b.yaml", GOOD)
    with pytest.raises(RecordError, match=r"b\.yaml.*'sample-one'.*a\.yaml"):
        load_records(tmp_path)


def test_yaml_empty_folder_and_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="no incident files"):
        load_records(tmp_path)
    _write(tmp_path, "list.yaml", "- a\n- b\n")
    with pytest.raises(RecordError, match="list.yaml.*expected a mapping"):
        load_records(tmp_path)


def test_incident_names_in_errors_include_index_and_id(tmp_path: Path) -> None:
    text = GOOD + GOOD.split("incidents:\n")[1].replace("sample-one", "sample-two").replace("L3", "L9")
    _write(tmp_path, "x.yaml", text)
    expected = r"x\.yaml:(\d+): incidents\.1\.recovery\.level: .*\(incident #2, id 'sample-two'\)"
    with pytest.raises(RecordError, match=expected) as ei:
        load_records(tmp_path)
    line = int(str(ei.value).split("x.yaml:")[1].split(":")[0])
    assert "L9" in text.splitlines()[line - 1]  # the message points at the offending line


# -- what is embedded ------------------------------------------------------------------------------


def test_diagnosis_text_is_masked_root_events_and_signature_names() -> None:
    d = _diag("gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
              "[rank3]:[E ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: "
              "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600321 milliseconds "
              "before timing out.\n")
    text = diagnosis_text(d)
    assert "code 79" in text and "fallen off the bus" in text
    assert "Watchdog" not in text  # a symptom, not a root event
    for raw in ("0000:3b:00", "1234", "gpu-node-7", "<NUM>", "<PCI>"):
        assert raw not in text
    assert any(e.role is EventRole.ROOT for e in d.events)


def test_diagnosis_text_keeps_the_most_suspicious_supporting_line() -> None:
    """NCCL's generic "unhandled cuda error" is the root event; the warning before it says which call."""
    d = _diag("trn-3:1201:1201 [0] enqueue.cc:1421 NCCL WARN Cuda failure 'operation not supported'\n"
              "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
              "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.6\n")
    text = diagnosis_text(d)
    assert "unhandled cuda error" in text and "operation not supported" in text
    assert text.index("unhandled cuda error") < text.index("operation not supported")  # root events first
    assert "trn-3" not in text and "1201" not in text


def test_diagnosis_text_names_the_specific_cause_before_the_generic_error() -> None:
    """NCCL's "no socket interface found" is a cause of its own: it heads the text, not "internal error"."""
    d = _diag("trn-3:1201:1201 [0] bootstrap.cc:67 NCCL WARN Bootstrap : no socket interface found\n"
              "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
              "internal error - please report this issue to the NCCL developers, NCCL version 2.18.6\n")
    assert d.category.value == "config"
    assert diagnosis_text(d).startswith("NCCL found no usable network interface")


def test_diagnosis_text_leaves_out_the_other_ranks_cascade() -> None:
    """A shape mismatch on one rank and gloo "closed by peer" on the others: only the cause is embedded,
    so the similar incidents are shape errors, not network ones (the bundled real example)."""
    from diag_service.pipeline import DiagnoseRequest, diagnose

    example = Path(__file__).resolve().parents[1] / "examples" / "torchrun_shape_mismatch_2x2"
    d = diagnose(DiagnoseRequest(path=str(example), recovery=False))
    assert any(e.role is EventRole.SYMPTOM and "closed by peer" in e.template.lower() for e in d.events)
    text = diagnosis_text(d)
    assert "cannot be multiplied" in text and "peer" not in text.lower()


def test_diagnosis_text_empty_without_events() -> None:
    d = _diag("all good, step 10 loss 1.23\n")
    assert diagnosis_text(d) == ""


# -- store, persistence, index ---------------------------------------------------------------------


def test_build_search_and_persistence_across_restarts(built: Path) -> None:
    kb = _kb(built)
    res = kb.search(IB_LOG)
    assert res.hits[0].record.family == "ib-retry-exceeded" and not res.is_novel
    assert res.hits[0].score > res.hits[-1].score
    added = kb.add_feedback(_diag(IB_LOG), action="Cordon trn-9 and restart", level=RecoveryLevel.L3)
    del kb
    kb2 = _kb(built)  # a new process would see the same
    info = kb2.info()
    assert info.records == len(SMALL) + (0 if added.merged else 1)
    assert info.feedback == 1 and info.model == "hashing-v1-256" and info.index_kind == "flat"
    assert kb2.search(IB_LOG).hits[0].record.family == "ib-retry-exceeded"
    assert kb2.rebuilds == 0  # the stored index was used as is


def test_rebuild_keeps_records_not_in_yaml_and_counts(built: Path) -> None:
    kb = _kb(built)
    kb.add_feedback(_diag("RuntimeError: CUDA error: an illegal memory access was encountered\n"), category=Category.USER_CODE,
                    action="Fix the kernel index arithmetic", level=RecoveryLevel.L4)
    rep = kb.build(records=SMALL[:3])  # most seed records left the YAML
    assert rep.unchanged == 3 and len(rep.kept_not_in_source) == len(SMALL) - 3
    assert kb.info().records == len(SMALL) + 1  # nothing was deleted, feedback kept


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete_file", "delete_manifest", "garbage_manifest"])
def test_corrupt_or_missing_index_is_rebuilt(built: Path, damage: str) -> None:
    idx = built / "kb" / "index"
    man = json.loads((idx / "index.json").read_text())
    f = idx / man["file"]
    if damage == "flip":
        b = bytearray(f.read_bytes())
        b[len(b) // 2] ^= 0xFF
        f.write_bytes(bytes(b))
    elif damage == "truncate":
        f.write_bytes(f.read_bytes()[:100])
    elif damage == "delete_file":
        f.unlink()
    elif damage == "delete_manifest":
        (idx / "index.json").unlink()
    else:
        (idx / "index.json").write_text("{not json")
    kb = _kb(built)
    res = kb.search(IB_LOG)
    assert res.hits[0].record.family == "ib-retry-exceeded"
    assert kb.rebuilds == 1
    li, _ = ix.load_index(idx)  # the rebuilt index was written back and verifies
    assert li.count == len(SMALL)
    assert _kb(built).search(IB_LOG).hits  # and a fresh instance loads it without rebuilding


def test_checksum_detects_silent_corruption(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    v = rng.standard_normal((50, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ix.save_index(tmp_path, ix.build_index(np.arange(1, 51), v, "m", 0))
    man = ix.read_manifest(tmp_path)
    p = tmp_path / man.file
    data = bytearray(p.read_bytes())
    data[-8] ^= 0x01  # one bit in a stored vector: FAISS itself would read it happily
    p.write_bytes(bytes(data))
    with pytest.raises(ix.IndexCorrupt, match="checksum"):
        ix.load_index(tmp_path)


def test_failed_write_leaves_previous_index_intact(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    idx = built / "kb" / "index"
    before = (idx / "index.json").read_text()

    def boom(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(ix._faiss(), "write_index", boom)
    kb = _kb(built)
    with pytest.raises(OSError, match="disk full"):
        kb.build(records=SMALL)
    assert (idx / "index.json").read_text() == before
    assert not list(idx.glob(".*.tmp"))
    monkeypatch.undo()
    assert ix.load_index(idx)[0].count == len(SMALL)


def test_model_mismatch_is_refused_and_reembed_switches(built: Path) -> None:
    with pytest.raises(ModelMismatch, match=r"hashing-v1-256.*hashing-v1-64.*--reembed"):
        _kb(built, dim=64)
    kb64 = KnowledgeBase(KBConfig(home=built), HashingEmbedder(64), check_model=False)
    with pytest.raises(ModelMismatch):
        kb64.build(records=SMALL)  # without reembed
    kb64.build(records=SMALL[:2], reembed=True)
    assert kb64.info().dim == 64 and kb64.info().records == len(SMALL)
    assert kb64.search(IB_LOG).hits[0].record.family == "ib-retry-exceeded"
    with pytest.raises(ModelMismatch):
        _kb(built, dim=256)


def test_ivf_above_threshold_finds_what_flat_finds(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    centers = rng.standard_normal((40, 32)).astype(np.float32)
    v = centers[rng.integers(0, 40, 4000)] + 0.3 * rng.standard_normal((4000, 32)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ids = np.arange(1, 4001)
    approx = ix.build_index(ids, v, "m", 0, IndexParams(approx_threshold=1000, nprobe=8))
    exact = ix.build_index(ids, v, "m", 0)
    assert approx.kind == "ivf" and exact.kind == "flat"
    q = v[:200] + 0.05 * rng.standard_normal((200, 32)).astype(np.float32)
    _, ia = approx.search(q, 10, nprobe=8)
    _, ie = exact.search(q, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ia, ie, strict=True)])
    assert recall >= 0.9
    ix.save_index(tmp_path, approx)
    li, man = ix.load_index(tmp_path)
    assert man.kind == "ivf" and li.count == 4000


def test_store_switches_to_ivf_when_it_grows(built: Path) -> None:
    kb = _kb(built, index=IndexParams(approx_threshold=len(SMALL) + 1, train_per_list=39))
    d = _diag("OSError: [Errno 30] Read-only file system: '/mnt/x'\n")
    kb.add_feedback(d, action="Remount the volume", level=RecoveryLevel.L3)
    assert kb.info().index_kind == "ivf"
    assert kb.search(IB_LOG).hits[0].record.family == "ib-retry-exceeded"


# -- feedback ----------------------------------------------------------------------------------------


def test_feedback_merges_near_duplicates_and_keeps_corrections(built: Path) -> None:
    kb = _kb(built)
    d = _diag("RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    a = kb.add_feedback(d, category=Category.CONFIG, action="Rebuild for sm_90", level=RecoveryLevel.L4)
    b = kb.add_feedback(d, category=Category.CONFIG, action="Rebuild for sm_90", level=RecoveryLevel.L4)
    assert not a.merged and b.merged and b.record_id == a.record_id and b.count == 2
    c = kb.add_feedback(d, category=Category.FRAMEWORK, action="Upgrade torch", level=RecoveryLevel.L4)
    assert c.record_id != a.record_id and not c.merged and c.verdict == "corrected"
    rows = kb.store.feedback_rows()
    assert [r["verdict"] for r in rows] == ["confirmed", "confirmed", "corrected"]  # the diagnosis said config
    assert kb.get(a.record_id).count == 2
    res = kb.search("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    assert res.hits[0].record.id in {a.record_id, c.record_id} and res.hits[0].score > 0.99


def test_feedback_needs_an_action_and_events(built: Path) -> None:
    kb = _kb(built)
    with pytest.raises(ValueError, match="action is required"):
        kb.add_feedback(_diag(IB_LOG))
    with pytest.raises(ValueError, match="no events"):
        kb.add_feedback(_diag("nothing to see\n"), action="none")


def test_writer_lock_timeout(built: Path) -> None:
    kb = _kb(built, lock_timeout_s=0.2)
    other = FileLock(str(built / "kb" / "kb.lock"))
    other.acquire()
    try:
        with pytest.raises(KBLocked, match="another writer"):
            kb.add_feedback(_diag(IB_LOG), action="x action", level=RecoveryLevel.L3)
        assert kb.search(IB_LOG).hits  # readers take no lock
    finally:
        other.release()


# -- concurrency ---------------------------------------------------------------------------------------


def _word(i: int) -> str:
    """A distinct digit-free word per ``i`` (digits are masked before embedding, so they cannot tell records apart)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    i += 1000
    while i:
        i, r = divmod(i, 26)
        out += letters[r]
    return "mk" + out


def _proc_adds(home: str, start: int, n: int, q) -> None:  # runs in a spawned process
    kb = KnowledgeBase(KBConfig(home=Path(home)), HashingEmbedder(256))
    ids = []
    for i in range(start, start + n):
        d = analyze_text(f"ValueError: proc marker {_word(i)} {_word(i + 3)}\n")
        ids.append(kb.add_feedback(d, category=Category.USER_CODE, action=f"fix marker {i}", level=RecoveryLevel.L4).record_id)
    q.put(ids)


def test_concurrent_add_and_search(built: Path) -> None:
    errors: list[BaseException] = []
    added: list[str] = []
    stop = threading.Event()
    n_seed = _kb(built).info().records

    def writer(start: int) -> None:
        try:
            kb = _kb(built)
            for i in range(start, start + 8):
                d = analyze_text(f"KeyError: 'thread marker {_word(i)} {_word(i + 7)}'\n")
                added.append(kb.add_feedback(d, category=Category.DATA, action=f"fix {i}", level=RecoveryLevel.L4).record_id)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    def reader() -> None:
        try:
            kb = _kb(built)
            while not stop.is_set():
                res = kb.search(IB_LOG, k=5)
                assert res.hits and res.hits[0].record.family == "ib-retry-exceeded"
                assert all(h.record.id for h in res.hits)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_proc_adds, args=(str(built), 1000, 6, q))
    proc.start()
    threads = [threading.Thread(target=writer, args=(s,)) for s in (0, 100)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads[:2]:
        t.join(120)
    proc_ids = q.get(timeout=120)
    proc.join(60)
    stop.set()
    for t in threads[2:]:
        t.join(60)
    assert not errors, errors
    assert proc.exitcode == 0
    kb = _kb(built)
    assert kb.info().records == n_seed + 16 + 6
    for rid in added + proc_ids:
        assert kb.get(rid) is not None
    # every committed record is searchable, whatever the index on disk holds
    found = kb.search(f"ValueError: proc marker {_word(1003)} {_word(1006)}", k=1).hits[0].record
    assert found.id == proc_ids[3]
    li, _ = ix.load_index(built / "kb" / "index")
    assert li.count == kb.info().records


# -- calibration and votes -------------------------------------------------------------------------------


def test_calibration_separates_known_from_novel() -> None:
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((12, 24))
    fams = [f"f{i % 12}" for i in range(48)]
    v = np.stack([centers[i % 12] + 0.2 * rng.standard_normal(24) for i in range(48)]).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    cal = calibrate(v, fams)
    assert cal is not None and cal.auroc > 0.95 and 0 < cal.threshold < 1
    assert calibrate(v[:5], fams[:5]) is None


def test_calibration_caps_the_share_of_known_incidents_called_new() -> None:
    rng = np.random.default_rng(5)
    centers = rng.standard_normal((10, 16))
    fams = [f"f{i % 10}" for i in range(40)]
    v = np.stack([centers[i % 10] + 0.9 * rng.standard_normal(16) for i in range(40)]).astype(np.float32)  # overlapping kinds
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    sims = v @ v.T
    np.fill_diagonal(sims, -np.inf)
    known = sims.max(axis=1)  # every record has family mates: its best score is a known sample
    free = calibrate(v, fams, max_false_novel=1.0)
    for cap in (0.0, 0.1, 0.3):
        cal = calibrate(v, fams, max_false_novel=cap)
        assert cal is not None and free is not None and cal.threshold <= free.threshold
        assert np.mean(known < cal.threshold) <= cap + 1e-9


def test_vote_category_weights_scores() -> None:
    from diag_service.domain import SimilarIncident

    def inc(c: Category, s: float) -> SimilarIncident:
        return SimilarIncident(incident_id="x", title="t", score=s, category=c, root_cause="r", action="a")

    incs = [inc(Category.NETWORK, 0.9), inc(Category.GPU_HARDWARE, 0.8), inc(Category.GPU_HARDWARE, 0.7)]
    cat, share = vote_category(incs, 0.5)
    assert cat is Category.GPU_HARDWARE and share == pytest.approx(1.5 / 2.4, abs=1e-3)
    assert vote_category([inc(Category.NETWORK, 0.3)], 0.5) == (None, 0.0)


# -- CLI -------------------------------------------------------------------------------------------------


def test_cli_build_search_add_info(tmp_path: Path) -> None:
    r = CliRunner()
    src = tmp_path / "src"
    for f in default_incidents_dir().glob("network.yaml"):
        _write(src, f.name, f.read_text())
    home = ["--home", str(tmp_path / "h"), "--embedder", "hashing"]
    res = r.invoke(kb_app, ["build", "--source", str(src), *home])
    assert res.exit_code == 0, res.output
    assert "records in" in res.output
    res = r.invoke(kb_app, ["search", IB_LOG, "--json", "-k", "3", *home])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert len(out["hits"]) == 3 and out["hits"][0]["record"]["category"] == "network"
    diag_file = tmp_path / "d.json"
    diag_file.write_text(_diag(IB_LOG).model_dump_json())
    res = r.invoke(kb_app, ["add", "--from-diagnosis", str(diag_file), *home])
    assert res.exit_code == 0 and "dry run" in res.output
    res = r.invoke(kb_app, ["add", "--from-diagnosis", str(diag_file), "--confirm", "--category", "network", "--root-cause",
                            "Flapping cable on trn-9 port 1", "--action", "Replace the cable", "--level", "L3", *home])
    assert res.exit_code == 0, res.output
    res = r.invoke(kb_app, ["info", *home])
    assert json.loads(res.output)["feedback"] == 1


def test_cli_bad_inputs_exit_with_clear_errors(tmp_path: Path) -> None:
    r = CliRunner()
    home = ["--home", str(tmp_path / "h"), "--embedder", "hashing"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"category": "network"}')
    res = r.invoke(kb_app, ["add", "--from-diagnosis", str(bad), "--confirm", "--action", "x", *home])
    assert res.exit_code == 2 and "not a diagnosis JSON" in res.output
    res = r.invoke(kb_app, ["add", "--from-diagnosis", str(tmp_path / "missing.json"), *home])
    assert res.exit_code == 2 and "cannot read" in res.output
    src = _write(tmp_path / "src", "x.yaml", GOOD.replace("L3", "L7")).parent
    res = r.invoke(kb_app, ["build", "--source", str(src), *home])
    assert res.exit_code == 3 and "x.yaml" in res.output
    res = r.invoke(kb_app, ["search", "   ", *home])
    assert res.exit_code == 2 and "empty text" in res.output
    res = r.invoke(kb_app, ["search", "x", "-k", "0", *home])
    assert res.exit_code == 2 and "k must be" in res.output
    r.invoke(kb_app, ["build", "--source", str(_write(tmp_path / "ok", "x.yaml", GOOD).parent), *home])
    res = r.invoke(kb_app, ["search", "x", "--home", str(tmp_path / "h"), "--embedder", "minilm"])
    assert res.exit_code == 3 and "configuration error" in res.output and "--reembed" in res.output


def test_similar_incidents_builds_default_store_on_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from diag_service.kb import kb as kb_module

    monkeypatch.setenv("DIAG_HOME", str(tmp_path))
    monkeypatch.setattr(kb_module, "default_embedder", HashingEmbedder)  # the real model: tests/test_kb_model.py
    monkeypatch.setattr(kb_module, "_open", {})
    incidents, novel = kb_module.similar_incidents(_diag(IB_LOG), k=3)
    assert len(incidents) == 3 and incidents[0].category is Category.NETWORK and not novel
    assert (tmp_path / "kb" / "kb.sqlite").is_file() and kb_module.default_kb().info().records == len(SEED)
    assert kb_module.similar_incidents(_diag("step 3 loss 1.0\n")) == ([], True)
    unrelated, novel = kb_module.similar_incidents(_diag("ERROR: the espresso machine reports descaling overdue\n"))
    assert novel and unrelated[0].score < incidents[0].score
    with pytest.raises(ValueError, match="k must be"):
        kb_module.similar_incidents(_diag(IB_LOG), k=0)


def test_default_store_of_another_model_is_reembedded_only_when_it_holds_seed_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from diag_service.kb import kb as kb_module

    monkeypatch.setenv("DIAG_HOME", str(tmp_path))
    monkeypatch.setattr(kb_module, "_open", {})
    monkeypatch.setattr(kb_module, "default_embedder", lambda: HashingEmbedder(64))
    _kb(tmp_path, dim=256).build(records=SMALL)  # a store from the previous default embedder
    kb = kb_module.default_kb()
    info = kb.info()
    assert info.model == "hashing-v1-64" and info.dim == 64 and info.records == len(SEED)  # re-embedded from the YAML
    assert kb.search(IB_LOG, k=1).hits[0].record.category is Category.NETWORK

    other = tmp_path / "with-feedback"
    monkeypatch.setenv("DIAG_HOME", str(other))
    old = _kb(other, dim=256)
    old.build(records=SMALL)
    old.add_feedback(_diag(IB_LOG), category=Category.NETWORK, action="Replace the cable")
    with pytest.raises(ModelMismatch, match="--reembed"):
        kb_module.default_kb()
    assert _kb(other, dim=256).info().feedback == 1  # untouched

