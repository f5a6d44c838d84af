"""Secrets in error lines never reach the output; ordinary text that merely looks like a key does.

The secrets sit in lines that *become events* (exception lines, traceback messages, DeepSpeed and
torchelastic reports, NCCL warnings), in several files and layouts of a real multi-rank bundle, so
that each test first proves the line made it into the diagnosis and then that its secret did not.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import bundles as B
import pytest
from conftest import run_diagnose

from diag_service.domain import Category, Diagnosis

HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
GHP = "ghp_R4nd0mT0k3nW1thThirtySixCharsXYZ0123"
AKIA = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0cmFpbmVyIn0.c2lnbmF0dXJlMTIzNDU2"
BEARER2 = "7f3c9a1b2d4e6f8091a2b3c4d5e6f708"
PASSWORD = "Tr0ub4dor&3-prod"
URL_PASS = "Sup3rS3cretPassw0rd"
SECRETS = [HF, GHP, AKIA, AWS_SECRET, BEARER, BEARER2, PASSWORD, URL_PASS]

# (line as written by the process, part of it that must appear in the output once redacted)
SECRET_LINES = [
    (
        f"huggingface_hub.errors.HfHubHTTPError: 401 Client Error: Unauthorized for url: "
        f"https://huggingface.co/api/models/acme/llama-7b-sft (token={HF})",
        "HfHubHTTPError: 401 Client Error: Unauthorized for url",
    ),
    (
        f"RuntimeError: git clone failed: fatal: unable to access "
        f"'https://oauth2:{GHP}@github.com/acme/llm-data.git/': The requested URL returned error: 403",
        "RuntimeError: git clone failed: fatal: unable to access",
    ),
    (
        "botocore.exceptions.ClientError: An error occurred (SignatureDoesNotMatch) when calling the PutObject "
        f"operation: AWS4-HMAC-SHA256 Credential={AKIA}/20240314/us-east-1/s3/aws4_request",
        "An error occurred (SignatureDoesNotMatch) when calling the PutObject operation",
    ),
    (
        f"ValueError: bad AWS config: aws_access_key_id={AKIA} aws_secret_access_key={AWS_SECRET}",
        "ValueError: bad AWS config",
    ),
    (
        "requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: https://mlflow.internal/api/2.0/runs "
        f"(headers={{'Authorization': 'Bearer {BEARER}'}})",
        "requests.exceptions.HTTPError: 403 Client Error: Forbidden for url",
    ),
    (
        f"ERROR:metrics:upload failed (HTTP 401), request header Authorization: Bearer {BEARER2}",
        "upload failed (HTTP 401), request header Authorization: Bearer <REDACTED>",
    ),
    (
        f"sqlalchemy.exc.OperationalError: invalid DSN: host=db.internal user=trainer password={PASSWORD} dbname=metrics",
        "invalid DSN: host=db.internal user=trainer password=<REDACTED>",
    ),
    (
        f"ERROR: Could not install packages: HTTPError 503 from https://trainer:{URL_PASS}@artifacts.internal/pypi/simple/",
        "Could not install packages: HTTPError 503 from https://<REDACTED>@artifacts.internal/pypi/simple/",
    ),
]

ORDINARY_LINES = [
    "ValueError: max_tokens=4096 exceeds max_position_embeddings=2048 (keyword arguments: temperature=0.7, top_p=0.9)",
    "TypeError: LlamaForCausalLM.forward() got an unexpected keyword argument 'max_new_tokens'",
    'RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM: Missing key(s) in state_dict: "lm_head.weight"',
    "KeyError: 'model.layers.0.self_attn.k_proj.weight'",
    "OSError: [Errno 13] Permission denied: '/home/user/.cache/huggingface/token'",
]


def _bundle_with(tmp_path: Path, lines: list[str], gz: bool = False) -> tuple[B.Built, Diagnosis]:
    """The torchrun --log-dir bundle; ``lines`` spread over rank 5's stderr (before the OOM), rank
    2's stderr and node 1's agent log, each as a one-line error a process printed."""
    built = B.torchrun_logdir(tmp_path, gzip_members=gz)
    targets = [
        f"node1/{B.RUN_ID}/attempt_0/1/stderr.log",
        f"node0/{B.RUN_ID}/attempt_0/2/stderr.log",
        "node1/torchrun.log",
    ]
    for i, line in enumerate(lines):
        rel = targets[i % len(targets)] + (".gz" if gz else "")
        p = built.path / rel
        data = gzip.decompress(p.read_bytes()) if gz else p.read_bytes()
        head, tail = data.split(b"\n", 2)[:2], data.split(b"\n", 2)[2]
        data = b"\n".join([*head, line.encode(), tail])
        p.write_bytes(gzip.compress(data) if gz else data)
    return built, run_diagnose(built.path)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip-members"])
def test_secrets_in_error_lines_never_reach_the_output(tmp_path: Path, gz: bool) -> None:
    _, d = _bundle_with(tmp_path, [line for line, _ in SECRET_LINES], gz=gz)
    assert d.category is Category.GPU_OOM and d.first_failing_rank == B.OOM_RANK  # the OOM still wins
    dump = d.model_dump_json()
    texts = [e.first.text for e in d.events]
    for _, visible in SECRET_LINES:  # each line became an event, redacted
        assert any(visible in t for t in texts), visible
    for secret in SECRETS:
        assert secret not in dump, secret
        assert secret[4:-4] not in dump, secret  # not even partly
    assert "<REDACTED>" in dump


def test_secrets_in_a_traceback_and_in_torchelastics_report(tmp_path: Path) -> None:
    """The exception message of a traceback (rank 5's), and the same traceback as torchelastic's
    error.json and its ChildFailedError report carry it."""
    built = B.torchrun_logdir(tmp_path)
    secret_msg = f"OSError: cannot push checkpoint to https://hf_user:{HF}@huggingface.co/acme/llama: 401"
    for p in built.path.rglob("*"):
        if p.is_file():
            p.write_bytes(p.read_bytes().replace(B.OOM_LINE.encode(), secret_msg.encode()))
            p.write_bytes(p.read_bytes().replace(f"OutOfMemoryError: {B.OOM_MSG}".encode(), secret_msg.encode()))
    d = run_diagnose(built.path)
    dump = d.model_dump_json()
    assert any(e.first.text.startswith("OSError: cannot push checkpoint to https://<REDACTED>@huggingface.co") for e in d.events)
    assert HF not in dump and "hf_user" not in dump
    assert HF not in json.dumps([h.model_dump() for h in d.signature_hits])


def test_ordinary_text_survives_redaction(tmp_path: Path) -> None:
    _, d = _bundle_with(tmp_path, ORDINARY_LINES)
    texts = [e.first.text for e in d.events]
    for line in ORDINARY_LINES:
        assert line in texts, line
    dump = d.model_dump_json()
    assert "https://pytorch.org/docs/stable/notes/cuda.html#environment-variables" in dump  # a URL without credentials
    assert "<REDACTED>" not in dump


def test_tokenizer_special_token_settings_are_not_secrets(tmp_path: Path) -> None:
    line = (
        "ValueError: Asking to pad but the tokenizer does not have a padding token. Please select a token to use as "
        "`pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)` or add a new pad token via "
        "`tokenizer.add_special_tokens({'pad_token': '[PAD]'})`."
    )
    _, d = _bundle_with(tmp_path, [line])
    assert line in [e.first.text for e in d.events]


def test_password_of_a_url_without_user_name(tmp_path: Path) -> None:
    line = f"redis.exceptions.ConnectionError: Error connecting to redis://:{URL_PASS}@redis.internal:6379/0"
    _, d = _bundle_with(tmp_path, [line])
    assert any(e.first.text.startswith("redis.exceptions.ConnectionError") for e in d.events)
    assert URL_PASS not in d.model_dump_json()


def test_secret_option_in_a_printed_command_line(tmp_path: Path) -> None:
    line = (
        f"[{B.YEAR}-03-14 13:02:48,512] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', '-u', "
        f"'train.py', '--local_rank=1', '--db-password', '{PASSWORD}'] exits with return code = 1"
    )
    _, d = _bundle_with(tmp_path, [line])
    assert any("sigkill_handler" in e.first.text for e in d.events)
    assert PASSWORD not in d.model_dump_json()


# Vendor formats (issue 19): (line as a process prints it, the secret, a part that must survive).
FORMAT_LINES = [
    ("azure.core.exceptions.ClientAuthenticationError: DefaultEndpointsProtocol=https;AccountName=ckpt;"
     "AccountKey=q9XbT0kVw3nLr8ZsP1yHc6MdF2gJaE5uRi7oKlNt4BvCx0WzYs3QpDmGhLjKf8a==;EndpointSuffix=core.windows.net",
     "q9XbT0kVw3nLr8ZsP1yHc6MdF2gJaE5uRi7oKlNt4BvCx0WzYs3QpDmGhLjKf8a", "ClientAuthenticationError"),
    ("urllib.error.HTTPError: 403 for https://ckpt.blob.core.windows.net/run7/step100.pt?sv=2021-06-08&sp=r"
     "&sig=Zk3%2Bq9XbT0kVw3nLr8ZsP1yHc6MdF2gJ%3D", "Zk3%2Bq9XbT0kVw3nLr8ZsP1yHc6MdF2gJ", "HTTPError: 403"),
    ("ERROR: alert failed: POST https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/Qx7LmN2pR9sT4vW6yZ8aB3cD",
     "Qx7LmN2pR9sT4vW6yZ8aB3cD", "alert failed"),
    ("slack_bolt.error.BoltError: bad app token xapp-1-A0123456789-4567890123456-0f1e2d3c4b5a69788796a5b4c3d2e1f0",
     "4567890123456-0f1e2d3c4b5a69788796a5b4c3d2e1f0", "BoltError"),
    ("google.api_core.exceptions.Forbidden: 403 key AIzaSyD4x9QwErTyUiOpAsDfGhJkLzXcVbNm123 rejected",
     "AIzaSyD4x9QwErTyUiOpAsDfGhJkLzXcVbNm123", "Forbidden: 403"),
    ("google.auth.exceptions.RefreshError: token ya29.a0AfB_byC1d2E3f4G5h6I7j8K9l0MnOpQrStUv expired",
     "ya29.a0AfB_byC1d2E3f4G5h6I7j8K9l0MnOpQrStUv", "RefreshError"),
    ('ValueError: bad service account {"type": "service_account", "private_key_id": '
     '"8c1f2e3d4c5b6a798897a6b5c4d3e2f1a0b9c8d7", "client_email": "trainer@proj.iam.gserviceaccount.com"}',
     "8c1f2e3d4c5b6a798897a6b5c4d3e2f1a0b9c8d7", "bad service account"),
    ("netrc.NetrcParseError: machine api.wandb.ai login user password 5f4dcc3b5aa765d61d8327deb882cf99a1b2c3d4",
     "5f4dcc3b5aa765d61d8327deb882cf99a1b2c3d4", "NetrcParseError"),
    ("subprocess.CalledProcessError: Command 'wandb login 9e107d9d372bb6826bd81d3542a419d6a1b2c3d4' returned 1",
     "9e107d9d372bb6826bd81d3542a419d6a1b2c3d4", "CalledProcessError"),
    ("npm ERR! 401 Unauthorized //registry.npmjs.org/:_authToken=npm_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78",
     "npm_Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78", "401 Unauthorized"),
    ("RuntimeError: git fetch failed with glpat-Xy9Zq8Wv7Ut6Sr5Qp4On as credential",
     "glpat-Xy9Zq8Wv7Ut6Sr5Qp4On", "git fetch failed"),
    ("RuntimeError: upload failed, twine used pypi-AgEIcHlwaS5vcmcCJGQ3ZjI4YjE1LTk0MmQtNDQ0Zi1hZWY1LTcwMDkxNDk1",
     "AgEIcHlwaS5vcmcCJGQ3ZjI4YjE1LTk0MmQtNDQ0Zi1hZWY1LTcwMDkxNDk1", "upload failed"),
    ("stripe.error.AuthenticationError: Invalid API Key provided: sk_live_51HqLyjWDarjtT1zdp7dcXYZ",
     "sk_live_51HqLyjWDarjtT1zdp7dcXYZ", "AuthenticationError"),
    ("ERROR kubeconfig invalid: client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJ",
     "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJ", "kubeconfig invalid"),
    ('docker.errors.APIError: bad config {"auths": {"ghcr.io": {"auth": "dHJhaW5lcjpnaHBfc2VjcmV0c2VjcmV0"}}}',
     "dHJhaW5lcjpnaHBfc2VjcmV0c2VjcmV0", "APIError: bad config"),
]


@pytest.mark.parametrize(("line", "secret", "visible"), FORMAT_LINES, ids=[f[2][:20] for f in FORMAT_LINES])
def test_vendor_secret_formats_are_redacted(line: str, secret: str, visible: str) -> None:
    from diag_service.redact import redact

    out = redact(line)
    assert secret not in out and visible in out and "<REDACTED>" in out


def test_a_private_key_body_on_the_lines_after_its_header_is_redacted(tmp_path: Path) -> None:
    body = ["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
            "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"]
    log = tmp_path / "rank0.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 40, in <module>\n'
        "    load_key(cfg)\n"
        "ValueError: could not parse key:\n"
        "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n"
    )
    d = run_diagnose(log)
    dump = d.model_dump_json()
    assert any(e.first.text.startswith("ValueError: could not parse key") for e in d.events)
    for b in body:
        assert b not in dump and b[10:40] not in dump


@pytest.mark.timeout(120)
def test_redaction_of_crafted_lines_does_not_backtrack() -> None:
    """Lines built to make a backtracking key=value pattern quadratic (issue 19: 12 lines of 4 KB held
    a worker 63 s): 12 lines of 200 KB each, which under backtracking would take hours."""
    from diag_service.redact import redact

    line = "RuntimeError: bad key X " + "a." * 100_000
    for _ in range(12):
        assert redact(line).startswith("RuntimeError: bad key X")
