"""The recognition engine: one picture in, its tile reads out (docs/architecture.md).

:class:`RecognitionEngine` is the one entry point of recognition: ``read(image, mode)`` returns
:class:`Reads`. What it does is chosen by configuration (:class:`vision.config.RecognitionConfig`
with the gate and identity-cache settings), never by what detectors it was given:

* ``ReadMode.STILL`` (an independent picture): the tile model at every input size of
  ``scales`` with the reads fused (:mod:`vision.recognition.scales`; one size: a single pass),
  a magnified second look at the tiles left unknown (``zoom``, :mod:`vision.recognition.zoom`),
  the second tile model for the tiles the first leaves unread (``second_model``,
  :mod:`vision.recognition.fill`), the unknown outlines refitted to the picture
  (``refine``, :mod:`vision.recognition.refine`), and last the flush-hand check
  (:mod:`vision.recognition.flush`); where a tile stays unknown, the picture turned by 45
  degrees is read the same way and adds the tiles both readings name (``turn``,
  :mod:`vision.recognition.turned`).
* ``ReadMode.VIDEO`` (a frame of a stream): the motion gate in front of the tile model
  (:mod:`vision.recognition.gate`), one pass at the model's size -- while the picture changes,
  of only the part of the frame that moved (``region_detect``, :mod:`vision.recognition.region`)
  --, the identity cache in front of
  the pip model (:mod:`vision.recognition.identity`), and -- with two or more ``scales`` --
  the vet: once the picture has been still for :data:`VET_AFTER_STILL` frames it is read once
  as a still picture, that reading stands for it until something moves, and faces it
  contradicts stay unknown while their tile stays put.

Detectors come from the models folder (:func:`vision.recognition.models.load_detectors`, any
backend of :mod:`vision.recognition.backends`, the pit's shared detector service included) or
are handed in as :class:`Detectors` (tests): every strategy runs on them the same way, so a
tile detector takes ``detect(image, imgsz=None) -> Detections`` and a pip detector
``detect_batch(crops) -> list[Detections]``.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from vision.config import CacheConfig, GateConfig, RecognitionConfig
from vision.detections import TILE, TILE_BACK, Detections
from vision.recognition.aspect import long_as_peers
from vision.recognition.background import Felt, Locked, StillReader
from vision.recognition.chirality import lengthwise_by, table_hand
from vision.geometry import iou_matrix, rectify
from vision.recognition.dealt import dealt_blocks
from vision.recognition.decode import TileRead, read_from_pips, run_pip_detector
from vision.recognition.fill import SECOND_MODEL_SIZE, disputed_outlines, fill_from_second_model
from vision.recognition.flush import (cut_either_way, flush_beside, missed_beside, notched_boxes,
                                      stubby_boxes)
from vision.recognition.notch import notch_cut, notched
from vision.recognition.stack import FrameStack
from vision.recognition.turned import turned_look
from vision.recognition.gate import MotionGate
from vision.recognition.identity import IdentityCache
from vision.recognition.models import load_detectors, load_second_tile_detector, model_version
from vision.recognition.overlaps import drop_straddlers, resolve_overlapping_reads
from vision.recognition.refine import ON_FACE, face_share, refine_guarded, refine_unknowns
from vision.recognition.region import RegionPlan, cut, full_pass_grid, merge_region, plan_region
from vision.recognition.scales import STILL_SCALES, fuse_scale_reads
from vision.recognition.seam import block_of, seam_cut
from vision.recognition.symmetry import symmetry_cut
from vision.recognition.spot_colours import recolour_unknowns
from vision.schema import UnreadReason
from vision.recognition.zoom import ZOOM_INPUT, ZOOM_WINDOWS, cut_short_faces, second_look

__all__ = ["RecognitionEngine", "ReadMode", "Reads", "Detectors", "VET_AFTER_STILL",
           "StillReader"]  # StillReader: re-exported from vision.recognition.background

_log = logging.getLogger(__name__)

#: Video: new faces are vetted by the fused still reading after this many consecutive frames
#: without motion (dealing is over; one fused reading per new set of faces, not one per card).
VET_AFTER_STILL = 3


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
    """

    tile: Any
    pip: Any
    second: Any = None
    version: str | None = None


@dataclass(frozen=True)
class Reads:
    """The reads of one picture, column-wise over its tiles (supervision's ``Detections``
    style), with the rows (:class:`vision.recognition.decode.TileRead`) kept for the table.

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


def _run_tile_detector(detector, image: np.ndarray, imgsz: int | None = None) -> Detections:
    fn = getattr(detector, "detect", None) or detector
    out = fn(image) if imgsz is None else fn(image, imgsz=imgsz)
    if not isinstance(out, Detections):
        raise TypeError(f"tile detector returned {type(out).__name__}, expected Detections")
    return out



class RecognitionEngine:
    """Recognition of one table's pictures (module docstring): ``read(image, mode)``.

    Args:
        recognition: :class:`vision.config.RecognitionConfig` (models, backend, thresholds and
            the still strategies: ``scales``, ``zoom``, ``second_model``, ``refine``,
            ``turn``).
        gate, cache: the video mode's motion gate and identity cache settings.
        detectors: :class:`Detectors` to use instead of the models folder's (tests).

    Raises:
        InputError: missing or corrupt model files (named).
    """

    def __init__(self, recognition: RecognitionConfig | None = None,
                 gate: GateConfig | None = None, cache: CacheConfig | None = None,
                 detectors: Detectors | None = None) -> None:
        self.config = rec = recognition or RecognitionConfig()
        #: tile-model input sizes at which a still picture is read and fused
        self.scales = tuple(STILL_SCALES if rec.scales is None else rec.scales)
        #: window sides (tile lengths) of the second look at a still's unknown tiles
        self.zoom = ZOOM_WINDOWS if self.scales and rec.zoom else ()
        #: read a still's unknown tiles again on the picture turned (vision.recognition.turned)
        self.turn = bool(self.scales) and rec.turn
        #: the spots' symmetry as seam evidence for the flush guards (vision.recognition.symmetry)
        self.symmetry = rec.symmetry
        if detectors is None:
            self.tile_detector, self.pip_detector = load_detectors(
                rec.models, rec.backend, rec.tile_conf, rec.pip_conf)
            self.model_version = model_version(rec.models, rec.backend)
            #: the optional second tile model for a still picture's unread tiles
            self.second_detector = (load_second_tile_detector(rec.models, rec.backend,
                                                              rec.tile_conf)
                                    if self.scales and rec.second_model else None)
        else:
            self.tile_detector, self.pip_detector = detectors.tile, detectors.pip
            self.model_version = detectors.version or getattr(detectors.tile, "version",
                                                              "injected")
            self.second_detector = (detectors.second if self.scales and rec.second_model
                                    else None)
        self.gate = MotionGate(gate or GateConfig())
        self.cache = IdentityCache(cache or CacheConfig())
        #: video: (xyxy, face) already checked against the fused still reading, and those it
        #: contradicted (xyxy, face, what the fused reading says): see :meth:`_vet`
        self._vetted: list[tuple[np.ndarray, str]] = []
        self._vetoed: list[tuple[np.ndarray, str, str]] = []
        self._still_frames = 0  # consecutive video frames without motion
        self.stack = FrameStack()  # ... averaged for their still reading (recognition.stack)
        self._moved = True  # the gate saw motion on the last frame
        #: video: the fused still reading of the picture since it stopped moving (:meth:`_vet`)
        self._still_reading: list[TileRead] | None = None
        self._last_dets: Detections | None = None
        self.detector_runs = 0
        #: video: detector runs on a region of the frame (counted in detector_runs too)
        self.region_runs = 0
        #: video frames answered by the standing fused still reading (no decode, no vet)
        self.still_reuses = 0
        #: live video: the fused still reading runs beside the frame loop (set_background)
        self.background: StillReader | None = None
        self._generation = 0  # bumped whenever the picture moves (a reading of before is old)
        self._first_look: tuple | None = None  # live: the reads standing while it is made
        #: live video: the unread outlines empty still tables show (felt lettering, chips)
        self.felt = Felt()

    def set_background(self, on: bool = True) -> None:
        """Live video: the fused still reading (the vet) is made beside the frame loop
        (:class:`vision.recognition.background.StillReader`); until it lands the first look
        stands, ``provisional`` (:class:`Reads`: shown, never settled on), and the detectors
        are called one at a time (:class:`vision.recognition.background.Locked`). Off (files
        read as fast as possible, tests): made in :meth:`read`, the same frames give the same
        reads. Nothing changes with one input size (no vet)."""
        if not on:
            if self.background is not None:
                self.background.close()
            self.background = None
            return
        if self.background is not None or len(self.scales) < 2:
            return
        lock = threading.Lock()
        self.tile_detector = Locked(self.tile_detector, lock)
        self.pip_detector = Locked(self.pip_detector, lock)
        if self.second_detector is not None:
            self.second_detector = Locked(self.second_detector, lock)
        self.background = StillReader(lambda image: self._read_still(image)[0])

    def close(self) -> None:
        """Stop the background still reading, if any."""
        self.set_background(False)

    @property
    def still_pending(self) -> bool:
        """True while a fused still reading is being made beside the loop."""
        return self.background is not None and self.background.busy()

    def read(self, image: np.ndarray, mode: ReadMode | str = ReadMode.VIDEO) -> Reads:
        """The reads of one picture.

        Args:
            image: uint8 (H, W, 3) BGR.
            mode: :class:`ReadMode` (or its value): ``still`` or ``video`` (module docstring).

        Returns:
            :class:`Reads`.
        """
        t0 = time.perf_counter()
        if ReadMode(mode) is ReadMode.STILL:
            reads, first = self._read_still(image)
            self.detector_runs += max(len(self.scales), 1)
            return Reads(tuple(reads), first, sum(r.state != "face_down" for r in reads),
                         timings={"detect": time.perf_counter() - t0, "decode": 0.0})
        # a standing fused reading is of the gate's reference picture: no periodic re-detection
        # while it stands (it would not change that reading), motion against that picture
        # still runs the detector and drops the reading (vision.recognition.gate)
        self.gate.holding = (self._still_reading is not None
                             and self._still_frames >= VET_AFTER_STILL)
        dets, ran, stale = self._detect_gated(image)
        t1 = time.perf_counter()
        if not ran and not stale and not self._moved and self._still_reading is not None \
                and self._still_frames >= VET_AFTER_STILL:
            # a still table whose fused reading is made (once per still picture): it stands
            # for this unchanged frame as for the last -- no single pass decoded and vetted
            # again (the identity cache is left as it was; a tile that changes moves the gate
            # first, and then everything runs as before)
            self._still_frames += 1
            self.still_reuses += 1
            return Reads(tuple(self._still_reading), dets, 0, ran, stale,
                         {"detect": t1 - t0, "decode": time.perf_counter() - t1},
                         still_frames=self._still_frames, vetted=True)
        if not ran and not stale and not self._moved and self._first_look is not None \
                and self.background.making(self._generation):  # (live) its reading is made:
            # the first look stands for this unchanged picture, not decoded again
            self._still_frames += 1
            return Reads(self._first_look, dets, 0, ran, stale,
                         {"detect": t1 - t0, "decode": time.perf_counter() - t1},
                         provisional=True, still_frames=self._still_frames)
        self._first_look = None
        reads, n_dec = self.decode(image, dets, use_cache=True)
        reads = resolve_overlapping_reads(reads)
        self._still_frames = 0 if (self._moved or stale) else self._still_frames + 1
        if not self._still_frames:
            self.stack.reset()
        elif self._still_reading is None:  # the still frames its reading averages (stack)
            self.stack.add(image)
        if not self._still_frames:
            if self._still_reading is not None or self.background is not None:
                self._generation += 1  # a reading of the picture before is of no use now
            self._still_reading = None  # the picture moved: read it again once still
        if not stale:  # new faces are vetted once the picture has been still a moment
            reads = self._vet(image, reads, look=self._still_frames >= VET_AFTER_STILL)
        provisional = (self.background is not None and self._still_reading is None
                       and any(r.state != "face_down" for r in reads))
        if provisional and self.background.pending(self._generation):
            self._first_look = tuple(reads)
        vetted = (not stale and self._still_reading is not None and len(self.scales) >= 2
                  and self._still_frames >= VET_AFTER_STILL)
        return Reads(tuple(reads), dets, n_dec, ran, stale,
                     {"detect": t1 - t0, "decode": time.perf_counter() - t1},
                     provisional=provisional, still_frames=self._still_frames, vetted=vetted)

    def tick(self) -> None:
        """One frame has been handled (the identity cache's clock)."""
        self.cache.tick()

    def reset(self) -> None:
        """Forget the video state (vet, standing still reading, caches): a new, unrelated
        source or picture."""
        self._vetted, self._vetoed = [], []
        self._still_reading, self._still_frames, self._moved = None, 0, True
        self._generation += 1
        self.stack.reset()
        self.felt.clear()
        if self.background is not None:
            self.background.take()  # a reading of the source before is of no use
        self.cache.clear()
        self.gate.reset()
        self._last_dets = None

    # ------------------------------------------------------------------ strategies
    def detect(self, image: np.ndarray, imgsz: int | None = None, detector=None) -> Detections:
        """Tile detections (classes 0/1) of one image, image px (no motion gate), without
        outlines that straddle two neighbouring tiles (:func:`vision.recognition.overlaps.drop_straddlers`);
        ``imgsz``: the tile model's input size (None: its own); ``detector``: another tile
        model (the second model, :mod:`vision.recognition.fill`) instead of :attr:`tile_detector`."""
        d = _run_tile_detector(detector or self.tile_detector, image, imgsz)
        d = d[np.isin(d.class_id, (TILE, TILE_BACK))] if len(d) else d
        return drop_straddlers(d)

    def _read_still(self, image: np.ndarray, turn: bool = True
                    ) -> tuple[list[TileRead], Detections]:
        """Read an independent still image at every size of :attr:`scales` and fuse the reads
        (:func:`vision.recognition.scales.fuse_scale_reads`); one size: a single pass. Sizes above the
        image's longer side are skipped (upscaling adds no detail; a small close-up is read
        once at the model's own size).

        Tiles left unknown get a second look (:meth:`_second_look`, :mod:`vision.recognition.zoom`) whose
        readings are fused with the others. With a second tile model (:mod:`vision.recognition.fill`) the
        image is read once more: it adds tiles only where none was identified, and a tile it
        outlines otherwise (an outline across it) is made unknown
        (:func:`vision.recognition.fill.disputed_outlines`). Last, a tile with unread spots flush beside
        its long side is made unknown (:func:`vision.recognition.flush.flush_beside`), so are two
        such tiles flush and level as a block a crosswise cut can give
        (:func:`vision.recognition.flush.cut_either_way`, unless the other cut or the second
        model confirms them) and such a tile whose outline is stubbier than the picture's tiles
        (:func:`vision.recognition.flush.stubby_boxes`), and such a tile whose outline's long
        side dips at its middle where two tiles' corners meet
        (:func:`vision.recognition.flush.notched_boxes`). Before those checks, an outline
        refused only for an aspect above the decoder's bound is read where the picture's
        tiles around it are as long (:mod:`vision.recognition.aspect`), and the outlines
        still unknown are refitted to the picture's face regions (``refine``,
        :mod:`vision.recognition.refine`: a two-tile block split where exactly one cut
        reads); after them, so are the tiles they made unknown, and what that gives meets
        the checks again (:func:`vision.recognition.refine.refine_guarded`). The first three
        abstentions are lifted where the seam check (:mod:`vision.recognition.seam`) shows the seam between the tile
        and its flush neighbour along the tile's long side; every check leaves a mixed tile
        whose 3 runs the way the table's set draws it (:mod:`vision.recognition.chirality`:
        the way voted by the tiles the checks leave identified without it). Where a tile is
        still unknown, the picture turned by 45 degrees is read the same way (``turn`` False:
        that reading itself) and adds the tiles it and the decoder on this picture both name
        where none was identified; the result meets the checks again
        (:mod:`vision.recognition.turned`).

        Returns:
            ``(reads, detections of the first size)``; the reads are free of overlapping
            outlines (:func:`vision.recognition.overlaps.resolve_overlapping_reads`).
        """
        longer = max(image.shape[:2])
        sizes = tuple(v for v in self.scales if v <= longer) or (None,)
        per_scale, looks, first, second = [], [], None, []

        def read_outlines(polys: np.ndarray, conf: float | np.ndarray = 1.0) -> list[TileRead]:
            # outlines (float32 (n, 4, 2) px) decoded as tiles with the detector confidence
            # ``conf`` (one for all, or float32 (n,)), no cache
            conf = np.broadcast_to(np.asarray(conf, np.float32), (len(polys),))
            return self.decode(image, Detections.from_polygons(
                polys, np.array(conf), np.full(len(polys), TILE, np.int64)), use_cache=False)[0]

        symmetric: dict[bytes, int | None] = {}

        def seam(polygon: np.ndarray, beside: np.ndarray) -> bool:
            """The picture shows the seam between two flush outlines (float (4, 2) px) along
            ``polygon``'s long side: the seam line (:mod:`vision.recognition.seam`), the
            notches where the tiles' corners meet at its ends
            (:func:`vision.recognition.notch.notch_cut`) or the spots' symmetry
            (:func:`vision.recognition.symmetry.symmetry_cut`: both tiles read, each one's
            halves in line along it, the boxes across them not), none naming the other cut;
            unsure: False."""
            block = block_of(polygon, beside)
            line = seam_cut(image, block)
            if line == 1:
                return False
            spots = symmetric_cut(block)
            if spots == 1:
                return False
            return line == 0 or spots == 0 or notch_cut(image, block) == 0

        def symmetric_cut(block: np.ndarray) -> int | None:
            # the cut a block's spots show (vision.recognition.symmetry), once per block: two
            # decodes, and the guards ask about a block repeatedly
            key = np.asarray(block, np.float32).tobytes()
            if key not in symmetric:
                symmetric[key] = symmetry_cut(block, read_outlines) if self.symmetry else None
            return symmetric[key]

        for size in sizes:
            dets = self.detect(image, size)
            first = dets if first is None else first
            reads, _ = self.decode(image, dets, use_cache=False)
            per_scale.append(resolve_overlapping_reads(reads))
        if len(per_scale) == 1:
            reads = resolve_overlapping_reads(per_scale[0])
        else:
            reads = resolve_overlapping_reads(
                cut_short_faces(fuse_scale_reads(per_scale), per_scale))
        if self.zoom and self._unread(reads):
            looks = self._second_look(image, reads)
            if any(looks):
                fused = fuse_scale_reads(per_scale + looks)
                reads = resolve_overlapping_reads(cut_short_faces(fused, per_scale, looks))
        if self.second_detector is not None and sizes != (None,) \
                and SECOND_MODEL_SIZE <= longer:
            dets = self.detect(image, SECOND_MODEL_SIZE, self.second_detector)
            self.detector_runs += 1
            second, _ = self.decode(image, dets, use_cache=False)
            first_reads = [r for rs in per_scale + looks for r in rs]
            second = resolve_overlapping_reads(second)
            reads = disputed_outlines(fill_from_second_model(reads, second, first_reads), second,
                                      seam)
        # an outline refused only for an aspect above the decoder's bound, where the
        # picture's tiles around it are as long (a slanted view of long tiles)
        reads = long_as_peers(reads, self.config.min_confidence)
        refine = self.config.refine and bool(self.scales)
        start, voted, first_pass = list(reads), [], {}

        def doubting(rs: list[TileRead]) -> list[TileRead]:
            # the guards' first pass (every tile doubted, a spared one marked): the vote below
            # and refine_guarded read it on the same reads, so it runs once for them
            key = tuple(map(id, rs))
            if key not in first_pass:
                first_pass[key] = guards(list(rs))
            return first_pass[key]

        def way() -> int | None:
            # the way the table's set draws its 3s, voted by the tiles the flush guards leave
            # identified without it -- never by the tiles it judges
            # (vision.recognition.chirality); once, when a block or a guard first asks
            if not voted:
                first = doubting(start)
                spared = {np.asarray(r.polygon, np.float32).tobytes() for r in first
                          if r.state == "unknown" and "spared" in (r.reads or {})}
                voted.append(table_hand(
                    [r for r in first if r.state == "face_up"]
                    + [r for r in start if r.state == "face_up"
                       and np.asarray(r.polygon, np.float32).tobytes() in spared]))
            return voted[0]

        # a mixed tile whose 3 runs the set's way: its outline is no box across two tiles
        lengthwise = lengthwise_by(way)

        def refit(rs: list[TileRead], only=None) -> list[TileRead]:
            # unknown outlines refitted to the picture's face regions; a two-tile block is
            # split only where exactly one cut reads (vision.recognition.refine)
            return resolve_overlapping_reads(refine_unknowns(
                rs, image, read_outlines, only=only,
                cut_shown=lambda rect: notch_cut(image, rect), way=way))

        def guards(rs: list[TileRead], spare=None, lift=False) -> list[TileRead]:
            # a face read from one cut of a flush square whose other half is unread is a
            # guess, unless the seam shows the tile's outline is a tile's
            rs = flush_beside(rs, image.shape, read_outlines, seam, spare, lift)
            # two flush, level tiles read from halves alike turned a quarter: either cut
            # reads faces, so the pair stands only where the seam, the other cut or the
            # second model confirms it (vision.recognition.flush.cut_either_way)
            rs = cut_either_way(rs, second, seam, spare, lift)
            # an outline stubbier than the picture's tiles, read from such halves: a box
            # across a block of long tiles (vision.recognition.flush.stubby_boxes)
            rs = stubby_boxes(rs, spare)
            # an outline whose long side dips at its middle, where two tiles' rounded corners
            # meet: a box across a flush block (vision.recognition.notch)
            return notched_boxes(rs, lambda polygon: notched(image, polygon), spare)

        if refine and any(r.state == "unknown" for r in reads):
            reads = refit(reads)  # the refined tiles meet the flush guards like any other
        # the guards; a tile they make unknown is refitted too (its block split where exactly
        # one cut reads), and what that gives meets the guards again
        # the guards first doubt every tile (a tile they would spare seeds the refit too),
        # then take the evidence that spares one (vision.recognition.refine.refine_guarded)
        reads = (refine_guarded(reads, doubting, refit, lambda rs: guards(rs, lengthwise, True),
                                lengthwise) if refine else guards(reads, lengthwise, True))
        if refine:
            # a tile that lies as laid, with unread spots flush beside it where no outline
            # is: the tile model missed its neighbour; the face region there is refitted
            # like an unknown outline, and what it gives meets the guards again
            # (vision.recognition.flush.missed_beside)
            seeds = missed_beside(reads, image.shape, read_outlines, lengthwise,
                                  on_face=lambda poly, q: face_share(image, poly, q) >= ON_FACE)
            if seeds:
                own = {id(r) for r in seeds}
                got = [r for r in refit(reads + seeds, only=lambda r: id(r) in own)
                       if id(r) not in own]
                if any(r.state == "face_up" and all(r is not x for x in reads) for r in got):
                    reads = guards(got, lengthwise, True)
        if turn and self.turn and self._unread(reads):
            # the picture turned by 45 degrees, read as a still, adds the tiles its reading
            # and the decoder on this picture agree on where this reading identified none;
            # what that gives meets the guards again (vision.recognition.turned)
            first_reads = [r for rs in per_scale + looks for r in rs]

            def read_turned(pic: np.ndarray) -> list[TileRead]:
                # its input sizes, as read() counts this picture's
                self.detector_runs += max(sum(v <= max(pic.shape[:2]) for v in self.scales), 1)
                return self._read_still(pic, turn=False)[0]

            added = turned_look(reads, image, read_turned, read_outlines,
                                lambda rs, add: fill_from_second_model(rs, add, first_reads))
            own = {id(r) for r in reads}
            if any(r.state == "face_up" and id(r) not in own for r in added):
                if second:
                    # the second model's veto judges the added tiles; the reading's own tiles
                    # stay as the reading decided them (some were read after its veto)
                    added = [r if id(r) in own else v for r, v in
                             zip(added, disputed_outlines(added, second, seam))]
                reads = guards(added, lengthwise, True)
        if any(r.state == "unknown" for r in reads):
            # two flush tiles in doubt over the cut alone, where one set cannot deal the
            # block cut across (vision.recognition.dealt)
            reads = dealt_blocks(reads, second, read_outlines, image.shape)
        return reads, first

    def _second_look(self, image: np.ndarray, reads: Sequence[TileRead]) -> list[list[TileRead]]:
        """:func:`vision.recognition.zoom.second_look` with this engine's tile model (at
        :data:`ZOOM_INPUT`), decoder and windows; the empty table's unread outlines
        (:meth:`_unread`) get none."""
        def detect(window: np.ndarray) -> Detections:
            self.detector_runs += 1
            return self.detect(window, ZOOM_INPUT)

        return second_look(image, reads, self._unread(reads), self.zoom, detect,
                           lambda dets: self.decode(image, dets, use_cache=False)[0])

    def _detect_gated(self, image: np.ndarray) -> tuple[Detections, bool, bool]:
        """Detections of this frame through the motion gate (:mod:`vision.recognition.gate`).

        Returns:
            ``(detections, detector_ran, stale)``.
        """
        decision = self.gate.decide(image)
        self._moved = decision.moved
        if not decision.detect and self._last_dets is not None:
            return self._last_dets, False, decision.stale
        plan = self._region(image, decision)
        if plan is None:
            self._last_dets = self.detect(image)
            self.gate.ran()
        else:
            found = self.detect(cut(image, plan), plan.imgsz).shifted(*plan.crop[:2])
            self._last_dets = merge_region(self._last_dets, found, plan, image.shape)
            self.gate.ran(plan.core)
            self.region_runs += 1
        self.detector_runs += 1
        return self._last_dets, True, False

    def _region(self, image: np.ndarray, decision) -> RegionPlan | None:
        """The region to re-detect instead of the whole frame (:mod:`vision.recognition.region`),
        or None: the whole frame -- with ``region_detect`` off, on the first frame or without
        previous detections, for the gate's periodic re-detection of a still picture (it
        corrects whatever a region run left), when the tile model's input size is fixed or
        unknown (a detector without ``info``, :class:`vision.recognition.detect.ModelInfo`),
        or when the region is large (``region_max_area``)."""
        cfg = self.gate.config
        if not cfg.region_detect or not decision.moved or decision.blocks is None \
                or self._last_dets is None or not len(self._last_dets):
            return None
        info = getattr(self.tile_detector, "info", None)
        if info is None or not getattr(info, "dynamic_hw", False):
            return None
        changed = self.gate.changed_box(decision.blocks)
        if changed is None:
            return None
        gain, canvas = full_pass_grid(image.shape, info.imgsz, int(info.stride))
        return plan_region(changed, self._last_dets, image.shape, gain, int(info.stride),
                           float(cfg.region_max_area), canvas)

    def decode(self, image: np.ndarray, dets: Detections, use_cache: bool = True
               ) -> tuple[list[TileRead], int]:
        """Reads for every detection; returns ``(reads, number decoded afresh)``.

        With ``use_cache`` (video) identities are reused and decoding is budgeted by the
        identity cache (:mod:`vision.recognition.identity`); without it (still images) every face-up tile
        is decoded.
        """
        n = len(dets)
        reads: list[TileRead | None] = [None] * n
        for i in range(n):
            if int(dets.class_id[i]) == TILE_BACK:
                c = float(dets.confidence[i])
                reads[i] = TileRead(None, "face_down", c, dets.polygon[i].copy(),
                                    dets.xyxy[i].copy(), tile_confidence=c)
        backs: set[int] = set()
        if use_cache:
            todo = self.cache.plan(image, dets, reads)
        else:
            todo = [i for i in range(n) if int(dets.class_id[i]) == TILE]
            # a still's tile backs are read too: a near-blank face (1-1: two red spots on a
            # dark face) is taken for a back by the tile model; a back has no spots, so its
            # reads name no face and it stays face down
            backs = {i for i in range(n) if int(dets.class_id[i]) == TILE_BACK}
            todo += sorted(backs)
        rec = self.config
        crops = [rectify(image, dets.polygon[i])[0] for i in todo]
        pips = run_pip_detector(self.pip_detector, crops)
        for i, p, crop in zip(todo, pips, crops):
            r = read_from_pips(p, dets.polygon[i], dets.xyxy[i], float(dets.confidence[i]),
                               rec.min_confidence, rec.allow_diagonal_two, crop=crop)
            if i in backs and r.state != "face_up":
                n = r.spots_counted or 0
                if n < 2:
                    continue  # no spots: stays the face-down read
                # spots on a "back" (the fewest a face shows is two, 1-1): a face-up tile
                # not read, never a stack to set aside beside a seat's hand
                r = r.as_unknown(f"{r.reason} (taken for a back, shows {n} spots)")
            reads[i] = r
        if use_cache:
            self.cache.commit(image, dets, {i: reads[i] for i in todo})
            return [r for r in reads if r is not None], len(todo)
        # a still reading: spots the pip model was unsure of take the colours of the set's
        # spots on this picture's identified tiles (vision.recognition.spot_colours)
        out = recolour_unknowns([r for r in reads if r is not None], rec.min_confidence,
                                rec.allow_diagonal_two)
        return out, len(todo)

    def _unread(self, reads: Sequence[TileRead]) -> list[TileRead]:
        """The unknown reads worth a second look or a turned reading: all of them, but in
        live video (:meth:`set_background`) those lying on the empty table's unread outlines
        (:class:`vision.recognition.background.Felt`)."""
        unknown = [r for r in reads if r.state == "unknown"]
        return unknown if self.background is None else self.felt.worth(unknown)

    def _landed(self, image: np.ndarray, reads: Sequence[TileRead]) -> list[TileRead] | None:
        """Live video: the fused still reading of this still picture once landed, else None
        (asked for, a copy of ``image``, unless being made); one that raised: the single pass
        with every face unknown. An empty table (nothing identified) is not read for a round;
        its unread outlines join :attr:`felt`."""
        bg = self.background
        done = bg.take()
        if done is not None and done[0] == self._generation:
            if isinstance(done[1], Exception):
                why = f"the still reading failed: {type(done[1]).__name__}: {done[1]}"
                _log.warning("%s", why)
                return [r.as_unknown(why) if r.face else r for r in reads]
            return list(done[1])
        if not any(r.state != "face_down" for r in reads):
            return None
        if not any(r.state == "face_up" for r in reads):
            self.felt.learn(reads)
            return list(reads)
        if not bg.pending(self._generation):
            bg.submit(self._generation, self.stack.mean(image))  # a new array
        return None

    def _vet(self, image: np.ndarray, reads: list[TileRead], look: bool = True
             ) -> list[TileRead]:
        """Video: the fused still reading (:meth:`_read_still`: every input size of
        :attr:`scales`, the second look) stands for a picture that has stopped moving, and
        vetoes faces the single pass named wrongly.

        A video frame is read once at the model's own size, where a tile model has named a
        wrong face from an outline reaching onto a touching tile, and leaves more tiles
        unknown than a still reading. Once ``look`` (:meth:`read` passes it after
        :data:`VET_AFTER_STILL` frames without motion), the picture is read once as a still
        image; until the gate sees motion again that reading is the frame's reads. A face
        the single pass names at a place (a face and an xyxy box) that the fused reading
        contradicts there (another face, or sizes that disagree) is unknown from then on, also
        in later moving frames, while the tile stays put. A face not yet vetted stands
        meanwhile (a round is final only after its positions are stable for several frames,
        by then the picture is still). Nothing happens with one input size (the strategy is
        the configuration's, :attr:`scales`).
        """
        if len(self.scales) < 2:
            return reads
        def matches(entries) -> np.ndarray:
            """bool (len(reads), len(entries)): same face on (nearly) the same box."""
            if not reads or not entries:
                return np.zeros((len(reads), len(entries)), bool)
            boxes = np.stack([np.asarray(r.xyxy, np.float32) for r in reads])
            iou = iou_matrix(boxes, np.stack([e[0] for e in entries]))
            return (iou > 0.9) & np.array([[r.face is not None and r.face == e[1]
                                             for e in entries] for r in reads])

        seen = matches(self._vetted)
        new = [i for i, r in enumerate(reads) if r.face and not seen[i].any()]
        if look and self._still_reading is None:
            if self.background is None:
                self._still_reading = self._read_still(self.stack.mean(image))[0]
            else:
                self._still_reading = self._landed(image, reads)
                look = self._still_reading is not None
        if new and look:
            fused = [f for f in self._still_reading if f.state != "face_down"]
            over = (iou_matrix(np.stack([reads[i].xyxy for i in new]),
                               np.stack([f.xyxy for f in fused])) if fused
                    else np.zeros((len(new), 0)))
            for row, i in enumerate(new):
                r = reads[i]
                against = [f for f, v in zip(fused, over[row]) if v >= 0.5 and (
                    (f.face and f.face != r.face)
                    or (f.face is None and f.reason_code is UnreadReason.SIZES_DISAGREE))]
                self._vetted.append((np.asarray(r.xyxy, np.float32).copy(), r.face))
                if against:
                    self._vetoed.append((np.asarray(r.xyxy, np.float32).copy(), r.face,
                                         against[0].face or "unknown"))
            seen = matches(self._vetted)
        hits = matches(self._vetoed)
        out = [r.as_unknown(f"read {r.face} once, the reading at every input size says "
                            f"{self._vetoed[int(np.argmax(hits[k]))][2]}") if hits[k].any() else r
               for k, r in enumerate(reads)]
        # keep only what is still on the table (a long session does not grow the lists)
        self._vetted = [v for j, v in enumerate(self._vetted) if seen[:, j].any()]
        self._vetoed = [v for j, v in enumerate(self._vetoed) if hits[:, j].any()]
        if look and self._still_reading is not None:
            # the picture is still: the fused reading (every input size, the second look)
            # stands for it until something moves -- it adds the faces the single pass left
            # unknown and the outlines it merged; the vetoes above outlast the next motion
            return list(self._still_reading)
        return out
