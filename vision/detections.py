"""The one detection type that flows through the vision stages (detect -> decode -> table).

Class ids are global across the project's two models (see models/MODEL_CARD.md):

====  ===========  ==============================================================
id    name         meaning
====  ===========  ==============================================================
0     tile         a face-up tile (oriented box / polygon from the tile model)
1     tile_back    a face-down tile (or the top of a stack)
2     pip_red      a red spot
3     pip_white    a spot that is not red (white on black tiles, dark on ivory)
====  ===========  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Detections", "CLASS_NAMES", "TILE", "TILE_BACK", "PIP_RED", "PIP_WHITE"]

TILE, TILE_BACK, PIP_RED, PIP_WHITE = 0, 1, 2, 3
CLASS_NAMES: tuple[str, ...] = ("tile", "tile_back", "pip_red", "pip_white")


@dataclass
class Detections:
    """Detections in one image, in that image's pixel coordinates.

    Attributes:
        xyxy: float32 array (n, 4): axis-aligned boxes ``x1, y1, x2, y2`` in pixels.
        confidence: float32 array (n,): detector confidence in [0, 1].
        class_id: int64 array (n,): global class id (see module docstring).
        polygon: float32 array (n, 4, 2) of corner points ``(x, y)`` in pixels, clockwise from
            the first corner; for oriented (tile) detections the tile's outline, for
            axis-aligned ones the box corners. NaN-free.

    Raises:
        ValueError: from ``__post_init__`` when the arrays' lengths or shapes disagree.
    """

    xyxy: np.ndarray
    confidence: np.ndarray
    class_id: np.ndarray
    polygon: np.ndarray = field(default=None)

    def __post_init__(self) -> None:
        self.xyxy = np.asarray(self.xyxy, dtype=np.float32).reshape(-1, 4)
        n = len(self.xyxy)
        self.confidence = np.asarray(self.confidence, dtype=np.float32).reshape(n)
        self.class_id = np.asarray(self.class_id, dtype=np.int64).reshape(n)
        if self.polygon is None:
            x1, y1, x2, y2 = (self.xyxy[:, i] for i in range(4))
            self.polygon = np.stack(
                [np.stack([x1, y1], 1), np.stack([x2, y1], 1),
                 np.stack([x2, y2], 1), np.stack([x1, y2], 1)], 1).astype(np.float32)
        self.polygon = np.asarray(self.polygon, dtype=np.float32).reshape(n, 4, 2)

    @classmethod
    def empty(cls) -> "Detections":
        """No detections."""
        return cls(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64))

    @classmethod
    def from_polygons(cls, polygon: np.ndarray, confidence: np.ndarray,
                      class_id: np.ndarray) -> "Detections":
        """Build from oriented polygons (n, 4, 2) px; xyxy is their bounding box."""
        polygon = np.asarray(polygon, dtype=np.float32).reshape(-1, 4, 2)
        if len(polygon):
            xyxy = np.concatenate([polygon.min(1), polygon.max(1)], 1)
        else:
            xyxy = np.zeros((0, 4), np.float32)
        return cls(xyxy, confidence, class_id, polygon)

    def __len__(self) -> int:
        return len(self.xyxy)

    def __getitem__(self, index) -> "Detections":
        """Select by boolean mask, index array or slice; returns Detections."""
        if isinstance(index, (int, np.integer)):
            index = [int(index)]
        return Detections(self.xyxy[index], self.confidence[index], self.class_id[index],
                          self.polygon[index])

    def shifted(self, dx: float, dy: float) -> "Detections":
        """The same detections moved by ``(dx, dy)`` px (a crop's detections in the whole
        picture's pixels)."""
        off = np.array([dx, dy], np.float32)
        return Detections(self.xyxy + np.tile(off, 2), self.confidence, self.class_id,
                          self.polygon + off)

    @classmethod
    def merge(cls, parts: list["Detections"]) -> "Detections":
        """Concatenate several Detections (same image)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        return cls(np.concatenate([p.xyxy for p in parts]),
                   np.concatenate([p.confidence for p in parts]),
                   np.concatenate([p.class_id for p in parts]),
                   np.concatenate([p.polygon for p in parts]))
