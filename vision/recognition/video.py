"""The recognition engine's video mode (docs/architecture.md): a frame of a stream read
through the motion gate (:mod:`vision.recognition.gate`), on only the part of the frame that
moved (:mod:`vision.recognition.region`), through the identity cache, and vetted by the fused
still reading once the picture is still (:func:`vet`).

Functions of a :class:`vision.recognition.engine.RecognitionEngine` (``engine``) and its video
state; the engine calls them as its methods ``_detect_gated``, ``_region`` and ``_vet``.
"""

from __future__ import annotations

import time

import numpy as np

from vision.detections import Detections
from vision.geometry import iou_matrix
from vision.recognition.decode import TileRead
from vision.recognition.overlaps import resolve_overlapping_reads
from vision.recognition.reads import Reads
from vision.recognition.region import RegionPlan, cut, full_pass_grid, merge_region, plan_region
from vision.schema import UnreadReason

__all__ = ["VET_AFTER_STILL", "VET_STILL_S", "MOTION_LIVE_S", "read_video", "detect_gated",
           "region_plan", "vet"]

#: Video: new faces are vetted by the fused still reading after this many consecutive frames
#: without motion (dealing is over; one fused reading per new set of faces, not one per card).
VET_AFTER_STILL = 3
#: ... or once still for this many seconds of the camera's clock, from one frame on: a table
#: behind its camera (a busy machine takes a frame every half second or so) asks for the
#: reading as soon as the picture has been seen unchanged that long, as at the camera's own
#: pace (3 frames at 15 fps), not after 3 of its own slow frames (1-2 s later under load,
#: issue 45).
VET_STILL_S = 0.2
#: Live (the still reading beside the loop): a picture that keeps changing from frame to frame
#: (a hand dealing, clearing) runs the detector at most once in this many seconds of the
#: camera's clock; the frame it comes to rest on runs it at once. The frames between are
#: stale (drawn with the detections before, not counted by the round tracker), as the gate's
#: own ``motion_detect_every`` makes them. A dealing's moving frames are shown, never settled
#: on: 8 tables dealt at once spent about as much CPU on them as on their still readings
#: (bench_live, session 32, docs/pit.md).
MOTION_LIVE_S = 0.5


def read_video(engine, image: np.ndarray, t0: float, clock: float | None = None) -> Reads:
    """``engine.read(image, "video")`` (:meth:`vision.recognition.engine.RecognitionEngine.read`):
    the motion gate in front of the tile model, the identity cache in front of the pip model,
    the vet (:func:`vet`), the standing still reading reused while nothing moves.

    Args:
        engine: the engine (its video state is read and updated).
        image: uint8 (H, W, 3) BGR.
        t0: ``time.perf_counter()`` when the read began (s).
        clock: the frame's time on the camera's clock (s), or None: the picture counts as
            still after :data:`VET_AFTER_STILL` frames without motion, or from one frame on
            once it has been unchanged for :data:`VET_STILL_S` of this clock.

    Returns:
        :class:`vision.recognition.reads.Reads`.
    """
    engine.gate.holding = _holding(engine)
    engine.standing = False
    engine._followed()  # live: a light reading's full follow-up replaces it once landed
    dets, ran, stale = engine._detect_gated(image, clock)
    t1 = time.perf_counter()
    if not ran and not stale and not engine._moved and engine._still_reading is not None \
            and engine._still_ok:
        # a still table whose fused reading is made (once per still picture): it stands
        # for this unchanged frame as for the last -- no single pass decoded and vetted
        # again (the identity cache is left as it was; a tile that changes moves the gate
        # first, and then everything runs as before)
        engine._still_frames += 1
        engine.still_reuses += 1
        engine.standing = True
        engine._shown = tuple(engine._still_reading)
        return Reads(tuple(engine._still_reading), dets, 0, ran, stale,
                     {"detect": t1 - t0, "decode": time.perf_counter() - t1},
                     still_frames=engine._still_frames, vetted=True)
    if not ran and not stale and not engine._moved and engine._first_look is not None \
            and engine.background.making(engine._generation):  # (live) its reading is made:
        # the first look stands for this unchanged picture, not decoded again
        engine._still_frames += 1
        engine._shown = engine._first_look
        return Reads(engine._first_look, dets, 0, ran, stale,
                     {"detect": t1 - t0, "decode": time.perf_counter() - t1},
                     provisional=True, still_frames=engine._still_frames)
    engine._first_look = None
    reads, n_dec = _frame_reads(engine, image, dets, stale)
    if stale or (engine._moved and engine._rest_from is None):
        engine._still_frames = 0
        engine._moved_at = clock
    elif engine._moved:  # settled on the picture of the spared frame before: its second
        engine._still_frames = 1  # frame (that one reset the stack and set _moved_at)
    else:
        engine._still_frames += 1
    engine._still_ok = engine._still_frames >= VET_AFTER_STILL or (
        engine._still_frames >= 1 and clock is not None and engine._moved_at is not None
        and clock - engine._moved_at >= VET_STILL_S)
    if not engine._still_frames:
        engine.stack.reset()
    elif engine._still_reading is None:  # the still frames its reading averages (stack)
        engine.stack.add(image)
    if not engine._still_frames:
        if engine._still_reading is not None or engine.background is not None:
            engine._generation += 1  # a reading of the picture before is of no use now
        engine._still_reading = None  # the picture moved: read it again once still
    if not stale:  # new faces are vetted once the picture has been still a moment
        reads = engine._vet(image, reads, look=engine._still_ok)
    provisional = (engine.background is not None and engine._still_reading is None
                   and any(r.state != "face_down" for r in reads))
    if provisional and engine.background.pending(engine._generation):
        engine._first_look = tuple(reads)
    vetted = (not stale and engine._still_reading is not None and len(engine.scales) >= 2
              and engine._still_ok)
    engine._shown = tuple(reads)
    return Reads(tuple(reads), dets, n_dec, ran, stale,
                 {"detect": t1 - t0, "decode": time.perf_counter() - t1},
                 provisional=provisional, still_frames=engine._still_frames, vetted=vetted)


def _holding(engine) -> bool:
    """The gate holds its reference picture (:attr:`vision.recognition.gate.MotionGate.holding`:
    no periodic re-detection): while a standing fused reading is of that picture (a
    re-detection would not change it; motion against that picture still runs the detector
    and drops the reading), and, live, while the fused reading of this still picture is being
    made beside the loop (a re-detection would change neither that reading nor the first look
    standing meanwhile)."""
    return (engine._still_reading is not None and engine._still_ok) or (
        engine._first_look is not None and engine.background is not None
        and engine.background.making(engine._generation))


def _frame_reads(engine, image: np.ndarray, dets: Detections, stale: bool
                 ) -> tuple[list[TileRead], int]:
    """``(reads, tiles decoded)`` of a frame: its detections decoded through the identity
    cache; live, a stale frame (the picture moving, the detector not run: it counts for
    nothing) shows the reads of the frame before, nothing decoded again."""
    if stale and engine.background is not None and engine._shown is not None:
        return list(engine._shown), 0
    reads, n_dec = engine.decode(image, dets, use_cache=True)
    return resolve_overlapping_reads(reads), n_dec


def detect_gated(engine, image: np.ndarray, clock: float | None = None
                 ) -> tuple[Detections, bool, bool]:
    """Detections of this frame through the motion gate (:mod:`vision.recognition.gate`).

    Live (the still reading beside the loop, :meth:`set_background`, and ``clock`` given), a
    frame of a picture that keeps changing (it moved on the frame before too, and changed
    since) is stale while the detector ran less than
    :data:`MOTION_LIVE_S` seconds ago on the camera's clock; the frame the picture settles on
    runs it (and, when the frame before it was spared, it is that picture's second still
    frame, still since that frame's time: ``engine._rest_from``).

    Args:
        engine: the engine (its gate and detections are read and updated).
        image: uint8 (H, W, 3) BGR.
        clock: the frame's time on the camera's clock (s), or None (never spared).

    Returns:
        ``(detections, detector_ran, stale)``.
    """
    decision = engine.gate.decide(image)
    moving, engine._moved = engine._moved, decision.moved  # moving: the frame before moved
    engine._rest_from = None
    spared_before, engine._spared_at = engine._spared_at, None
    if not decision.detect and engine._last_dets is not None:
        if decision.stale:
            engine._spared_at = clock
        return engine._last_dets, False, decision.stale
    if (engine.background is not None and clock is not None and decision.moved and moving
            and not decision.settled and decision.blocks is not None
            and engine._last_dets is not None and engine._ran_at is not None
            and 0 <= clock - engine._ran_at < MOTION_LIVE_S):
        engine.motion_spared += 1
        engine._spared_at = clock
        return engine._last_dets, False, True
    if engine.background is not None and decision.settled and spared_before is not None:
        engine._rest_from = spared_before  # this picture was already the frame before's
    engine._ran_at = clock
    plan = engine._region(image, decision)
    if plan is None:
        engine._last_dets = engine.detect(image)
        engine.gate.ran()
    else:
        found = engine.detect(cut(image, plan), plan.imgsz).shifted(*plan.crop[:2])
        engine._last_dets = merge_region(engine._last_dets, found, plan, image.shape)
        engine.gate.ran(plan.core)
        engine.region_runs += 1
    engine.detector_runs += 1
    return engine._last_dets, True, False


def region_plan(engine, image: np.ndarray, decision) -> RegionPlan | None:
    """The region to re-detect instead of the whole frame (:mod:`vision.recognition.region`),
    or None: the whole frame -- with ``region_detect`` off, on the first frame or without
    previous detections, for the gate's periodic re-detection of a still picture (it
    corrects whatever a region run left), when the tile model's input size is fixed or
    unknown (a detector without ``info``, :class:`vision.recognition.detect.ModelInfo`),
    or when the region is large (``region_max_area``)."""
    cfg = engine.gate.config
    if not cfg.region_detect or not decision.moved or decision.blocks is None \
            or engine._last_dets is None or not len(engine._last_dets):
        return None
    info = getattr(engine.tile_detector, "info", None)
    if info is None or not getattr(info, "dynamic_hw", False):
        return None
    changed = engine.gate.changed_box(decision.blocks)
    if changed is None:
        return None
    gain, canvas = full_pass_grid(image.shape, info.imgsz, int(info.stride))
    return plan_region(changed, engine._last_dets, image.shape, gain, int(info.stride),
                       float(cfg.region_max_area), canvas)


def vet(engine, image: np.ndarray, reads: list[TileRead], look: bool = True
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
    in later moving frames, while the tile stays put; so is a face the fused reading's crop
    classifier ruled out there (:mod:`vision.recognition.crosscheck`). A face not yet vetted stands
    meanwhile (a round is final only after its positions are stable for several frames,
    by then the picture is still). Nothing happens with one input size (the strategy is
    the configuration's, :attr:`scales`).
    """
    if len(engine.scales) < 2:
        return reads
    def matches(entries) -> np.ndarray:
        """bool (len(reads), len(entries)): same face on (nearly) the same box."""
        if not reads or not entries:
            return np.zeros((len(reads), len(entries)), bool)
        boxes = np.stack([np.asarray(r.xyxy, np.float32) for r in reads])
        iou = iou_matrix(boxes, np.stack([e[0] for e in entries]))
        return (iou > 0.9) & np.array([[r.face is not None and r.face == e[1]
                                         for e in entries] for r in reads])

    seen = matches(engine._vetted)
    new = [i for i, r in enumerate(reads) if r.face and not seen[i].any()]
    if look and engine._still_reading is None:
        if engine.background is None:
            engine._still_reading = engine._read_still(engine.stack.mean(image))[0]
        else:
            engine._still_reading = engine._landed(image, reads)
            look = engine._still_reading is not None
    if new and look:
        fused = [f for f in engine._still_reading if f.state != "face_down"]
        over = (iou_matrix(np.stack([reads[i].xyxy for i in new]),
                           np.stack([f.xyxy for f in fused])) if fused
                else np.zeros((len(new), 0)))
        for row, i in enumerate(new):
            r = reads[i]
            against = [f for f, v in zip(fused, over[row]) if v >= 0.5 and (
                (f.face and f.face != r.face)
                or (f.face is None and f.reason_code is UnreadReason.SIZES_DISAGREE)
                or (f.face is None and f.reason_code is UnreadReason.CROP_DISAGREES
                    and f.evidence.disputed == r.face))]
            engine._vetted.append((np.asarray(r.xyxy, np.float32).copy(), r.face))
            if against:
                engine._vetoed.append((np.asarray(r.xyxy, np.float32).copy(), r.face,
                                     against[0].face or "unknown"))
        seen = matches(engine._vetted)
    hits = matches(engine._vetoed)
    out = [r.as_unknown(UnreadReason.VETOED, face=r.face,
                        other=engine._vetoed[int(np.argmax(hits[k]))][2]) if hits[k].any() else r
           for k, r in enumerate(reads)]
    # keep only what is still on the table (a long session does not grow the lists)
    engine._vetted = [v for j, v in enumerate(engine._vetted) if seen[:, j].any()]
    engine._vetoed = [v for j, v in enumerate(engine._vetoed) if hits[:, j].any()]
    if look and engine._still_reading is not None:
        # the picture is still: the fused reading (every input size, the second look)
        # stands for it until something moves -- it adds the faces the single pass left
        # unknown and the outlines it merged; the vetoes above outlast the next motion
        return list(engine._still_reading)
    return out
