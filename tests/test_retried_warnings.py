"""A root matched on a C++ warning line (PyTorch's c10d ``socket.cpp`` logs each refused connection to the store
as a warning and retries) is not the failure when the job trained on after it; and glog lines above a file's
first dated line are read in the logs' year (they were read in today's, which ordered them years after the
job's dated events)."""

from __future__ import annotations

from pathlib import Path

from conftest import run_diagnose

from diag_service.domain import Category, FailureMode

YEAR = 2024
# torch 2.4's console of one node: ranks 6 and 7 start before rank 0's store listens, retry, and train.
START = [
    "[rank6]:[W1114 09:00:08.409678936 socket.cpp:752] [c10d] The client socket has failed to connect to "
    "[gpu-node-000]:29500 (errno: 111 - Connection refused).",
    "[rank7]:[W1114 09:00:08.512001234 socket.cpp:752] [c10d] The client socket has failed to connect to "
    "[gpu-node-000]:29500 (errno: 111 - Connection refused).",
    f"[rank6]:[{YEAR}-11-14 09:00:09,120] [INFO] [train.py:88:main] world_size=8 rank=6 local_rank=6",
]
STEPS = [
    f"[rank{r}]:[{YEAR}-11-14 09:{m:02d}:{s:02d},000] [INFO] [train.py:140:train] step {step} | loss {3.2 - step / 1000:.4f}"
    for step, (m, s) in enumerate(((1, 0), (2, 0), (3, 0), (4, 0), (5, 0)), start=10)
    for r in (3, 6)
]
OOM = [
    f"[rank3]:[{YEAR}-11-14 09:05:30,000] [INFO] [train.py:140:train] step 15 | loss 3.1850",
    "[rank3]: Traceback (most recent call last):",
    '[rank3]:   File "/workspace/train.py", line 151, in <module>',
    "[rank3]:     loss.backward()",
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
    "79.15 GiB of which 1.02 GiB is free.",
]


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "console_node0.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_a_retried_store_connection_is_not_the_failure(tmp_path: Path) -> None:
    d = run_diagnose(_write(tmp_path, START + STEPS + OOM))
    assert d.category is Category.GPU_OOM
    assert d.first_failing_rank == 3
    assert d.failure_mode is FailureMode.FAIL_STOP


def test_a_store_connection_that_never_succeeds_stays_the_cause(tmp_path: Path) -> None:
    """The same warnings with no training after them (the job never got past the store): still the finding."""
    d = run_diagnose(_write(tmp_path, START))
    assert d.category is Category.NETWORK


def test_an_error_severity_line_is_not_taken_for_a_retry(tmp_path: Path) -> None:
    """Only warnings are retries: the same message at error severity before training stays the first failure
    (a restarted job trains again after its first failure, which is still the incident)."""
    start = [line.replace("[W1114", "[E1114") for line in START]
    d = run_diagnose(_write(tmp_path, start + STEPS + OOM))
    assert d.category is Category.NETWORK
    assert d.first_failing_rank == 6


def test_glog_lines_before_the_first_dated_line_are_read_in_its_year(tmp_path: Path) -> None:
    d = run_diagnose(_write(tmp_path, START + STEPS + OOM))
    stamps = [e.first_timestamp for e in d.events if e.first_timestamp]
    assert stamps and all(s.startswith(f"{YEAR}-") for s in stamps)
