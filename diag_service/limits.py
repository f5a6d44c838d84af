"""Bounds on the sizes that untrusted input states about itself, in one place.

A rank, a step, a node name, a world size or a stack's depth comes from a file or a request the tool
does not control; each sizes something (an array, a list in the report, a loop), so each is checked
where the input is parsed, against :data:`LIMITS`. What a value beyond a bound does is the parser's
documented behaviour: a timing-feed record is invalid (skipped and counted), a dump's extra frames and
threads are dropped (counted in the dump's warning), an option or request field is an input error
(:class:`~diag_service.errors.DiagError` of kind ``input``: CLI exit 2, HTTP 422).

Byte and member bounds of a bundle (its archives, members, decompressed bytes) are one model,
:class:`BundleLimits`, that the one bundle walker (:mod:`diag_service.ingest.walk`) applies, whether it
salvages (ingest) or refuses (the service's admission check). The CLI takes its defaults; the service
takes its own, tighter ones from its settings (:class:`~diag_service.service.settings.UploadLimits`,
which adds the upload's own size and the longest line it admits). ``docs/security.md`` lists them all.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class InputLimits(BaseModel):
    """The bounds, with their defaults and where each default comes from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_rank: int = Field(
        default=2**20 - 1, ge=0,
        description="Largest rank id (feeds, stream records, dump file names, ranks.json, Flight Recorder dumps). "
                    "2**20 ranks is ten times the largest published training job (~100k GPUs).")
    max_world_size: int = Field(
        default=2**20, ge=1,
        description="Largest world size given as an option or request field, or implied by the ranks seen.")
    max_step: int = Field(default=2**53, ge=0, description="Largest step number: above 2**53 a float is not exact.")
    max_stage: int = Field(default=2**15, ge=0, description="Largest pipeline stage (int32 in the detector).")
    max_attempt: int = Field(
        default=2**15, ge=0, description="Largest restart attempt of a record (torchrun counts restarts; int32 in "
                                         "the detector).")
    max_pending_steps: int = Field(
        default=1024, ge=1,
        description="Steps a streaming detector holds while waiting for all their ranks; past it the oldest is "
                    "analysed as it is (a step normally completes within max_lag_steps, 4, of the newest).")
    max_nodes: int = Field(
        default=2**16, ge=1,
        description="Distinct node names kept per feed or stream (65,536 nodes of 8 GPUs is 4x the largest "
                    "published job); further names are counted and analysed as an unknown node.")
    max_node_name_chars: int = Field(
        default=253, ge=1, description="Longest node name kept (a DNS host name is at most 253 characters).")
    max_frames: int = Field(
        default=512, ge=1,
        description="Frames kept per thread of a stack dump, innermost first (faulthandler prints at most 100; "
                    "py-spy all, and Python's default recursion limit is 1,000).")
    max_threads: int = Field(
        default=4096, ge=1,
        description="Threads kept per stack dump (faulthandler prints at most 100; a data-loading process "
                    "rarely has more than a few hundred).")


class BundleLimits(BaseModel):
    """Bounds a bundle walk applies (:mod:`diag_service.ingest.walk`). Sizes in bytes. The defaults are
    the CLI's, for a site's own files; the service's are tighter (``service.settings.UploadLimits``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    block_bytes: int = Field(
        default=4 << 20, ge=1,
        description="Bytes read per block of text: memory per member stays about this, whatever its size.")
    max_line_bytes: int = Field(
        default=1 << 20, ge=1,
        description="Longer lines are cut with a marker (1 MiB: 10x the longest line seen in real training logs, "
                    "a one-line JSON dump of a config).")
    max_total_bytes: int = Field(
        default=64 << 30, ge=1024,
        description="Decompressed bytes of the whole bundle (nested archives included); past it the rest is "
                    "skipped (64 GiB: a week of a 1,000-rank job's logs).")
    max_ratio: float = Field(
        default=200.0, ge=2,
        description="Decompressed/compressed ratio of a member and of the whole bundle, checked past "
                    "ratio_floor_bytes (text logs compress 5-30x, NCCL INFO logs up to ~100x; a bomb 1000x+).")
    ratio_floor_bytes: int = Field(
        default=64 << 20, ge=0, description="Ratios are checked once this many bytes are decompressed.")
    max_members: int = Field(
        default=200_000, ge=1,
        description="Files and archive members of the bundle, nested ones included (one count for all); "
                    "also bounds a zip's central directory (1 KiB per member) before it is parsed.")
    max_nesting: int = Field(
        default=1, ge=0,
        description="Levels of archives inside the bundle's own archive or folder that are opened (1: a zip "
                    "inside the job's tar.gz is read, an archive inside that zip is not).")


#: The bounds every parser applies.
LIMITS = InputLimits()

__all__ = ["LIMITS", "BundleLimits", "InputLimits"]
