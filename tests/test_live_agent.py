"""The node agent of `diag watch` (issue 22): tailing, failure and hang decisions, spooling and sending.

Log text is what torchrun and the lab's training script print (lines from the real lab runs in
tests/fixtures); time is a fake clock, processes fake workers, so each decision is exact.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from diag_service.live.agent import Agent, WatchSettings, WorkerProc
from diag_service.live.contract import AgentBatch, LiveEventKind
from diag_service.live.spool import Sender, Spool
from diag_service.live.tail import LogTailer

FIX = Path(__file__).parent / "fixtures"


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _agent(tmp_path: Path, clock: Clock, **kw: Any) -> Agent:
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    cfg = WatchSettings(job_id="job-7", node="node0", log_dir=logs, state_dir=tmp_path / "state", **kw)
    return Agent(cfg, None, clock=clock, stack_dumper=lambda pid: ("py-spy-json", json.dumps([{"pid": pid}])))


def _append(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def _batches(agent: Agent) -> list[AgentBatch]:
    return [AgentBatch.model_validate_json(p.read_text()) for p in agent.spool.pending()]


def _kinds(agent: Agent) -> list[str]:
    return [e.event.value for b in _batches(agent) for e in b.events if e.event is not LiveEventKind.HEARTBEAT]


def test_tailer_returns_whole_lines_once_and_starts_over_after_truncation(tmp_path: Path) -> None:
    f = tmp_path / "run" / "attempt_0" / "1" / "stderr.log"
    _append(f, "[default1]:step 1 loss 2.0\n[default1]:step 2 lo")
    t = LogTailer(tmp_path)
    (c,) = t.poll()
    assert (c.rel, c.offset, c.text) == ("run/attempt_0/1/stderr.log", 0, "[default1]:step 1 loss 2.0\n")
    assert t.poll() == []  # the partial line waits for its newline
    _append(f, "ss 1.9\n")
    (c,) = t.poll()
    assert c.text == "[default1]:step 2 loss 1.9\n" and c.offset == len("[default1]:step 1 loss 2.0\n")
    f.write_text("fresh\n")  # truncated and rewritten (log rotation with copytruncate)
    (c,) = t.poll()
    assert (c.offset, c.text, c.restarted) == (0, "fresh\n", True)


def test_tailer_does_not_follow_links_out_of_the_folder(tmp_path: Path) -> None:
    secret = tmp_path / "secret.log"
    secret.write_text("outside\n")
    root = tmp_path / "logs"
    root.mkdir()
    (root / "x.log").symlink_to(secret)
    assert LogTailer(root).poll() == []


def test_a_traceback_is_one_failure_sent_at_once(tmp_path: Path) -> None:
    clock = Clock()
    agent = _agent(tmp_path, clock, batch_s=60.0)
    lines = (FIX / "lab_sigkill_root_cause_wrong" / "console_node0.log").read_text().splitlines(keepends=True)
    log = tmp_path / "logs" / "console.log"
    _append(log, "".join(lines))
    agent.step()
    kinds = _kinds(agent)
    assert kinds.count("failure") == 1, kinds
    failure = next(e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.FAILURE)
    assert failure.cause and ("Traceback" in failure.cause or "exitcode" in failure.cause or "Signal" in failure.cause)
    # the whole new text went out with it, though the batch interval (60 s) had not passed
    sent = "".join(c.text for b in _batches(agent) for c in b.logs)
    assert sent == "".join(lines)


def test_torchruns_exit_barrier_error_after_its_workers_succeeded_is_not_a_failure(tmp_path: Path) -> None:
    """Node 1's console of a successful 2-node lab run (seed 906): its workers finished, node 0 (which hosts the
    c10d store) had already exited, so torchrun logs "Error waiting on exit barrier" with the store's traceback
    and exits 0. The agent took it for a fail-stop and the live job ended `failed`."""
    clock = Clock()
    agent = _agent(tmp_path, clock, batch_s=60.0)
    text = (FIX / "lab_exit_barrier_success" / "console_node1.log").read_text()
    assert "Error waiting on exit barrier" in text and "Traceback (most recent call last)" in text
    _append(tmp_path / "logs" / "console.log", text)
    agent.step()
    assert "failure" not in _kinds(agent)
    # only that record is excused: a worker's traceback after it is a failure
    _append(tmp_path / "logs" / "console.log", "[default0]:Traceback (most recent call last):\n")
    clock.t += 1
    agent.step()
    assert _kinds(agent).count("failure") == 1


def test_no_progress_beyond_the_adaptive_timeout_is_a_hang_with_stack_samples(tmp_path: Path) -> None:
    clock = Clock()
    agent = _agent(tmp_path, clock, hang_floor_s=10.0, hang_factor=10.0, stack_every_s=5.0, max_snapshots=3)
    log = tmp_path / "logs" / "run" / "attempt_0" / "0" / "stdout.log"
    for step in range(1, 21):  # one step every 2 s: p99 interval 2 s, timeout max(10, 10 x 2) = 20 s
        _append(log, f"[lab] rank 0 step {step} loss 1.{step:02d}\n")
        agent.step()
        clock.t += 2.0
    last_step_time = clock.t - 2.0
    assert agent.hang_timeout() == pytest.approx(20.0)
    agent.workers = {101: WorkerProc(pid=101, rank=0, local_rank=0), 102: WorkerProc(pid=102, rank=1, local_rank=1)}
    for _ in range(20):  # 10 s quiet: not yet
        clock.t += 0.5
        agent.step()
    assert "hang_detected" not in _kinds(agent)
    while clock.t < last_step_time + 36:
        clock.t += 0.5
        agent.step()
    hang = [e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.HANG_DETECTED]
    assert len(hang) == 1
    assert hang[0].onset_time == pytest.approx(last_step_time)
    assert last_step_time + 20 < hang[0].time <= last_step_time + 21
    stacks = [s for b in _batches(agent) for s in b.stacks]
    assert {s.snapshot for s in stacks} == {0, 1, 2} and {s.rank for s in stacks} == {0, 1}
    assert stacks[0].time == pytest.approx(hang[0].time)  # the first sample at detection


def test_a_start_up_line_stating_the_runs_length_is_not_progress(tmp_path: Path) -> None:
    """New-user trial 40, r09: "starting training world_size=4 steps=80" made the hang report say step 80 of a job
    that stopped at step 25."""
    clock = Clock()
    agent = _agent(tmp_path, clock, hang_floor_s=10.0, hang_factor=10.0, stack_every_s=5.0, max_snapshots=1)
    log = tmp_path / "logs" / "run" / "attempt_0" / "0" / "stdout.log"
    _append(log, "starting training world_size=4 steps=80\n")
    for step in range(1, 26):
        _append(log, f"[rank0] step {step}/80 loss 1.{step:02d}\n")
        agent.step()
        clock.t += 2.0
    agent.workers = {101: WorkerProc(pid=101, rank=0, local_rank=0)}
    quiet_until = clock.t + 60
    while clock.t < quiet_until:
        clock.t += 0.5
        agent.step()
    hang = [e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.HANG_DETECTED]
    assert len(hang) == 1 and hang[0].step == 25, hang


def test_a_checkpoint_pause_stretches_the_timeout(tmp_path: Path) -> None:
    clock = Clock()
    agent = _agent(tmp_path, clock, hang_floor_s=10.0, hang_factor=1.0, hang_phase_factor=4.0)
    log = tmp_path / "logs" / "train.log"
    for step in range(1, 6):
        _append(log, f"step {step} loss 2.0\n")
        agent.step()
        clock.t += 1.0
    _append(log, "Saving model checkpoint to /ckpt/step-5\n")
    agent.step()
    assert agent.hang_timeout() == pytest.approx(40.0)
    clock.t += 30.0
    agent.step()
    assert "hang_detected" not in _kinds(agent)
    _append(log, "step 6 loss 1.9\n")
    agent.step()
    assert agent.hang_timeout() == pytest.approx(10.0)


def test_lifecycle_events_and_a_restart_from_torchrun_attempt_folders(tmp_path: Path) -> None:
    clock = Clock()
    agent = _agent(tmp_path, clock)
    root = tmp_path / "logs" / "run"
    _append(root / "attempt_0" / "0" / "stdout.log", "[lab] rank 0 step 1 loss 2.3\n")
    agent.step()
    clock.t += 5
    _append(root / "attempt_0" / "0" / "stderr.log", "RuntimeError: Connection closed by peer\n")
    _append(root / "attempt_0" / "0" / "stderr.log", "Traceback (most recent call last):\n")
    agent.step()
    clock.t += 5
    _append(root / "attempt_1" / "0" / "stdout.log", "[lab] rank 0 resumed from ckpt-1 at step 1\n")
    agent.step()
    assert _kinds(agent) == ["started", "first_step", "failure", "restart"]


class FlakyService:
    """Refuses the first ``down`` requests (connection error), then applies each seq once."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.applied: dict[int, dict[str, Any]] = {}
        self.calls = 0

    def __call__(self, batch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.calls += 1
        if self.calls <= self.down:
            raise ConnectionError("service away")
        seq = batch["seq"]
        expected = len(self.applied)
        if seq > expected:
            return 409, {"expected_seq": expected}
        applied = seq not in self.applied
        self.applied.setdefault(seq, batch)
        return 200, {"seq": seq, "applied": applied}


def test_spooled_batches_survive_the_service_being_away_and_arrive_once_in_order(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("diag_service.live.spool.BACKOFF_S", (0.01, 0.02))
    clock = Clock()
    agent = _agent(tmp_path, clock, batch_s=0.0)
    log = tmp_path / "logs" / "train.log"
    for step in range(1, 6):
        _append(log, f"step {step} loss 2.0\n")
        agent.step()
        clock.t += 1.0
    n = len(agent.spool.pending())
    assert n >= 5
    service = FlakyService(down=3)
    sender = Sender(agent.spool, service, drain_s=5.0)
    sender.start()
    sender.stop()
    sender.join(timeout=10)
    assert agent.spool.pending() == []
    assert sorted(service.applied) == list(range(n))
    text = "".join(c["text"] for s in sorted(service.applied) for c in service.applied[s]["logs"])
    assert text == log.read_text()


def test_a_slow_service_that_keeps_accepting_gets_the_whole_backlog_after_the_job_ends(tmp_path: Path) -> None:
    # the job has ended (stop) with a backlog; each batch takes 0.2 s to be accepted, the whole backlog far
    # longer than the drain allowance: delivery goes on while the service keeps accepting
    spool = Spool(tmp_path / "spool")
    for seq in range(12):
        spool.put("1", seq, {"seq": seq})
    got: list[int] = []

    def slow(batch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        time.sleep(0.2)
        got.append(batch["seq"])
        return 200, {"seq": batch["seq"], "applied": True}

    sender = Sender(spool, slow, drain_s=1.0)
    sender.start()
    sender.stop()
    sender.join(timeout=30)
    assert got == list(range(12)) and spool.pending() == []


def test_a_batch_the_service_refuses_is_kept_not_retried(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    spool.put("1", 0, {"seq": 0})
    sender = Sender(spool, lambda b: (422, {"detail": "bad"}), drain_s=1.0)
    sender.start()
    sender.stop()
    sender.join(timeout=5)
    assert spool.pending() == []
    assert [p.name for p in (tmp_path / "spool" / "rejected").glob("*.json")] == ["1-000000000.json"]


def test_a_refused_token_is_said_and_does_not_hold_the_agents_exit(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    # a new user's trial: with DIAG_AGENT_TOKEN unset or mistyped the agent said nothing of the 401s and held the
    # wrapped job's exit for the whole 30 s drain
    import time

    spool = Spool(tmp_path / "spool")
    spool.put("1", 0, {"seq": 0})
    sender = Sender(spool, lambda b: (401, {"detail": "missing or invalid token"}), drain_s=30.0)
    with caplog.at_level("WARNING", logger="diag.watch"):
        sender.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        sender.stop()
        sender.join(timeout=10)
        assert not sender.is_alive() and time.monotonic() - t0 < 5.0
    assert [p.name for p in spool.pending()] == ["1-000000000.json"]  # kept for a run with the right token
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "HTTP 401" in said and "DIAG_AGENT_TOKEN" in said and "refuses this agent's token" in said


def test_secrets_are_redacted_before_they_are_spooled(tmp_path: Path) -> None:
    clock = Clock()
    agent = _agent(tmp_path, clock, batch_s=0.0)
    key = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"
    _append(tmp_path / "logs" / "train.log", f"export HF_TOKEN={key}\nstep 1 loss 2.0\n")
    agent.step()
    spooled = "".join(p.read_text() for p in agent.spool.pending())
    assert key not in spooled and "step 1 loss 2.0" in spooled


def test_with_file_notifications_only_changed_files_are_read(tmp_path: Path) -> None:
    import threading
    import time

    root = tmp_path / "logs"
    for r in range(3):
        _append(root / "run" / "attempt_0" / str(r) / "stdout.log", f"step 1 rank {r}\n")
    t = LogTailer(root, rescan_s=3600.0)
    stop = threading.Event()
    try:
        assert t.watch(stop)
        assert len(t.poll()) == 3  # the first poll walks the folder
        _append(root / "run" / "attempt_0" / "1" / "stdout.log", "step 2 rank 1\n")
        _append(root / "run" / "attempt_1" / "0" / "stdout.log", "step 3 rank 0\n")  # a new folder
        got: list[str] = []
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            got += [c.rel for c in t.poll()]
            time.sleep(0.05)
        assert sorted(got) == ["run/attempt_0/1/stdout.log", "run/attempt_1/0/stdout.log"]
    finally:
        stop.set()


def test_a_feed_folder_gives_this_nodes_step_records_only(tmp_path: Path) -> None:
    feeds = tmp_path / "parts"
    rec = {"step": 7, "start": 1795943642.03, "end": 1795943642.11, "compute_s": 0.069, "comm_s": 0.004}
    _append(feeds / "timing-rank-0.jsonl", json.dumps({"rank": 0, "node": "node0", **rec}) + "\n")
    _append(feeds / "timing-rank-2.jsonl", json.dumps({"rank": 2, "node": "node1", **rec}) + "\n")
    _append(feeds / "fault-rank-0.json", "{}\n")
    clock = Clock()
    (tmp_path / "logs").mkdir()
    cfg = WatchSettings(job_id="job-7", node="node0", log_dir=tmp_path / "logs", feed_dir=feeds,
                        state_dir=tmp_path / "state", batch_s=0.0)
    agent = Agent(cfg, None, clock=clock)
    agent.step()
    batches = _batches(agent)
    assert [(s["rank"], s["node"]) for b in batches for s in b.steps] == [(0, "node0")]
    assert not any(c.path.startswith("feeds/") for b in batches for c in b.logs)  # records, not log text
    assert "first_step" in _kinds(agent)


def test_watch_cli_refuses_a_misspelt_option_and_a_missing_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from diag_service.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["watch", "--job-id", "j1", "--state-dir", str(tmp_path / "a"), "--hang-flor", "5", "--", "true"])
    assert r.exit_code == 2 and "unknown option '--hang-flor'" in r.output
    r = runner.invoke(app, ["watch", "--job-id", "j1", "--state-dir", str(tmp_path / "b"), "--", "no-such-launcher-xyz"])
    assert r.exit_code == 2 and "cannot start 'no-such-launcher-xyz'" in r.output


def test_torchruns_error_json_is_sent_whole(tmp_path: Path) -> None:
    # torch.distributed.elastic's @record writes the failed worker's exception and time as one JSON document
    # (no final newline); the diagnosis takes the failure's time from it.
    doc = {"message": {"message": "KeyError: 'decay_every'", "extraInfo": {"py_callstack": "Traceback ...",
                                                                          "timestamp": "1796314635"}}}
    f = tmp_path / "run" / "attempt_0" / "0" / "error.json"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps(doc))
    (c,) = LogTailer(tmp_path).poll()
    assert json.loads(c.text) == doc


def test_flight_recorder_dumps_of_this_nodes_ranks_are_sent_once_settled(tmp_path: Path) -> None:
    import base64
    import shutil

    fr = tmp_path / "fr"
    shutil.copytree(FIX / "flight_recorder" / "missing_tp", fr)
    (fr / ".nccl_trace_rank_1.tmp").write_bytes(b"half written")  # a writer's temporary file: never sent
    clock = Clock()
    (tmp_path / "logs").mkdir()
    cfg = WatchSettings(job_id="job-fr", node="node1", log_dir=tmp_path / "logs", fr_dir=fr,
                        state_dir=tmp_path / "state", batch_s=0.0)
    agent = Agent(cfg, None, clock=clock)
    agent.workers = {11: WorkerProc(pid=11, rank=2, local_rank=0), 12: WorkerProc(pid=12, rank=3, local_rank=1)}
    agent.step()  # first sight: not yet known to be settled
    assert not [d for b in _batches(agent) for d in b.fr]
    agent.step()
    sent = [d for b in _batches(agent) for d in b.fr]
    assert sorted(d.name for d in sent) == ["nccl_trace_rank_2", "nccl_trace_rank_3"]  # node1's ranks only
    assert all(base64.b64decode(d.data) == (fr / d.name).read_bytes() for d in sent)
    agent.step()
    assert len([d for b in _batches(agent) for d in b.fr]) == 2  # not again while unchanged


@pytest.mark.parametrize("bad", ["[" * 100_000, '{"step": ' + "9" * 5000 + "}"], ids=["deep nesting", "huge number"])
def test_a_feed_line_that_is_not_json_is_skipped_and_the_next_records_kept(tmp_path: Path, bad: str) -> None:
    feeds = tmp_path / "parts"
    recs = [{"rank": 0, "node": "node0", "step": s, "start": 1795943642.03 + s, "end": 1795943642.11 + s,
             "compute_s": 0.069, "comm_s": 0.004} for s in (7, 8)]
    _append(feeds / "timing-rank-0.jsonl", json.dumps(recs[0]) + "\n" + bad + "\n" + json.dumps(recs[1]) + "\n")
    (tmp_path / "logs").mkdir()
    cfg = WatchSettings(job_id="job-7", node="node0", log_dir=tmp_path / "logs", feed_dir=feeds,
                        state_dir=tmp_path / "state", batch_s=0.0)
    agent = Agent(cfg, None, clock=Clock())
    agent.step()
    assert [s["step"] for b in _batches(agent) for s in b.steps] == [7, 8]
    assert agent.progress.max_step == 8


def test_the_agent_adopts_the_heartbeat_the_service_expects_so_it_never_looks_dead(tmp_path: Path) -> None:
    from diag_service.live.jobs import LiveJobs, LiveSettings

    clock = Clock()
    # the service expects a heartbeat every 2 s (stale after 3 x 2 s); the agent was started with --heartbeat 30
    jobs = LiveJobs(tmp_path / "live", LiveSettings(heartbeat_s=2.0, stale_after=3.0), clock=clock)

    def service(batch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        ack, _ = jobs.apply("job-7", AgentBatch.model_validate(batch))
        return 200, ack.model_dump(mode="json")

    logs = tmp_path / "logs"
    logs.mkdir()
    cfg = WatchSettings(job_id="job-7", node="node0", log_dir=logs, state_dir=tmp_path / "state", heartbeat_s=30.0)
    agent = Agent(cfg, service, clock=clock)
    assert agent.sender is not None
    stale_seen = []
    for _ in range(120):  # one minute of a quiet job (no log line), a poll every 0.5 s
        agent.step()
        agent.sender.send_pending()
        view = jobs.view("job-7")
        assert view is not None
        stale_seen += [a.agent_id for a in view.agents if a.stale]
        clock.t += 0.5
    assert stale_seen == []
    assert agent.heartbeat_s == 2.0
    jobs.close()


def test_workers_are_listed_every_few_seconds_or_when_a_log_file_appears(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from diag_service.live import agent as agent_mod

    listings: list[float] = []
    workers = {101: WorkerProc(pid=101, rank=0, local_rank=0)}
    clock = Clock()

    def fake_workers(launcher_pid: int) -> dict[int, WorkerProc]:
        listings.append(clock.t)
        return dict(workers)

    monkeypatch.setattr(agent_mod, "_workers", fake_workers)
    agent = _agent(tmp_path, clock, pid=os.getpid())  # a launcher that is alive: this test process
    t0 = clock.t
    for _ in range(40):  # 20 s of polls every 0.5 s, nothing new in the logs
        agent.step()
        clock.t += 0.5
    assert listings == [t0 + s for s in (0, 5, 10, 15)]  # every WORKER_SCAN_S, not every poll
    # torchrun starts a worker, which writes its log: listed at once, and its first line carries its rank
    workers[102] = WorkerProc(pid=102, rank=1, local_rank=1)
    _append(tmp_path / "logs" / "run" / "attempt_0" / "1" / "stdout.log", "[default1]:step 1 loss 2.0\n")
    agent.step()
    assert listings[-1] == clock.t and len(listings) == 5
    chunk = next(c for b in _batches(agent) for c in b.logs if c.path.endswith("1/stdout.log"))
    assert (chunk.rank, chunk.local_rank) == (1, 1)


def test_watch_log_dir_without_pid_attaches_to_the_torchrun_that_writes_there(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from typer.testing import CliRunner

    from diag_service.cli import app
    from diag_service.live.agent import find_launchers

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("torchrun", "not-a-launcher"):  # stand-ins that live until their stdin closes
        (bin_dir / name).write_text("import sys\nsys.stdin.read()\n")
    job, other = tmp_path / "job", tmp_path / "other-job"
    (job / "logs").mkdir(parents=True)
    (other / "logs").mkdir(parents=True)

    def start(script: str, *args: str, cwd: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, str(bin_dir / script), *args], cwd=cwd, stdin=subprocess.PIPE)

    procs = [
        decoy := start("torchrun", "--nproc-per-node=2", "--log-dir", str(other / "logs"), "train.py", cwd=other),
        ours := start("torchrun", "--nproc-per-node=2", "--log-dir=logs", "train.py", cwd=job),  # relative to its cwd
        start("not-a-launcher", "--log-dir", str(job / "logs"), cwd=job),
    ]
    try:
        assert [m.pid for m in find_launchers(job / "logs")] == [ours.pid]
        assert [(m.pid, m.how) for m in find_launchers(other / "logs")] == [(decoy.pid, "log-dir")]
        env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
        watch = subprocess.Popen([sys.executable, "-m", "diag_service.cli", "watch", "--job-id", "j9", "--log-dir",
                                  str(job / "logs"), "--state-dir", str(tmp_path / "state")],
                                 stderr=subprocess.PIPE, text=True, env=env)
        assert watch.stderr is not None
        said = watch.stderr.readline()
        assert f"attached to torchrun pid {ours.pid} (its --log-dir is {job / 'logs'})" in said
        ours.stdin.close()  # type: ignore[union-attr]  # the launcher ends: so does the attached agent
        assert watch.wait(timeout=60) == 0
        # a second launcher on the same folder: which one is meant is not guessed
        twin = start("torchrun", "--log-dir", str(job / "logs"), "train.py", cwd=tmp_path)
        procs.append(twin)
        procs.append(start("torchrun", "--log-dir", str(job / "logs"), "train.py", cwd=tmp_path))
        r = CliRunner().invoke(app, ["watch", "--job-id", "j9", "--log-dir", str(job / "logs"),
                                     "--state-dir", str(tmp_path / "state2")])
        assert r.exit_code == 2 and "give --pid" in r.output and str(twin.pid) in r.output
    finally:
        for p in procs:
            if p.stdin is not None and not p.stdin.closed:
                p.stdin.close()
            p.wait(timeout=10)


def test_a_checkpoint_line_naming_its_iteration_is_a_phase_not_progress(tmp_path: Path) -> None:
    # Megatron: "saving checkpoint at iteration N to ..." names the step it follows; read as a step line it
    # used to clear the phase at once, and a 5 s hang was declared during an 8 s save (lab clean_ckpt_eval)
    clock = Clock()
    agent = _agent(tmp_path, clock, hang_floor_s=5.0, hang_factor=1.0, hang_phase_factor=4.0)
    log = tmp_path / "logs" / "train.log"
    for step in range(1, 6):
        _append(log, f" iteration {step}/ 100 | elapsed time per iteration (ms): 1000.0 | lm loss: 2.0\n")
        agent.step()
        clock.t += 1.0
    _append(log, " saving checkpoint at iteration       5 to /ckpt in torch_dist format\n")
    agent.step()
    assert agent.hang_timeout() == pytest.approx(20.0)
    phases = [e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.PHASE]
    assert len(phases) == 1 and phases[0].duration == pytest.approx(20.0) and "saving checkpoint" in phases[0].cause
    clock.t += 8.0
    _append(log, "  successfully saved checkpoint from iteration       5 to /ckpt\n")
    agent.step()
    assert "hang_detected" not in _kinds(agent)


def test_a_checkpoint_saved_once_is_one_event_at_the_step_it_names(tmp_path: Path) -> None:
    # torchrun --tee: the worker's line is in its attempt log and again, prefixed, in the launcher's console; the
    # lab's clean_ckpt_eval (seed 906) got two checkpoint_saved per save, at steps 39 and 44 (the last step read)
    clock = Clock()
    agent = _agent(tmp_path, clock)
    worker = tmp_path / "logs" / "run" / "attempt_0" / "0" / "stdout.log"
    console = tmp_path / "logs" / "console.log"
    for step in range(38, 40):
        _append(worker, f"[lab] rank 0 step {step} loss 2.7\n")
    _append(worker, "[lab] rank 0 successfully saved checkpoint at step 39\n")
    agent.step()
    clock.t += 0.5
    for step in range(40, 45):
        _append(worker, f"[lab] rank 0 step {step} loss 2.7\n")
    _append(console, "[default0]:[lab] rank 0 successfully saved checkpoint at step 39\n")
    agent.step()
    saved = [e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.CHECKPOINT_SAVED]
    assert [e.step for e in saved] == [39]
    clock.t += 20
    _append(worker, "[lab] rank 0 successfully saved checkpoint at step 79\n")  # the next save is its own event
    agent.step()
    saved = [e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.CHECKPOINT_SAVED]
    assert [e.step for e in saved] == [39, 79]


def test_every_ranks_line_of_one_save_is_one_event_with_the_step_its_file_names_and_its_duration(
        tmp_path: Path) -> None:
    # trial 44 r14: each rank's logger writes "saved checkpoint step_50.pt in 4.93s"; the line names no "step N", so each
    # got the last step read (50, then 51) and two events without the save's duration (ETPR's ckpt_stall stayed 0)
    clock = Clock()
    agent = _agent(tmp_path, clock)
    logs = [tmp_path / "logs" / "run" / "attempt_0" / str(r) / "stderr.log" for r in (0, 1)]
    for r, log in enumerate(logs):
        for step in range(48, 51):
            _append(log, f"2026-12-07 19:23:16,100 INFO [rank{r}] step {step}/240 loss=2.30 step_time: 0.281s\n")
    _append(logs[0], "2026-12-07 19:23:21,903 INFO [rank0] saved checkpoint step_50.pt in 4.93s\n")
    agent.step()
    clock.t += 0.5
    _append(logs[1], "2026-12-07 19:23:16,400 INFO [rank1] step 51/240 loss=2.30 step_time: 0.281s\n")
    _append(logs[1], "2026-12-07 19:23:21,903 INFO [rank1] saved checkpoint step_50.pt in 4.93s\n")
    agent.step()
    saved = [e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.CHECKPOINT_SAVED]
    assert [(e.step, e.duration) for e in saved] == [(50, 4.93)]
    # a save line naming no step at all, printed by two ranks: one event, at the last step read
    clock.t += 30
    for log in logs:
        _append(log, "2026-12-07 19:24:00,000 INFO checkpoint saved to ckpt/last.pt (took 850 ms)\n")
    agent.step()
    saved = [e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.CHECKPOINT_SAVED]
    assert [(e.step, e.duration) for e in saved] == [(50, 4.93), (51, 0.85)]


def _two_nodes(tmp_path: Path, job: str) -> tuple[Any, dict[str, Agent], dict[str, Path], Clock, Any]:
    """A live service core and two agents (node0, node1; floor 5 s, phase factor 4) on one clock, and ``tick(s)``:
    every agent polls and delivers each 0.5 s of it."""
    from diag_service.live.jobs import LiveJobs, LiveSettings

    clock = Clock()
    jobs = LiveJobs(tmp_path / "live", LiveSettings(heartbeat_s=2.0), clock=clock)

    def service(batch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        ack, _ = jobs.apply(job, AgentBatch.model_validate(batch))
        return 200, ack.model_dump(mode="json")

    agents, logs = {}, {}
    for node in ("node0", "node1"):
        logs[node] = tmp_path / node / "logs"
        logs[node].mkdir(parents=True)
        cfg = WatchSettings(job_id=job, node=node, log_dir=logs[node], state_dir=tmp_path / node / "state",
                            hang_floor_s=5.0, hang_factor=1.0, hang_phase_factor=4.0, heartbeat_s=2.0)
        agents[node] = Agent(cfg, service, clock=clock, stack_dumper=lambda pid: ("py-spy-json", "[]"))

    def tick(seconds: float) -> None:
        for _ in range(int(seconds / 0.5)):
            for a in agents.values():
                a.step()
                assert a.sender is not None
                a.sender.send_pending()
            clock.t += 0.5

    return jobs, agents, logs, clock, tick


def _five_steps_then_node0_saves(agents: dict, logs: dict, tick) -> None:
    """Every node logs steps 1-5, one a second; then rank 0 on node0 (only it) logs a checkpoint save."""
    for step in range(1, 6):
        for node in agents:
            _append(logs[node] / "train.log", f"step {step} loss 2.0\n")
        tick(1.0)
    _append(logs["node0"] / "train.log", "[rank0] Saving model checkpoint to /ckpt/checkpoint-5\n")


def test_another_nodes_checkpoint_holds_this_nodes_hang_until_it_outlasts_the_phase(tmp_path: Path) -> None:
    # rank 0 on node0 saves a checkpoint (only it says so); node1's ranks wait in the next all-reduce
    jobs, agents, logs, _clock, tick = _two_nodes(tmp_path, "job-7")
    _five_steps_then_node0_saves(agents, logs, tick)
    tick(9.0)  # node1 sees no step for 9 s > its 5 s floor, without a phase line of its own
    view = jobs.view("job-7")
    assert view is not None and view.detected_time is None and view.status != "hung"
    assert agents["node1"].hang_timeout() == pytest.approx(20.0)  # the job-wide phase reached node1
    for node in agents:
        _append(logs[node] / "train.log", "step 6 loss 2.0\n")
    tick(2.0)
    assert jobs.view("job-7").detected_time is None  # type: ignore[union-attr]
    # a real hang after the phase is declared and accepted once the phase is over
    tick(40.0)
    assert jobs.view("job-7").detected_time is not None  # type: ignore[union-attr]
    jobs.close()


def test_a_phase_is_over_once_the_job_steps_again_and_a_hang_soon_after_is_not_held(tmp_path: Path) -> None:
    # a new user's live trial: rank 0 saved a checkpoint, training went on for 40 steps, then a rank hung 4 s after
    # the save line; the phase (4 x the floor) was held for its whole length, past gloo's own timeout
    jobs, agents, logs, clock, tick = _two_nodes(tmp_path, "job-8")
    _five_steps_then_node0_saves(agents, logs, tick)
    tick(3.0)
    assert agents["node1"].hang_timeout() == pytest.approx(20.0)  # the job-wide phase reached node1
    for step in range(6, 9):  # the save is done: every rank steps again
        for node in agents:
            _append(logs[node] / "train.log", f"step {step} loss 2.0\n")
        tick(1.0)
    assert agents["node1"].hang_timeout() == pytest.approx(5.0)
    assert agents["node0"].hang_timeout() == pytest.approx(5.0)
    hung_at = clock.t
    tick(12.0)  # then a rank stops: no step on any node
    view = jobs.view("job-8")
    assert view is not None and view.detected_time is not None, "the hang was held for the whole phase"
    assert view.detected_time - hung_at < 8.0
    jobs.close()


def test_step_lines_with_a_step_time_feed_the_services_streaming_slow_detector(tmp_path: Path) -> None:
    # a new user's live trial: a script's own step lines ("step 150/650 loss 43.8 step_time 109 ms") raised no live
    # slow alarm, since only a timing feed gave the service step records
    import random

    from diag_service.live.jobs import LiveJobs, LiveSettings

    clock = Clock()
    jobs = LiveJobs(tmp_path / "live", LiveSettings(heartbeat_s=2.0), clock=clock)

    def service(batch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        ack, _ = jobs.apply("job-9", AgentBatch.model_validate(batch))
        return 200, ack.model_dump(mode="json")

    logs = tmp_path / "logs"
    cfg = WatchSettings(job_id="job-9", node="node0", log_dir=logs, state_dir=tmp_path / "state", heartbeat_s=2.0)
    agent = Agent(cfg, service, clock=clock, stack_dumper=lambda pid: ("py-spy-json", "[]"))
    rng = random.Random(7)
    t = 1_800_000_000.0
    for step in range(10, 2010, 10):
        for rank in (0, 1):
            ms = 80.0 * (1.5 if step > 1000 else 1.0) * rng.uniform(0.95, 1.05)
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + ".000"
            _append(logs / f"rank{rank}.log", f"{stamp} [rank{rank}] step {step}/2000 loss 2.0 step_time {ms:.1f} ms\n")
        t += 0.8
        clock.t = t
        agent.step()
        assert agent.sender is not None
        agent.sender.send_pending()
    view = jobs.view("job-9")
    assert view is not None and view.slow_detected_time is not None, view
    assert view.status == "slow" and any("since step 1010" in a for a in view.slow_alarms), view.slow_alarms
    assert view.slow_detected_time - 1_800_000_000.0 < 100 * 0.8 + 30  # within 30 s of the onset (step 1000)
    jobs.close()


def test_the_step_reading_after_a_checkpoint_save_line_is_marked_as_covering_it(tmp_path: Path) -> None:
    # Trainer's "Saving model checkpoint to ..." names no step: the reading after it covers the save and must reach the
    # detector as kind checkpoint (excluded), not as a 900 ms training step (the agent had its own pre-check of step
    # words in front of the line reader's, and it let no such save line through)
    clock = Clock()
    agent = _agent(tmp_path, clock, batch_s=0.0)
    lines = [f"step {s} loss 2.0 step_time 80 ms\n" for s in (10, 20, 30)]
    lines += ["Saving model checkpoint to /ckpt/checkpoint-30\n", "step 40 loss 2.0 step_time 900 ms\n"]
    _append(tmp_path / "logs" / "train.log", "".join(lines))
    agent.step()
    got = [(r["step"], r.get("kind")) for b in _batches(agent) for r in b.steps]
    assert got == [(10, None), (20, None), (30, None), (40, "checkpoint")]


def test_watch_help_shows_how_to_run_it_beside_torchrun() -> None:
    # a new user's trial: the help showed only "Usage: diag watch [OPTIONS]" and one line
    from typer.testing import CliRunner

    from diag_service.cli.main import app

    res = CliRunner().invoke(app, ["watch", "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "-- torchrun" in res.output and "one agent per node" in res.output and "--log-dir DIR" in res.output


@pytest.mark.parametrize(("end_ago_s", "dated_by_record"), [(0.4, True), (7200.0, False)])
def test_first_step_is_dated_by_the_feed_record_when_its_time_is_plausible(
        tmp_path: Path, end_ago_s: float, dated_by_record: bool) -> None:
    clock = Clock()
    feeds = tmp_path / "parts"
    end = clock.t - end_ago_s  # the poll reads the record after the step ended (another clock when hours away)
    rec = {"rank": 0, "node": "node0", "step": 0, "start": end - 0.1, "end": end, "compute_s": 0.07, "comm_s": 0.01}
    _append(feeds / "timing-rank-0.jsonl", json.dumps(rec) + "\n")
    (tmp_path / "logs").mkdir()
    cfg = WatchSettings(job_id="job-7", node="node0", log_dir=tmp_path / "logs", feed_dir=feeds,
                        state_dir=tmp_path / "state", batch_s=0.0)
    agent = Agent(cfg, None, clock=clock)
    agent.step()
    (first,) = [e for b in _batches(agent) for e in b.events if e.event is LiveEventKind.FIRST_STEP]
    assert first.time == pytest.approx(end if dated_by_record else clock.t, abs=1e-3)


def test_launcher_log_dir_is_read_from_the_wrapped_torchrun_command() -> None:
    from diag_service.live.agent import launcher_log_dir

    assert launcher_log_dir(["torchrun", "--nproc-per-node", "2", "--log-dir", "/logs", "train.py"], {}) == Path("/logs")
    assert launcher_log_dir(["python", "-m", "torch.distributed.run", "--log_dir=out", "t.py"], {}) == Path("out")
    assert launcher_log_dir(["torchrun", "train.py"], {"PET_LOG_DIR": "/pet"}) == Path("/pet")
    assert launcher_log_dir(["torchrun", "train.py"], {}) is None
    assert launcher_log_dir(["python", "train.py", "--log-dir", "/x"], {}) is None  # not a launcher: its own option


def test_watch_wrapping_torchrun_tails_the_workers_logs_under_its_log_dir(tmp_path: Path) -> None:
    """``diag watch -- torchrun --log-dir D ...`` without ``--log-dir`` of its own reads the workers' files under
    D (a new user's trial: only the launcher's console was read, the per-rank stderr.log with the traceback not)."""
    import os
    import stat

    from typer.testing import CliRunner

    from diag_service.cli import app

    logs = tmp_path / "logs"
    fake = tmp_path / "torchrun"  # stands in for torchrun: writes a worker's stderr.log under --log-dir, fails
    fake.write_text(
        "#!/bin/sh\n"
        'd="$2/run_1/attempt_0/1"; mkdir -p "$d"\n'
        "printf '[rank1]: Traceback (most recent call last):\\n"
        '[rank1]:   File \"/w/train.py\", line 29, in main\\n'
        "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x33 and 32x4)\\n' > \"$d/stderr.log\"\n"
        "sleep 1.5\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "state"
    r = CliRunner().invoke(app, ["watch", "--job-id", "j1", "--state-dir", str(state), "--quiet", "--",
                                 str(fake), "--log-dir", str(logs), "train.py"], env={**os.environ})
    assert r.exit_code == 1, r.output
    assert f"--log-dir {logs}" in r.output
    spooled = "".join(p.read_text() for p in (state / "spool").rglob("*") if p.is_file())
    assert "shapes cannot be multiplied" in spooled
