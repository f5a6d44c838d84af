"""The built wheel is a working tool outside the checkout: knowledge, policy, incidents and prompts ship
inside it, and a core install without the extras still diagnoses and says what the extras would add.

The wheel is built from a copy of the source tree (``pip wheel --no-build-isolation``, offline) and
installed with ``--no-deps`` into a fresh virtual environment in a temporary folder. That environment
sees the dependencies through a ``.pth`` file naming this interpreter's site-packages (the machines
reach no index during tests); the checkout itself is not on its path (a ``.pth`` line is never
processed as a site folder, so the editable install's finder stays out).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "torchrun_shape_mismatch_2x2"
SOURCES = ("diag_service", "knowledge_base", "models", "eval/lab/scenarios", "pyproject.toml", "setup.py", "README.md",
           "LICENSE")
#: Import roots the core install must do without (the [kb], [llm], [service], [label] and [lab] extras).
EXTRAS = ("sentence_transformers", "faiss", "sklearn", "xllamacpp", "transformers", "fastapi", "uvicorn",
          "sqlalchemy", "slack_bolt", "ray", "torch")



def _core_closure() -> set[str]:
    """Normalised names of the distributions a core install pulls in: the package's requirements without an
    extra marker, and theirs, transitively (from the installed metadata; markers evaluated here)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    seen: set[str] = set()
    todo = [r for r in (distribution("diag-service").requires or []) if "extra ==" not in r]
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(distribution(req.name).requires or [])
        except PackageNotFoundError:
            continue
    return seen


def _deps_without_extras(dst: Path) -> Path:
    """A folder of links to the site-packages entries of the core's dependency closure only (so that, for the
    core install, what the core does not declare is really absent: the extras, and a package that only an
    extra's dependency happens to install, as click came with uvicorn once typer stopped requiring it)."""
    from importlib.metadata import distributions

    src = Path(sysconfig.get_paths()["purelib"])
    keep = _core_closure()
    dst.mkdir()
    wanted: set[str] = set()
    for dist in distributions():
        if re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower() not in keep:
            continue
        for f in dist.files or []:
            top = f.parts[0]
            if top not in ("..", "") and not top.endswith(".pth"):
                wanted.add(top)
    for entry in src.iterdir():
        if entry.name in wanted and not entry.name.startswith("__editable__"):
            (dst / entry.name).symlink_to(entry)
    assert not any((dst / x).exists() for x in EXTRAS), "an extra's package is in the core's closure"
    return dst


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        p = REPO / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(p, src / name)
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                        str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("diag_service-*.whl")
    return whl


def _install(wheel: Path, root: Path, core_only: bool) -> tuple[Path, dict[str, str]]:
    env_dir = root / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    deps = _deps_without_extras(root / "deps") if core_only else Path(sysconfig.get_paths()["purelib"])
    (site / "zz_deps.pth").write_text(f"{deps}\n")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q",
                        str(wheel)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DIAG_", "PYTHON", "VIRTUAL_ENV"))}
    env |= {"DIAG_HOME": str(root / "home"), "HOME": str(root), "PATH": f"{env_dir / 'bin'}:{env.get('PATH', '')}"}
    return env_dir, env


def _build_hook_constants() -> dict[str, object]:
    """``DATA_ROOTS`` and ``SUFFIXES`` of ``setup.py``'s build hook, read without running ``setup()``."""
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id in ("DATA_ROOTS", "SUFFIXES"):
            found[target.id] = ast.literal_eval(node.value)  # type: ignore[union-attr]
    return found


def test_the_diag_script_target_imports_and_runs() -> None:
    """``[project.scripts]`` names an importable object that runs as ``diag`` (a renamed module or app
    would install a ``diag`` that fails on every call)."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, attr = scripts["diag"].partition(":")
    target = getattr(importlib.import_module(module), attr)
    assert callable(target)
    res = CliRunner().invoke(target, ["--help"])
    assert res.exit_code == 0, res.output
    for command in ("diagnose", "hang", "slow", "etpr", "signatures", "serve"):
        assert command in res.output


def test_the_build_hook_ships_every_data_file() -> None:
    """Offline, without a build: every file of ``knowledge_base/`` and ``models/`` has a suffix the build
    hook copies into the wheel (a ``.csv`` of incidents would be left out without a word), and the hook's
    folders are the ones :mod:`diag_service.resources` looks up."""
    from diag_service.resources import DATA_SOURCES

    hook = _build_hook_constants()
    assert hook["DATA_ROOTS"] == DATA_SOURCES
    left_out = [p.relative_to(REPO).as_posix() for folder in DATA_SOURCES.values() for p in (REPO / folder).rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix not in hook["SUFFIXES"]]  # type: ignore[operator]
    assert left_out == []
    assert any((REPO / "knowledge_base" / "signatures").glob("*.yaml")) and (REPO / "models" / "llm.yaml").is_file()
    assert any((REPO / DATA_SOURCES["lab_scenarios"]).glob("*.yaml"))


def test_the_wheel_holds_every_data_file_and_the_diag_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = zf.read(entry_points).decode()
    assert "[console_scripts]" in scripts and "diag = diag_service.cli:app" in scripts
    from diag_service.resources import DATA_SOURCES

    for root, folder in DATA_SOURCES.items():
        files = [p.relative_to(REPO / folder).as_posix() for p in (REPO / folder).rglob("*") if p.is_file()]
        assert files, root
        missing = [f for f in files if f"diag_service/_data/{root}/{f}" not in names]
        assert missing == [], root
    assert "diag_service/service/templates/" in " ".join(names) and "diag_service/py.typed" in names


def test_the_wheel_ships_its_knowledge_and_diagnoses_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    env_dir, env = _install(wheel, tmp_path, core_only=False)
    where = _run([str(env_dir / "bin" / "python"), "-c",
                  "import diag_service, diag_service.resources as r; print(diag_service.__file__); "
                  "print(r.builtin('knowledge_base', 'signatures')); print(r.builtin('models', 'llm.yaml'))"],
                 tmp_path, env)
    assert where.returncode == 0, where.stderr
    module, sigs, llm = where.stdout.split()
    for p in (module, sigs, llm):
        assert str(env_dir) in p and str(REPO) not in p
    assert Path(llm).is_file()

    listed = _run([str(env_dir / "bin" / "diag"), "signatures"], tmp_path, env)
    assert listed.returncode == 0, listed.stderr
    assert "cuda_oom" in listed.stdout and " signatures, catalog version " in listed.stdout
    assert str(env_dir) in listed.stderr  # it says where it read the catalogue from

    # the lab's scenarios are found inside the install, not through a source checkout's eval/ folder
    lab = _run([str(env_dir / "bin" / "python"), "-c", "from diag_service.lab.scenarios import DEFAULT_SCENARIO_DIR as d, "
                "load_scenarios; print(d); print(len(load_scenarios()))"], tmp_path, env)
    assert lab.returncode == 0, lab.stderr
    scenario_dir, n = lab.stdout.split()
    assert str(env_dir) in scenario_dir and int(n) == len(list((REPO / "eval" / "lab" / "scenarios").glob("*.yaml")))
    listed = _run([str(env_dir / "bin" / "diag"), "lab", "list"], tmp_path, env)
    assert listed.returncode == 0 and "hang_sleep_before_allreduce" in listed.stdout, listed.stderr

    r = _run([str(env_dir / "bin" / "diag"), "diagnose", str(EXAMPLE), "--json", "--no-llm"], tmp_path, env)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(r.stdout)
    assert d["category"] == "user_code" and d["first_failing_rank"] == 3
    assert d["recovery"] is not None and d["recovery"]["level"]  # the recovery policy shipped too
    assert d["similar_incidents"], d["input"]["warnings"]  # the seed incidents shipped and were indexed


def test_a_core_install_diagnoses_and_names_the_extras(wheel: Path, tmp_path: Path) -> None:
    env_dir, env = _install(wheel, tmp_path, core_only=True)
    for mod in ("faiss", "sentence_transformers", "xllamacpp", "fastapi", "ray"):
        absent = _run([str(env_dir / "bin" / "python"), "-c", f"import {mod}"], tmp_path, env)
        assert absent.returncode != 0 and "No module named" in absent.stderr, mod

    r = _run([str(env_dir / "bin" / "diag"), "diagnose", str(EXAMPLE), "--json", "--llm"], tmp_path, env)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(r.stdout)
    assert d["category"] == "user_code" and d["first_failing_rank"] == 3
    warnings = " ".join(d["input"]["warnings"])
    assert "pip install 'diag-service[kb]'" in warnings
    assert d["narrative"]["source"] == "fallback"
    assert "pip install 'diag-service[llm]'" in warnings
