"""Confidence calibration: a diagnosis's confidence as the measured probability that its category is right.

Entry points: :func:`load_calibration` (``knowledge_base/calibration.yaml`` in, validated
:class:`Calibration` out; raises :class:`CalibrationError`) and :meth:`Calibration.apply`
(a diagnosis in, its confidence replaced in place). The map is fitted by ``eval/calibrate.py`` on the
development split of the public corpus only (never on the frozen test split): isotonic regression
(pool-adjacent-violators) of "category right" on the pipeline's raw confidence, one map for named
categories, shifted down per category in log-odds where a category's answers are right less often than the
map says; for ``unknown`` answers, one probability per situation the localizer answers ``unknown`` in (its
failure mode and raw confidence: a hang known only from timeouts, a failure no signature explains, logs with no
event at all), and one constant for the rest.
"""

from __future__ import annotations

import bisect
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from diag_service.domain import Category, Diagnosis, FailureMode
from diag_service.errors import DiagError, ErrorKind
from diag_service.resources import builtin


class CalibrationError(DiagError):
    """The calibration file is missing, malformed or not monotone."""

    kind = ErrorKind.CONFIG


#: An ``unknown`` answer abstains: its confidence (the probability that the cause cannot be told from the logs)
#: stays below the 0.5 at which a wrong answer counts as confidently wrong, however often such abstentions held.
UNKNOWN_MAX = 0.49


class UnknownCell(BaseModel):
    """The probability that an ``unknown`` answer is right in one situation: the diagnosis's ``failure_mode``
    and the localizer's raw confidence for it (a constant per situation in ``diag_service.localize``)."""

    model_config = ConfigDict(extra="forbid")

    failure_mode: FailureMode
    raw: float = Field(ge=0, le=1)
    probability: float = Field(ge=0, le=UNKNOWN_MAX)
    cases: int = Field(ge=1, description="dev answers the probability was fitted on")


class Calibration(BaseModel):
    """A step map from raw confidence to probability of being right.

    ``knots``: ``[raw_upper_bound, probability]`` pairs, raw bounds increasing and probabilities
    non-decreasing; a raw confidence takes the probability of the first knot whose bound is >= it.
    ``unknown``: the probability for a diagnosis whose category is ``unknown`` (that it is truly
    unknowable from the logs), at most the raw confidence; ``unknown_by``: per situation (failure mode and raw
    confidence), the measured probability instead, at most :data:`UNKNOWN_MAX`.
    ``analyzers``: the probability for a named category of a slowdown that the analyzers
    decided (``category_source == "analyzers"``, ``fail_slow``: from step times or a timing feed), which the knots,
    fitted on log signatures, do not describe. A hang culprit's category from stacks keeps its own bounded score.
    ``category_offsets``: per named category, a shift of the knots' probability in log-odds (``logit(p) + b``,
    the knots' value clipped to 0.02-0.98 first): some categories' answers are right less often than their raw
    confidence says on cases the rules were not tuned on (a ``user_code`` answer far less often). The fit only lowers
    (``eval/calibrate.py``'s ``fit_offsets``); categories without an offset keep the knots' value.
    ``fitted_on``: provenance (split, cases, commit).
    """

    model_config = ConfigDict(extra="forbid")

    fitted_on: str
    knots: list[tuple[float, float]] = Field(min_length=1)
    unknown: float = Field(ge=0, le=1)
    unknown_by: list[UnknownCell] = Field(default_factory=list)
    analyzers: float | None = Field(default=None, ge=0, le=1)
    category_offsets: dict[Category, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _monotone(self) -> Calibration:
        xs = [k[0] for k in self.knots]
        ys = [k[1] for k in self.knots]
        if xs != sorted(xs) or ys != sorted(ys) or not all(0 <= v <= 1 for v in xs + ys):
            raise ValueError("knots must have increasing bounds and non-decreasing probabilities in [0, 1]")
        if Category.UNKNOWN in self.category_offsets:
            raise ValueError("category_offsets: unknown answers have their own cells (unknown_by), not an offset")
        return self

    def probability(self, raw: float, category: Category, mode: FailureMode | None = None) -> float:
        """Calibrated probability (0-1) for a raw confidence (0-1), the diagnosed category and failure mode."""
        if category is Category.UNKNOWN:
            for cell in self.unknown_by:
                if cell.failure_mode is mode and abs(cell.raw - raw) < 1e-6:
                    return round(cell.probability, 3)
            return round(min(raw, self.unknown), 3)
        i = bisect.bisect_left([k[0] for k in self.knots], raw)
        p = self.knots[min(i, len(self.knots) - 1)][1]
        b = self.category_offsets.get(category)
        if b:
            p = min(max(p, 0.02), 0.98)
            p = 1.0 / (1.0 + math.exp(-(math.log(p / (1 - p)) + b)))
        return round(p, 3)

    def apply(self, d: Diagnosis) -> None:
        """Replace ``d.confidence`` by its calibrated value (in place)."""
        if d.category is not Category.UNKNOWN and d.category_source == "analyzers":
            if d.failure_mode is FailureMode.FAIL_SLOW and self.analyzers is not None:
                d.confidence = round(self.analyzers, 3)
            # a hang culprit's category from stacks says where, not why: its own bounded score (at most 0.45,
            # docs/hang.md) stands, uncalibrated: too few such answers have been scored to fit it
            return
        d.confidence = self.probability(d.confidence, d.category, d.failure_mode)
        lone = d.hang.lone_suspect() if d.hang is not None and d.hang.hung else None
        if lone is not None and d.first_failing_rank == lone.rank:
            # the stacks single out the rank the diagnosis names: the logs-only map (fitted on pasted logs) does not
            # take the answer below the culprit's own bounded score (docs/hang.md; otherwise right hang
            # answers read as low as 0.09, which a user cannot tell from guesses)
            d.confidence = max(d.confidence, lone.confidence())


def default_calibration_path() -> Path:
    """The built-in ``knowledge_base/calibration.yaml``."""
    return builtin("knowledge_base", "calibration.yaml")


def load_calibration(path: str | Path | None = None) -> Calibration:
    """Load and validate the calibration map (default: the project's). Raises :class:`CalibrationError`
    with file and line."""
    from diag_service.yamlio import load_yaml_model

    p = Path(path) if path is not None else default_calibration_path()
    return load_yaml_model(p, Calibration, CalibrationError)[0]


__all__ = ["UNKNOWN_MAX", "Calibration", "CalibrationError", "UnknownCell", "default_calibration_path",
           "load_calibration"]
