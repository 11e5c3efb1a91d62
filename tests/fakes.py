"""Test doubles shared by the test files: tile + pip detectors answering from the ground truth of
scenes rendered by ``vision.synth.render.render_table``, and the true settings of a rendered deal.

The detectors let a test check the logic from detection to settlement (pipeline, run --audit,
the browser display) independently of the trained models' quality. Imported as a top-level
module ``fakes`` (tests/ is on sys.path: see conftest.py); a child process that unpickles a
:class:`GroundTruthDetectors` puts tests/ on its sys.path first.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any, Iterable, Mapping, Sequence

import cv2
import numpy as np

from scoring.hands import hand_key
from scoring.setting import make_setting
from vision.table.rounds import FrameHeader
from vision.detections import PIP_RED, PIP_WHITE, Detections
from vision.geometry import rectify
from vision.web.hub import LiveFeed

TILE_CONFIDENCE = 0.95
PIP_CONFIDENCE = 0.9
THUMB = (96, 54)   # grey thumbnail (w, h) px matching a whole frame (lossy mode)
LOOK = (24, 48)    # grey look (w, h) px matching a tile crop (lossy mode)
# mean grey-level difference up to which a crop is that tile (lossy mode): tile crops of the
# FFV1 test videos match at < 1; an outline moved a tile's width off a tile (vision.recognition.flush's
# outlines beside a tile) matches its neighbour at 7 or more, and must not be given that tile's
# spots at the wrong place (a real pip model sees them where they lie, on the neighbour)
MAX_LOOK_DIFF = 6.0


def true_settings(deal: dict[str, list[str]]) -> dict:
    """Position -> the true setting of a rendered deal: faces 0-1 and 2-3 of each position are
    its two hands, the higher (by ``scoring.hands.hand_key``) the high hand. Returns
    ``{position: scoring.setting.make_setting(high, low)}``."""
    out = {}
    for p, f in deal.items():
        h0, h1 = f[:2], f[2:]
        if hand_key(*h1) > hand_key(*h0):
            h0, h1 = h1, h0
        out[p] = make_setting(h0, h1)
    return out


def _sha1(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


def _grey(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    g = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image
    return cv2.resize(g, size, interpolation=cv2.INTER_AREA).astype(np.int16)


def _tile_class(tile) -> int:
    return 0 if tile.state == "face_up" else 1


class GroundTruthDetectors:
    """Tile detector (``detect``) and pip detector (``detect_batch``) from the ground truth of
    one or more rendered scenes (``vision.synth.render`` scenes: ``image``, ``tiles`` with
    ``polygon`` (4, 2) px, ``labelled``, ``state``, ``spots``). Picklable.

    Exact mode (``lossy=False``, for frames that are the rendered pixels, possibly edited):
        ``detect(image)`` returns, for the scene with the most such tiles, its labelled tiles
        whose polygon's pixels in ``image`` equal the scene's (>= 99%): tiles not yet laid or
        under an occluder are not detected; an image of another size or showing no scene gives
        no detections. ``detect_batch(crops)`` looks each crop up by its bytes among the
        rectified face-up tiles of all scenes (so call order and the pipeline's identity cache
        do not matter); an unknown crop gets no spots.
    Lossy mode (``lossy=True``, for frames read back from a lossy video):
        ``detect(image)`` matches the frame to the nearest of the scenes and ``empties`` (mean
        difference of 96 x 54 grey thumbnails); a scene gives all its labelled tiles, an empty
        table nothing. ``detect_batch`` matches each crop to the nearest face-up tile of any
        scene (24 x 48 grey look; mean difference <= 12 grey levels, else no spots).

    In both modes a tile's spots are its visible ``spots`` mapped into its crop by the
    homography of ``vision.geometry.rectify``, as axis-aligned boxes with class PIP_RED
    (colour 0) or PIP_WHITE; tiles have confidence 0.95 and class 0 (face up) or 1 (back),
    spots confidence 0.9.

    Args:
        scenes: sequence of rendered scenes.
        empties: uint8 (H, W, 3) images of the table without tiles (lossy mode only).
        drop: ``{(scene index, tile index): spot index}``: that spot is never reported (a
            missed spot).
        delay: seconds slept by each ``detect`` call (model latency).
        lossy: the matching mode above.
        version: the detectors' ``version`` string (recorded as the model version).
    """

    def __init__(self, scenes, empties=(), *, drop=None, delay: float = 0.0,
                 lossy: bool = False, version: str = "fake-ground-truth") -> None:
        self.version = version
        self.delay = float(delay)
        self.lossy = bool(lossy)
        drop = drop or {}
        self.frames: list[tuple[np.ndarray, list[np.ndarray], list[int]]] = []
        self.pips: list[Detections] = []
        self.by_crop: dict[str, Detections] = {}  # exact mode
        looks = []  # lossy mode
        for i, sc in enumerate(scenes):
            labelled = [t for t in sc.tiles if t.labelled]
            self.frames.append((sc.image, [t.polygon for t in labelled],
                                [_tile_class(t) for t in labelled]))
            for k, t in enumerate(sc.tiles):
                if not t.labelled or t.state != "face_up":
                    continue
                crop, M = rectify(sc.image, t.polygon)
                boxes, cls = [], []
                for s, (pts, c, visible) in enumerate(t.spots):
                    if not visible or drop.get((i, k)) == s:
                        continue
                    q = cv2.perspectiveTransform(np.asarray(pts, np.float32)[None], M)[0]
                    boxes.append(np.r_[q.min(0), q.max(0)])
                    cls.append(PIP_RED if c == 0 else PIP_WHITE)
                found = Detections(np.array(boxes, np.float32).reshape(-1, 4),
                                   np.full(len(boxes), PIP_CONFIDENCE, np.float32), cls)
                self.pips.append(found)
                self.by_crop[_sha1(crop)] = found
                looks.append(_grey(crop, LOOK))
        self.views: list[tuple[np.ndarray, int | None]] = []  # lossy mode: (thumb, scene)
        if self.lossy:
            self.views = [(_grey(img, THUMB), i) for i, (img, _, _) in enumerate(self.frames)]
            self.views += [(_grey(em, THUMB), None) for em in empties]
            self._looks = np.stack(looks) if looks else np.zeros((0, LOOK[1], LOOK[0]), np.int16)

    @staticmethod
    def _tiles(polys, cls) -> Detections:
        return Detections.from_polygons(np.array(polys, np.float32).reshape(-1, 4, 2),
                                        np.full(len(polys), TILE_CONFIDENCE, np.float32), cls)

    @staticmethod
    def _shown(image: np.ndarray, truth: np.ndarray, polygon: np.ndarray) -> bool:
        """True when >= 99% of the polygon's pixels in ``image`` equal those of ``truth`` (two
        uint8 (H, W, 3) images of one size)."""
        h, w = image.shape[:2]
        x0, y0 = np.floor(polygon.min(0)).astype(int).clip(0)
        x1, y1 = np.ceil(polygon.max(0)).astype(int) + 1
        if x0 >= w or y0 >= h:
            return False
        m = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.fillConvexPoly(m, np.round(polygon - [x0, y0]).astype(np.int32), 1)
        inside = m[:h - y0, :w - x0] > 0
        a, b = image[y0:y1, x0:x1][inside], truth[y0:y1, x0:x1][inside]
        return bool(len(a)) and bool((a == b).all(1).mean() >= 0.99)

    def detect(self, image: np.ndarray, imgsz: int | None = None) -> Detections:
        """Tile detections (polygons, class 0 face up / 1 back) for one BGR frame; ``imgsz``
        (the model's input size) changes nothing: the truth is the same at every size. A
        picture of another size than the scenes (a window of one) shows no scene."""
        if self.delay:
            time.sleep(self.delay)
        if self.lossy and not any(image.shape == f[0].shape for f in self.frames):
            return Detections.empty()
        if self.lossy:
            th = _grey(image, THUMB)
            k = int(np.argmin([np.abs(th - v).mean() for v, _ in self.views]))
            i = self.views[k][1]
            return Detections.empty() if i is None else self._tiles(*self.frames[i][1:])
        best: tuple[list, list] = ([], [])
        for truth, polys, cls in self.frames:
            if truth.shape != image.shape:
                continue
            shown = [j for j, p in enumerate(polys) if self._shown(image, truth, p)]
            if len(shown) > len(best[0]):
                best = ([polys[j] for j in shown], [cls[j] for j in shown])
        return self._tiles(*best)

    def detect_batch(self, crops) -> list[Detections]:
        """Pip detections (crop pixels) for each rectified tile crop."""
        if not self.lossy:
            return [self.by_crop.get(_sha1(c), Detections.empty()) for c in crops]
        out = []
        for c in crops:
            d = np.abs(self._looks - _grey(c, LOOK)[None]).mean((1, 2))
            k = int(np.argmin(d)) if len(d) else -1
            out.append(self.pips[k] if k >= 0 and d[k] <= MAX_LOOK_DIFF else Detections.empty())
        return out


class FakeFeed(LiveFeed):
    """A scripted feed for tests and demos.

    Args:
        steps: played in order by the thread, each a mapping with any of ``"frame"`` (BGR
            array or JPEG bytes), ``"positions"`` (live view dicts), ``"alerts"``, ``"event"``
            (a settled round event) and ``"delay"`` (seconds to wait after the step, default
            ``interval_s``).
        interval_s: default pause between steps, seconds.
        loop: replay the steps until stopped.
        **kw: :class:`LiveFeed` arguments.

    Without steps the thread only waits; drive it with :meth:`publish_frame` and
    :meth:`publish_event` (deterministic tests). ``resets`` counts control resets.
    """

    def __init__(self, steps: Iterable[Mapping] = (), *, interval_s: float = 0.05,
                 loop: bool = False, **kw: Any) -> None:
        kw.setdefault("source", "fake")
        super().__init__(**kw)
        self.steps = [dict(s) for s in steps]
        self.interval_s = float(interval_s)
        self.loop = bool(loop)
        self.resets = 0

    def _run(self) -> None:
        if not self.steps:
            self.stopping.wait()
            return
        while not self.stopping.is_set():
            for i, step in enumerate(self.steps):
                if self.stopping.is_set():
                    return
                if any(k in step for k in ("frame", "positions", "alerts")):
                    self.publish_frame(step.get("frame"), frame_index=step.get("frame_index", i),
                                       positions=step.get("positions"), alerts=step.get("alerts"))
                if step.get("event") is not None:
                    self.publish_event(step["event"])
                if self.stopping.wait(float(step.get("delay", self.interval_s))):
                    return
            if not self.loop:
                return

    def _reset(self) -> dict:
        self.resets += 1
        return {"resets": self.resets}


# --------------------------------------------------------------------------- round events

_VALIDATOR = None


def event_errors(event) -> list[str]:
    """Why ``event`` (a round event's JSON form) breaks docs/round-event.schema.json (empty
    list: it is valid)."""
    global _VALIDATOR
    if _VALIDATOR is None:
        import json

        import jsonschema

        from vision.schema import SCHEMA_FILE

        schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        _VALIDATOR = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in _VALIDATOR.iter_errors(event)]


def assert_valid_event(event) -> None:
    """Assert that a round event's JSON form matches docs/round-event.schema.json."""
    errors = event_errors(event)
    assert not errors, f"round {event.get('round_id')}: {errors[0]}"


class ScriptedBackend:
    """A :class:`vision.recognition.backends.DetectorBackend` that runs no model: it records
    every blob it is given and answers with ``respond(blob) -> list[np.ndarray]`` (default: no
    detection, an embedded-NMS OBB output of zeros). The detector's own letterbox, parsing, NMS
    and mapping back run on what it returns, as in production.

    Args:
        path: the model file it stands for (its JSON beside it still counts).
        respond: the graph's outputs for a blob ``(N, 3, H, W)``.
        metadata: the model's own metadata (strings, as in an ONNX file).
        input_shape: ``(N, 3, H, W)``, None for a dynamic axis.
        name: the backend name reported.
    """

    def __init__(self, path, respond=None, *, metadata: Mapping[str, str] | None = None,
                 input_shape=(None, 3, None, None), name: str = "fake") -> None:
        from pathlib import Path

        self.path = Path(path)
        self.respond = respond or (lambda blob: [np.zeros((len(blob), 300, 7), np.float32)])
        self.metadata = dict(metadata or {})
        self.input_shape = tuple(input_shape)
        self.name = name
        self.blobs: list[tuple[tuple[int, ...], str, float, float]] = []  # shape, dtype, min, max

    def infer(self, blob: np.ndarray) -> list[np.ndarray]:
        self.blobs.append((tuple(blob.shape), str(blob.dtype), float(blob.min()),
                           float(blob.max())))
        return self.respond(blob)


# --------------------------------------------------------------------------- scripted rounds


def event_from_deal(deal: Mapping[str, Sequence[str]], round_id: str = "r000001", *,
                    table_id: str = "table-1", bets: Mapping[str, str] | None = None,
                    rules: str = "pa", frame_index: int = 0, source: str = "scripted") -> dict:
    """A real settled round event for a deal, computed by the scoring engine (no vision):
    the tiles are taken as read exactly, each position's first two faces one hand and the last
    two the other (like :func:`vision.synth.render.render_table`'s ``deal``).

    Args:
        deal: position (``"dealer"``, ``"1".."7"``) -> 4 faces (``"low-high"``).
        round_id, table_id, frame_index, source: event header fields.
        bets: position -> wager (exact decimal text; default 1).
        rules: rule profile.

    Returns:
        The round event's JSON form (via :func:`vision.table.events.round_event`), with the integrity
        alerts of :func:`vision.table.alerts.round_alerts` merged in.

    Raises:
        InputError: a bad face or position.
    """
    import numpy as np

    from scoring.errors import InputError
    from scoring.tiles import TILES_BY_FACE

    from vision.recognition.decode import TileRead
    from vision.table.alerts import merge_alerts, round_alerts
    from vision.table.events import round_event
    from vision.table.rounds import RoundTracker, build_positions

    groups = {}
    for k, (pos, faces) in enumerate(deal.items()):
        reads = []
        for i, face in enumerate(faces):
            if face not in TILES_BY_FACE:
                raise InputError(f"unknown tile face {face!r} at position {pos!r}")
            # two hands lying together: tiles 0,1 touch, 2,3 touch, hands apart
            x = 1000.0 * k + (0 if i < 2 else 300) + 60 * (i % 2)
            poly = np.array([[x, 0], [x + 50, 0], [x + 50, 100], [x, 100]], np.float32)
            reads.append(TileRead(face, "face_up", 0.99, poly,
                                  np.array([x, 0, x + 50, 100], np.float32)))
        groups[str(pos)] = reads
    positions = build_positions(groups, rules)
    tracker = RoundTracker(n_stable=1, rules=rules, bets=bets)
    rnd = tracker.update(positions, FrameHeader(index=frame_index))
    if rnd is None:
        raise InputError("the deal did not settle (no dealer position?)")
    ev = round_event(rnd, round_id, table_id=table_id, source=source,
                     frame_index=frame_index, model_version="scripted")
    ev["alerts"] = merge_alerts(ev["alerts"], round_alerts(ev))
    return ev


def round_from_deal(deal: Mapping[str, Sequence[str]], round_id: str = "r000001", **kw):
    """:func:`event_from_deal` as the typed :class:`vision.schema.RoundEvent` (what a
    pipeline's ``FrameResult.round`` carries)."""
    from vision.schema import RoundEvent

    return RoundEvent.from_dict(event_from_deal(deal, round_id, **kw))


def empty_table(scene) -> np.ndarray:
    """A rendered table with its tiles painted out (the table before the deal)."""
    from vision.geometry import expand_polygon

    mask = np.zeros(scene.image.shape[:2], np.uint8)
    for t in scene.tiles:
        cv2.fillConvexPoly(mask, np.round(expand_polygon(t.polygon, 0.25)).astype(np.int32), 255)
    return cv2.inpaint(scene.image, mask, 5, cv2.INPAINT_TELEA)


class FakeCap:
    """A scripted capture (the part of ``cv2.VideoCapture`` a live source uses): items are
    arrays (frames), bytes (an MJPEG packet as :class:`vision.io.live.MjpegPackets` gives it,
    an :class:`vision.io.live.EncodedFrame`), "empty" (ok, empty array), "drop" (read fails),
    or a threading.Event to wait on (then continue); ``on_blocked`` is set on each wait."""

    def __init__(self, script, on_blocked=None):
        self.script = list(script)
        self.released = False
        self.on_blocked = on_blocked

    def isOpened(self):  # noqa: N802
        return True

    def read(self):
        from vision.io.live import EncodedFrame

        while self.script:
            item = self.script.pop(0)
            if isinstance(item, threading.Event):
                if self.on_blocked is not None:
                    self.on_blocked.set()
                item.wait(10)
                continue
            if isinstance(item, str) and item == "empty":
                return True, np.zeros((0, 0, 3), np.uint8)
            if isinstance(item, str) and item == "drop":
                return False, None
            if isinstance(item, bytes):
                return True, EncodedFrame(np.frombuffer(item, np.uint8))
            return True, item
        return False, None

    def release(self):
        self.released = True
