"""Rating scales: the one definition of the named scales a rating is given on.

The collector API accepts ratings on these scales (:class:`feedback.schemas.FeedbackIn`), the
store keeps the scale's name next to each rating, the collector source normalises stored
ratings with :func:`normalise`, and the SQL feedback connector's presets
(``connectors.feedback_tables.mapping.RatingScale``) are these same scales. Change a scale here
and every reader follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ScaleName = Literal["thumbs", "stars_1_5", "scale_0_10"]
"""The named scales, as written in API requests, configs and the store's ``scale`` column."""


@dataclass(frozen=True)
class Scale:
    """A named rating scale.

    Attributes:
        min: lowest rating, in the scale's own units.
        max: highest rating, in the scale's own units.
        good: default good threshold in the scale's units (ratings ``>= good`` are good).
    """

    min: float
    max: float
    good: float


SCALES: dict[str, Scale] = {
    "thumbs": Scale(-1.0, 1.0, 1.0),  # +1 / -1 only
    "stars_1_5": Scale(1.0, 5.0, 4.0),
    "scale_0_10": Scale(0.0, 10.0, 7.0),
}


def normalise(rating: float, scale: str) -> float:
    """``rating`` on ``scale`` as a score ``(rating - min) / (max - min)``: 0 at the bottom, 1 at the top.

    Not clipped: a rating outside its scale gives a score outside [0, 1], for the caller to refuse.
    Raises:
        KeyError: ``scale`` is not one of :data:`SCALES`.
    """
    s = SCALES[scale]
    return (rating - s.min) / (s.max - s.min)
