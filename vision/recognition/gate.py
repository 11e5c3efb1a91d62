"""The motion gate in front of the tile detector: run it only when the picture changed.

Each frame is reduced to a grey thumbnail (:attr:`vision.config.GateConfig.thumb_size`,
192 x 108, ``cv2.INTER_AREA``) and compared in blocks (6 x 6 px of the thumbnail) with the
thumbnail of the frame the detector last ran on. When no block's mean absolute difference exceeds
``motion_threshold`` (8 grey levels) the previous detections are reused; a hand, a moved or
swapped tile or a camera move changes blocks and the detector runs. It runs at least every
``redetect_every`` frames anyway -- except while the caller *holds* a reading of the reference
picture (:attr:`MotionGate.holding`: the engine's fused still reading, standing or, live,
being made beside the loop, :mod:`vision.recognition.engine`): then a still picture is never
re-detected, because a re-detection could not change that reading; and the reference is not
renewed, so a slow change that never moves a block by the threshold between two frames still
adds up against the picture the reading was made of, and moves the gate once it does. While
the picture keeps changing it runs on every ``motion_detect_every``-th frame; the frames in
between are *stale*: drawn with the previous detections but not counted by the round tracker,
so stability (and settlement) rests only on frames the detector saw or that did not change.
Each decision also says whether the frame shows what the frame before it showed
(:attr:`GateDecision.settled`): a live table spares the detector a picture still changing
from frame to frame (:func:`vision.recognition.video.detect_gated`).

The decision names the blocks that moved (:attr:`GateDecision.blocks`, :meth:`MotionGate.changed_box`)
so the engine can re-detect only that part of the frame (:mod:`vision.recognition.region`,
``region_detect``); after such a run :meth:`MotionGate.ran` renews the reference only inside the
re-detected core, so each block is always compared with the picture its detections were made of.

:class:`MotionGate` holds no model: it decides, the caller detects (testable with plain arrays).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from vision.config import GateConfig

__all__ = ["MotionGate", "GateDecision", "thumbnail"]


def thumbnail(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Grey ``size`` (w, h) thumbnail of a BGR uint8 (H, W, 3) image, int16 (h, w)."""
    g = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    return cv2.resize(g, size, interpolation=cv2.INTER_AREA).astype(np.int16)


@dataclass(frozen=True)
class GateDecision:
    """What to do with one frame.

    Attributes:
        detect: run the detector on this frame (then call :meth:`MotionGate.ran`).
        stale: the picture changed but the detector is skipped (motion rate): the previous
            detections are drawn, the frame is not counted by the round tracker.
        moved: the picture changed since the reference frame (always True for the first
            frame and with the gate off); a periodic re-detection of a still picture is not.
        blocks: bool (rows, columns) of :attr:`vision.config.GateConfig.blocks`: the blocks
            whose mean difference from the reference exceeds ``motion_threshold``; None when
            nothing was compared (first frame, gate off, after :meth:`MotionGate.reset`).
        settled: on a frame to detect because it moved, no block differs by
            ``motion_threshold`` from the frame decided just before (not the reference): the
            picture has come to rest; False while it changes from frame to frame, when there
            was no frame before, and on every other decision (not compared). A live caller
            that spares the detector a moving picture still runs it on the frame that settles
            (:func:`vision.recognition.video.detect_gated`).
    """

    detect: bool
    stale: bool = False
    moved: bool = True
    blocks: np.ndarray | None = None
    settled: bool = False


class MotionGate:
    """Decides per frame whether the tile detector must run (module docstring).

    Args:
        config: :class:`vision.config.GateConfig`.
    """

    def __init__(self, config: GateConfig = GateConfig()) -> None:
        self.config = config
        self._last_thumb: np.ndarray | None = None
        self._last_frame = -1
        self._frame = 0
        self._current = 0
        self._thumb: np.ndarray | None = None
        self._prev_thumb: np.ndarray | None = None  # the frame decided before this one
        self._shape: tuple[int, int] = (0, 0)  # (H, W) of the frame just decided
        #: the caller holds a reading of the reference picture (module docstring): no periodic
        #: re-detection of a still picture while True; motion still moves the gate
        self.holding = False

    def decide(self, image: np.ndarray) -> GateDecision:
        """Look at the next frame (uint8 (H, W, 3) BGR) and decide."""
        cfg = self.config
        self._thumb = None
        frame, self._frame = self._frame, self._frame + 1
        self._current = frame
        self._shape = (int(image.shape[0]), int(image.shape[1]))
        if cfg.motion_threshold <= 0:
            return GateDecision(True)
        thumb = self._thumb = thumbnail(image, cfg.thumb_size)
        prev, self._prev_thumb = self._prev_thumb, thumb
        if self._last_thumb is not None and self._last_thumb.shape == thumb.shape:
            since = frame - self._last_frame
            fired = self._block_diff(thumb, self._last_thumb) > cfg.motion_threshold
            moved = bool(fired.any())
            if not moved and (since < cfg.redetect_every or self.holding):
                return GateDecision(False, moved=False, blocks=fired)
            if moved and since < cfg.motion_detect_every:
                return GateDecision(False, stale=True, blocks=fired)
            settled = moved and prev is not None and prev.shape == thumb.shape and not bool(
                (self._block_diff(thumb, prev) > cfg.motion_threshold).any())
            return GateDecision(True, moved=moved, blocks=fired, settled=settled)
        return GateDecision(True)

    def _block_diff(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """float (rows, columns) of :attr:`vision.config.GateConfig.blocks`: the mean absolute
        difference of two thumbnails (int16 (h, w)) in each block, grey levels."""
        (w, h), (bx, by) = self.config.thumb_size, self.config.blocks
        return np.abs(a - b).reshape(by, h // by, bx, w // bx).mean((1, 3))

    def changed_box(self, blocks: np.ndarray) -> tuple[float, float, float, float] | None:
        """The bounding box ``(x0, y0, x1, y1)`` (frame px of the frame just decided, float) of
        the ``True`` blocks of ``blocks`` (:attr:`GateDecision.blocks`); None when none fired."""
        rows, cols = np.nonzero(np.asarray(blocks, bool))
        if not len(rows):
            return None
        by, bx = blocks.shape
        H, W = self._shape
        return (cols.min() * W / bx, rows.min() * H / by,
                (cols.max() + 1) * W / bx, (rows.max() + 1) * H / by)

    def ran(self, core: tuple[float, float, float, float] | None = None) -> None:
        """The detector ran on the frame just decided: it becomes the reference.

        Args:
            core: ``(x0, y0, x1, y1)`` frame px: only this part was re-detected (a region run,
                :mod:`vision.recognition.region`): the reference is renewed only in the
                thumbnail pixels wholly inside it (rounded inwards, so a pixel whose
                detections were kept is never renewed); elsewhere it stays the picture the
                kept detections were made of. None: the whole frame.
        """
        if self._thumb is not None:
            if core is None or self._last_thumb is None \
                    or self._last_thumb.shape != self._thumb.shape:
                self._last_thumb = self._thumb
            else:
                (w, h), (H, W) = self.config.thumb_size, self._shape
                x0, x1 = math.ceil(core[0] * w / W - 1e-6), math.floor(core[2] * w / W + 1e-6)
                y0, y1 = math.ceil(core[1] * h / H - 1e-6), math.floor(core[3] * h / H + 1e-6)
                ref = self._last_thumb.copy()
                if x1 > x0 and y1 > y0:
                    ref[y0:y1, x0:x1] = self._thumb[y0:y1, x0:x1]
                self._last_thumb = ref
        self._last_frame = self._current

    def reset(self) -> None:
        """Forget the reference frame (the next frame is always detected)."""
        self._last_thumb = None
        self._prev_thumb = None
        self._last_frame = -1
        self.holding = False
