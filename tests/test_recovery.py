"""Recovery policy: levels, escalation with history, lemon nodes, idempotence, validation, safety."""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from diag_service.cli import app
from diag_service.domain import Category, Diagnosis, RecoveryLevel, Responsible
from diag_service.pipeline import DiagnoseRequest, diagnose
from diag_service.recovery import ExecutionRefused, History, PolicyError, ShellExecutor, load_policy, recommend

DEV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "incidents_dev"

NETWORK_LOG = (
    "2024-07-26 13:20:01 gpu-node-{n:03d}:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
    "10.0.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n"
)
SOCKET_LOG = (
    "[rank5]:[E207 19:37:09.983600771 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 5] Process group "
    "watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, "
    "NCCL version 2.21.5\nncclRemoteError: A call failed possibly due to a network error or a remote process exiting.\n"
    "Last error:\nsocketProgressOpt: Call to recv from 10.0.24.53<{port}> failed : Broken pipe\n"
)


def _diag(tmp_path: Path, text: str, job: str, name: str = "job.log", **kw) -> Diagnosis:
    d = tmp_path / f"{job}-{abs(hash(text)) % 10**8}"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return diagnose(DiagnoseRequest(**{"path": str(d), "job_id": job, "recovery": False, **kw}))


def test_user_code_is_never_restarted(tmp_path: Path) -> None:
    d = _diag(tmp_path, "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n    x()\n"
                        "KeyError: 'learning_rate'\n", "job-a")
    plan = recommend(d)
    assert d.category is Category.USER_CODE
    assert plan.level is RecoveryLevel.L4 and plan.rule_id == "user_error_hand_off"
    assert plan.fix_hint and "restarting will fail" in plan.fix_hint.lower()


#: a torchrun job killed mid-training (a new user's trial: kill -9 of rank 1): steps logged, then only the agent's report
KILLED_WHILE_TRAINING = "".join(f"step {i} loss 0.27 103.7 ms/step\n" for i in range(40)) + (
    "W1205 02:36:12.480000 29130 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 29135 closing "
    "signal SIGTERM\n"
    "E1205 02:36:12.601000 29130 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) "
    "local_rank: 1 (pid: 29136) of binary: /usr/bin/python3\n")


def test_a_bare_kill_of_a_training_job_is_checked_then_restarted_not_handed_off(tmp_path: Path) -> None:
    d = _diag(tmp_path, KILLED_WHILE_TRAINING, "job-k")
    plan = recommend(d)
    assert d.category is Category.HOST_OOM and d.confidence < 0.5 and d.trained
    assert plan.level is RecoveryLevel.L2 and plan.rule_id == "unconfirmed_kill_restart"
    assert "dmesg" in plan.action


def test_transient_network_escalates_on_repeat(tmp_path: Path) -> None:
    hist = History(tmp_path / "h.sqlite")
    levels = []
    for i in range(3):
        d = _diag(tmp_path, SOCKET_LOG.format(port=49900 + i), "job-net")
        plan = recommend(d, history=hist)
        levels.append((plan.level, plan.rule_id, plan.backoff_s))
    assert levels[0][:2] == (RecoveryLevel.L2, "network_transient")
    assert levels[1][0] is RecoveryLevel.L2 and levels[1][2] == 2 * levels[0][2]  # exponential back-off
    assert levels[2][:2] == (RecoveryLevel.L3, "network_repeat")


def test_lemon_node_detected_across_jobs(tmp_path: Path) -> None:
    hist = History(tmp_path / "h.sqlite")
    pol = load_policy()
    plans = []
    for j in range(3):
        text = (f"Jul 26 13:2{j}:01 gpu-node-007 kernel: NVRM: Xid (PCI:0000:3b:00): 92, pid=1, "
                "High single-bit ECC error rate\n")
        d = _diag(tmp_path, text, f"job-{j}", name="gpu-node-007.dmesg.log")
        assert d.faulty_nodes == ["gpu-node-007"]
        plans.append(recommend(d, pol, hist))
    # Xid 92 (high single-bit ECC rate) is not in the hard list: restart, then cordon when it repeats.
    assert [p.level for p in plans] == [RecoveryLevel.L2, RecoveryLevel.L3, RecoveryLevel.L3]
    assert [p.rule_id for p in plans] == ["gpu_soft_fault", "gpu_soft_fault_repeat", "lemon_node"]
    assert hist.lemon_nodes(threshold=3, window_s=7 * 86400) == [("gpu-node-007", 3)]


def test_same_diagnosis_twice_gives_one_action(tmp_path: Path) -> None:
    hist = History(tmp_path / "h.sqlite")
    d = _diag(tmp_path, NETWORK_LOG.format(n=40), "job-x")
    p1 = recommend(d, history=hist)
    p2 = recommend(d, history=hist)
    assert p1 == p2
    rows = [r for r in hist.audit_rows() if r[1] == "recommendation"]
    assert len(rows) == 1
    assert hist.job_restarts("job-x") == 1
    hist.close()
    again = History(tmp_path / "h.sqlite")  # persists across restarts of the service
    assert recommend(d, history=again) == p1
    assert again.job_restarts("job-x") == 1


def test_straggler_node_is_drained_at_next_checkpoint() -> None:
    d = Diagnosis.model_validate(
        {
            "failure_mode": "fail_slow", "category": "gpu_hardware", "responsible": "platform", "confidence": 0.8,
            "root_cause": {"summary": "rank 9 on gpu-node-002 is 1.4x slower", "evidence": []},
            "faulty_nodes": ["gpu-node-002"], "input": {"path": "timing.jsonl"}, "job_id": "job-slow",
        }
    )
    plan = recommend(d, platform="slurm")
    assert plan.level is RecoveryLevel.L3 and plan.timing == "next_checkpoint"
    assert plan.rule_id == "straggler_drain_at_checkpoint"
    assert any("state=drain" in c and "gpu-node-002" in c for c in plan.commands)


@pytest.mark.skipif(not (DEV / "labels.jsonl").exists(), reason="shared incidents_dev absent")
def test_levels_agree_with_labelled_recoveries() -> None:
    """Our reading of each labelled recovery_action as a level (eval/recovery_levels_dev.yaml)."""
    import yaml

    truth = yaml.safe_load((Path(__file__).resolve().parents[1] / "eval" / "recovery_levels_dev.yaml").read_text())
    agree = 0
    for case_id, level in truth["levels"].items():
        d = diagnose(DiagnoseRequest(path=str(DEV / "logs" / f"{case_id}.log")))
        assert d.recovery is not None
        agree += d.recovery.level.value == level
        if d.category in (Category.USER_CODE, Category.CONFIG, Category.DATA):
            assert d.recovery.level not in (RecoveryLevel.L0, RecoveryLevel.L1)
    assert agree / len(truth["levels"]) >= 0.85


@pytest.mark.parametrize(
    ("edit", "line_text"),
    [
        (lambda s: s.replace("level: L4\n    action: Stop; a restart", "level: L9\n    action: Stop; a restart"), "level: L9"),
        (lambda s: s.replace("has_faulty_nodes: true, repeat_offender: true", "has_faulty_nodes: true, repeat_offenders: true"),
         "repeat_offenders: true"),
        (lambda s: s.replace("summary_matches: '(?i)collective mismatch'", "summary_matches: '(unclosed'"), "(unclosed"),
    ],
)
def test_invalid_policy_names_the_line(tmp_path: Path, edit, line_text: str) -> None:
    from diag_service.recovery import default_policy_path

    text = edit(default_policy_path().read_text())
    bad = tmp_path / "policy.yaml"
    bad.write_text(text)
    with pytest.raises(PolicyError) as exc:
        load_policy(bad)
    msg = str(exc.value)
    line_no = int(msg.split(":")[1])
    assert line_text in text.splitlines()[line_no - 1], msg


def test_execution_is_off_unless_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIAG_EXECUTOR", raising=False)
    with pytest.raises(ExecutionRefused):
        ShellExecutor()
    # With the executor configured, only allow-listed binaries run; a fake kubectl records its calls.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.txt"
    fake = bindir / "kubectl"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    d = _diag(tmp_path, NETWORK_LOG.format(n=41), "job-exec")
    plan = recommend(d)
    out = ShellExecutor().run(plan)
    assert len(out) == len(plan.commands) and "cordon gpu-node-041" in log.read_text()


def test_cli_recover_dry_run(tmp_path: Path) -> None:
    d = _diag(tmp_path, NETWORK_LOG.format(n=42), "job-cli")
    f = tmp_path / "diag.json"
    f.write_text(d.model_dump_json())
    res = CliRunner().invoke(app, ["recover", str(f), "--platform", "slurm", "--json", "--history", str(tmp_path / "h.db")])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["level"] == "L3" and any("scontrol update nodename=gpu-node-042" in c for c in plan["commands"])
    res = CliRunner().invoke(app, ["recover", str(f), "--execute"], env={"DIAG_EXECUTOR": ""})
    assert res.exit_code == 4


def test_kubernetes_commands_never_use_a_name_kubernetes_would_reject() -> None:
    base = {
        "failure_mode": "fail_slow", "category": "gpu_hardware", "responsible": "platform", "confidence": 0.8,
        "root_cause": {"summary": "rank 9 on gpu-node-002 is 1.4x slower", "evidence": []},
        "faulty_nodes": ["gpu-node-002"], "input": {"path": "timing.jsonl"},
    }
    bad = recommend(Diagnosis.model_validate({**base, "job_id": "004-slow_rank_comm"}), platform="kubernetes")
    assert bad.commands[0].startswith("# '004-slow_rank_comm' is not a Kubernetes object name")
    assert not any("slow_rank_comm" in c for c in bad.commands[1:]) and any("job-name=JOB_NAME" in c for c in bad.commands)
    good = recommend(Diagnosis.model_validate({**base, "job_id": "llama-70b-run7"}), platform="kubernetes")
    assert any("job-name=llama-70b-run7" in c for c in good.commands) and not good.commands[0].startswith("#")
    slurm = recommend(Diagnosis.model_validate({**base, "job_id": "4242_7"}), platform="slurm")
    assert not any(c.startswith("#") for c in slurm.commands)  # Slurm ids are not Kubernetes names
    assert "scontrol requeuehold 4242_7" in slurm.commands  # excnodelist is changed while the job is held
    named = recommend(Diagnosis.model_validate({**base, "job_id": "my_job_7"}), platform="slurm")
    assert named.commands[0].startswith("# 'my_job_7' is not a Slurm job id")
    assert not any("my_job_7" in c for c in named.commands[1:]) and "scontrol release JOB_NAME" in named.commands


HOSTILE_NODES = ["--selector=kubernetes.io/os=linux", "--all", "gpu[001-512]", "--force", "node;reboot", "gpu-node-007"]


@pytest.mark.parametrize("platform", ["kubernetes", "slurm"])
def test_node_names_from_logs_never_become_command_options(platform: str) -> None:
    d = Diagnosis.model_validate({
        "failure_mode": "fail_slow", "category": "gpu_hardware", "responsible": "platform", "confidence": 0.8,
        "root_cause": {"summary": "rank 9 is 1.4x slower", "evidence": []}, "job_id": "4242",
        "faulty_nodes": HOSTILE_NODES, "input": {"path": "job.log"},
    })
    plan = recommend(d, platform=platform)
    assert plan.level is RecoveryLevel.L3
    runnable = [c for c in plan.commands if not c.lstrip().startswith("#")]
    for bad in HOSTILE_NODES[:-1]:
        assert not any(bad in shlex.split(c.split("  #")[0]) or f"={bad}" in c for c in runnable), (bad, runnable)
    if platform == "kubernetes":
        for bad in HOSTILE_NODES[:-1]:
            assert any(c.startswith("# node name refused: ") and repr(bad) in c for c in plan.commands)
        assert any("gpu-node-007" in c for c in runnable) and plan.refused is None
    else:  # a Slurm hostlist is counted: 512 nodes, so the plan is refused for execution and all comments
        assert "would act on 513 nodes" in (plan.refused or "") and not runnable


def test_a_plan_on_more_nodes_than_the_policy_allows_is_never_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = Diagnosis.model_validate({
        "failure_mode": "fail_slow", "category": "gpu_hardware", "responsible": "platform", "confidence": 0.8,
        "root_cause": {"summary": "40 nodes slow", "evidence": []}, "job_id": "llama-run",
        "faulty_nodes": [f"gpu-node-{i:03d}" for i in range(40)], "input": {"path": "job.log"},
    })
    plan = recommend(d, platform="kubernetes")
    assert plan.commands[0].startswith("# refused: this plan would act on 40 nodes")
    assert all(c.lstrip().startswith("#") for c in plan.commands)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls.txt"
    fake = bindir / "kubectl"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    with pytest.raises(ExecutionRefused, match="40 nodes") as err:
        ShellExecutor().run(plan)
    assert err.value.kind.value == "refused" and not calls.exists()


def test_a_command_holding_a_placeholder_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    d = Diagnosis.model_validate({
        "failure_mode": "fail_slow", "category": "gpu_hardware", "responsible": "platform", "confidence": 0.8,
        "root_cause": {"summary": "a node is slow", "evidence": []}, "job_id": "4242", "faulty_nodes": ["--all"],
        "input": {"path": "job.log"},
    })
    plan = recommend(d, platform="slurm")  # no usable node name: the commands say NODE
    assert any("nodename=NODE" in c for c in plan.commands)
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    with pytest.raises(ExecutionRefused, match="placeholder"):
        ShellExecutor().run(plan)


def test_shared_memory_too_small_is_handed_over_not_restarted(tmp_path: Path) -> None:
    # NCCL could not create its shared-memory segment: a restart as it is fails the same way.
    log = tmp_path / "rank0.log"
    log.write_text(
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n"
        "[rank0]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
        "[rank0]: Last error:\n"
        "[rank0]: Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)\n"
    )
    d = diagnose(DiagnoseRequest(path=str(log)))
    assert d.category.value == "storage"
    assert d.recovery is not None and d.recovery.rule_id == "shared_memory_too_small"
    assert d.recovery.level.value == "L4"


_AGENT_FAILURE = (
    "[2024-05-02 10:00:01,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
    "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    "Root Cause (first observed failure):\n[0]:\n  time      : 2024-05-02_10:00:01\n  host      : gpu-node-001\n"
    "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 4242)\n  error_file: <N/A>\n"
)


@pytest.mark.parametrize(
    ("before", "trained", "level", "rule"),
    [
        ("", False, RecoveryLevel.L4, "failed_before_training"),
        # data preparation prints progress bars but no loss: still set-up
        ("Running tokenizer on dataset:  38%|###8      | 32066/85249 [32:12<53:25, 16.59ba/s]\n",
         False, RecoveryLevel.L4, "failed_before_training"),
        # a configuration dump names the loss scaler, not a loss value
        ("[2024-05-02 09:59:01,000] [INFO] [config.py:1000:print]   dynamic_loss_scale_args ...... {'init_scale': "
         "65536, 'scale_window': 1000, 'delayed_shift': 2, 'min_scale': 1}, 'loss_scale': 0, min_loss_scale=1\n",
         False, RecoveryLevel.L4, "failed_before_training"),
        ("{'loss': 2.0491, 'learning_rate': 0.0001961913563176343, 'epoch': 0.28}\n", True, RecoveryLevel.L2,
         "default_restart_once"),
        (" iteration      100/  500000 | consumed samples:        51200 | elapsed time per iteration (ms): 812.3 | "
         "learning rate: 1.500E-04 | global batch size:   512 | lm loss: 7.351832E+00 | loss scale: 65536.0 |\n",
         True, RecoveryLevel.L2, "default_restart_once"),
        # a loop printing its step, no loss (zoo dev oom_worker_killed): the counter advanced, so it trained
        ("rank 0 epoch 0 step 0\nrank 1 epoch 0 step 0\nrank 1 epoch 0 step 20\n", True, RecoveryLevel.L2,
         "default_restart_once"),
        # a checkpoint written at step 50 (zoo dev st_disk_full_ckpt's only line before the failure)
        ("[default0]:saved /mnt/ckpt/step_000050.pt\n", True, RecoveryLevel.L2, "default_restart_once"),
        # a Trainer's header counts the steps to take and a resume names the step it starts from: no step taken
        ("  Total optimization steps = 1,000\n  Gradient Accumulation steps = 4\n"
         "  Continuing training from global step 500\n  Will skip the first 0 epochs then the first 500 batches\n",
         False, RecoveryLevel.L4, "failed_before_training"),
        # a step line printed once (at step 0) is no progress yet
        ("rank 0 epoch 0 step 0\n", False, RecoveryLevel.L4, "failed_before_training"),
    ],
)
def test_a_failure_before_any_training_step_is_handed_over(tmp_path: Path, before: str, trained: bool,
                                                            level: RecoveryLevel, rule: str) -> None:
    # The same unexplained worker exit: after logged training steps a restart from checkpoint is the
    # cheapest try; with no loss line before it the job failed in set-up and would fail the same way.
    d = _diag(tmp_path, before + _AGENT_FAILURE, "job-setup")
    assert d.category is Category.UNKNOWN
    assert d.trained is trained
    plan = recommend(d)
    assert (plan.level, plan.rule_id) == (level, rule)


def test_a_network_error_without_loss_lines_is_still_retried(tmp_path: Path) -> None:
    d = _diag(tmp_path, SOCKET_LOG.format(port=49901), "job-net-once")
    assert d.trained is False
    assert recommend(d).rule_id == "network_transient"

# --- hostile values from log text (issue 19, finding 2) ---------------------------------------------

def _elastic_log(host: str) -> str:
    """A rank's uncorrectable ECC error and torchrun's ChildFailedError report naming ``host``."""
    return f"""[rank0]: Traceback (most recent call last):
[rank0]:   File "/app/train.py", line 88, in <module>
[rank0]:     loss.backward()
[rank0]: RuntimeError: CUDA error: uncorrectable ECC error encountered
E1129 08:59:09.260000 5021 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) \
local_rank: 0 (pid: 5044) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_08:59:09
  host      : {host}
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 5044)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


class _FakeRunner:
    """Stands in for the subprocess runner: records each argv, runs nothing, exits 0."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], timeout_s: float) -> int:
        self.calls.append(argv)
        return 0


@pytest.mark.parametrize("host", ["--selector=kubernetes.io/os=linux", "--all", "gpu[001-512]"])
def test_hosts_from_a_torchelastic_report_never_become_cluster_commands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    d = _diag(tmp_path, _elastic_log(host), "llama-run", name="console.log")
    # an option is no host name: the diagnosis keeps it out of faulty_nodes; a hostlist is one
    assert d.category is Category.GPU_HARDWARE and d.faulty_nodes == ([] if host.startswith("-") else [host])
    # a diagnosis JSON written by something else may still carry it: the recovery refuses it on its own
    d = d.model_copy(update={"faulty_nodes": [host]})
    f = tmp_path / "diag.json"
    f.write_text(d.model_dump_json())
    for platform in ("kubernetes", "volcano", "slurm"):
        plan = recommend(d, platform=platform)
        assert plan.level is RecoveryLevel.L3
        for c in plan.commands:
            if c.lstrip().startswith("#"):
                continue
            argv = shlex.split(c.split("  #")[0])
            assert host not in argv and not any(a.endswith("=" + host) for a in argv), c
            if argv[:2] in (["kubectl", "cordon"], ["kubectl", "drain"], ["kubectl", "label"]):
                assert argv[2 if argv[1] != "label" else 3] == "NODE", c
    runner = _FakeRunner()
    monkeypatch.setattr(sys.modules["diag_service.recovery.recommend"], "run_subprocess", runner)
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    for platform in ("kubernetes", "slurm"):
        res = CliRunner().invoke(app, ["recover", str(f), "--platform", platform, "--execute"])
        assert res.exit_code == 4, res.output
    assert runner.calls == []


def test_a_valid_node_from_the_same_report_is_executed_through_the_runner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _diag(tmp_path, _elastic_log("gpu-node-07"), "llama-run", name="console.log")
    f = tmp_path / "diag.json"
    f.write_text(d.model_dump_json())
    runner = _FakeRunner()
    monkeypatch.setattr(sys.modules["diag_service.recovery.recommend"], "run_subprocess", runner)
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    res = CliRunner().invoke(app, ["recover", str(f), "--platform", "kubernetes", "--execute"])
    assert res.exit_code == 0, res.output
    assert runner.calls[0] == ["kubectl", "cordon", "gpu-node-07"] and len(runner.calls) == 4
    assert "kubectl cordon gpu-node-07 -> exit 0" in res.stdout


def test_a_slurm_hostlist_is_counted_expanded_and_excluded_in_one_argument() -> None:
    from diag_service.recovery.hostlist import HostlistError, count_hosts, expand_hosts

    assert count_hosts("gpu[001-512]") == 512 and count_hosts("gpu[0-999999999999]") == 10**12  # counted, not built
    assert expand_hosts("gpu[008-010,3],login1", 8) == ["gpu008", "gpu009", "gpu010", "gpu3", "login1"]
    assert expand_hosts("r[1-2]n[01-02]", 8) == ["r1n01", "r1n02", "r2n01", "r2n02"]
    for bad in ("gpu[", "gpu]", "gpu[[1]]", "gpu[a-b]", "gpu[9-1]", "a,,b", "x" * 2000):
        with pytest.raises(HostlistError):
            count_hosts(bad)
    with pytest.raises(HostlistError, match="512 nodes"):
        expand_hosts("gpu[001-512]", 8)
    d = Diagnosis.model_validate({
        "failure_mode": "fail_slow", "category": "gpu_hardware", "responsible": "platform", "confidence": 0.9,
        "root_cause": {"summary": "ranks on three nodes are 1.3x slower", "evidence": []}, "job_id": "4242",
        "faulty_nodes": ["gpu[001-003]", "--all"], "input": {"path": "job.log"},
    })
    plan = recommend(d, platform="slurm")
    assert plan.refused is None
    drained = [c for c in plan.commands if c.startswith("scontrol update nodename=")]
    assert [c.split()[2] for c in drained] == ["nodename=gpu001", "nodename=gpu002", "nodename=gpu003"]
    assert "scontrol update jobid=4242 excnodelist=gpu001,gpu002,gpu003" in plan.commands  # an update replaces the list
    assert any(c.startswith("# node name refused: '--all'") for c in plan.commands)
    nine = recommend(d.model_copy(update={"faulty_nodes": ["gpu[001-003]", "gpu[010-015]"]}), platform="slurm")
    assert "would act on 9 nodes" in (nine.refused or "") and all(c.startswith("#") for c in nine.commands)


def test_a_bad_namespace_is_never_put_in_a_command(monkeypatch: pytest.MonkeyPatch) -> None:
    d = Diagnosis.model_validate({
        "failure_mode": "fail_stop", "category": "network", "responsible": "platform", "confidence": 0.6,
        "root_cause": {"summary": "NCCL network error", "evidence": []}, "job_id": "llama-run", "input": {"path": "j.log"},
    })
    plan = recommend(d, platform="kubernetes", namespace="--all-namespaces")
    assert plan.commands[0].startswith("# namespace refused: '--all-namespaces' is not a Kubernetes namespace")
    assert not any("--all-namespaces" in c for c in plan.commands[1:]) and any("-n NAMESPACE" in c for c in plan.commands)
    runner = _FakeRunner()
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    with pytest.raises(ExecutionRefused, match="placeholder") as exc:
        ShellExecutor(runner=runner).run(plan)
    assert runner.calls == []
    assert "namespace refused: '--all-namespaces'" in str(exc.value)  # says why the value is not there


def test_the_executor_checks_the_whole_plan_before_running_any_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from diag_service.domain import RecoveryPlan

    plan = RecoveryPlan(level=RecoveryLevel.L3, action="cordon", rule_id="r", reason="r", platform="slurm",
                        idempotency_key="k", commands=["scontrol requeuehold 4242", "scontrol update nodename=NODE state=drain"])
    runner = _FakeRunner()
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    with pytest.raises(ExecutionRefused, match="placeholder"):
        ShellExecutor(runner=runner).run(plan)
    assert runner.calls == []  # the requeue before the bad command did not run either


def test_a_policy_whose_name_rule_accepts_an_option_is_refused_at_load(tmp_path: Path) -> None:
    text = load_policy().source
    body = Path(text).read_text()
    bad = body.replace("slurm: {pattern: '(?=.{1,64}$)[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?'",
                       "slurm: {pattern: '[A-Za-z0-9_.=-]+'")
    assert bad != body
    f = tmp_path / "policy.yaml"
    f.write_text(bad)
    with pytest.raises(PolicyError, match="must never start with '-'"):
        load_policy(f)


def test_the_plan_speaks_the_scheduler_the_logs_show(tmp_path: Path) -> None:
    slurm = (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=123456.0. Some of the step tasks have been OOM Killed.\n"
        "srun: error: gpu-node-001: task 3: Out Of Memory\n"
    )
    d = tmp_path / "slurm"
    d.mkdir()
    (d / "slurm-123456.out").write_text(slurm)
    plan = diagnose(DiagnoseRequest(path=str(d), job_id="123456")).recovery
    assert plan is not None and plan.platform == "slurm"
    assert any(c.startswith("scontrol ") for c in plan.commands)
    # asked for explicitly, the platform is the caller's; with no marks at all it is the job's own launcher
    assert diagnose(DiagnoseRequest(path=str(d), job_id="123456", platform="kubernetes")).recovery.platform == "kubernetes"
    k = tmp_path / "k"
    k.mkdir()
    (k / "train.log").write_text("Traceback (most recent call last):\nKeyError: 'lr'\n")
    assert diagnose(DiagnoseRequest(path=str(k))).recovery.platform == "torchrun"


def test_a_restart_storm_stops_the_restarts(tmp_path: Path) -> None:
    # A lost NCCL peer is restarted from checkpoint (with back-off), then its node cordoned; after three
    # restarts of the same job the fourth failure is handed over instead of restarted again.
    hist = History(tmp_path / "h.sqlite")
    levels = []
    for i in range(4):
        d = _diag(tmp_path, SOCKET_LOG.format(port=49910 + i), "job-storm")
        plan = recommend(d, history=hist)
        levels.append((plan.level, plan.rule_id))
    assert [lv for lv, _ in levels[:3]] != [RecoveryLevel.L4] * 3
    assert levels[3] == (RecoveryLevel.L4, "restart_storm")


def test_recover_execute_says_whether_anything_ran_never_dry_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _diag(tmp_path, _elastic_log("gpu-node-07"), "llama-run", name="console.log")
    f = tmp_path / "diag.json"
    f.write_text(d.model_dump_json())
    runner = _FakeRunner()
    monkeypatch.setattr(sys.modules["diag_service.recovery.recommend"], "run_subprocess", runner)
    wide = {"COLUMNS": "400"}
    # asked to execute with the executor off: the plan is shown as not executed, with the reason; exit 4
    res = CliRunner().invoke(app, ["recover", str(f), "--platform", "kubernetes", "--execute"], env={**wide, "DIAG_EXECUTOR": ""})
    assert res.exit_code == 4 and runner.calls == []
    assert "dry-run" not in res.output and "not executed" in res.output
    assert "execution is off" in res.stdout and "DIAG_EXECUTOR=shell" in res.stdout
    # executed: the title and the JSON say so
    monkeypatch.setenv("DIAG_EXECUTOR", "shell")
    res = CliRunner().invoke(app, ["recover", str(f), "--platform", "kubernetes", "--execute"], env=wide)
    assert res.exit_code == 0 and runner.calls
    assert "dry-run" not in res.stdout and "executed)" in res.stdout
    res = CliRunner().invoke(app, ["recover", str(f), "--platform", "kubernetes", "--execute", "--json"], env=wide)
    assert json.loads(res.stdout)["executed"] is True
    # without --execute it is a dry-run, as before
    res = CliRunner().invoke(app, ["recover", str(f), "--platform", "kubernetes"], env=wide)
    assert "dry-run)" in res.stdout and json.loads(
        CliRunner().invoke(app, ["recover", str(f), "--platform", "kubernetes", "--json"]).stdout)["executed"] is False


@pytest.mark.parametrize("host", ["--all", "--selector=kubernetes.io/os=linux", "gpu-node-07;reboot", "$(hostname)"])
def test_a_refused_node_name_stays_out_of_faulty_nodes_and_is_named_in_a_finding(tmp_path: Path, host: str) -> None:
    d = _diag(tmp_path, _elastic_log(host), "llama-run", name="console.log")
    assert d.category is Category.GPU_HARDWARE and d.first_failing_rank == 0
    assert d.faulty_nodes == []
    assert host not in json.loads(d.model_dump_json())["faulty_nodes"]
    assert any("not host names" in f and repr(host) in f for f in d.findings), d.findings
    good = _diag(tmp_path, _elastic_log("gpu-node-07"), "llama-run-2", name="console.log")
    assert good.faulty_nodes == ["gpu-node-07"] and not any("not host names" in f for f in good.findings)


#: torchelastic's failure table of a rank aborted before any training step (public corpus dev case hf-039,
#: huggingface/diffusers): no category, and the policy hands a set-up failure to the job owner.
ABORT_BEFORE_TRAINING = """\
========================================================
train_dreambooth_lora_lumina2_ghibli.py FAILED
--------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
--------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-04-17_11:06:23
  host      : gpu-node-001
  rank      : 3 (local_rank: 3)
  exitcode  : -6 (pid: 2219722)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 2219722
========================================================
"""


def test_who_acts_is_the_same_in_the_diagnosis_and_its_hand_off(tmp_path: Path) -> None:
    d = _diag(tmp_path, ABORT_BEFORE_TRAINING, "lumina", recovery=True, kb=False, llm=False)
    plan = d.recovery
    assert plan is not None and plan.level is RecoveryLevel.L4 and "job owner" in plan.action
    assert d.category is Category.UNKNOWN  # its category alone would make it the platform's
    assert plan.responsible is Responsible.USER and d.responsible is Responsible.USER
    assert any(plan.rule_id in f for f in d.findings if f.startswith("Responsible:"))
    res = CliRunner().invoke(app, ["diagnose", str(next(tmp_path.iterdir())), "--no-kb", "--no-llm"],
                             env={"COLUMNS": "400"})
    assert "responsible user" in res.stdout and "who acts: the job owner" in res.stdout
    # a user-caused failure: the rule and the category agree, nothing is added
    d = _diag(tmp_path, "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n    x()\n"
                        "KeyError: 'learning_rate'\n", "job-k", recovery=True, kb=False, llm=False)
    assert d.responsible is Responsible.USER and d.recovery is not None and d.recovery.responsible is Responsible.USER
    assert not any(f.startswith("Responsible:") for f in d.findings)


def test_every_policy_rule_that_hands_to_the_job_owner_says_who_acts() -> None:
    for rule in load_policy().rules:
        if "job owner" in rule.action and "on-call" not in rule.action:
            assert rule.responsible is Responsible.USER, rule.id


def test_no_scheduler_in_the_logs_gets_the_launchers_steps_as_comments(tmp_path: Path) -> None:
    """A plain torchrun log (no srun/slurmstepd, kubelet or PyTorchJob line) is not given kubectl commands: the plan
    is the launcher's steps, as comments nothing executes."""
    d = _diag(tmp_path, KILLED_WHILE_TRAINING, "job-t", recovery=True)
    assert d.recovery is not None and d.recovery.platform == "torchrun" and d.recovery.level is RecoveryLevel.L2
    assert d.recovery.commands and all(c.startswith("# ") for c in d.recovery.commands)
    assert not any("kubectl" in c for c in d.recovery.commands)


def test_host_names_in_the_launchers_steps_are_checked_too() -> None:
    d = Diagnosis.model_validate({
        "failure_mode": "fail_slow", "category": "gpu_hardware", "responsible": "platform", "confidence": 0.8,
        "root_cause": {"summary": "rank 9 is 1.4x slower", "evidence": []}, "job_id": "run 7",
        "faulty_nodes": [*HOSTILE_NODES, "gpu-node-008\nrm -rf /"], "input": {"path": "job.log"},
    })
    plan = recommend(d, platform="torchrun")
    assert plan.level is RecoveryLevel.L3
    assert all(c.startswith("#") and "\n" not in c for c in plan.commands)
    assert any("take gpu-node-007 out of service" in c for c in plan.commands)
    assert not any("take node;reboot" in c or "take --all" in c for c in plan.commands)


def test_recover_keeps_the_platform_of_the_saved_diagnosis(tmp_path: Path) -> None:
    """`diag recover DIAG.json` without --platform speaks the platform the diagnosis' own plan chose (a plain torchrun
    log: the launcher's steps, no kubectl for a job without pods); --platform still overrides it."""
    d = _diag(tmp_path, KILLED_WHILE_TRAINING, "job-r", recovery=True)
    assert d.recovery is not None and d.recovery.platform == "torchrun"
    f = tmp_path / "diag.json"
    f.write_text(d.model_dump_json())
    plan = json.loads(CliRunner().invoke(app, ["recover", str(f), "--json"]).stdout)
    assert plan["platform"] == "torchrun" and not any("kubectl" in c for c in plan["commands"])
    plan = json.loads(CliRunner().invoke(app, ["recover", str(f), "--json", "--platform", "slurm"]).stdout)
    assert plan["platform"] == "slurm"


SLURM_KILLED = KILLED_WHILE_TRAINING + (
    "srun: error: gpu-node-002: task 1: Killed\n"
    "slurmstepd: error: *** STEP 48213.0 ON gpu-node-001 CANCELLED AT 2026-12-04T09:27:43 ***\n"
    "srun: error: gpu-node-001: task 0: Terminated\n")


def test_slurms_own_job_id_is_offered_but_never_run_by_the_service(tmp_path: Path) -> None:
    """Logs named after their file ('job.log') carry Slurm's job id in slurmstepd's lines: the plan names it, for a
    person to confirm (logs are untrusted: a log must not choose which job the service requeues), so it is refused for
    execution and its commands are comments; given --job-id, the caller's id is used and may run."""
    d = _diag(tmp_path, SLURM_KILLED, "run_7", recovery=True)
    assert d.scheduler_job_id == "48213" and d.recovery is not None and d.recovery.platform == "slurm"
    assert d.recovery.refused is not None and "comes from the logs" in d.recovery.refused
    assert any(c.startswith("# scontrol requeue 48213") for c in d.recovery.commands)
    assert all(c.startswith("#") for c in d.recovery.commands)
    given = _diag(tmp_path, SLURM_KILLED, "48213", recovery=True)
    assert given.recovery is not None and given.recovery.refused is None
    assert "scontrol requeue 48213" in given.recovery.commands
    # a batch job's output file names it too
    named = _diag(tmp_path, KILLED_WHILE_TRAINING + "srun: error: gpu-node-002: task 1: Killed\n", "x",
                  name="slurm-7731_4.out", recovery=True)
    assert named.scheduler_job_id == "7731_4"


def test_the_namespace_the_logs_state_is_shown_not_run(tmp_path: Path) -> None:
    """kubectl describe's ``Namespace:`` line (a new user's trial: "-n default" for a pod in ml-train): the commands
    name that namespace, and a plan whose namespace comes from log text is not run by the service; a caller's
    namespace, or none in the logs ("default"), keeps the plan executable."""
    describe = ("Name:         bert-ft-worker-1\nNamespace:    ml-train\nLabels:       training.kubeflow.org/job-name=bert-ft\n"
                "    State:          Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n")
    d = _diag(tmp_path, describe, "bert-ft", name="describe_pod.txt")
    assert d.k8s_namespace == "ml-train"
    plan = recommend(d, platform="kubernetes")
    assert any("-n ml-train" in c for c in plan.commands) and plan.refused and "ml-train" in plan.refused
    mine = recommend(d, platform="kubernetes", namespace="team-a")
    assert any("-n team-a" in c for c in mine.commands) and not mine.refused
    quiet = _diag(tmp_path, describe.replace("Namespace:    ml-train\n", ""), "bert-ft", name="describe_pod.txt")
    plain = recommend(quiet, platform="kubernetes")
    assert quiet.k8s_namespace is None and any("-n default" in c for c in plain.commands) and not plain.refused
