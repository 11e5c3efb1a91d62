"""Video: re-detecting only the region the motion gate fired on (vision.recognition.region,
``GateConfig.region_detect``) gives the detections -- and the rounds -- of a whole-frame pass."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.config import GateConfig, RecognitionConfig
from vision.detections import TILE, Detections
from vision.recognition.detect import ModelInfo
from vision.recognition.engine import Detectors, RecognitionEngine
from vision.recognition.gate import MotionGate
from vision.recognition.detect import letterbox
from vision.recognition.region import (RegionPlan, cut, full_pass_grid, merge_region, plan_region,
                                      tile_length)

ROOT = Path(__file__).resolve().parents[1]
H, W = 1080, 1920
GAIN = 1 / 3  # a 1080p frame letterboxed to 384 x 640


def _boxes(boxes, conf=0.9):
    xyxy = np.array(boxes, np.float32).reshape(-1, 4)
    poly = np.stack([[[a, b], [c, b], [c, d], [a, d]] for a, b, c, d in xyxy]) if len(xyxy) \
        else np.zeros((0, 4, 2))
    return Detections.from_polygons(poly, [conf] * len(xyxy), [TILE] * len(xyxy))


def _set(dets):
    return sorted(tuple(round(float(v), 1) for v in b) for b in dets.xyxy)


# ----------------------------------------------------------------------------- the gate

def _frame(patches=()):
    img = np.full((H, W, 3), 100, np.uint8)
    for x, y, v in patches:
        img[y:y + 120, x:x + 120] = v
    return img


def test_the_gate_names_the_blocks_that_moved_and_renews_only_the_core():
    gate = MotionGate(GateConfig(redetect_every=100, motion_detect_every=1))
    assert gate.decide(_frame()).blocks is None  # first frame: nothing compared
    gate.ran()
    d = gate.decide(_frame([(600, 300, 250)]))  # blocks are 60 x 60 px of a 1080p frame
    assert d.detect and d.moved and d.blocks.shape == (18, 32)
    assert np.argwhere(d.blocks).tolist() == [[5, 10], [5, 11], [6, 10], [6, 11]]
    assert gate.changed_box(d.blocks) == (600.0, 300.0, 720.0, 420.0)
    gate.ran(core=(600.0, 300.0, 720.0, 420.0))
    # a run on a region renews the reference only there: a change elsewhere below the
    # threshold (+8 grey levels) is not forgotten, it adds up against the picture the kept
    # detections were made of (renewing the whole reference would lose it: +4 then)
    d = gate.decide(_frame([(600, 300, 100), (1200, 600, 108)]))
    assert gate.changed_box(d.blocks) == (600.0, 300.0, 720.0, 420.0)
    gate.ran(core=(600.0, 300.0, 720.0, 420.0))
    d = gate.decide(_frame([(600, 300, 100), (1200, 600, 112)]))
    assert d.moved and gate.changed_box(d.blocks) == (1200.0, 600.0, 1320.0, 720.0)
    gate.ran()  # a whole-frame run renews it all
    assert not gate.decide(_frame([(600, 300, 100), (1200, 600, 112)])).moved


# ----------------------------------------------------------------------------- plan and merge

def test_the_region_is_the_change_grown_by_a_tile_at_the_full_pass_scale():
    prev = _boxes([[100, 100, 150, 200], [900, 500, 950, 600], [1500, 800, 1550, 900]])
    assert tile_length(prev) == pytest.approx(100.0)
    plan = plan_region((880.0, 420.0, 1000.0, 540.0), prev, (H, W, 3), GAIN, 32, 0.35)
    # the core takes in the tile the change touches, whole
    assert plan.core == (880.0, 420.0, 1000.0, 600.0)
    x0, y0, x1, y1 = plan.crop
    assert x0 <= 880 - 100 and y0 <= 420 - 100 and x1 >= 1000 + 100 and y1 >= 600 + 100
    assert plan.imgsz % 32 == 0 and max(x1 - x0, y1 - y0) == round(plan.imgsz / GAIN)
    assert (x1 - x0) * GAIN % 32 == 0 and (y1 - y0) * GAIN % 32 == 0  # fills the input
    assert plan.area == pytest.approx((x1 - x0) * (y1 - y0) / (W * H))
    # too large a region, no previous detection (no tile length): the whole frame
    assert plan_region((0.0, 0.0, 1200.0, 700.0), prev, (H, W, 3), GAIN, 32, 0.35) is None
    assert plan_region((880.0, 420.0, 1000.0, 540.0), Detections.empty(), (H, W, 3), GAIN,
                       32, 0.35) is None
    # at the frame's edge the crop is shifted inside it, same size
    edge = plan_region((0.0, 0.0, 60.0, 60.0), prev, (H, W, 3), GAIN, 32, 0.35)
    assert edge.crop[:2] == (0, 0) and edge.crop[2] * GAIN % 32 == 0


def test_the_crop_s_input_is_the_whole_frame_pass_s_input_there():
    """Same scale, same pixels, same stride grid -- also at the frame's edge, where the crop
    reaches onto the pass's padding."""
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, (H, W, 3), dtype=np.uint8)
    whole, lb = letterbox(frame, (640, 640), auto=True)
    gain, canvas = full_pass_grid(frame.shape, (640, 640), 32)
    assert whole.shape[:2] == (384, 640) and canvas == (0.0, -36.0, 1920.0, 1116.0)
    assert (lb.gain_x, lb.pad_y) == (gain, 12)
    prev = _boxes([[900, 500, 950, 600]])
    for changed in [(880.0, 420.0, 1000.0, 540.0), (0.0, 0.0, 60.0, 60.0),
                    (1800.0, 1000.0, 1920.0, 1080.0)]:
        plan = plan_region(changed, prev, frame.shape, gain, 32, 0.5, canvas)
        x0, y0, x1, y1 = plan.crop
        got, lbc = letterbox(cut(frame, plan), (plan.imgsz, plan.imgsz), auto=True)
        assert (lbc.pad_x, lbc.pad_y) == (0, 0) and lbc.gain_x == gain
        r0, c0 = round((y0 - canvas[1]) * gain), round((x0 - canvas[0]) * gain)
        assert r0 % 32 == 0 and c0 % 32 == 0  # on the pass's stride grid
        assert np.array_equal(got, whole[r0:r0 + got.shape[0], c0:c0 + got.shape[1]])


def test_the_merge_keeps_the_old_outside_the_core_and_the_crop_s_inside_it():
    plan = RegionPlan(core=(800.0, 400.0, 1100.0, 700.0), crop=(672, 288, 1248, 864),
                      imgsz=192, area=0.16)
    prev = _boxes([[100, 100, 150, 200],     # far away: kept
                   [820, 420, 870, 520],     # centre inside the core: replaced
                   [1080, 650, 1130, 750]])  # centre outside the core (1105, 700): kept
    found = _boxes([[822, 421, 872, 521],    # the tile in the core: taken
                    [900, 600, 950, 700],    # a new tile in the core: taken
                    [1081, 651, 1131, 751],  # the kept tile, seen again: not taken twice
                    [674, 450, 960, 480],    # centre in the core, touches the crop's side: cut
                    [700, 300, 750, 400]])   # outside the core: dropped
    out = merge_region(prev, found, plan, (H, W, 3))
    assert _set(out) == _set(_boxes([[100, 100, 150, 200], [1080, 650, 1130, 750],
                                     [822, 421, 872, 521], [900, 600, 950, 700]]))
    assert list(out.confidence) == sorted(out.confidence, reverse=True)
    # a crop side on the frame's edge is no cut: a tile at the edge of the picture is taken
    edge = RegionPlan(core=(0.0, 0.0, 300.0, 300.0), crop=(0, 0, 576, 576), imgsz=192,
                      area=0.16)
    assert len(merge_region(Detections.empty(), _boxes([[0, 0, 50, 100]]), edge, (H, W, 3))) == 1


# ----------------------------------------------------------------------------- the engine

class RectangleDetector:
    """A tile "model" on plain arrays: every bright (> 200) blob not touching the image's
    border is a tile (its minimum-area rectangle). Records ``(image shape, imgsz)`` per call;
    ``info`` says what the engine needs to crop at the full pass's scale (640, stride 32,
    dynamic input)."""

    info = ModelInfo(path=Path("rectangles"), task="obb", imgsz=(640, 640), stride=32,
                     dynamic_hw=True)

    def __init__(self):
        self.calls = []

    def detect(self, image, imgsz=None):
        self.calls.append((image.shape[:2], imgsz))
        mask = (image[..., 0] > 200).astype(np.uint8)
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        h, w = mask.shape
        polys = []
        for c in contours:
            x, y, bw, bh = cv2.boundingRect(c)
            if x > 0 and y > 0 and x + bw < w and y + bh < h and bw * bh > 100:
                polys.append(cv2.boxPoints(cv2.minAreaRect(c)))
        if not polys:
            return Detections.empty()
        return Detections.from_polygons(np.array(polys), [0.9] * len(polys),
                                        [TILE] * len(polys))


class NoSpots:
    def detect_batch(self, crops):
        return [Detections.empty() for _ in crops]


def _deal():
    """Frames of a dealt table: four tiles at a time appear at six places, a dark "hand" over
    the newest, then the still table."""
    img = np.full((H, W, 3), 90, np.uint8)
    frames = []
    places = [(200, 200), (800, 150), (1400, 200), (300, 700), (900, 750), (1500, 700)]
    for k, (x, y) in enumerate(places):
        for i in range(4):
            cv2.rectangle(img, (x + 70 * i, y), (x + 70 * i + 50, y + 100), (240, 240, 240), -1)
            show = img.copy()
            cv2.ellipse(show, (x + 70 * i + 25, y + 160), (90, 55), 10.0 * i, 0, 360,
                        (40, 50, 60), -1)
            frames += [show, show.copy()]
        frames.append(img.copy())
    return frames + [img.copy()] * 6


def test_region_runs_give_the_whole_frame_detections():
    frames = _deal()
    runs = {}
    for on in (True, False):
        det = RectangleDetector()
        eng = RecognitionEngine(RecognitionConfig(scales=(), zoom=False, second_model=False),
                                GateConfig(region_detect=on), detectors=Detectors(det, NoSpots()))
        got = []
        for f in frames:
            r = eng.read(f, "video")
            got.append((r.detector_ran, r.stale, _set(r.detections)))
        runs[on] = (got, det.calls, eng.region_runs)
    (region, calls, n_region), (whole, whole_calls, _) = runs[True], runs[False]
    assert region == whole  # the same detections, frame by frame
    assert len(region[-1][2]) == 24
    crops = [c for c in calls if c[0] != (H, W)]
    assert n_region == len(crops) >= 12 and len(calls) == len(whole_calls)
    for (h, w), imgsz in crops:  # the crop at the full pass's scale (1/3), a fraction of it
        assert imgsz < 640 and max(h, w) == 3 * imgsz and h * w <= 0.5 * H * W
    assert calls[0] == ((H, W), None)  # the first frame: whole


def test_region_detection_is_the_configuration_s():
    det = RectangleDetector()
    eng = RecognitionEngine(RecognitionConfig(scales=(), zoom=False, second_model=False),
                            GateConfig(region_detect=False), detectors=Detectors(det, NoSpots()))
    for f in _deal()[:12]:
        eng.read(f, "video")
    assert eng.region_runs == 0 and all(c[0] == (H, W) for c in det.calls)
    with pytest.raises(Exception, match="region_max_area"):
        GateConfig(region_max_area=0)


# ----------------------------------------------------------------------------- real models

@pytest.mark.slow
@pytest.mark.skipif(not ((ROOT / "models" / "tiles.onnx").is_file()
                         and (ROOT / "models" / "pips.onnx").is_file()),
                    reason="models/tiles.onnx or models/pips.onnx absent")
def test_a_rendered_round_settles_the_same_with_region_detection():
    from vision.demo import demo_frames
    from vision.pipeline import Pipeline

    frames, _ = demo_frames(1_000_901, n_deal=40, n_still=30)  # as scripts/bench_run.py
    rounds = {}
    for on in (True, False):
        pipe = Pipeline(region_detect=on)
        events = []
        for f in frames:
            _, res = pipe.process(f, draw=False)
            if res.round is not None:
                ev = res.round.to_dict()
                events.append({p: (e["tiles"], e["high"], e["low"], e["result"], e["net"])
                               for p, e in ev["positions"].items()})
        rounds[on] = (events, pipe.engine.region_runs, pipe.engine.detector_runs)
    assert rounds[True][0] and rounds[True][0] == rounds[False][0]
    assert rounds[True][1] > 0 and rounds[False][1] == 0
    assert rounds[True][2] == rounds[False][2]
