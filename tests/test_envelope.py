"""Container-runtime and log-shipper envelopes (diag_service/ingest/envelope.py) on real runs: the bundled example
and zoo dev runs, as the kubelet (CRI) and Docker's json-file driver store them on the node."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import run_diagnose

from diag_service.ingest.envelope import Envelope, sniff, unwrap

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "eval"))

from format_eval import transformed  # noqa: E402

EXAMPLE = REPO / "examples" / "torchrun_shape_mismatch_2x2"


def test_the_example_read_from_the_nodes_container_files_gets_the_same_diagnosis(tmp_path: Path) -> None:
    plain = run_diagnose(EXAMPLE)
    for kind in ("cri", "docker_json"):
        d = run_diagnose(transformed(EXAMPLE, tmp_path / kind, kind))
        assert (d.category, d.failure_mode, d.first_failing_rank) == (
            plain.category, plain.failure_mode, plain.first_failing_rank), kind
        quotes = [e.text for e in d.root_cause.evidence]
        assert quotes and not any('"log":' in q or " stderr F " in q for q in quotes), quotes


def test_docker_json_traceback_is_read_unescaped() -> None:
    lines = [
        {"log": "[rank1]: Traceback (most recent call last):\n", "stream": "stderr", "time": "2024-05-01T10:00:00.1Z"},
        {"log": '[rank1]:   File "/home/user/proj/train.py", line 41, in <module>\n', "stream": "stderr",
         "time": "2024-05-01T10:00:00.2Z"},
        {"log": "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n", "stream": "stderr",
         "time": "2024-05-01T10:00:00.3Z"},
    ]
    raw = "".join(json.dumps(x) + "\n" for x in lines).encode()
    assert sniff(raw) is Envelope.JSON
    out = unwrap(raw, Envelope.JSON).decode().splitlines()
    assert out[1] == '2024-05-01T10:00:00.2Z [rank1]:   File "/home/user/proj/train.py", line 41, in <module>'
    assert len(out) == 3
    assert unwrap(raw.splitlines(keepends=True)[2], Envelope.JSON).startswith(b"2024-05-01T10:00:00.3Z [rank1]: Runtime")
    assert sniff(raw.splitlines(keepends=True)[2]) is Envelope.JSON  # a one-line paste of one record


def test_cri_partial_records_keep_one_line_each_and_other_lines_stay() -> None:
    raw = (b"2024-05-01T10:00:00.000000001Z stdout F step 10 loss 2.31\n"
           b"2024-05-01T10:00:00.000000002Z stderr P first half of a long line \n"
           b"2024-05-01T10:00:00.000000003Z stderr F second half\n"
           b"2024-05-01T10:00:00.000000004Z stderr F \n"
           b"not a record\n")
    assert sniff(raw) is Envelope.CRI
    assert unwrap(raw, Envelope.CRI).decode().splitlines() == [
        "2024-05-01T10:00:00.000000001Z step 10 loss 2.31",
        "2024-05-01T10:00:00.000000002Z first half of a long line ",
        "2024-05-01T10:00:00.000000003Z second half",
        "2024-05-01T10:00:00.000000004Z ",
        "not a record",
    ]


def test_files_that_are_not_envelopes_are_left_alone() -> None:
    ds_config = b'{\n  "train_batch_size": 32,\n  "zero_optimization": {"stage": 3},\n  "fp16": {"enabled": true}\n}\n'
    feed = b"".join(json.dumps({"rank": r, "step": 1, "start": 1.0, "end": 1.2}).encode() + b"\n" for r in range(8))
    console = b"step 1 loss 2.3\nstep 2 loss 2.2\nTraceback (most recent call last):\n"
    mixed = b'{"log": "a\\n"}\nstep 2 loss 2.2\n'  # a short file: every line must be a record
    for raw in (ds_config, feed, console, mixed, b""):
        assert sniff(raw) is None, raw


def test_hostile_json_lines_are_read_as_text(tmp_path: Path) -> None:
    """Records nested deeper than the JSON parser's stack, or cut by the line-length limit, are kept as plain lines."""
    deep = '{"log": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    rec = json.dumps({"log": "RuntimeError: CUDA error: an illegal memory access was encountered\n", "time":
                      "2024-05-01T10:00:00.3Z"}) + "\n"
    (tmp_path / "c-json.log").write_text(rec * 3 + deep + rec)
    d = run_diagnose(tmp_path)
    assert any("illegal memory access" in e.template for e in d.events)


def test_a_log_quoted_in_a_reply_gets_the_same_diagnosis(tmp_path: Path) -> None:
    """The bundled example as a reply quoting it ('> ' before every line, '>' on empty ones)."""
    plain = run_diagnose(EXAMPLE)
    d = run_diagnose(transformed(EXAMPLE, tmp_path / "q", "quoted"))
    assert (d.category, d.failure_mode, d.first_failing_rank) == (plain.category, plain.failure_mode,
                                                                   plain.first_failing_rank)
    raw = b"> step 1 loss 2.3\n>\n> Traceback (most recent call last):\n> >>> import torch\n"
    assert sniff(raw) is Envelope.QUOTE
    assert unwrap(raw, Envelope.QUOTE) == b"step 1 loss 2.3\n\nTraceback (most recent call last):\n>>> import torch\n"
    assert sniff(b">>> import torch\n>>> x = torch.ones(2)\n>>> x.cuda()\nRuntimeError: No CUDA GPUs are available\n") is None


def test_hard_wrapped_lines_are_joined_and_same_template_lines_are_not(corpus_dev_case) -> None:
    """A paste hard-wrapped at 116 characters (public corpus dev n5-050: the heartbeat monitor's report cut mid-word,
    'indi' / 'cates') is joined and read as the hang it reports; lines of one template that merely share a width (every
    rank's watchdog report, a trainer's iteration lines, padded lines) are not taken for wrapping."""
    from diag_service.ingest.envelope import sniff_wrap, unwrap_wrapped

    d = corpus_dev_case("n5-050")
    assert d.failure_mode.value == "fail_hang"
    assert any("hard-wrapped at 116" in w for w in d.input.warnings)
    watchdog = "".join(
        f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, "
        f"OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800355 milliseconds before timing out.\n" for r in range(4, 8))
    iters = "".join(f" iteration {i:>8d}/   10000 | consumed samples: {i * 512:>10d} | elapsed time per iteration (ms): "
                    f"{1500 + i % 7}.2 | lm loss: 2.{i:04d}E+00 |\n" for i in range(100, 140))
    for text in (watchdog, iters):
        assert sniff_wrap(text.encode()) is None
    assert unwrap_wrapped(b"abcde\nfgh\nxyz\n", 5) == b"abcdefgh\nxyz\n"


def test_a_structured_records_rank_field_names_the_rank(tmp_path: Path) -> None:
    """JSON-lines exports of a structured logger ({"rank": 3, "message": ...}) keep who wrote each line."""
    recs = [{"timestamp": f"2024-05-01T10:00:0{i}Z", "rank": r, "level": "INFO", "message": f"step {i} loss 2.3"}
            for i in range(3) for r in range(4)]
    recs.append({"timestamp": "2024-05-01T10:00:05Z", "rank": 2, "level": "ERROR",
                 "message": "RuntimeError: CUDA error: an illegal memory access was encountered"})
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(x) + "\n" for x in recs))
    d = run_diagnose(tmp_path)
    assert d.first_failing_rank == 2
    assert unwrap(json.dumps({"rank": 1, "message": "a\nb\n"}).encode() + b"\n", Envelope.JSON) == b"[rank1]: a\n[rank1]: b\n"


def test_soft_wrapped_pastes_are_joined_and_logs_with_long_lines_are_not(corpus_dev_case) -> None:
    """A paste broken at spaces near one width (public corpus dev n41b-001: JAX's NCCL report with NCCL's "Error /
    while creating shared memory segment /dev/shm/... No space / left on device" over five lines) is joined and read as
    the full /dev/shm it reports; real dev logs whose long lines end a record before a line of its own (NCCL's
    ``host:pid:tid`` lines after a quoted error, download lines, timed steps, progress lines) are not joined."""
    from diag_service.ingest.envelope import sniff_soft_wrap, unwrap_soft

    d = corpus_dev_case("n41b-001")
    assert d.category.value == "storage"
    assert any("hard-wrapped at 92" in w for w in d.input.warnings)
    logs = REPO / "eval" / "corpus" / "logs"
    for cid in ("n22b-017", "n7-022", "n29b-006", "n9b-010", "n26a-022"):
        assert sniff_soft_wrap((logs / f"{cid}.log").read_bytes()[:65536]) is None, cid
    wrapped = (logs / "n41b-001.log").read_bytes()
    joined = unwrap_soft(wrapped, 92).decode()
    assert "'Error while creating shared memory segment /dev/shm/nccl-TfciGV (size 31850880), error: No space left " \
           "on device (28)'." in joined
    assert "replica 0 failed: INTERNAL" in joined


def test_a_logging_record_written_right_after_a_progress_bar_is_a_line_of_its_own(corpus_dev_case) -> None:
    """Public corpus dev n65b-005: torchelastic's keep-alive WARNING was printed at the end of a tqdm bar's last redraw
    ("...CUDAUtil=0%]WARNING:torch.distributed.elastic.rendezvous..."), read as an error line, and its
    "RendezvousTimeoutError" taken for a rendezvous that did not gather its nodes (framework). Split from the bar, it is
    the agent's warning (a missed keep-alive: a symptom), and the worker SIGKILLed next to it is the cause."""
    d = corpus_dev_case("n65b-005")
    assert any("written right after a progress bar were split" in w for w in d.input.warnings)
    assert d.category.value == "host_oom" and d.first_failing_rank == 1, d.root_cause.summary
    assert not any(h.signature_id == "rendezvous_timeout" for h in d.signature_hits)
    assert any(h.signature_id == "rendezvous_keepalive_failed" and h.role.value == "symptom" for h in d.signature_hits)
