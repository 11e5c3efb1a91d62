"""The frames of a still picture averaged before its still reading (issue 40, item 2).

Why. A surveillance camera's frames of a still table differ only by sensor noise and
compression artefacts, which fall on the spots the decoder counts (a dim 720p spot lost in the
noise, a JPEG block taken for a spot). The mean of N aligned frames keeps the picture and cuts
independent noise by sqrt(N), so the fused still reading
(:meth:`vision.recognition.engine.RecognitionEngine._read_still`) reads the mean of the frames
since the motion gate last saw motion (:mod:`vision.recognition.gate`: a still camera over a
still table, so the frames are aligned), not the last frame alone. Frames that are all alike
(a file that repeats one picture) give that picture back unchanged.

Public API: :class:`FrameStack`, :data:`MAX_FRAMES`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FrameStack", "MAX_FRAMES"]

#: Frames averaged at most (noise falls as sqrt(N): 8 frames, about half a second of a
#: 15 fps camera, cut it by 2.8; more add little and cost a float picture each).
MAX_FRAMES: int = 8


class FrameStack:
    """A running mean of the frames of one still picture.

    ``add(image)`` after each frame the gate saw still, ``reset()`` when it saw motion;
    ``mean(image)`` is the picture to read. Keeps a float32 (H, W, 3) sum of at most
    :data:`MAX_FRAMES` frames (the first ones; later frames are no newer picture).
    """

    def __init__(self, max_frames: int = MAX_FRAMES) -> None:
        if max_frames < 1:
            raise ValueError(f"max_frames must be >= 1, got {max_frames!r}")
        self.max_frames = int(max_frames)
        self._sum: np.ndarray | None = None
        self.count = 0

    def reset(self) -> None:
        """Forget the frames (the picture moved)."""
        self._sum, self.count = None, 0

    def add(self, image: np.ndarray) -> None:
        """One more frame of the still picture, uint8 (H, W, 3); a frame of another shape
        starts again from it."""
        if self._sum is not None and self._sum.shape != image.shape:
            self.reset()
        if self.count >= self.max_frames:
            return
        if self._sum is None:
            self._sum = image.astype(np.float32)
        else:
            self._sum += image
        self.count += 1

    def mean(self, image: np.ndarray) -> np.ndarray:
        """The picture to read: the mean of the frames added (rounded, uint8, a new array),
        or a copy of ``image`` when fewer than two were or they are of another shape."""
        if self.count < 2 or self._sum is None or self._sum.shape != image.shape:
            return image.copy()
        return np.rint(self._sum / self.count).astype(np.uint8)
