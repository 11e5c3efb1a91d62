"""The recognition engine's types: how a picture is read (:class:`ReadMode`), the detectors
handed in (:class:`Detectors`) and what comes out (:class:`Reads`) -- see
:mod:`vision.recognition.engine` and docs/architecture.md."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from vision.detections import Detections
from vision.recognition.decode import TileRead

__all__ = ["ReadMode", "Detectors", "Reads", "run_tile_detector"]


class ReadMode(str, enum.Enum):
    """How a picture is read: ``still`` (an independent picture, every still strategy) or
    ``video`` (a frame of a stream: gate, identity cache, vet)."""

    STILL = "still"
    VIDEO = "video"


@dataclass(frozen=True)
class Detectors:
    """Detectors handed to the engine instead of the models folder's (tests, a re-audit's
    picklable fakes).

    Attributes:
        tile: ``detect(image uint8 (H, W, 3) BGR, imgsz: int | None = None) -> Detections``
            (image px; ``imgsz`` the input size, None: the model's own). Video frames are
            re-detected on regions (``GateConfig.region_detect``) only when it has an ``info``
            (:class:`vision.recognition.detect.ModelInfo`) of a dynamic-input model; else
            always whole.
        pip: ``detect_batch(crops: list of uint8 (96, 192, 3)) -> list[Detections]`` (crop px).
        second: the second tile model (same interface as ``tile``), or None: none (as when
            ``tiles_touch.*`` is not in the models folder).
        version: the model version recorded in round events (None: the tile detector's
            ``version`` attribute, else ``"injected"``).
        crops: the crop classifier (:class:`vision.recognition.crosscheck.CropClassifier`:
            ``classify(list of uint8 (S, S, 3)) -> (names, probabilities)``), or None: small
            tiles are not cross-checked (injected detectors never take the models folder's).
    """

    tile: Any
    pip: Any
    second: Any = None
    version: str | None = None
    crops: Any = None


@dataclass(frozen=True)
class Reads:
    """The reads of one picture, column-wise over its tiles (supervision's ``Detections``
    style), with the rows (:class:`vision.recognition.decode.TileRead`) kept for the table.
    Columns: :attr:`polygons`, :attr:`xyxy`, :attr:`faces`, :attr:`confidences`,
    :attr:`states`, :attr:`reasons`, :attr:`reason_codes` and the evidence
    (:class:`vision.recognition.evidence.Evidence`): :attr:`disputed`, :attr:`either_cut`,
    :attr:`spared`; a mask selects rows (``reads.faces[reads.disputed != None]``).

    Attributes:
        tiles: the n :class:`TileRead` (face up, face down or unknown), free of overlapping
            outlines.
        detections: the tile detections they came from (still: of the first input size; video:
            this frame's, or the last ones when the gate skipped the detector).
        decoded: tiles decoded afresh by the pip model (the rest came from the identity cache).
        detector_ran: the tile model ran on this picture.
        stale: video: the gate skipped the detector while the picture moves (the reads are the
            previous frame's; they do not count for stability).
        timings: seconds spent on ``detect`` (the tile model and, still, everything) and
            ``decode`` (spots, cache, vet).
        provisional: video read beside the loop (:meth:`RecognitionEngine.set_background`):
            a first look at a picture with tiles that the fused still reading has not vetted
            yet (it is being made, or the picture has not been still long enough); shown,
            never settled on (:class:`vision.table.rounds.RoundTracker`).
        still_frames: video: consecutive frames before this one in which the picture did not
            move (0: it moved on this frame, or a still picture).
        vetted: video: the reads are the fused still reading standing for a picture that has
            not moved for ``still_frames`` frames (it holds for all of them).
    """

    tiles: tuple[TileRead, ...]
    detections: Detections = field(default_factory=Detections.empty)
    decoded: int = 0
    detector_ran: bool = True
    stale: bool = False
    timings: dict = field(default_factory=dict)
    provisional: bool = False
    still_frames: int = 0
    vetted: bool = False

    def __len__(self) -> int:
        return len(self.tiles)

    def __iter__(self) -> Iterator[TileRead]:
        return iter(self.tiles)

    @property
    def polygons(self) -> np.ndarray:
        """float32 (n, 4, 2) tile corners, image px."""
        return (np.stack([r.polygon for r in self.tiles]).astype(np.float32) if self.tiles
                else np.zeros((0, 4, 2), np.float32))

    @property
    def xyxy(self) -> np.ndarray:
        """float32 (n, 4) boxes ``x1, y1, x2, y2``, image px."""
        return (np.stack([r.xyxy for r in self.tiles]).astype(np.float32) if self.tiles
                else np.zeros((0, 4), np.float32))

    @property
    def faces(self) -> np.ndarray:
        """object (n,): the face (``"1-5"``) or None."""
        return np.array([r.face for r in self.tiles] + [None], dtype=object)[:-1]

    @property
    def confidences(self) -> np.ndarray:
        """float32 (n,) read confidences in [0, 1]."""
        return np.array([r.confidence for r in self.tiles], np.float32)

    @property
    def states(self) -> np.ndarray:
        """str (n,): ``face_up``, ``face_down`` or ``unknown``."""
        return np.array([r.state for r in self.tiles], dtype="<U9")

    @property
    def reasons(self) -> np.ndarray:
        """object (n,): why a face is unknown, or None."""
        return np.array([r.reason for r in self.tiles] + [None], dtype=object)[:-1]

    @property
    def reason_codes(self) -> np.ndarray:
        """object (n,): the :class:`vision.schema.UnreadReason` of each unknown tile (its
        ``reason_code``), or None (identified, face down, or a hand-made read)."""
        return np.array([r.reason_code for r in self.tiles] + [None], dtype=object)[:-1]

    @property
    def disputed(self) -> np.ndarray:
        """object (n,): the face each tile read before a flush guard made it unknown
        (:attr:`vision.recognition.evidence.Evidence.disputed`, never reported as its face),
        or None."""
        return np.array([r.evidence.disputed for r in self.tiles] + [None], dtype=object)[:-1]

    @property
    def either_cut(self) -> np.ndarray:
        """object (n,): the face of each tile in doubt only over its flush block's cut
        (:attr:`vision.recognition.evidence.Evidence.either_cut`), or None."""
        return np.array([r.evidence.either_cut for r in self.tiles] + [None], dtype=object)[:-1]

    @property
    def spared(self) -> np.ndarray:
        """bool (n,): tiles a guard made unknown only so that they seed the refit
        (:attr:`vision.recognition.evidence.Evidence.spared`)."""
        return np.array([r.evidence.spared is not None for r in self.tiles], dtype=bool)


def run_tile_detector(detector, image: np.ndarray, imgsz: int | None = None) -> Detections:
    """``detector.detect(image[, imgsz])`` (or ``detector(...)``) checked to give
    :class:`vision.detections.Detections` (image px).

    Raises:
        TypeError: the detector returned anything else.
    """
    fn = getattr(detector, "detect", None) or detector
    out = fn(image) if imgsz is None else fn(image, imgsz=imgsz)
    if not isinstance(out, Detections):
        raise TypeError(f"tile detector returned {type(out).__name__}, expected Detections")
    return out
