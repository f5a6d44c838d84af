"""`diag label`: rows from real logs and bad bundles, manifests, resume, crash windows, clusters, KB hook.

The archives are built in tmp_path from the real logs of ../shared/data/incidents_dev (one job
folder per log), the bundled torchrun example, and bad bundles (empty file, empty folder, binary
file, truncated tar). Kill-and-resume with a real SIGKILL is in test_label_resume.py, the Ray
engine in test_label_ray.py; both import the helpers below.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from rich.console import Console
from typer.testing import CliRunner

from diag_service.domain import Category, Diagnosis, Narrative, SimilarIncident
from diag_service.label import (
    SCHEMA,
    Job,
    Labeller,
    LabelOptions,
    LabelRequest,
    LabelRow,
    Ledger,
    LedgerError,
    LocalEngine,
    discover_jobs,
    label_archive,
    read_labels,
    summarise,
    template_key,
)
from diag_service.label.cli import RichProgress, app, rate_text
from diag_service.label.ledger import SUMMARY_JSON, SUMMARY_MD, part_name
from diag_service.label.output import rows_to_frame, rows_to_parquet_bytes
from diag_service.pipeline import DiagnoseRequest, diagnose

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "torchrun_shape_mismatch_2x2"
DEV = REPO.parent / "shared" / "data" / "incidents_dev"
DEV_LOGS = sorted((DEV / "logs").glob("dev-*.log")) if (DEV / "logs").is_dir() else []
needs_dev = pytest.mark.skipif(not DEV_LOGS, reason=f"{DEV} not present (shared data absent)")
OFF = LabelOptions(kb="off")
BAD = {"bad-empty": "empty bundle", "bad-emptydir": "empty bundle", "bad-binary": "empty bundle", "bad-trunc": "empty bundle"}


# -- archive builders (also used by test_label_resume.py and test_label_ray.py) ---------------------


def add_dev_jobs(archive: Path, copies: int = 1) -> list[str]:
    """One job folder per real dev log (``dev-001``..., or ``c3-dev-001`` for copies > 1); returns the job ids."""
    ids = []
    for c in range(copies):
        for log in DEV_LOGS:
            jid = log.stem if copies == 1 else f"c{c:03d}-{log.stem}"
            (archive / jid).mkdir(parents=True)
            shutil.copy(log, archive / jid / log.name)
            ids.append(jid)
    return ids


def add_bad_jobs(archive: Path) -> None:
    """Bad bundles: an empty file, an empty folder, random bytes, and a tar cut inside its first member."""
    archive.mkdir(parents=True, exist_ok=True)
    (archive / "bad-empty.log").write_bytes(b"")
    (archive / "bad-emptydir").mkdir()
    (archive / "bad-binary.log").write_bytes(bytes(range(256)) * 40)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(EXAMPLE, arcname=EXAMPLE.name)
    (archive / "bad-trunc.tar").write_bytes(buf.getvalue()[:2000])


def add_example(archive: Path, name: str = "example-2x2", as_tar_gz: bool = False) -> str:
    if as_tar_gz:
        with tarfile.open(archive / f"{name}.tar.gz", "w:gz") as tar:
            tar.add(EXAMPLE, arcname=EXAMPLE.name)
    else:
        shutil.copytree(EXAMPLE, archive / name)
    return name


def small_archive(root: Path) -> Path:
    """Real logs, the example twice (folder and .tar.gz) and the bad bundles."""
    archive = root / "archive"
    archive.mkdir()
    add_dev_jobs(archive)
    add_example(archive)
    add_example(archive, "example-targz", as_tar_gz=True)
    add_bad_jobs(archive)
    return archive


def rows_by_id(out: Path) -> dict[str, dict]:
    df = read_labels(out)
    ids = df["job_id"].to_list()
    assert len(ids) == len(set(ids)), "duplicate rows: " + str([i for i, n in Counter(ids).items() if n > 1][:5])
    return {r["job_id"]: r for r in df.iter_rows(named=True)}


def run_label(archive: Path, out: Path, **kw) -> tuple:
    opts = kw.pop("options", OFF)
    engine = kw.pop("engine", None) or LocalEngine(workers=kw.pop("workers", 2), batch_size=kw.pop("batch_size", 4))
    req = LabelRequest(archive=str(archive), out=str(out), options=opts, **kw)
    return label_archive(req, engine=engine), req


# -- end to end ------------------------------------------------------------------------------------


@needs_dev
def test_real_logs_and_bad_bundles_give_one_row_each_and_match_diagnose(tmp_path: Path) -> None:
    archive = small_archive(tmp_path)
    out = tmp_path / "labels.parquet"
    res = CliRunner().invoke(app, [str(archive), "--out", str(out), "--kb", "off", "--workers", "2", "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    rows = rows_by_id(out)
    expected_ids = {p.stem for p in DEV_LOGS} | {"example-2x2", "example-targz"} | set(BAD)
    assert set(rows) == expected_ids
    for jid, reason in BAD.items():
        assert rows[jid]["status"] == "error" and rows[jid]["error"].startswith(reason), rows[jid]
        assert rows[jid]["category"] is None
    # Every labelled row says what `diag diagnose` says about the same bundle.
    labels = {c["id"]: c for c in (json.loads(x) for x in (DEV / "labels.jsonl").read_text().splitlines() if x.strip())}
    agree_label = agree_diag = 0
    for log in DEV_LOGS:
        d = diagnose(DiagnoseRequest(path=str(log)))
        r = rows[log.stem]
        assert r["status"] == "ok"
        assert (r["category"], r["failure_mode"], r["first_failing_rank"], r["first_failing_node"], r["faulty_nodes"]) == (
            d.category.value, d.failure_mode.value, d.first_failing_rank, d.first_failing_node, d.faulty_nodes)
        assert r["recovery_level"] == d.recovery.level.value and r["signatures_version"] == d.versions["signatures"]
        agree_label += r["category"] == labels[log.stem]["category"]
        agree_diag += d.category.value == labels[log.stem]["category"]
    assert agree_label == agree_diag
    # The example as a folder and as a .tar.gz: one cluster, the user's shape mismatch, first failing rank 3.
    a, b = rows["example-2x2"], rows["example-targz"]
    assert a["category"] == b["category"] == "user_code" and a["first_failing_rank"] == 3
    assert a["root_template_id"] == b["root_template_id"] and "shapes cannot be multiplied" in a["root_template"]
    # Summary: JSON on stdout, files in the folder, counts that add up.
    s = json.loads(res.stdout)
    assert s == json.loads((out / SUMMARY_JSON).read_text())
    assert s["jobs"] == len(expected_ids) and s["errors"] == len(BAD) and s["labelled"] == s["jobs"] - s["errors"]
    assert sum(s["by_category"].values()) == s["labelled"] == sum(sum(m.values()) for m in s["by_mode_and_category"].values())
    assert s["errors_by_reason"] == {"empty bundle": len(BAD)}
    top = s["top_templates"][0]
    assert top["jobs"] == 2 and set(top["example_job_ids"]) == {"example-2x2", "example-targz"}
    assert any(n["node"] == "gpu-node-040" for n in s["hardware_nodes"])  # dev-012: NCCL IB error names the node
    md = (out / SUMMARY_MD).read_text()
    for heading in ("Failures by mode and category", "Top root-cause templates", "Nodes with most hardware faults",
                    "Could not be labelled"):
        assert heading in md


def test_manifests_jsonl_csv_parquet_with_metadata_and_bad_lines(tmp_path: Path) -> None:
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    add_example(bundles, "ex")
    add_bad_jobs(bundles)
    lines = [
        json.dumps({"job_id": "j1", "path": "bundles/ex", "metadata": {"team": "llm"}, "gpus": 4}),
        "{not json",
        json.dumps({"job_id": "j2"}),
        json.dumps({"job_id": "j1", "path": "bundles/bad-empty.log"}),
        json.dumps({"path": str(bundles / "bad-binary.log")}),
        json.dumps({"job_id": "j4", "path": "bundles/nowhere"}),
    ]
    (tmp_path / "m.jsonl").write_text("\n".join(lines) + "\n\n")
    jobs = discover_jobs(tmp_path / "m.jsonl")
    assert [j.job_id for j in jobs] == ["j1", "m.jsonl:2", "j2", "j1~4", "bad-binary", "j4"]
    assert jobs[0].metadata == {"team": "llm", "gpus": 4} and jobs[0].path == str(bundles / "ex")
    out = tmp_path / "out"
    run_label(tmp_path / "m.jsonl", out, workers=1)
    rows = rows_by_id(out)
    assert rows["j1"]["status"] == "ok" and json.loads(rows["j1"]["metadata"]) == {"gpus": 4, "team": "llm"}
    assert "invalid JSON" in rows["m.jsonl:2"]["error"] and "no 'path'" in rows["j2"]["error"]
    assert "duplicate job_id 'j1'" in rows["j1~4"]["error"] and rows["bad-binary"]["error"].startswith("empty bundle")
    assert rows["j4"]["error"].startswith("no such file or directory")

    (tmp_path / "m.csv").write_text("job_id,path,owner\nc1,bundles/ex,alice\nc2,bundles/bad-emptydir,\n")
    pl.DataFrame({"job_id": ["p1"], "path": ["bundles/ex"], "queue": ["prod"]}).write_parquet(tmp_path / "m.parquet")
    assert [(j.job_id, j.metadata) for j in discover_jobs(tmp_path / "m.csv")] == [("c1", {"owner": "alice"}), ("c2", {})]
    assert [(j.job_id, j.metadata) for j in discover_jobs(tmp_path / "m.parquet")] == [("p1", {"queue": "prod"})]


def test_a_manifest_line_that_breaks_the_json_parser_is_one_error_row_not_a_refused_manifest(tmp_path: Path) -> None:
    # 200k nested brackets make json.loads raise RecursionError; a 5,000-digit number exceeds int parsing
    add_example(tmp_path, "ex")
    body = ["[" * 200_000, json.dumps({"job_id": "j1", "path": "ex"}), '{"job_id": "j2", "gpus": ' + "9" * 5000 + "}"]
    (tmp_path / "m.jsonl").write_text("\n".join(body) + "\n")
    jobs = discover_jobs(tmp_path / "m.jsonl")
    assert [j.job_id for j in jobs] == ["m.jsonl:1", "j1", "m.jsonl:3"]
    assert jobs[0].input_error.startswith("manifest line 1: invalid JSON") and jobs[1].input_error is None


def test_folder_listing_ids_are_stable_and_unique(tmp_path: Path) -> None:
    for name in ("b.tar.gz", "b", "a.log", ".hidden", "c.zip"):
        (tmp_path / name).write_text("x")
    (tmp_path / "out").mkdir()
    jobs = discover_jobs(tmp_path, skip=[tmp_path / "out"])
    assert [j.job_id for j in jobs] == ["a", "b", "b.tar.gz", "c"]


# -- resume and the ledger --------------------------------------------------------------------------


@needs_dev
def test_rerun_is_a_no_op_and_new_jobs_are_labelled_incrementally(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    add_dev_jobs(archive)
    out = tmp_path / "out"
    first, _ = run_label(archive, out)
    assert first.labelled_now == len(DEV_LOGS) and first.done_before == 0
    before = read_labels(out)
    again, _ = run_label(archive, out)
    assert again.labelled_now == 0 and again.done_before == len(DEV_LOGS)
    assert read_labels(out).equals(before)
    add_example(archive, "late-job")
    third, _ = run_label(archive, out)
    assert third.labelled_now == 1
    rows = rows_by_id(out)
    assert set(rows) == {p.stem for p in DEV_LOGS} | {"late-job"}
    assert len(list(out.glob("part-*.parquet"))) == 2


def test_output_folder_is_guarded(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    add_bad_jobs(archive)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    with pytest.raises(LedgerError, match="not a `diag label` output folder"):
        run_label(archive, foreign, workers=1)
    with pytest.raises(LedgerError, match="not a `diag label` output folder"):
        run_label(archive, foreign, workers=1, fresh=True)
    assert (foreign / "precious.txt").read_text() == "keep me"
    out = tmp_path / "out"
    run_label(archive, out, workers=1)
    other = tmp_path / "other"
    add_bad_jobs(other)
    with pytest.raises(LedgerError, match="started for archive"):
        run_label(other, out, workers=1)
    with pytest.raises(LedgerError, match="started with options"):
        run_label(archive, out, workers=1, options=LabelOptions(kb="off", platform="slurm"))
    res, _ = run_label(other, out, workers=1, fresh=True)
    assert res.labelled_now == 4 and res.done_before == 0
    with Ledger(out), pytest.raises(LedgerError, match="another `diag label` run"):
        Ledger(out)


def test_every_crash_window_of_part_writing_is_repaired(tmp_path: Path) -> None:
    """The states a SIGKILL can leave between 'planned', 'renamed' and 'marked done' all end in one row per job."""
    archive = tmp_path / "archive"
    archive.mkdir()
    ids = [add_example(archive, f"ex{i}") for i in range(4)]
    add_bad_jobs(archive)
    out = tmp_path / "out"
    run_label(archive, out, workers=1, batch_size=1, part_rows=2)
    reference = read_labels(out)
    assert len(reference) == len(ids) + len(BAD)
    with Ledger(out) as ledger:
        parts = ledger.parts()
        assert len(parts) >= 3
        # (a) killed after the rename, before 'done': the ledger says 'writing', the file is there
        ledger.db.execute("UPDATE parts SET state = 'writing' WHERE part = ?", (parts[0][0],))
        # (b) a part whose file is gone
        (out / part_name(parts[1][0])).unlink()
        # (c) killed before the rename: a temporary file
        (out / (part_name(99) + ".tmp")).write_bytes(b"half")
        # (d) a part file the ledger never recorded (power loss after the rename)
        shutil.copy(out / part_name(parts[2][0]), out / part_name(98))
        # (e) rows committed but not yet in any part
        ledger.db.execute("UPDATE jobs SET part = NULL WHERE part = ?", (parts[2][0],))
        ledger.db.execute("DELETE FROM parts WHERE part = ?", (parts[2][0],))
        (out / part_name(parts[2][0])).unlink()
    res, _ = run_label(archive, out, workers=1)
    assert res.labelled_now == 0
    assert any("unfinished" in n for n in res.notes)
    assert not list(out.glob("*.tmp")) and not (out / part_name(98)).exists()
    assert read_labels(out).equals(reference)


# -- clusters and summaries -------------------------------------------------------------------------


def test_one_model_summary_per_cluster_filled_into_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_summarize(d: Diagnosis) -> Narrative:
        calls.append(d.job_id or "")
        return Narrative(text=f"summary of {d.category.value} ({d.job_id})", source="model", model="fake-llm-1")

    monkeypatch.setattr("diag_service.label.run.load_summarizer", lambda: (fake_summarize, "fake-llm-1"))
    archive = tmp_path / "archive"
    archive.mkdir()
    for i in range(3):
        add_example(archive, f"shape-{i}")
    add_example(archive, "shape-tgz", as_tar_gz=True)
    add_bad_jobs(archive)
    out = tmp_path / "out"
    res, _ = run_label(archive, out, workers=1, llm=True, part_rows=2)
    assert calls == ["shape-0"]  # one cluster, its smallest job id is the representative
    rows = rows_by_id(out)
    for i in range(3):
        r = rows[f"shape-{i}"]
        assert r["summary"] == "summary of user_code (shape-0)" and r["summary_source"] == "model"
        assert r["model_version"] == "fake-llm-1" and json.loads(r["versions"])["model"] == "fake-llm-1"
    assert rows["bad-empty"]["summary"] is None
    assert res.summary.top_templates[0].summary == "summary of user_code (shape-0)"
    run_label(archive, out, workers=1, llm=True)
    assert calls == ["shape-0"]  # already summarised: not asked again


def test_llm_flag_without_model_is_refused_before_labelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("diag_service.label.run.load_summarizer", lambda: None)
    archive = tmp_path / "archive"
    add_bad_jobs(archive)
    res = CliRunner().invoke(app, [str(archive), "--out", str(tmp_path / "out"), "--llm", "--kb", "off", "--no-progress"])
    assert res.exit_code == 2 and "diag_service.llm" in res.output
    assert not (tmp_path / "out").exists()


def test_template_key_ignores_ranks_hosts_and_glog_prefix() -> None:
    a = "[<NUM> <NUM>:<NUM>:<NUM> ProcessGroupNCCL.cpp:<NUM>] [Rank <RANK>] Watchdog caught collective operation timeout"
    b = "[<*> ProcessGroupNCCL.cpp:<NUM>] [Rank <*>]  Watchdog caught collective operation timeout"
    assert template_key(a) == template_key(b)
    assert template_key("RuntimeError: CUDA out of memory. Tried to allocate <SIZE>") != template_key(
        "RuntimeError: CUDA error: uncorrectable ECC error encountered")


def test_summary_ranks_nodes_with_most_hardware_faults() -> None:
    def row(jid: str, cat: str, nodes: list[str], tid: str = "t1") -> LabelRow:
        return LabelRow(job_id=jid, path="/x", status="ok", failure_mode="fail_stop", category=cat, responsible="platform",
                        faulty_nodes=nodes, root_template_id=tid, root_template=f"template {tid}")

    rows = [row("a", "gpu_hardware", ["n1"]), row("b", "gpu_hardware", ["n1", "n2"]), row("c", "network", ["n1"]),
            row("d", "storage", ["n3"], "t2"), row("e", "network", ["n2"], "t2"),
            LabelRow(job_id="f", path="/y", status="error", error="empty bundle: nothing")]
    s = summarise(rows, "arch", "out")
    assert [(n.node, n.faults) for n in s.hardware_nodes] == [("n1", 3), ("n2", 2)]
    assert s.hardware_nodes[0].categories == {"gpu_hardware": 2, "network": 1}
    assert [(t.template_id, t.jobs) for t in s.top_templates] == [("t1", 3), ("t2", 2)]
    assert s.errors_by_reason == {"empty bundle": 1} and s.by_mode_and_category == {"fail_stop": {"gpu_hardware": 2, "network": 2,
                                                                                                   "storage": 1}}


def test_row_columns_are_the_schema() -> None:
    assert list(SCHEMA) == list(LabelRow.model_fields)


def test_a_part_written_before_a_column_was_added_reads_it_as_null(tmp_path: Path) -> None:
    # an output folder resumed across versions: its first part lacks first_failing_node, the next one has it
    old = LabelRow(job_id="a", path="/x", status="ok", category="network", first_failing_rank=3)
    new = LabelRow(job_id="b", path="/y", status="ok", category="gpu_oom", first_failing_rank=1,
                   first_failing_node="gpu-node-007")
    rows_to_frame([old]).drop("first_failing_node").write_parquet(tmp_path / "part-00000.parquet")
    (tmp_path / "part-00001.parquet").write_bytes(rows_to_parquet_bytes([new]))
    got = read_labels(tmp_path)
    assert list(got.columns) == list(SCHEMA)
    assert got.select("job_id", "first_failing_rank", "first_failing_node").rows() == [
        ("a", 3, None), ("b", 1, "gpu-node-007")]


# -- the worker: knowledge base, timeouts, crashes --------------------------------------------------


def test_similar_incidents_from_the_knowledge_base_land_in_the_row() -> None:
    seen: list[int] = []

    def similar(d: Diagnosis, k: int) -> tuple[list[SimilarIncident], bool]:
        seen.append(k)
        inc = SimilarIncident(incident_id="user-code-shape-1", title="t", score=0.9, category=Category.USER_CODE,
                              root_cause="r", action="a")
        return [inc], False

    row = Labeller(OFF, similar=similar, kb_version="minilm:147").label(Job(job_id="ex", path=str(EXAMPLE)))
    assert seen == [5]
    assert row.similar_incident_ids == ["user-code-shape-1"] and row.novel is False and row.kb_version == "minilm:147"
    assert json.loads(row.versions)["kb"] == "minilm:147"


def test_knowledge_base_goes_through_the_pipeline_so_labels_equal_diag_diagnose_kb(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the knowledge base, the pipeline may let retrieval name the category: the row must say the same."""
    kb = pytest.importorskip("diag_service.kb")
    from diag_service.label import worker

    def similar(d: Diagnosis, k: int = 5) -> tuple[list[SimilarIncident], bool]:
        return [SimilarIncident(incident_id="uneven-batches", title="t", score=0.97, category=Category.USER_CODE,
                                root_cause="r", action="a")], False

    # what the pipeline's default retriever (diag diagnose --kb) asks
    monkeypatch.setattr(kb.DefaultRetriever, "similar_incidents", lambda self, d, k=5: similar(d, k))
    monkeypatch.setattr(worker, "load_kb", lambda mode: (None, None, None) if mode == "off" else (similar, "fake-kb:1", None))
    # a public corpus dev log that no signature matches (a paddle.distributed.launch abort): unknown without
    # retrieval (a collective timeout would not do: retrieval never names one, tests/test_kb_pipeline.py)
    log = REPO / "eval" / "corpus" / "logs" / "n61b-011.log"
    expected = diagnose(DiagnoseRequest(path=str(log), kb=True))
    row = Labeller(LabelOptions(kb="on")).label(Job(job_id="n61b-011", path=str(log)))
    assert expected.category_source == "retrieval"
    assert row.category == expected.category.value == "user_code" and row.confidence == expected.confidence
    assert row.similar_incident_ids == ["uneven-batches"] and row.kb_version == "fake-kb:1"
    assert Labeller(OFF).label(Job(job_id="n61b-011", path=str(log))).category == "unknown"


def test_knowledge_base_absent_in_auto_mode_is_a_warning_not_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "diag_service.kb", None)  # import fails as if not installed
    lab = Labeller(LabelOptions(kb="auto"))
    row = lab.label(Job(job_id="ex", path=str(EXAMPLE)))
    assert row.status == "ok" and row.kb_version is None and row.similar_incident_ids == []
    assert row.warnings[0].startswith("knowledge base not installed")
    with pytest.raises(RuntimeError, match="knowledge base not installed"):
        Labeller(LabelOptions(kb="on"))


def test_a_bundle_that_takes_too_long_becomes_an_error_row(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(req: DiagnoseRequest) -> Diagnosis:
        while True:
            time.sleep(0.01)

    monkeypatch.setattr("diag_service.label.worker.diagnose", slow)
    row = Labeller(LabelOptions(kb="off", job_timeout_s=0.2)).label(Job(job_id="slow", path=str(EXAMPLE)))
    assert row.status == "error" and row.error.startswith("timeout")


def test_a_bug_on_one_bundle_becomes_an_error_row(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(req: DiagnoseRequest) -> Diagnosis:
        raise KeyError("rank")

    monkeypatch.setattr("diag_service.label.worker.diagnose", boom)
    row = Labeller(OFF).label(Job(job_id="bug", path=str(EXAMPLE)))
    assert row.status == "error" and row.error.startswith("internal error: KeyError")


class CrashingLabeller(Labeller):
    """Kills its own worker process (as the OOM killer would) on any job whose id starts with 'crash'."""

    def label(self, job: Job) -> LabelRow:
        if job.job_id.startswith("crash"):
            os._exit(137)
        return super().label(job)


def test_a_bundle_that_kills_its_worker_becomes_an_error_row(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    for i in range(5):
        add_example(archive, f"ok-{i}")
    add_example(archive, "crash-me")
    out = tmp_path / "out"
    engine = LocalEngine(workers=2, batch_size=2, factory=CrashingLabeller)
    res, _ = run_label(archive, out, engine=engine)
    rows = rows_by_id(out)
    assert set(rows) == {f"ok-{i}" for i in range(5)} | {"crash-me"}
    assert rows["crash-me"]["status"] == "error" and "worker process died" in rows["crash-me"]["error"]
    assert all(rows[f"ok-{i}"]["status"] == "ok" for i in range(5))
    assert res.summary.errors == 1


# -- progress --------------------------------------------------------------------------------------


def test_progress_shows_rate_and_eta() -> None:
    buf = io.StringIO()
    p = RichProgress(Console(file=buf, force_terminal=False, width=200), interval_s=0)
    p.start("label", 10, 2)
    time.sleep(0.05)
    p.advance(4)
    p.stop()
    text = buf.getvalue()
    assert "label: 2/10 already done, 8 to go" in text and "label: 6/10 (" in text and "jobs/s" in text and "ETA" in text
    tty = io.StringIO()
    p = RichProgress(Console(file=tty, force_terminal=True, width=200))
    p.start("label", 10, 0)
    p.advance(5)
    p.stop()
    assert "5/10" in tty.getvalue() and "jobs/s" in tty.getvalue()
    assert rate_text(0.04, "clusters") == "25 s/cluster" and rate_text(250.34, "jobs") == "250.3 jobs/s"
