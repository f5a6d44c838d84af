"""Optional stages are objects passed with the request; importing the package leaves the environment alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diag_service.contracts import Retriever, Summarizer
from diag_service.domain import Category, Diagnosis, Narrative, SimilarIncident
from diag_service.pipeline import DiagnoseRequest, diagnose

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "torchrun_shape_mismatch_2x2"


def test_importing_every_module_writes_nothing_to_the_environment() -> None:
    code = (
        "import importlib, json, os, pkgutil\n"
        "import polars, numpy  # third-party imports that set their own variables (polars: _RJEM_MALLOC_CONF)\n"
        "import diag_service\n"
        "before = dict(os.environ)\n"
        "for m in pkgutil.walk_packages(diag_service.__path__, 'diag_service.'):\n"
        "    importlib.import_module(m.name)\n"
        "after = dict(os.environ)\n"
        "print(json.dumps(sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_", "DIAG_"))}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("first", ["diag_service.slow.models", "diag_service.slow", "diag_service.domain"])
def test_the_fail_slow_models_import_first_or_second(first: str) -> None:
    # diag_service.slow.models and diag_service.domain import each other (Diagnosis.slow is a SlowReport);
    # a script that imports the slow models first (e.g. to build a SlowConfig) used to fail with
    # "cannot import name 'SlowReport' from partially initialized module".
    code = (
        f"import {first}\n"
        "from diag_service.slow import SlowConfig, SlowReport\n"
        "from diag_service.domain import Diagnosis\n"
        "print(SlowConfig().min_effect, Diagnosis.model_fields['slow'].annotation)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[0] == "0.1" and "SlowReport" in r.stdout


class _Past:
    def __init__(self) -> None:
        self.asked: list[int] = []

    def similar_incidents(self, diagnosis: Diagnosis, k: int = 5) -> tuple[list[SimilarIncident], bool]:
        self.asked.append(k)
        return [SimilarIncident(incident_id="shape-1", title="Shape mismatch in the model code", score=0.91,
                                category=Category.USER_CODE, root_cause="r", action="a")], False


class _Words:
    class _Out:
        def __init__(self, text: str) -> None:
            self.narrative = Narrative(text=text, source="model", model="site-model")
            self.fallback_reason = None

    def summarize(self, diagnosis: Diagnosis) -> _Out:
        return self._Out(f"{diagnosis.category.value} on rank {diagnosis.first_failing_rank}")


def test_the_request_carries_its_retriever_and_summarizer(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("DIAG_HOME", str(tmp_path / "never-used"))
    past, words = _Past(), _Words()
    assert isinstance(past, Retriever) and isinstance(words, Summarizer)
    d = diagnose(DiagnoseRequest(path=str(EXAMPLE), retriever=past, summarizer=words))
    assert past.asked == [5] and d.similar_incidents[0].incident_id == "shape-1" and not d.novel
    assert d.narrative is not None and d.narrative.text == "user_code on rank 3" and d.narrative.model == "site-model"
    assert not (tmp_path / "never-used").exists()  # no default knowledge base was opened

    class Broken:
        def similar_incidents(self, diagnosis: Diagnosis, k: int = 5):  # noqa: ANN202
            raise OSError("store on a dead NFS mount")

    d = diagnose(DiagnoseRequest(path=str(EXAMPLE), retriever=Broken()))
    assert d.category is Category.USER_CODE  # a broken optional stage is a warning, never a failed diagnosis
    assert any("dead NFS mount" in w for w in d.input.warnings)


def test_one_rule_for_where_data_and_caches_live(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from diag_service.kb import default_home
    from diag_service.llm.config import default_cache_dir
    from diag_service.service.settings import default_data_dir

    monkeypatch.delenv("DIAG_HOME", raising=False)
    monkeypatch.delenv("DIAG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    assert default_home() == tmp_path / "xdg-data" / "diag"
    assert default_data_dir() == tmp_path / "xdg-data" / "diag" / "service"
    assert default_cache_dir() == tmp_path / "xdg-cache" / "diag"
    monkeypatch.setenv("DIAG_HOME", str(tmp_path / "site"))
    monkeypatch.setenv("DIAG_CACHE_DIR", str(tmp_path / "cache"))
    assert default_home() == tmp_path / "site" and default_data_dir() == tmp_path / "site" / "service"
    assert default_cache_dir() == tmp_path / "cache"


def test_the_default_retriever_keeps_the_home_it_was_built_with(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The retriever resolves ``$DIAG_HOME`` when it is built, not at every lookup through a process global:
    a later change of the variable does not move the store it reads and writes."""
    from diag_service.kb import DefaultRetriever, HashingEmbedder

    monkeypatch.setenv("DIAG_HOME", str(tmp_path / "site"))
    past = DefaultRetriever(embedder=HashingEmbedder())
    monkeypatch.setenv("DIAG_HOME", str(tmp_path / "elsewhere"))
    d = diagnose(DiagnoseRequest(path=str(EXAMPLE), retriever=past))
    assert d.similar_incidents and not any("knowledge base" in w for w in d.input.warnings)
    assert (tmp_path / "site" / "kb" / "kb.sqlite").is_file() and not (tmp_path / "elsewhere").exists()
    assert past.home == tmp_path / "site"


def _capture(monkeypatch, module) -> list[DiagnoseRequest]:  # noqa: ANN001
    """Requests the interface in ``module`` hands the pipeline (diagnosed without the optional stages)."""
    seen: list[DiagnoseRequest] = []

    def record(req: DiagnoseRequest) -> Diagnosis:
        seen.append(req)
        return diagnose(req.model_copy(update={"retriever": None, "summarizer": None}))

    monkeypatch.setattr(module, "diagnose", record)
    return seen


def test_diag_diagnose_builds_its_stages_from_its_options(monkeypatch) -> None:  # noqa: ANN001
    from typer.testing import CliRunner

    import diag_service.pipeline
    from diag_service.cli import app
    from diag_service.kb import DefaultRetriever
    from diag_service.llm import LocalSummarizer
    from diag_service.signatures import site_catalog

    seen = _capture(monkeypatch, diag_service.pipeline)
    runner = CliRunner()
    assert runner.invoke(app, ["diagnose", str(EXAMPLE), "--json"]).exit_code == 0
    assert runner.invoke(app, ["diagnose", str(EXAMPLE), "--json", "--no-kb", "--no-llm", "--no-recovery"]).exit_code == 0
    full, bare = seen
    assert isinstance(full.retriever, DefaultRetriever) and isinstance(full.summarizer, LocalSummarizer)
    assert full.catalog is site_catalog() and full.policy is not None and full.policy.version_hash
    assert bare.retriever is None and bare.summarizer is None and bare.policy is None and bare.catalog is not None


def test_a_labeller_builds_its_stages_once_and_hands_them_to_every_job(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from diag_service.label import worker
    from diag_service.label.models import Job, LabelOptions
    from diag_service.recovery import default_policy_path

    policy = tmp_path / "policy.yaml"
    policy.write_text(Path(default_policy_path()).read_text(encoding="utf-8"), encoding="utf-8")
    seen = _capture(monkeypatch, worker)
    lab = worker.Labeller(LabelOptions(kb="off", policy_path=str(policy)), similar=lambda d, k=5: ([], True))
    rows = [lab.label(Job(job_id=f"job-{i}", path=str(EXAMPLE))) for i in range(2)]
    assert [r.status for r in rows] == ["ok", "ok"] and rows[0].category == "user_code"
    a, b = seen
    assert a.catalog is b.catalog is lab.catalog and a.policy is b.policy is not None
    assert a.retriever is b.retriever is not None and a.summarizer is None


def test_a_service_worker_gives_every_diagnosis_its_one_summarizer(monkeypatch) -> None:  # noqa: ANN001
    import diag_service.pipeline
    from diag_service.llm import LocalSummarizer
    from diag_service.service import tasks

    seen = _capture(monkeypatch, diag_service.pipeline)
    for llm in (True, True, False):
        out = tasks._diagnose({"path": str(EXAMPLE), "job_id": "j", "recovery": False, "llm": llm})
        assert out["ok"] and out["category"] == "user_code"
    first, second, off = seen
    assert isinstance(first.summarizer, LocalSummarizer) and second.summarizer is first.summarizer
    assert off.summarizer is None and first.retriever is None
