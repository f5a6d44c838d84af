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
