"""The recognition engine: one picture in, its tile reads out (docs/architecture.md).

:class:`RecognitionEngine` is the one entry point of recognition: ``read(image, mode)`` returns
:class:`Reads`. What it does is chosen by configuration (:class:`vision.config.RecognitionConfig`
with the gate and identity-cache settings), never by what detectors it was given:

* ``ReadMode.STILL`` (an independent picture): the ordered rules of
  :data:`vision.recognition.still.STILL_RULES` -- the tile model at every input size of
  ``scales`` fused, a magnified second look at the tiles left unknown (``zoom``), the second
  tile model (``second_model``), the unknown outlines refitted (``refine``), the flush guards,
  the picture turned by 45 degrees (``turn``), the dealt blocks.
* ``ReadMode.VIDEO`` (a frame of a stream, :mod:`vision.recognition.video`): the motion gate
  in front of the tile model (:mod:`vision.recognition.gate`), one pass at the model's size --
  while the picture changes, of only the part of the frame that moved (``region_detect``,
  :mod:`vision.recognition.region`) --, the identity cache in front of the pip model
  (:mod:`vision.recognition.identity`), and -- with two or more ``scales`` -- the vet: once
  the picture has been still for :data:`VET_AFTER_STILL` frames (or, from one frame on, for
  :data:`~vision.recognition.video.VET_STILL_S` of the camera's clock) it is read once as a still
  picture, that reading stands for it until something moves, and faces it contradicts stay
  unknown while their tile stays put.

Detectors come from the models folder (:func:`vision.recognition.models.load_detectors`, any
backend of :mod:`vision.recognition.backends`, the pit's shared detector service included) or
are handed in as :class:`Detectors` (tests): every strategy runs on them the same way, so a
tile detector takes ``detect(image, imgsz=None) -> Detections`` and a pip detector
``detect_batch(crops) -> list[Detections]``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Sequence

import numpy as np

from vision.config import CacheConfig, GateConfig, RecognitionConfig
from vision.detections import TILE, TILE_BACK, Detections
from vision.recognition.background import Felt, Locked, StillReader, adds_faces_only
from vision.recognition.decode import TileRead
from vision.recognition.stack import FrameStack
from vision.recognition.gate import MotionGate
from vision.recognition.identity import IdentityCache
from vision.recognition.models import load_detectors, load_second_tile_detector, model_version
from vision.recognition.crosscheck import load_crop_classifier
from vision.recognition.reads import Detectors, ReadMode, Reads, run_tile_detector
from vision.recognition.overlaps import drop_straddlers
from vision.recognition.scales import STILL_SCALES
from vision.schema import UnreadReason
from vision.recognition.still import STILL_RULES, read_still, without, zoom_look
from vision.recognition.zoom import ZOOM_WINDOWS
from vision.recognition.decoding import decode_reads
from vision.recognition.video import (VET_AFTER_STILL, detect_gated, read_video, region_plan,
                                      vet)

__all__ = ["RecognitionEngine", "ReadMode", "Reads", "Detectors", "VET_AFTER_STILL",
           "StillReader"]  # StillReader: re-exported from vision.recognition.background

_log = logging.getLogger(__name__)


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
            # the arithmetic when not f32 (a live table's bfloat16): ``...@bf16``
            precision = getattr(getattr(self.tile_detector, "runtime", None), "precision",
                                "f32")
            if precision != "f32":
                self.model_version += f"@{precision}"
            #: the optional second tile model for a still picture's unread tiles
            self.second_detector = (load_second_tile_detector(rec.models, rec.backend,
                                                              rec.tile_conf)
                                    if self.scales and rec.second_model else None)
            #: the optional crop classifier, a second opinion on small tiles' faces
            #: (vision.recognition.crosscheck; None: the models folder has none)
            self.crop_classifier = load_crop_classifier(rec.models)
        else:
            self.tile_detector, self.pip_detector = detectors.tile, detectors.pip
            self.model_version = detectors.version or getattr(detectors.tile, "version",
                                                              "injected")
            self.second_detector = (detectors.second if self.scales and rec.second_model
                                    else None)
            self.crop_classifier = detectors.crops
        self.gate = MotionGate(gate or GateConfig())
        self.cache = IdentityCache(cache or CacheConfig())
        #: video: (xyxy, face) already checked against the fused still reading, and those it
        #: contradicted (xyxy, face, what the fused reading says): see :meth:`_vet`
        self._vetted: list[tuple[np.ndarray, str]] = []
        self._vetoed: list[tuple[np.ndarray, str, str]] = []
        self._still_frames = 0  # consecutive video frames without motion
        self.stack = FrameStack()  # ... averaged for their still reading (recognition.stack)
        self._moved = True  # the gate saw motion on the last frame
        self._moved_at: float | None = None  # camera time (s) of the last frame that moved
        self._still_ok = False  # still long enough to be read as a still (video.read_video)
        #: video: the fused still reading of the picture since it stopped moving (:meth:`_vet`)
        self._still_reading: list[TileRead] | None = None
        self._last_dets: Detections | None = None
        self.detector_runs = 0
        #: video: detector runs on a region of the frame (counted in detector_runs too)
        self.region_runs = 0
        #: video frames answered by the standing fused still reading (no decode, no vet)
        self.still_reuses = 0
        #: video: the last frame was answered by the standing fused reading (a still table
        #: whose reading is made: nothing ran, nothing changed; live, the loop may rest)
        self.standing = False
        #: live video: the fused still reading runs beside the frame loop (set_background)
        self.background: StillReader | None = None
        self._ran_at: float | None = None  # camera time (s) the detector last ran
        self._spared_at: float | None = None  # ... of the frame before, when it was spared
        self._rest_from: float | None = None  # ... the picture this frame settled on showed
        self._shown: tuple[TileRead, ...] | None = None  # live: the reads of the last frame
        #: live video: moving frames not detected (vision.recognition.video.detect_gated)
        self.motion_spared = 0
        self._generation = 0  # bumped whenever the picture moves (a reading of before is old)
        self._first_look: tuple | None = None  # live: the reads standing while it is made
        #: live video: the unread outlines empty still tables show (felt lettering, chips)
        self.felt = Felt()
        #: live video: ``worth(reads, unknown, (w, h)) -> unknown`` keeps the unknown reads
        #: whose second look could change a settlement (the pipeline's positions,
        #: :meth:`vision.pipeline.Pipeline.worth_a_look`); None: every one
        self.unread_worth: Callable[[Sequence[TileRead], list[TileRead], tuple[int, int]],
                                    list[TileRead]] | None = None

    def set_background(self, on: bool = True) -> None:
        """Live video: the fused still reading (the vet) is made beside the frame loop
        (:class:`vision.recognition.background.StillReader`); until it lands the first look
        stands, ``provisional`` (:class:`Reads`: shown, never settled on), and the detectors
        are called one at a time (:class:`vision.recognition.background.Locked`). Off (files
        read as fast as possible, tests): made in :meth:`read`, the same frames give the same
        reads. Nothing changes with one input size (no vet). A reading that finds the pit's
        gate taken by other tables' readings, or every core held by other work, is made at
        ``busy_scales`` only (:class:`vision.recognition.background.StillReader` ``light``).
        Frames still moving run the detector at most every
        :data:`vision.recognition.video.MOTION_LIVE_S` seconds of the camera's clock
        (:func:`vision.recognition.video.detect_gated`)."""
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
        busy = self.config.busy_scales
        self.background = StillReader(
            lambda image: self._read_still(image)[0],
            light=(lambda image: self._read_still(image, sizes=busy)[0]) if busy else None,
            again=lambda image, reads: bool(self._unread(reads, image.shape[1::-1])))

    def close(self) -> None:
        """Stop the background still reading, if any."""
        self.set_background(False)

    @property
    def still_pending(self) -> bool:
        """True while a fused still reading is being made beside the loop."""
        return self.background is not None and self.background.busy()

    def wait_reading(self, timeout: float) -> None:
        """Live: wait up to ``timeout`` seconds while the fused still reading beside the loop
        runs, no longer than until it lands (the loop takes the landed reading at once)."""
        if self.background is not None:
            self.background.wait_idle(timeout)
        elif timeout > 0:
            time.sleep(timeout)

    def read(self, image: np.ndarray, mode: ReadMode | str = ReadMode.VIDEO,
             clock: float | None = None) -> Reads:
        """The reads of one picture.

        Args:
            image: uint8 (H, W, 3) BGR.
            mode: :class:`ReadMode` (or its value): ``still`` or ``video`` (module docstring).
            clock: in video, the frame's time on the camera's clock (s; None: frames only
                count): :func:`vision.recognition.video.read_video`.

        Returns:
            :class:`Reads`.
        """
        t0 = time.perf_counter()
        if ReadMode(mode) is ReadMode.STILL:
            reads, first = self._read_still(image)
            self.detector_runs += max(len(self.scales), 1)
            return Reads(tuple(reads), first, sum(r.state != "face_down" for r in reads),
                         timings={"detect": time.perf_counter() - t0, "decode": 0.0})
        return read_video(self, image, t0, clock)

    def tick(self) -> None:
        """One frame has been handled (the identity cache's clock)."""
        self.cache.tick()

    def reset(self) -> None:
        """Forget the video state (vet, standing still reading, caches): a new, unrelated
        source or picture."""
        self._vetted, self._vetoed = [], []
        self._still_reading, self._still_frames, self._moved = None, 0, True
        self._moved_at, self._still_ok = None, False
        self._ran_at = self._spared_at = self._rest_from = self._shown = None
        self.standing = False
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
        outlines that straddle two neighbouring tiles
        (:func:`vision.recognition.overlaps.drop_straddlers`); ``imgsz``: the tile model's input
        size (None: its own); ``detector``: another tile model (the second model,
        :mod:`vision.recognition.fill`) instead of :attr:`tile_detector`."""
        d = run_tile_detector(detector or self.tile_detector, image, imgsz)
        d = d[np.isin(d.class_id, (TILE, TILE_BACK))] if len(d) else d
        return drop_straddlers(d)

    def _read_still(self, image: np.ndarray, turn: bool = True, rules=None,
                    sizes: Sequence[int] | None = None) -> tuple[list[TileRead], Detections]:
        """Read an independent still image: the rules of
        :data:`vision.recognition.still.STILL_RULES` in order
        (:func:`vision.recognition.still.read_still`: the input sizes of :attr:`scales` fused,
        the second look, the second model, the refit, the flush guards, the missed neighbour,
        the turned picture, the dealt blocks), each on where the configuration has it.

        Args:
            image: uint8 (H, W, 3) BGR.
            turn: False: without the turned reading (``turned``).
            rules: the rules to run (None: :data:`~vision.recognition.still.STILL_RULES`),
                less the configuration's ``rules_off`` and, for a live feed's reading made
                beside the loop (:meth:`set_background`), its ``live_rules_off``.
            sizes: the tile model's input sizes px (None: :attr:`scales`).

        Returns:
            ``(reads, detections of the first size)``; the reads are free of overlapping
            outlines (:func:`vision.recognition.overlaps.resolve_overlapping_reads`).
        """
        off = self.config.rules_off + (self.config.live_rules_off if self.background is not None
                                       else ())
        rules = without(STILL_RULES if rules is None else tuple(rules), *off)
        return read_still(self, image, rules if turn else without(rules, "turned"), sizes)

    # the parts other modules own, as this engine's methods
    _second_look = zoom_look  # vision.recognition.still: the zoom's second look
    decode = decode_reads  # vision.recognition.decoding: detections -> reads
    _detect_gated = detect_gated  # vision.recognition.video: the motion gate, regions
    _region = region_plan
    _vet = vet  # vision.recognition.video: the fused still reading vets a video frame

    def _unread(self, reads: Sequence[TileRead], size: tuple[int, int] | None = None
                ) -> list[TileRead]:
        """The unknown reads worth a second look or a turned reading: all of them, but in
        live video (:meth:`set_background`) neither those lying on the empty table's unread
        outlines (:class:`vision.recognition.background.Felt`) nor, given the picture's
        ``size`` ``(w, h)`` px, those whose reading could change no settlement
        (:attr:`unread_worth`)."""
        unknown = [r for r in reads if r.state == "unknown"]
        if self.background is None:
            return unknown
        unknown = self.felt.worth(unknown)
        if unknown and size is not None and self.unread_worth is not None:
            unknown = self.unread_worth(reads, unknown, size)
        return unknown

    def _followed(self) -> None:
        """Live video: the full reading that follows a light one which left a tile unread
        (:class:`vision.recognition.background.StillReader` ``again``) replaces the standing
        reading of this still picture once it lands, where it only adds faces
        (:func:`vision.recognition.background.adds_faces_only`: a face that stands is never
        renamed, so a settled round is never reported again); one that raised or renames a
        face leaves it standing."""
        bg = self.background
        if bg is None or self._still_reading is None or not bg.following(self._generation):
            return
        done = bg.take()
        if done is not None and done[0] == self._generation \
                and not isinstance(done[1], Exception) \
                and adds_faces_only(self._still_reading, done[1]):
            self._still_reading = list(done[1])

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
                return [r.as_unknown(UnreadReason.STILL_READING_FAILED,
                                     f"{type(done[1]).__name__}: {done[1]}") if r.face else r
                        for r in reads]
            return list(done[1])
        if not reads:
            return []  # nothing on the table: that is its reading (it stands; the loop rests)
        if not any(r.state != "face_down" for r in reads):
            return None
        if not any(r.state == "face_up" for r in reads):
            self.felt.learn(reads)
            return list(reads)
        if not bg.pending(self._generation):
            bg.submit(self._generation, self.stack.mean(image))  # a new array
        return None

