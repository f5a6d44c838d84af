"""The deployment files under ``deploy/`` against the real CLI, settings, routes and metrics.

Fast and offline: no docker, kubectl or cluster. Each file parses; every ``diag`` command line in them
(the Dockerfile's ENTRYPOINT + CMD, the containers of the Kubernetes manifests, shell scripts inside them,
the Slurm wrapper) names a command and options that ``diag`` has (read from its click command tree); every
``DIAG_*`` variable is read by the settings model's own environment source or by the package; the Kubernetes
objects refer to each other consistently (ports, labels, Secrets, the shared log volume); the service's
settings built from the manifests validate and admit the host name the agents use; the dashboard queries
only metric names, labels and routes the service has. The ``*_catches_*`` tests show that each checker
fails on a typical mistake.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import typer
import yaml
from pydantic import BaseModel

from diag_service.cli import app

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
SLURM = DEPLOY / "slurm"
DOCKERFILE = DEPLOY / "Dockerfile"
DASHBOARD = DEPLOY / "grafana" / "diag-service.json"
OUR_IMAGE = "diag-service:"
#: The Slurm wrapper's own variables (documented in its header; not settings of diag serve).
WRAPPER_VARIABLES = {"DIAG_URL", "DIAG_LOG_DIR", "DIAG_STATE_DIR"}
#: Labels Prometheus adds to every scraped series (the target's), usable in the dashboard's queries.
TARGET_LABELS = {"instance", "job", "namespace", "pod", "service", "endpoint", "container"}
#: Values the downward API would give, for expanding ``$(VAR)`` in the manifests.
FIELD_SAMPLES = {"metadata.namespace": "ml-training", "metadata.name": "diag-7d9f8-abcde", "spec.nodeName": "gpu-node-01",
                 "metadata.labels['training.kubeflow.org/job-name']": "llm-pretrain"}


# ---------------------------------------------------------------------------------------------- the CLI


def _group() -> Any:
    """The ``diag`` click group (Typer's own copy of click: classes are checked by what they do)."""
    group = typer.main.get_command(app)
    assert hasattr(group, "resolve_command") and hasattr(group, "list_commands")
    return group


def _command(name: str) -> Any:
    """A ``diag`` sub-command as click has it (lazy sub-commands are imported on resolve), or None."""
    group = _group()
    ctx = group.context_class(group)
    if name not in group.list_commands(ctx):
        return None
    _, cmd, _ = group.resolve_command(ctx, [name])
    return cmd


def check_invocation(argv: list[str]) -> list[str]:
    """What is wrong with one ``diag`` command line (empty: nothing).

    ``argv[0]`` is ``diag``; ``argv[1]`` must be a sub-command of the real CLI, every ``--option`` one of
    its options, an option that takes a value must have one, a literal value must parse as the CLI parses it,
    positional words are allowed only as many as the command's arguments, and every required option is
    there; after ``--`` (a command that
    takes extra arguments: ``diag watch -- torchrun ...``) nothing is checked. Values holding a shell or
    Kubernetes variable are not converted.
    """
    if len(argv) < 2:
        return [f"no sub-command in {argv}"]
    cmd = _command(argv[1])
    if cmd is None:
        return [f"`diag {argv[1]}` is not a command"]
    options = {opt: p for p in cmd.params if p.param_type_name == "option" for opt in (*p.opts, *p.secondary_opts)}
    arguments = [p for p in cmd.params if p.param_type_name == "argument"]
    extra = bool(cmd.context_settings.get("allow_extra_args"))
    room = float("inf") if any(a.nargs == -1 for a in arguments) else len(arguments)
    errors: list[str] = []
    given: set[str] = set()
    words = 0
    i = 2
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            if not extra:
                errors.append(f"`diag {argv[1]}` takes no command after --")
            break
        if tok.startswith("-") and tok != "-":
            name, eq, inline = tok.partition("=")
            param = options.get(name)
            if param is None:
                errors.append(f"`diag {argv[1]}` has no option {name}")
                i += 1
                continue
            given.add(param.name)
            if param.is_flag or param.count:
                if eq:
                    errors.append(f"{name} is a flag and takes no value")
                i += 1
                continue
            if eq:
                value = inline
            elif i + 1 < len(argv) and argv[i + 1] != "--":
                value = argv[i + 1]
                i += 1
            else:
                errors.append(f"{name} needs a value")
                break
            if not param.multiple and not re.search(r"[$<>`]", value):  # a literal value: as the CLI parses it
                try:
                    param.process_value(cmd.context_class(cmd), value)
                except Exception as exc:  # noqa: BLE001 - click's BadParameter (Typer's own copy of click)
                    errors.append(f"{name} {value!r}: {getattr(exc, 'message', exc)}")
        else:
            words += 1
            if words > room:
                errors.append(f"`diag {argv[1]}` takes no argument {tok!r} here"
                              + (" (a command to launch goes after --)" if extra else ""))
        i += 1
    for param in {p.name: p for p in options.values()}.values():
        if param.required and param.name not in given:
            errors.append(f"`diag {argv[1]}` needs {param.opts[0]}")
    return errors


# ----------------------------------------------------------------------------- finding diag command lines

_SHELL_END = {";", "&&", "||", "|", "&", "then", "do", "done", "fi"}
#: Words after which a shell word is in command position.
_COMMAND_BEFORE = {";", "&&", "||", "|", "&", "then", "do", "else", "exec", "!", "time", "nohup", "until", "while", "if"}


def _logical_lines(text: str) -> Iterator[str]:
    """Lines with backslash continuations joined; a comment line continues into the next comment line."""
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if buf and line.startswith("#"):
            line = line.lstrip("#").strip()
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        yield buf + line
        buf = ""
    if buf:
        yield buf


def shell_invocations(text: str, program: str = "diag") -> list[list[str]]:
    """The ``diag ...`` (``program ...``) command lines of a shell script: ``diag`` (or ``.../diag``) in command
    position, and comment lines that start with ``diag`` (usage examples). Each ends at a shell operator or
    the line's end; the first word is ``program``."""
    found = []
    for line in _logical_lines(text):
        example = line.startswith("#")
        body = line.lstrip("#").strip() if example else line
        if example and not body.startswith(program + " "):
            continue
        if not re.search(rf"(?:^|[\s/;&|]){re.escape(program)}\s", body):
            continue
        try:
            tokens = shlex.split(body, comments=not example)
        except ValueError as exc:
            raise AssertionError(f"cannot split shell line {body!r}: {exc}") from None
        starts = []
        at_start = True
        for i, t in enumerate(tokens):
            if at_start and (t == program or t.endswith("/" + program)):
                starts.append(i)
            at_start = t in _COMMAND_BEFORE or t.endswith(";") or (at_start and re.fullmatch(r"\w+=.*", t) is not None)
        for s in starts:
            argv = [program]
            for t in tokens[s + 1:]:
                if t in _SHELL_END or t.endswith(";"):
                    if t.endswith(";") and t != ";":
                        argv.append(t[:-1])
                    break
                argv.append(t)
            found.append(argv)
    return found


def dockerfile_instructions(text: str = "") -> list[tuple[str, str]]:
    """``(INSTRUCTION, rest)`` of a Dockerfile, continuations joined, comments dropped."""
    text = text or DOCKERFILE.read_text()
    out: list[tuple[str, str]] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        line = buf + line
        buf = ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _exec_form(rest: str) -> list[str]:
    value = json.loads(rest)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), rest
    return value


def image_argv() -> tuple[list[str], list[str]]:
    """The image's ENTRYPOINT and CMD (exec form)."""
    instr = dockerfile_instructions()
    entry = [_exec_form(r) for w, r in instr if w == "ENTRYPOINT"]
    cmd = [_exec_form(r) for w, r in instr if w == "CMD"]
    assert entry and cmd, "the Dockerfile has an ENTRYPOINT and a CMD in exec form"
    return entry[-1], cmd[-1]


def k8s_docs() -> list[tuple[Path, dict[str, Any]]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path, doc))
    return docs


def pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod specs of a workload object (Deployment, PyTorchJob replica templates)."""
    kind = doc.get("kind")
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return [doc["spec"]["template"]["spec"]]
    if kind == "PyTorchJob":
        return [r["template"]["spec"] for r in doc["spec"]["pytorchReplicaSpecs"].values()]
    return []


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def container_argv(c: dict[str, Any]) -> list[str]:
    """What a container runs: ``command`` (else our image's ENTRYPOINT) + ``args`` (else CMD)."""
    entry, cmd = image_argv() if c.get("image", "").startswith(OUR_IMAGE) else ([], [])
    if "command" in c:
        return [*c["command"], *c.get("args", [])]
    return [*entry, *c.get("args", cmd)]


def container_invocations(c: dict[str, Any]) -> list[list[str]]:
    argv = container_argv(c)
    if not argv:
        return []
    if Path(argv[0]).name in ("sh", "bash") and "-c" in argv:
        return shell_invocations(argv[argv.index("-c") + 1])
    if Path(argv[0]).name == "diag":
        return [["diag", *argv[1:]]]
    return []


def all_invocations() -> list[tuple[str, list[str]]]:
    """Every ``diag`` command line under deploy/, with the file it is in."""
    found: list[tuple[str, list[str]]] = []
    entry, cmd = image_argv()
    found.append(("Dockerfile", ["diag", *cmd] if entry == ["diag"] else [*entry, *cmd]))
    for w, rest in dockerfile_instructions():
        if w == "RUN":
            found += [("Dockerfile", a) for a in shell_invocations(rest)]
    for path, doc in k8s_docs():
        for spec in pod_specs(doc):
            for c in containers(spec):
                found += [(path.name, a) for a in container_invocations(c)]
    for path in sorted(SLURM.iterdir()):
        found += [(path.name, a) for a in shell_invocations(path.read_text())]
    return found


def _opt(argv: list[str], name: str) -> str | None:
    for i, tok in enumerate(argv):
        if tok == "--":
            return None
        if tok == name and i + 1 < len(argv):
            return argv[i + 1]
        if tok.startswith(name + "="):
            return tok.split("=", 1)[1]
    return None


# ------------------------------------------------------------------------------------ the environment


def _diag_constant(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"DIAG_[A-Z0-9_]+", node.value):
        return node.value
    return None


def _read_variable(node: ast.AST) -> str | None:
    """The ``DIAG_*`` name this node reads: ``x.get("DIAG_X")``/``getenv``/``pop``/``setdefault``,
    ``environ["DIAG_X"]``, or ``SOMETHING_ENV = "DIAG_X"``; else None."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("get", "getenv", "pop", "setdefault"):
        return _diag_constant(node.args[0])
    if isinstance(node, ast.Subscript):
        return _diag_constant(node.slice)
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.endswith("_ENV") for t in node.targets):
        return _diag_constant(node.value)
    return None


def package_env_names() -> set[str]:
    """``DIAG_*`` variables the package reads itself (:func:`_read_variable` over diag_service/**.py)."""
    names: set[str] = set()
    for path in (ROOT / "diag_service").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if name := _read_variable(node):
                names.add(name)
    return names


def read_by_settings(var: str, value: str, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the settings model's own environment source takes ``var`` (set to ``value``) as a field."""
    from pydantic_settings import EnvSettingsSource

    from diag_service.service.settings import Settings

    with monkeypatch.context() as m:
        for k in [k for k in os.environ if k.startswith("DIAG_")]:
            m.delenv(k)
        m.setenv(var, value)
        found = EnvSettingsSource(Settings)()
    if not found:
        return False
    for key, value in found.items():  # a nested variable names a field of the nested model (extra="forbid")
        sub = Settings.model_fields[key].annotation
        if (isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel)
                and not set(value) <= set(sub.model_fields)):
            return False
    return True


def deploy_text_files() -> list[Path]:
    return [p for p in sorted(DEPLOY.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]


# --------------------------------------------------------------------------------------- metrics


def metric_families() -> dict[str, tuple[str, set[str]]]:
    """Every series name the service exposes -> (family, its labels), from a fresh :class:`Metrics`."""
    from prometheus_client.metrics import MetricWrapperBase

    from diag_service.service.metrics import Metrics

    out: dict[str, tuple[str, set[str]]] = {}
    for collector in vars(Metrics()).values():
        if not isinstance(collector, MetricWrapperBase):
            continue
        labels = set(collector._labelnames)  # the label names it was declared with
        for fam in collector.describe():
            suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"],
                        "gauge": [""], "summary": ["_sum", "_count", ""]}[fam.type]
            for s in suffixes:
                out[fam.name + s] = (fam.name, labels | ({"le"} if s == "_bucket" else set()))
    return out


def dashboard_queries(dash: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard: panel targets (nested rows too) and query variables."""
    exprs: list[str] = []

    def panels(ps: list[dict[str, Any]]) -> None:
        for p in ps:
            exprs.extend(t["expr"] for t in p.get("targets", []) if "expr" in t)
            panels(p.get("panels", []))

    panels(dash.get("panels", []))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if v.get("type") == "query":
            exprs.append(q["query"] if isinstance(q, dict) else q)
    return exprs


def check_query(expr: str, families: dict[str, tuple[str, set[str]]], routes: set[str]) -> list[str]:
    """Metric names, label names (selectors, ``by``/``without``) and ``route`` values of one query."""
    errors = []
    names = re.findall(r"\b(diag_[a-z0-9_]+)\b", expr)
    if not names:
        errors.append(f"no diag metric in {expr!r}")
    labels: set[str] = set(TARGET_LABELS)
    for n in names:
        if n not in families:
            errors.append(f"no metric {n}")
        else:
            labels |= families[n][1]
    if errors:
        return errors  # the labels of an unknown metric are unknown
    for sel in re.findall(r'\{((?:[^{}"]|"[^"]*")*)\}', expr):
        for lab, _op, val in re.findall(r'([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"([^"]*)"', sel):
            if lab not in labels:
                errors.append(f"no label {lab} on {names}")
            if lab == "route" and "$" not in val and val not in routes:
                errors.append(f"no route {val!r}")
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
        for lab in (x.strip() for x in group.split(",") if x.strip()):
            if lab not in labels:
                errors.append(f"no label {lab} on {names}")
    for call in re.findall(r"label_values\(\s*\w+\s*,\s*(\w+)\s*\)", expr):
        if call not in labels:
            errors.append(f"no label {call} on {names}")
    return errors


def service_routes() -> set[str]:
    from diag_service.service import api, live, ui

    return {r.path for m in (api, live, ui) for r in m.router.routes}  # type: ignore[attr-defined]


# ============================================================================================ tests


def test_every_yaml_parses_and_names_its_kind() -> None:
    kinds = {}
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert files
    for path in files:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert docs, path
        for d in docs:
            assert isinstance(d, dict) and d.get("apiVersion") and d.get("kind"), f"{path}: {str(d)[:80]}"
            kinds[d["kind"]] = d["apiVersion"]
    assert {"Deployment", "Service", "PersistentVolumeClaim", "Secret", "ServiceMonitor", "PyTorchJob"} <= set(kinds)
    assert kinds["PyTorchJob"] == "kubeflow.org/v1"
    assert kinds["ServiceMonitor"] == "monitoring.coreos.com/v1"
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    for res in kust["resources"]:
        assert (K8S / res).is_file(), res


def test_every_diag_command_line_exists_in_the_cli() -> None:
    found = all_invocations()
    where = {(f, a[1]) for f, a in found if len(a) > 1}
    # the ones the files are there for (a missing one means the extraction broke, not that all is well)
    assert {("Dockerfile", "serve"), ("diag-deployment.yaml", "serve"), ("pytorchjob-with-agent.yaml", "watch"),
            ("diag-srun.sh", "watch")} <= where, where
    problems = {f"{f}: {' '.join(a)}: {e}" for f, a in found for e in check_invocation(a)}
    assert not problems, "\n".join(sorted(problems))


@pytest.mark.parametrize(("argv", "expect"), [
    (["diag", "watch", "--job-id", "j", "--log-dirs", "/logs", "--", "torchrun"], "no option --log-dirs"),
    (["diag", "wach", "--job-id", "j"], "not a command"),
    (["diag", "serve", "--port"], "needs a value"),
    (["diag", "serve", "--port", "http"], "--port 'http'"),
    (["diag", "serve", "--hots", "0.0.0.0"], "no option --hots"),
    (["diag", "watch", "--job-id", "j", "/logs", "--", "torchrun"], "takes no argument '/logs'"),
    (["diag", "watch", "--quiet=1", "--job-id", "j"], "is a flag"),
    (["diag", "serve", "--", "x"], "takes no command after --"),
    (["diag", "watch", "--log-dir", "/logs", "--", "torchrun"], "needs --job-id"),
])
def test_check_invocation_catches_mistakes(argv: list[str], expect: str) -> None:
    errors = check_invocation(argv)
    assert any(expect in e for e in errors), errors


def test_shell_extraction_finds_commands_and_examples() -> None:
    script = ('# usage:\n#   diag watch --job-id J \\\n#     --log-dirr D -- torchrun\nset -e\n'
              'until pid=$(pgrep -o -f x); do sleep 1; done\nexec diag watch --job-id "$(JOB)" --pid "$pid" \\\n'
              '  --log-dir /logs -- "$@"\n/usr/local/bin/diag serve --port 1 && echo ok\n')
    found = shell_invocations(script)
    assert found == [["diag", "watch", "--job-id", "J", "--log-dirr", "D", "--", "torchrun"],
                     ["diag", "watch", "--job-id", "$(JOB)", "--pid", "$pid", "--log-dir", "/logs", "--", "$@"],
                     ["diag", "serve", "--port", "1"]]
    assert "`diag watch` has no option --log-dirr" in check_invocation(found[0])
    assert check_invocation(found[1]) == check_invocation(found[2]) == []


def test_every_diag_variable_is_read_by_settings_or_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    package = package_env_names()
    assert {"DIAG_AGENT_TOKEN", "DIAG_HOME", "DIAG_CACHE_DIR", "DIAG_SIGNATURES_PATH"} <= package
    for var in WRAPPER_VARIABLES:  # the wrapper's own names must not mean something to diag as well
        assert var not in package and not read_by_settings(var, "x", monkeypatch), var
    problems = []
    seen: set[str] = set()
    for path in deploy_text_files():
        for var in sorted(set(re.findall(r"\bDIAG_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(errors="replace")))):
            seen.add(var)
            if var in package or read_by_settings(var, "1", monkeypatch):
                continue
            if var in WRAPPER_VARIABLES and path.parent == SLURM:
                continue
            problems.append(f"{path.relative_to(ROOT)}: {var} is neither a setting of diag serve nor read by diag")
    assert not problems, "\n".join(problems)
    assert {"DIAG_TOKENS", "DIAG_AGENT_TOKEN", "DIAG_ALLOWED_HOSTS", "DIAG_URL"} <= seen


def test_variable_check_catches_unknown_names(monkeypatch: pytest.MonkeyPatch) -> None:
    assert read_by_settings("DIAG_RATE_PER_MINUTE", "600", monkeypatch)
    assert read_by_settings("DIAG_LIVE_HEARTBEAT_S", "5", monkeypatch)  # nested: live.heartbeat_s
    assert not read_by_settings("DIAG_TOKEN", "[]", monkeypatch)  # the setting is DIAG_TOKENS
    assert not read_by_settings("DIAG_LIVE_HEARTBEAT", "5", monkeypatch)
    assert "DIAG_AGENT_TOKENS" not in package_env_names()


def _env_of(c: dict[str, Any], secrets: dict[tuple[str, str], str]) -> dict[str, str]:
    """A container's environment as the kubelet would give it (downward API samples, Secret values)."""
    env: dict[str, str] = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), str(e["value"]))
        elif "fieldRef" in e.get("valueFrom", {}):
            env[e["name"]] = FIELD_SAMPLES[e["valueFrom"]["fieldRef"]["fieldPath"]]
        elif "secretKeyRef" in e.get("valueFrom", {}):
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = secrets[(ref["name"], ref["key"])]
    return env


def _secrets() -> dict[tuple[str, str], str]:
    return {(d["metadata"]["name"], k): v for _, d in k8s_docs() if d["kind"] == "Secret"
            for k, v in d.get("stringData", {}).items()}


def _by_kind(kind: str) -> list[dict[str, Any]]:
    return [d for _, d in k8s_docs() if d["kind"] == kind]


def test_kubernetes_references_hold() -> None:
    secrets = _secrets()
    (deploy,) = _by_kind("Deployment")
    (svc,) = _by_kind("Service")
    (mon,) = _by_kind("ServiceMonitor")
    pvcs = {d["metadata"]["name"] for d in _by_kind("PersistentVolumeClaim")}
    routes = service_routes()
    from diag_service.service.middleware import PROBE_PATHS

    pod = deploy["spec"]["template"]
    assert deploy["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (c,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        get = c.get(probe, {}).get("httpGet")
        if get:
            assert get["path"] in PROBE_PATHS and get["path"] in routes, probe
            assert get["port"] in ports or get["port"] in ports.values(), probe
    # the data volume is the PVC, mounted where the image keeps its data (DIAG_HOME)
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]
              if "persistentVolumeClaim" in v}
    assert set(claims.values()) <= pvcs and claims
    image_home = re.search(r"DIAG_HOME=(\S+)", DOCKERFILE.read_text())
    assert image_home
    assert {m["mountPath"] for m in c["volumeMounts"] if m["name"] in claims} == {image_home.group(1)}
    # the port serve listens on is the container port
    assert int(_opt(container_argv(c), "--port") or 8080) in ports.values()
    # Service -> pods, ServiceMonitor -> Service, /metrics
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    for p in svc_ports.values():
        assert p["targetPort"] in ports or p["targetPort"] in ports.values()
    assert mon["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    for ep in mon["spec"]["endpoints"]:
        assert ep["port"] in svc_ports and ep["path"] == "/metrics" and "/metrics" in routes
    # every Secret reference exists
    for _, d in k8s_docs():
        for spec in pod_specs(d):
            for cc in containers(spec):
                for e in cc.get("env", []):
                    ref = e.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        assert (ref["name"], ref["key"]) in secrets, ref


def test_kubernetes_variables_are_defined_before_use() -> None:
    """``$(VAR)`` left undefined stays literal in Kubernetes (no error): every one must be defined in the
    container's env (for an env value: above it)."""
    problems = []
    for path, d in k8s_docs():
        for spec in pod_specs(d):
            for c in containers(spec):
                defined: list[str] = []
                for e in c.get("env", []):
                    for ref in re.findall(r"\$\((\w+)\)", str(e.get("value", ""))):
                        if ref not in defined:
                            problems.append(f"{path.name} {c['name']}: env {e['name']} uses $({ref}) before it is defined")
                    defined.append(e["name"])
                for word in [*c.get("command", []), *c.get("args", [])]:
                    for ref in re.findall(r"\$\((\w+)\)", word):
                        if ref not in defined:
                            problems.append(f"{path.name} {c['name']}: $({ref}) is not in its env")
    assert not problems, "\n".join(problems)


def test_service_settings_from_the_manifests_validate_and_admit_the_agents_host(tmp_path: Path) -> None:
    from diag_service.service.settings import load_settings

    secrets = _secrets()
    (deploy,) = _by_kind("Deployment")
    (c,) = deploy["spec"]["template"]["spec"]["containers"]
    env = {k: v for k, v in _env_of(c, secrets).items() if k.startswith("DIAG_")}
    settings = load_settings(env=env, data_dir=tmp_path)  # raises on any invalid value
    agent_hosts = set()
    agent_tokens = set()
    for job in _by_kind("PyTorchJob"):
        for spec in pod_specs(job):
            for cc in containers(spec):
                for argv in container_invocations(cc):
                    if argv[1] == "watch":
                        service = _opt(argv, "--service")
                        assert service, "the agent posts to the service"
                        agent_hosts.add(urlsplit(service).hostname)
                        agent_tokens.add(_env_of(cc, secrets)["DIAG_AGENT_TOKEN"])
    assert agent_hosts and agent_tokens
    for host in agent_hosts:
        assert host in settings.trusted_hosts, f"agents address the service as {host!r}: it would answer 400"
    by_token = {t.token.get_secret_value(): t.scopes for t in settings.tokens}
    for token in agent_tokens:
        assert by_token.get(token) == ["agent"], "the agents' token is a DIAG_TOKENS entry with the agent scope only"


def test_pytorchjob_agent_shares_the_workers_logs_and_processes() -> None:
    jobs = _by_kind("PyTorchJob")
    assert jobs
    for job in jobs:
        for spec in pod_specs(job):
            assert spec.get("shareProcessNamespace") is True
            cs = {c["name"]: c for c in containers(spec)}
            worker = cs["pytorch"]  # the container name the training operator requires
            agents = [c for c in containers(spec) if any(a[1] == "watch" for a in container_invocations(c))]
            assert len(agents) == 1
            agent = agents[0]
            (watch,) = [a for a in container_invocations(agent) if a[1] == "watch"]
            assert "SYS_PTRACE" in agent["securityContext"]["capabilities"]["add"]
            env = {e["name"]: e for e in agent["env"]}
            assert "secretKeyRef" in env["DIAG_AGENT_TOKEN"]["valueFrom"]
            node = re.fullmatch(r"\$\((\w+)\)", _opt(watch, "--node") or "")
            assert node, "--node $(VAR) from the downward API"
            assert env[node.group(1)]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
            assert _opt(watch, "--pid"), "without --pid the agent samples no stacks"
            # the worker's torchrun --log-dir and the agent's --log-dir are the same emptyDir
            volumes = {v["name"]: v for v in spec["volumes"]}
            wmounts = {m["mountPath"]: m["name"] for m in worker["volumeMounts"]}
            amounts = {m["mountPath"]: m["name"] for m in agent["volumeMounts"]}
            argv = container_argv(worker)
            (torchrun,) = shell_invocations(argv[-1], "torchrun") if "-c" in argv else [argv]
            assert Path(torchrun[0]).name == "torchrun"
            wlog, alog = _opt(torchrun, "--log-dir"), _opt(watch, "--log-dir")
            assert wlog in wmounts and alog in amounts, (wlog, alog)
            assert wmounts[wlog] == amounts[alog] and "emptyDir" in volumes[wmounts[wlog]]


def test_dockerfile_runs_diag_as_a_user_with_a_health_check() -> None:
    instr = dockerfile_instructions()
    words = [w for w, _ in instr]
    froms = [r for w, r in instr if w == "FROM"]
    assert any("python:3.11-slim" in r for w, r in instr if w == "ARG") or any("python:3.11-slim" in f for f in froms)
    users = [r for w, r in instr if w == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    entry, cmd = image_argv()
    assert entry == ["diag"]
    exposed = {int(p.split("/")[0]) for w, r in instr if w == "EXPOSE" for p in r.split()}
    port = int(_opt(["diag", *cmd], "--port") or 8080)
    assert port in exposed
    (health,) = [r for w, r in instr if w == "HEALTHCHECK"]
    assert "healthcheck.py" in health and words.index("HEALTHCHECK") > words.index("USER")
    # every COPY from the build context exists (the build context is the repository root)
    for w, r in instr:
        if w == "COPY" and "--from" not in r:
            *sources, _dest = r.split()
            for s in sources:
                assert (ROOT / s).exists(), s
    # the health check asks the port serve listens on, and leaves an agent alone
    spec = importlib.util.spec_from_file_location("deploy_healthcheck", DEPLOY / "healthcheck.py")
    assert spec and spec.loader
    hc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hc)
    assert hc.serve_port(["/usr/local/bin/python", "/usr/local/bin/diag", *cmd]) == port
    assert hc.serve_port(["diag", "serve", "--port=9000"]) == 9000
    assert hc.serve_port(["diag", "watch", "--job-id", "j", "--", "torchrun"]) is None


def test_dockerfile_parser_reads_continuations() -> None:
    text = 'FROM x\n# c\nRUN a \\\n  && b\nENTRYPOINT ["diag"]\nCMD ["serve", "--port", "1"]\n'
    assert dockerfile_instructions(text) == [("FROM", "x"), ("RUN", "a  && b"), ("ENTRYPOINT", '["diag"]'),
                                             ("CMD", '["serve", "--port", "1"]')]


def test_slurm_scripts_pass_bash_n_and_wrap_the_command() -> None:
    scripts = sorted(p for p in SLURM.iterdir() if p.suffix in (".sh", ".sbatch"))
    assert len(scripts) >= 2
    for p in scripts:
        r = subprocess.run(["bash", "-n", str(p)], capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"{p.name}: {r.stderr}"
    wrapper = SLURM / "diag-srun.sh"
    assert wrapper.stat().st_mode & 0o111, "the wrapper is executable"
    (watch,) = [a for a in shell_invocations(wrapper.read_text()) if a[1] == "watch" and "$@" in a]
    assert watch[-2:] == ["--", "$@"]
    assert _opt(watch, "--job-id") == "$SLURM_JOB_ID"
    assert "DIAG_URL" in (_opt(watch, "--service") or "")
    assert _opt(watch, "--state-dir"), "one spool per node, not ./.diag-watch/JOB on a shared file system"


def test_bash_n_catches_a_syntax_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sh"
    bad.write_text('if [[ -n "$X" ]]; then\n  echo x\n')
    assert subprocess.run(["bash", "-n", str(bad)], capture_output=True, check=False).returncode != 0


def test_dashboard_queries_only_real_metrics_labels_and_routes() -> None:
    dash = json.loads(DASHBOARD.read_text())
    families = metric_families()
    routes = service_routes()
    exprs = dashboard_queries(dash)
    assert exprs
    problems = [f"{e}: {p}" for e in exprs for p in check_query(e, families, routes)]
    assert not problems, "\n".join(problems)
    # every metric of the service is on the dashboard
    shown = {families[n][0] for e in exprs for n in re.findall(r"\b(diag_[a-z0-9_]+)\b", e) if n in families}
    assert shown == {f for f, _ in families.values()}
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))


def test_query_check_catches_wrong_names() -> None:
    families = metric_families()
    routes = service_routes()
    assert check_query("sum(rate(diag_jobs_total[5m]))", families, routes) == []
    assert check_query("sum(rate(diag_job_total[5m]))", families, routes) == ["no metric diag_job_total"]
    assert check_query("sum by (categroy) (diag_diagnoses_total)", families, routes) == \
        ["no label categroy on ['diag_diagnoses_total']"]
    assert check_query('diag_http_request_duration_seconds_count{route="/v1/live/jobs/{job_id}/batch"}', families,
                       routes) == ["no route '/v1/live/jobs/{job_id}/batch'"]
    assert check_query("histogram_quantile(0.9, sum by (le) (rate(diag_queue_depth_bucket[5m])))", families, routes) == \
        ["no metric diag_queue_depth_bucket"]
