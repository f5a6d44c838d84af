"""Settings of the service's live jobs (``live:`` in the settings of ``diag serve``; :mod:`diag_service.live.jobs`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LiveSettings(BaseModel):
    """Live-job settings of ``diag serve`` (``live:`` in its settings file)."""

    model_config = ConfigDict(extra="forbid")

    debounce_s: float = Field(default=0.5, ge=0, le=60, description="Diagnose this long after the last batch with new evidence.")
    settle_s: float = Field(default=10.0, ge=0, le=3600, description="Quiet time after all agents ended, then final.")
    announce_running_s: float = Field(
        default=15.0, ge=0, le=3600,
        description="A hang or slow incident of a job still running is announced with the first diagnosis this "
                    "long after it opened (a hung job stays allocated: its agents may never end).")
    phase_s: float = Field(
        default=600.0, gt=0, le=3600,
        description="Longest checkpoint or evaluation phase (seconds) during which the job's other agents' hang "
                    "detections are held (each phase lasts the reporting agent's stretched hang timeout, at most this).")
    heartbeat_s: float = Field(default=10.0, gt=0, le=3600,
                               description="The agents' heartbeat interval (in every acknowledgement; agents adopt it).")
    stale_after: float = Field(default=3.0, ge=1, description="An agent silent for this many heartbeat intervals is stale.")
    max_agents_per_job: int = Field(default=4096, ge=1)
    max_files_per_job: int = Field(default=20_000, ge=1, description="Log files of one job (all nodes).")
    max_job_bytes: int = Field(default=8 << 30, ge=1 << 20, description="Bytes written into one job's folder.")
