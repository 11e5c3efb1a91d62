"""The identity cache in front of the pip model: decode only new, moved and changed tiles.

A face-up tile whose axis-aligned box overlaps a cached face-up tile of the previous frame with
IoU > ``cache_iou`` (0.9) keeps that tile's face, confidence and spots without running the pip
model again -- unless it *looks* different: each decoded tile keeps a 16 x 32 grey thumbnail of
its box (:func:`tile_look`; a spot is about 3 of its pixels), and when the thumbnail of the same
box (same pixels, so detector jitter does not count) in the current frame differs from it by
more than ``look_threshold`` grey levels on average (a hand over it, a tile swapped in place, a
change of light) the tile is decoded again. As a last guard a cached identity older than
``reverify_every`` frames (150, 5 s at 30 fps) is decoded again, at most ``reverify_budget``
(1) a frame, oldest first. At most ``decode_budget`` (8) tiles are decoded per frame, in this
order: new tiles, tiles that were unknown (longest waiting first), identities due for
re-verification; a new tile beyond the budget is "unknown, not decoded yet" for that frame, so
its position cannot become final on a guess.

:class:`IdentityCache` holds no model: :meth:`IdentityCache.plan` says which detections to
decode and fills in the others; the caller decodes and hands the reads back with
:meth:`IdentityCache.commit` (testable with plain arrays and hand-made reads).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from vision.config import CacheConfig
from vision.recognition.decode import TileRead
from vision.recognition.evidence import Evidence
from vision.detections import TILE, Detections
from vision.geometry import iou_matrix
from vision.schema import UnreadReason

__all__ = ["IdentityCache", "LOOK_SIZE", "tile_look", "NOT_DECODED_YET"]

#: Size (w, h) of the grey thumbnail of a tile's box used to notice a changed tile, px.
LOOK_SIZE = (16, 32)
#: Reason of a new tile beyond the frame's decode budget.
NOT_DECODED_YET = "not decoded yet"


def tile_look(image: np.ndarray, xyxy) -> np.ndarray:
    """Grey LOOK_SIZE thumbnail (int16 (32, 16)) of the box ``xyxy`` (px) of a BGR uint8
    (H, W, 3) ``image``: what a tile looked like when it was decoded."""
    h, w = image.shape[:2]
    x1, y1, x2, y2 = (int(round(float(v))) for v in xyxy)
    x1, y1 = max(0, min(x1, w - 1)), max(0, min(y1, h - 1))
    x2, y2 = max(x1 + 1, min(x2, w)), max(y1 + 1, min(y2, h))
    roi = cv2.cvtColor(image[y1:y2, x1:x2], cv2.COLOR_BGR2GRAY)
    return cv2.resize(roi, LOOK_SIZE, interpolation=cv2.INTER_AREA).astype(np.int16)


@dataclass
class _Cached:
    xyxy: np.ndarray
    read: TileRead
    verified: int  # frame counter when last decoded (-1: never)
    look: np.ndarray | None = None  # tile_look() when last decoded
    look_xyxy: np.ndarray | None = None  # the box the look was taken from


class IdentityCache:
    """Face-up tile identities carried from frame to frame (module docstring).

    Args:
        config: :class:`vision.config.CacheConfig`.
    """

    def __init__(self, config: CacheConfig = CacheConfig()) -> None:
        self.config = config
        self._cache: list[_Cached] = []
        self._next: list[_Cached] = []
        self.frame = 0

    def __len__(self) -> int:
        return len(self._cache)

    def plan(self, image: np.ndarray, dets: Detections, reads: list) -> list[int]:
        """Fill ``reads`` (one slot per detection, face-down slots already filled) with the
        cached identities that stand and the "not decoded yet" placeholders.

        Args:
            image: the frame, uint8 (H, W, 3) BGR.
            dets: its tile detections (px).
            reads: list of len(dets); None where a read is still needed.

        Returns:
            the detection indices to decode now (within the budget), in priority order.
        """
        cfg = self.config
        self._next = []
        up = [i for i in range(len(dets)) if int(dets.class_id[i]) == TILE]
        new_tiles: list[int] = []
        retry: list[tuple[int, int, int]] = []   # (last attempt, det index, cache index)
        due: list[tuple[int, int, int]] = []     # (verified, det index, cache index)
        iou = (iou_matrix(dets.xyxy[up], np.array([c.xyxy for c in self._cache]))
               if self._cache and up else np.zeros((len(up), 0)))
        taken: set[int] = set()
        for row, i in enumerate(up):
            j = int(np.argmax(iou[row])) if iou.shape[1] else -1
            if j < 0 or j in taken or iou[row, j] <= cfg.cache_iou:
                new_tiles.append(i)
                continue
            taken.add(j)
            c = self._cache[j]
            if c.read.state == "face_up" and cfg.look_threshold > 0 and c.look is not None:
                d = float(np.abs(tile_look(image, c.look_xyxy) - c.look).mean())
                if d > cfg.look_threshold:  # the tile looks different: decode it again
                    new_tiles.append(i)
                    continue
            if c.read.state != "face_up":
                retry.append((c.verified, i, j))
            elif self.frame - c.verified >= cfg.reverify_every:
                due.append((c.verified, i, j))
            else:
                self._reuse(reads, dets, i, c)
        retry.sort()
        due.sort()
        budget = cfg.decode_budget
        todo = new_tiles[:budget]
        for i in new_tiles[budget:]:
            c = float(dets.confidence[i])
            r = TileRead(None, "unknown", c, dets.polygon[i].copy(), dets.xyxy[i].copy(),
                         reason=NOT_DECODED_YET, tile_confidence=c,
                         reason_code=UnreadReason.NOT_DECODED_YET,
                         evidence=Evidence().record(reason=NOT_DECODED_YET))
            reads[i] = r
            self._next.append(_Cached(dets.xyxy[i].copy(), r, -1))
        budget -= len(todo)
        for _, i, j in retry:
            if budget > 0:
                todo.append(i)
                budget -= 1
            else:
                self._reuse(reads, dets, i, self._cache[j])
        for k, (_, i, j) in enumerate(due):
            if budget > 0 and k < cfg.reverify_budget:
                todo.append(i)
                budget -= 1
            else:
                self._reuse(reads, dets, i, self._cache[j])
        return todo

    def commit(self, image: np.ndarray, dets: Detections, decoded: dict[int, TileRead]) -> None:
        """Remember the reads just decoded (detection index -> read) with their looks; the
        cache then holds exactly this frame's face-up tiles. Advances the frame counter."""
        for i, r in decoded.items():
            self._next.append(_Cached(dets.xyxy[i].copy(), r, self.frame,
                                      tile_look(image, dets.xyxy[i]), dets.xyxy[i].copy()))
        self._cache, self._next = self._next, []

    def tick(self) -> None:
        """One frame has passed (called once per processed frame)."""
        self.frame += 1

    def _reuse(self, reads, dets, i, c: _Cached) -> None:
        old = c.read
        reads[i] = TileRead(old.face, old.state, old.confidence, dets.polygon[i].copy(),
                            dets.xyxy[i].copy(), old.pips, old.reads, old.reason,
                            old.tile_confidence, reason_code=old.reason_code,
                            evidence=old.evidence)
        self._next.append(_Cached(dets.xyxy[i].copy(), reads[i], c.verified, c.look,
                                  c.look_xyxy))

    def clear(self) -> None:
        """Forget every identity (a new, unrelated picture)."""
        self._cache, self._next = [], []
