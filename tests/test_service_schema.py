"""A bounded schemathesis run against the served OpenAPI spec: generated requests to every operation,
none answered with a 5xx, and the server still healthy afterwards. Loopback only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed (pip install schemathesis)")
from hypothesis import HealthCheck, settings  # noqa: E402
from test_service_support import ADMIN, LiveServer, build_small_kb, service_settings  # noqa: E402

MAX_EXAMPLES = 12  # per operation: ~20 operations, a few seconds in all


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("schema")
    (tmp / "roots").mkdir()
    build_small_kb(tmp / "kb", n=6)
    with LiveServer(service_settings(tmp, allowed_roots=[tmp / "roots"], sync_wait_s=5, kb_enabled=True, kb_home=tmp / "kb",
                                     kb_embedder="hashing", limits={"max_upload_bytes": 1 << 20})) as s:
        yield s


def test_no_server_errors(live: LiveServer) -> None:
    """Every operation of the spec, ``MAX_EXAMPLES`` generated requests each (derandomised)."""
    from hypothesis import given

    schema = schemathesis.openapi.from_url(f"{live.url}/openapi.json")
    failures: list[tuple[str, str, int, str]] = []
    operations = 0
    for result in schema.get_all_operations():
        op = result.ok()
        operations += 1

        @given(case=op.as_strategy())
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
                  database=None)
        def run(case) -> None:  # noqa: ANN001 - schemathesis' Case
            response = case.call(headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
            if response.status_code >= 500:
                failures.append((case.method, case.formatted_path, response.status_code, response.text[:300]))

        run()
    assert operations >= 15
    assert not failures, failures[:5]


def test_still_healthy_after_the_run(live: LiveServer) -> None:
    assert live.client.get("/healthz").status_code == 200
    assert live.client.get("/readyz").status_code == 200
