"""Prometheus metrics of one app instance (its own registry, so several apps can live in one process)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    """Request latency, stage latency, queue depth, jobs and diagnoses by category, refusals, alerts."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.request_seconds = Histogram("diag_http_request_duration_seconds", "HTTP request latency.",
                                         ["method", "route", "status"], buckets=_LATENCY_BUCKETS, registry=r)
        self.stage_seconds = Histogram("diag_stage_duration_seconds", "Wall time of each pipeline stage per diagnosis.",
                                       ["stage"], buckets=_LATENCY_BUCKETS, registry=r)
        self.job_seconds = Histogram("diag_job_duration_seconds", "Wall time of a job in its worker.", ["kind"],
                                     buckets=_LATENCY_BUCKETS, registry=r)
        self.queue_depth = Gauge("diag_queue_depth", "Jobs waiting for a worker.", registry=r)
        self.jobs_running = Gauge("diag_jobs_running", "Jobs being analysed now.", registry=r)
        self.jobs = Counter("diag_jobs_total", "Finished jobs by kind and status.", ["kind", "status"], registry=r)
        self.diagnoses = Counter("diag_diagnoses_total", "Finished diagnoses by category and failure mode.",
                                 ["category", "failure_mode"], registry=r)
        self.refusals = Counter("diag_refusals_total", "Requests refused with a 4xx/503, by reason.", ["reason"], registry=r)
        self.alerts = Counter("diag_alerts_total", "Alerts by kind and outcome (sent, deduplicated, retried, failed).",
                              ["kind", "outcome"], registry=r)
        self.live_batches = Counter("diag_live_batches_total", "Agent batches by outcome (applied, resent, refused).",
                                    ["outcome"], registry=r)
        self.live_events = Counter("diag_live_events_total", "Lifecycle events reported by node agents (applied "
                                   "batches), by event.", ["event"], registry=r)
        self.feedback = Counter("diag_feedback_total", "Operator feedback by verdict and source.", ["verdict", "source"],
                                registry=r)

    def bind_queue(self, queued: Callable[[], float], running: Callable[[], float]) -> None:
        """Read the queue gauges at scrape time."""
        self.queue_depth.set_function(queued)
        self.jobs_running.set_function(running)

    def render(self) -> bytes:
        return generate_latest(self.registry)
