"""Confidence calibration: a diagnosis's confidence as the measured probability that its category is right.

Entry points: :func:`load_calibration` (``knowledge_base/calibration.yaml`` in, validated
:class:`Calibration` out; raises :class:`CalibrationError`) and :meth:`Calibration.apply`
(a diagnosis in, its confidence replaced in place). The map is fitted by ``eval/calibrate.py`` on the
development split of the public corpus only (never on the frozen test split): isotonic regression
(pool-adjacent-violators) of "category right" on the pipeline's raw confidence, one map for named
categories and one constant for ``unknown``.
"""

from __future__ import annotations

import bisect
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from diag_service.domain import Category, Diagnosis, FailureMode
from diag_service.errors import DiagError, ErrorKind
from diag_service.resources import builtin


class CalibrationError(DiagError):
    """The calibration file is missing, malformed or not monotone."""

    kind = ErrorKind.CONFIG


class Calibration(BaseModel):
    """A step map from raw confidence to probability of being right.

    ``knots``: ``[raw_upper_bound, probability]`` pairs, raw bounds increasing and probabilities
    non-decreasing; a raw confidence takes the probability of the first knot whose bound is >= it.
    ``unknown``: the probability for a diagnosis whose category is ``unknown`` (that it is truly
    unknowable from the logs). ``analyzers``: the probability for a named category of a slowdown that the analyzers
    decided (``category_source == "analyzers"``, ``fail_slow``: from step times or a timing feed), which the knots,
    fitted on log signatures, do not describe. A hang culprit's category from stacks keeps its own bounded score.
    ``fitted_on``: provenance (split, cases, commit).
    """

    model_config = ConfigDict(extra="forbid")

    fitted_on: str
    knots: list[tuple[float, float]] = Field(min_length=1)
    unknown: float = Field(ge=0, le=1)
    analyzers: float | None = Field(default=None, ge=0, le=1)

    @model_validator(mode="after")
    def _monotone(self) -> Calibration:
        xs = [k[0] for k in self.knots]
        ys = [k[1] for k in self.knots]
        if xs != sorted(xs) or ys != sorted(ys) or not all(0 <= v <= 1 for v in xs + ys):
            raise ValueError("knots must have increasing bounds and non-decreasing probabilities in [0, 1]")
        return self

    def probability(self, raw: float, category: Category) -> float:
        """Calibrated probability (0-1) for a raw confidence (0-1) and the diagnosed category."""
        if category is Category.UNKNOWN:
            return round(min(raw, self.unknown), 3)
        i = bisect.bisect_left([k[0] for k in self.knots], raw)
        return round(self.knots[min(i, len(self.knots) - 1)][1], 3)

    def apply(self, d: Diagnosis) -> None:
        """Replace ``d.confidence`` by its calibrated value (in place)."""
        if d.category is not Category.UNKNOWN and d.category_source == "analyzers":
            if d.failure_mode is FailureMode.FAIL_SLOW and self.analyzers is not None:
                d.confidence = round(self.analyzers, 3)
            # a hang culprit's category from stacks says where, not why: its own bounded score (at most 0.45,
            # docs/hang.md) stands, uncalibrated: too few such answers have been scored to fit it
            return
        d.confidence = self.probability(d.confidence, d.category)


def default_calibration_path() -> Path:
    """The built-in ``knowledge_base/calibration.yaml``."""
    return builtin("knowledge_base", "calibration.yaml")


def load_calibration(path: str | Path | None = None) -> Calibration:
    """Load and validate the calibration map (default: the project's). Raises :class:`CalibrationError`
    with file and line."""
    from diag_service.yamlio import load_yaml_model

    p = Path(path) if path is not None else default_calibration_path()
    return load_yaml_model(p, Calibration, CalibrationError)[0]


__all__ = ["Calibration", "CalibrationError", "default_calibration_path", "load_calibration"]
