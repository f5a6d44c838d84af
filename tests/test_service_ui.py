"""The diagnosis page and the index in headless Chromium (Debian's ``chromium``), against a real server.

Screenshots are kept as test artifacts in ``$DIAG_TEST_ARTIFACTS`` (default ``build/test-artifacts/``):
``service_diagnosis_page.png`` and ``service_index_page.png``.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_service_support import EXAMPLE, REPO, LiveServer, build_small_kb, service_settings, tar_gz

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)")
ARTIFACTS = Path(os.environ.get("DIAG_TEST_ARTIFACTS") or REPO / "build" / "test-artifacts")


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
           f"--user-data-dir={tmp / 'chromium-profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=False)


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str, Path]]:
    tmp = tmp_path_factory.mktemp("ui")
    build_small_kb(tmp / "kb")
    # pages in a browser without a token: authentication off for this loopback-only server
    settings = service_settings(tmp, tokens=[], kb_enabled=True, kb_home=tmp / "kb", kb_embedder="hashing")
    with LiveServer(settings, token=None) as s:
        r = s.diagnose(tar_gz(EXAMPLE, arcname="llama-7b-sft-0042"), job_id="llama-7b-sft-0042")
        assert r.status_code == 200, r.text[:300]
        yield s, r.json()["id"], tmp


def test_diagnosis_page_renders_in_chromium(page: tuple[LiveServer, str, Path]) -> None:
    srv, did, tmp = page
    url = f"{srv.url}/ui/diagnoses/{did}"
    dom = _chromium(tmp, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    for needle in ('id="category">user_code<', "Tensor shape or size mismatch on rank 3", "Recommended action",
                   "RuntimeError: mat1 and mat2 shapes cannot be multiplied", "Timeline: first failure and cascade",
                   "root cause</td>", "cascade</td>", "incidents</h2>", "Confirm diagnosis", "Save correction"):
        assert needle in html, needle
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "service_diagnosis_page.png"
    shot.unlink(missing_ok=True)
    r = _chromium(tmp, f"--screenshot={shot}", "--window-size=1280,2200", url)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    assert _png_size(shot) == (1280, 2200)
    assert shot.stat().st_size > 60_000, "a page with text, tables and colours, not a blank screen"


def test_index_page_renders_in_chromium(page: tuple[LiveServer, str, Path]) -> None:
    srv, did, tmp = page
    assert f'href="/ui/diagnoses/{did}"' in srv.client.get("/ui/").text
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "service_index_page.png"
    r = _chromium(tmp, f"--screenshot={shot}", "--window-size=1280,720", f"{srv.url}/ui/")
    assert r.returncode == 0 and _png_size(shot) == (1280, 720)
