"""The pipeline (vision/pipeline.py) with fake detectors built from rendered ground truth, so the
logic from detection to settlement is checked independently of model quality."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
from fakes import GroundTruthDetectors, true_settings

from scoring.errors import InputError
from scoring.settle import settle_round
from vision.demo import demo
from vision.detections import Detections
from vision.recognition.identify import identify
from vision.pipeline import Pipeline
from vision.session import run
from vision.table.rounds import Layout

synth = pytest.importorskip("vision.synth.render")

SEEDS = (1_000_011, 1_000_012)


_SCENES: dict[int, object] = {}


def scene_of(seed):
    if seed not in _SCENES:
        _SCENES[seed] = synth.render_table(seed)
    return _SCENES[seed]


def check_event(ev, scene, expect_unsettled=()):
    """Every position exact or not_settled (never wrong); returns the settled seat ids."""
    want = true_settings(scene.deal)
    settled_pos = [p for p, e in ev["positions"].items()
                   if e.get("result") != "not_settled" and e.get("high") is not None]
    truth = settle_round({p: want[p] for p in settled_pos}) if "dealer" in settled_pos and \
        len(settled_pos) > 1 else None
    for p, e in ev["positions"].items():
        if p in expect_unsettled:
            assert e["result"] == "not_settled", (p, e)
        if e.get("result") == "not_settled" or p not in settled_pos:
            continue
        w = want[p].canonical()
        assert e["high"] == [t.face for t in w.high] and e["low"] == [t.face for t in w.low], p
        if p != "dealer":
            s = truth.seats[p]
            assert (e["result"], e["net"]) == (s.result, str(s.net)), p
    return [p for p in settled_pos if p != "dealer"]


def unknown_positions(pipe_result):
    return {p for p, st in pipe_result.positions.items() if st.problems}


@pytest.mark.parametrize("seed", SEEDS)
def test_full_table_settles_exactly(seed):
    scene = scene_of(seed)
    fake = GroundTruthDetectors([scene])
    layout = Layout.from_dict(scene.layout)
    pipe = Pipeline(layout=layout, n_stable=1, tile_detector=fake, pip_detector=fake, draw=False)
    _, res = pipe.process(scene.image)
    assert len(res.reads) == 32
    assert res.event is not None
    bad = unknown_positions(res)
    # positions with an unread tile (e.g. the renderer's diagonal 2 style) are not settled
    seats = check_event(res.event, scene, expect_unsettled=bad)
    if "dealer" not in bad:
        assert len(seats) == 7 - len(bad - {"dealer"})
    json.dumps(res.event)


def test_missing_spot_makes_that_position_not_settled():
    scene = scene_of(SEEDS[0])
    idx = next(k for k, t in enumerate(scene.tiles) if t.position == "3" and t.face)
    fake = GroundTruthDetectors([scene], drop={(0, idx): 0})
    pipe = Pipeline(layout=Layout.from_dict(scene.layout), n_stable=1, tile_detector=fake,
                    pip_detector=fake, draw=False)
    _, res = pipe.process(scene.image)
    r = [x for x, p in zip(res.reads, res.tile_positions) if p == "3"]
    assert any(x.state == "unknown" for x in r)
    ev = res.event
    assert ev is not None and ev["positions"]["3"]["result"] == "not_settled"
    assert any(a["kind"] == "unknown_tile" and a["position"] == "3" for a in ev["alerts"])
    check_event(ev, scene, expect_unsettled={"3"})


def test_identity_cache_skips_unmoved_tiles_and_reverifies():
    scene = scene_of(SEEDS[1])  # every tile readable: the round settles at n_stable
    fake = GroundTruthDetectors([scene])
    # one input size: no vet (the still reading would stand for the still frames and no
    # tile would be re-verified) -- the configuration's choice, whatever the detectors
    pipe = Pipeline(layout=Layout.from_dict(scene.layout), n_stable=3, tile_detector=fake,
                    pip_detector=fake, draw=False, reverify_every=4, reverify_budget=3,
                    decode_budget=32, scales=())
    decoded = []
    events = []
    for _ in range(7):
        _, res = pipe.process(scene.image)
        decoded.append(res.decoded)
        events.append(res.event is not None)
    n_up = sum(1 for t in scene.tiles if t.labelled and t.state == "face_up")
    assert all(r.state == "face_up" for r in res.reads)
    assert decoded == [n_up, 0, 0, 0, 3, 3, 3]  # re-verified 3 per frame, oldest first
    assert events == [False, False, True, False, False, False, False]  # one event per round
    assert pipe.engine.detector_runs == 1  # still frames: the motion gate reused the detections


def test_decode_budget_spreads_a_new_table_over_frames():
    scene = scene_of(SEEDS[1])
    fake = GroundTruthDetectors([scene])
    pipe = Pipeline(layout=Layout.from_dict(scene.layout), n_stable=3, tile_detector=fake,
                    pip_detector=fake, draw=False, decode_budget=8)
    decoded, pending, events = [], [], []
    for _ in range(7):
        _, res = pipe.process(scene.image)
        decoded.append(res.decoded)
        pending.append(sum(r.reason == "not decoded yet" for r in res.reads))
        events.append(res.event is not None)
        assert all(r.face is None or r.state == "face_up" for r in res.reads)
    assert decoded[:4] == [8, 8, 8, 8] and pending[:4] == [24, 16, 8, 0]
    assert events.index(True) == 3 + 3 - 1  # all read at frame 3, then 3 stable frames


def test_motion_gate_runs_the_detector_when_the_picture_changes():
    scene = scene_of(SEEDS[1])
    fake = GroundTruthDetectors([scene])
    # one input size: no fused still reading stands, so a still picture is re-detected
    pipe = Pipeline(layout=Layout.from_dict(scene.layout), n_stable=2, tile_detector=fake,
                    pip_detector=fake, draw=False, redetect_every=5, motion_detect_every=1,
                    scales=())
    def contrasting(img, x, y):  # a hand that stands out from whatever the renderer drew
        return (0, 0, 0) if img[max(0, y - 60):y + 60, max(0, x - 60):x + 60].mean() > 110 \
            else (255, 255, 255)

    moved = scene.image.copy()
    cv2.circle(moved, (960, 540), 80, contrasting(moved, 960, 540), -1)  # something enters
    frames = [scene.image] * 3 + [moved] + [scene.image] * 8
    runs = []
    for f in frames:
        before = pipe.engine.detector_runs
        pipe.process(f)
        runs.append(pipe.engine.detector_runs - before)
    # first frame, the change, the change back, then every 5 frames
    assert runs == [1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0]
    # while the picture keeps changing, the detector runs every 2nd frame; the frames between
    # are stale and do not count for stability
    rate = Pipeline(layout=Layout.from_dict(scene.layout), n_stable=2, tile_detector=fake,
                    pip_detector=fake, draw=False, motion_detect_every=2, decode_budget=32)
    shifts = []
    for k in range(6):
        f = scene.image.copy()
        cv2.circle(f, (100 + 150 * k, 1000), 60, contrasting(f, 100 + 150 * k, 1000), -1)
        shifts.append(f)
    ran, ev = [], []
    for f in shifts:
        before = rate.engine.detector_runs
        _, res = rate.process(f)
        ran.append(rate.engine.detector_runs - before)
        ev.append(res.event is not None)
    assert ran == [1, 0, 1, 0, 1, 0]
    assert ev.index(True) == 2  # frames 0 and 2 counted (n_stable 2); stale frame 1 skipped
    off = Pipeline(layout=Layout.from_dict(scene.layout), tile_detector=fake, pip_detector=fake,
                   draw=False, motion_threshold=0)
    for f in frames[:3]:
        off.process(f)
    assert off.engine.detector_runs == 3


def test_a_standing_still_reading_holds_the_gate_until_the_picture_drifts():
    """With the fused still reading standing (several input sizes), a still picture is not
    re-detected every ``redetect_every`` frames (that could not change the reading), and the
    gate's reference is kept: a change too slow to move a block between two frames adds up
    against the picture the reading was made of, runs the detector and drops the reading."""
    scene = scene_of(SEEDS[1])
    fake = GroundTruthDetectors([scene])
    pipe = Pipeline(layout=Layout.from_dict(scene.layout), n_stable=2, tile_detector=fake,
                    pip_detector=fake, draw=False, redetect_every=5, motion_detect_every=1)
    assert len(pipe.engine.scales) >= 2
    runs = []
    for f in [scene.image] * 14:
        before = pipe.engine.detector_runs
        pipe.process(f)
        runs.append(pipe.engine.detector_runs - before)
    # the first frame; the fused reading is made on the 3rd frame without motion (VET_AFTER_STILL) and
    # stands: frames 5 and 10, which the period would have re-detected, are not
    assert runs == [1] + [0] * 13
    assert pipe.engine.gate.holding and pipe.engine._still_reading is not None
    # a slow brightening of one corner, 3 grey levels a frame (under the 8-level threshold
    # between two frames, over it against the held reference after 3 frames)
    drift = []
    for k in range(1, 5):
        f = scene.image.astype(np.int16)
        f[:216, :384] += 3 * k
        before = pipe.engine.detector_runs
        pipe.process(np.clip(f, 0, 255).astype(np.uint8))
        drift.append(pipe.engine.detector_runs - before)
    assert drift == [0, 0, 1, 0]
    assert pipe.engine._still_reading is None and not pipe.engine.gate.holding


def test_auto_grouping_without_layout_matches_layout_positions():
    scene = scene_of(SEEDS[1])
    fake = GroundTruthDetectors([scene])
    pipe = Pipeline(layout=None, n_stable=1, tile_detector=fake, pip_detector=fake, draw=False)
    _, res = pipe.process(scene.image)
    truth = {}
    for t in scene.tiles:
        truth.setdefault(t.position, set()).add(tuple(int(round(float(v))) for v in t.polygon.astype(np.float64).mean(0)))
    got = {}
    for r, p in zip(res.reads, res.tile_positions):
        got.setdefault(p, set()).add(tuple(int(round(float(v))) for v in r.centre))
    assert got == truth


def test_run_on_images_writes_outputs(tmp_path):
    scene = scene_of(SEEDS[0])
    fake = GroundTruthDetectors([scene])
    img = tmp_path / "in" / "table.png"
    img.parent.mkdir()
    cv2.imwrite(str(img), scene.image)
    lay = tmp_path / "layout.yaml"
    import yaml

    lay.write_text(yaml.safe_dump(scene.layout))
    out = tmp_path / "out"
    import io

    buf = io.StringIO()
    s = run(str(img.parent), layout=str(lay), out_dir=out, json_events=True, tile_detector=fake,
            pip_detector=fake, progress=False, stdout=buf)
    assert s["frames"] == 1 and s["rounds"] == 1
    lines = (out / "events.jsonl").read_text().splitlines()
    assert len(lines) == 1 and buf.getvalue().strip() == lines[0]
    ev = json.loads(lines[0])
    assert ev["table_id"] == scene.layout["table_id"] and ev["frame_index"] == 0
    seats = check_event(ev, scene)
    # every seat whose four tiles were all read is settled (a still image is one whole table)
    readable = {p for p, e in ev["positions"].items() if None not in e["tiles"]} - {"dealer"}
    assert set(seats) == readable and len(seats) >= 2
    assert (out / "annotated" / "table.jpg").is_file()
    assert set(s["ms_per_frame"]) == {"capture", "detect", "decode", "score", "draw"}


def test_demo_with_fake_detectors(tmp_path):
    from vision.demo import DEMO_SEED, demo_frames

    frames, scene = demo_frames(DEMO_SEED)
    fake = GroundTruthDetectors([scene])
    import io

    buf = io.StringIO()
    s = demo(out_dir=tmp_path / "demo", tile_detector=fake, pip_detector=fake, stdout=buf,
             prepared=(frames, scene))
    assert s["rounds"] == 1, buf.getvalue()
    ev = s["events"][0]
    assert ev["frame_index"] >= 12  # not before the table was complete and still
    check_event(ev, scene)
    assert (tmp_path / "demo" / "events.jsonl").read_text().count("\n") == 1
    assert (tmp_path / "demo" / "annotated.mp4").stat().st_size > 10_000
    assert "round r000001" in buf.getvalue()


def test_identify_shape_and_bad_inputs(tmp_path):
    scene = scene_of(SEEDS[0])
    fake = GroundTruthDetectors([scene])
    img = tmp_path / "t.png"
    cv2.imwrite(str(img), scene.image)
    res = identify([img], tile_detector=fake, pip_detector=fake)
    assert len(res) == 1 and res[0]["image"] == str(img)
    tiles = res[0]["tiles"]
    assert len(tiles) == 32
    assert set(tiles[0]) == {"face", "state", "confidence", "xyxy", "polygon"}
    faces = sorted(t["face"] for t in tiles if t["face"])
    truth = sorted(f for fs in scene.deal.values() for f in fs)
    assert all(f in truth for f in faces)
    with pytest.raises(InputError, match="nope.png"):
        identify([tmp_path / "nope.png"], tile_detector=fake, pip_detector=fake)
    txt = tmp_path / "notes.png"
    txt.write_text("not an image")
    with pytest.raises(InputError, match="notes.png"):
        identify([txt], tile_detector=fake, pip_detector=fake)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="empty"):
        identify([empty], tile_detector=fake, pip_detector=fake)


def test_missing_models_and_bad_layout_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="tiles.onnx"):
        Pipeline(models_dir=tmp_path)
    (tmp_path / "tiles.onnx").write_bytes(b"garbage")
    (tmp_path / "pips.onnx").write_bytes(b"garbage")
    with pytest.raises(InputError, match="onnx"):
        Pipeline(models_dir=tmp_path)
    with pytest.raises(InputError, match="nolayout.yaml"):
        Pipeline(layout=tmp_path / "nolayout.yaml", tile_detector=object(), pip_detector=object())


def test_cli_exit_code_2_for_bad_input(tmp_path, capsys):
    from vision.cli import main

    assert main(["identify", str(tmp_path / "missing.png"), "--models", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "missing.png" in err or "tiles.onnx" in err
    assert main(["run", str(tmp_path / "nothing.mp4"), "--models", str(tmp_path)]) == 2
    assert "nothing.mp4" in capsys.readouterr().err
    bad = tmp_path / "l.yaml"
    bad.write_text("positions: {dealer: [[0, 0]]}\n")
    img = tmp_path / "x.png"
    cv2.imwrite(str(img), np.zeros((64, 64, 3), np.uint8))
    assert main(["run", str(img), "--layout", str(bad), "--models", str(tmp_path)]) == 2
    assert "l.yaml" in capsys.readouterr().err


def test_a_tile_that_changes_in_place_is_decoded_again():
    """A tile swapped (or covered) without its box moving: the look check re-decodes it."""
    scene = scene_of(SEEDS[1])
    fake = GroundTruthDetectors([scene])
    pipe = Pipeline(layout=Layout.from_dict(scene.layout), n_stable=2, tile_detector=fake,
                    pip_detector=fake, draw=False, decode_budget=32, motion_threshold=0)
    _, res = pipe.process(scene.image)
    assert res.decoded == 32
    _, res = pipe.process(scene.image)
    assert res.decoded == 0
    changed = scene.image.copy()
    t = next(t for t in scene.tiles if t.position == "4")
    cv2.fillConvexPoly(changed, np.round(t.polygon).astype(np.int32), (200, 200, 200))
    fake_changed = GroundTruthDetectors([scene])  # same detections (the box did not move)
    pipe.engine.tile_detector = fake_changed
    fake_changed.detect = lambda image, imgsz=None: fake.detect(scene.image)
    _, res = pipe.process(changed)
    assert res.decoded == 1  # only the changed tile
    # its spots are gone: read again, not cached -- and a tile showing no spot at all is no
    # face-up tile (vision.recognition.overlaps), so position 4 holds three tiles and cannot settle
    c = t.polygon.mean(0)
    at = [x for x in res.reads if np.hypot(*(x.centre - c)) < 5]
    assert all(x.face is None for x in at)
    assert res.positions["4"].setting is None


def test_drop_straddlers_removes_a_box_across_two_touching_tiles():
    from vision.detections import Detections
    from vision.recognition.overlaps import drop_straddlers

    a = [[100, 100], [150, 100], [150, 200], [100, 200]]
    b = [[150, 100], [200, 100], [200, 200], [150, 200]]
    across = [[125, 100], [175, 100], [175, 200], [125, 200]]  # half on each
    far = [[400, 100], [450, 100], [450, 200], [400, 200]]
    d = Detections.from_polygons(np.array([a, b, across, far], np.float32),
                                 [0.9, 0.9, 0.6, 0.9], [0, 0, 0, 0])
    kept = drop_straddlers(d)
    assert len(kept) == 3
    np.testing.assert_allclose(kept.polygon[:, 0, 0], [100, 150, 400])
    assert len(drop_straddlers(d[[0, 1, 3]])) == 3  # hands of touching tiles stay whole


def test_unknown_duplicates_of_identified_tiles_are_dropped():
    from vision.recognition.decode import TileRead
    from vision.recognition.overlaps import resolve_overlapping_reads

    def read(face, x1, y1, x2, y2, state=None):
        poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
        st = state or ("face_up" if face else "unknown")
        return TileRead(face, st, 0.9, poly, np.array([x1, y1, x2, y2], np.float32))

    a, b = read("1-5", 0, 0, 50, 110), read("2-4", 50, 0, 100, 110)  # a hand: touching tiles
    straddler = read(None, 25, 0, 75, 110)        # half on each: 50 % inside a
    shifted = read(None, 10, 20, 60, 130)         # a second box on a, shifted
    neighbour = with_spots(read(None, 95, 0, 145, 110),  # a real unknown tile touching b
                           [[120, 30], [120, 55], [120, 80]])
    back = read(None, 20, 0, 70, 110, "face_down")
    out = resolve_overlapping_reads([a, straddler, b, shifted, neighbour, back])
    assert out == [a, b, neighbour, back]
    assert resolve_overlapping_reads([straddler, neighbour]) == [straddler, neighbour]


def with_spots(r, points):
    """``r`` with spots at ``points`` (image px, (n, 2)), stored as the decoder stores them: in
    the tile crop's pixels (vision.geometry.rectify)."""
    from dataclasses import replace

    from vision.geometry import CROP_MARGIN, crop_corners, expand_polygon, order_polygon

    src = expand_polygon(order_polygon(r.polygon), CROP_MARGIN).astype(np.float32)
    M = cv2.getPerspectiveTransform(src, crop_corners())
    c = cv2.perspectiveTransform(np.asarray(points, np.float64).reshape(-1, 1, 2), M)
    c = c.reshape(-1, 2)
    xyxy = np.concatenate([c - 5, c + 5], 1).astype(np.float32)
    n = len(c)
    return replace(r, pips=Detections(xyxy, np.full(n, 0.9), np.ones(n, np.int64)))


def test_a_box_with_no_spot_of_its_own_is_not_a_tile():
    """An unknown outline attached to identified tiles whose spots all lie inside them (or
    that has none) is a box over the gap between two hands: dropped, so the position holds
    four tiles. One with spots outside the identified tiles stays (a real unread tile)."""
    from vision.recognition.decode import TileRead
    from vision.recognition.overlaps import resolve_overlapping_reads

    def read(face, x1, y1, x2, y2, conf=0.9, decoded=True):
        poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
        return TileRead(face, "face_up" if face else "unknown", conf, poly,
                        np.array([x1, y1, x2, y2], np.float32),
                        reads={"A": {"red": 0, "white": 0, "candidates": []}} if decoded
                        else {"reason": "not decoded yet"})

    def with_spots(r, pts):  # read A counted them too
        r = globals()["with_spots"](r, pts)
        r.reads = {"A": {"red": 0, "white": len(pts), "candidates": []}}
        return r

    a, b = read("1-5", 0, 0, 110, 50), read("2-4", 0, 80, 110, 130)  # two hands, a gap
    gap = read(None, 0, 45, 110, 85)                 # blank felt between them, no spots
    assert resolve_overlapping_reads([a, gap, b]) == [a, b]
    # video: an outline the identity cache has not decoded yet has no spots because nobody
    # looked: it stays
    pending = read(None, 0, 45, 110, 85, decoded=False)
    assert resolve_overlapping_reads([a, pending, b]) == [a, pending, b]
    blank = read(None, 300, 0, 410, 50)              # touches nothing, no spot: not a tile
    assert resolve_overlapping_reads([a, blank, b]) == [a, b]
    lone = with_spots(read(None, 300, 0, 410, 50), [[330, 25], [380, 25]])  # spots: a tile
    assert resolve_overlapping_reads([a, lone, b]) == [a, lone, b]
    # 30 % inside a, 10 % inside b (below the covered rules); its spots lie inside a: dropped
    box = read(None, 0, 35, 110, 85)
    over_a = with_spots(box, [[30, 40], [55, 44], [80, 46]])
    assert resolve_overlapping_reads([a, over_a, b]) == [a, b]
    # spots of its own on the felt between the hands: kept (a tile that could not be read)
    own = with_spots(box, [[30, 60], [55, 65], [80, 70]])
    assert resolve_overlapping_reads([a, own, b]) == [a, own, b]


def test_two_boxes_on_one_tile_with_the_same_face_are_one_tile():
    from vision.recognition.decode import TileRead
    from vision.recognition.overlaps import resolve_overlapping_reads

    def read(face, x1, y1, x2, y2, conf):
        poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
        return TileRead(face, "face_up", conf, poly, np.array([x1, y1, x2, y2], np.float32))

    t1, t2 = read("3-4", 0, 0, 110, 50, 0.7), read("3-4", 2, 3, 112, 51, 0.8)
    assert resolve_overlapping_reads([t1, t2]) == [t2]  # the more confident box
    other = read("3-5", 2, 3, 112, 51, 0.8)               # different faces: never settled
    assert [r.face for r in resolve_overlapping_reads([t1, other])] == [None, None]


def test_overlapping_identified_outlines_are_never_both_settled():
    from vision.recognition.decode import TileRead
    from vision.recognition.overlaps import resolve_overlapping_reads

    def read(face, x1, y1, x2, y2):
        poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
        return TileRead(face, "face_up", 0.9, poly, np.array([x1, y1, x2, y2], np.float32))

    a, b = read("5-5", 0, 0, 50, 110), read("5-6", 50, 0, 100, 110)  # a hand
    across = read("5-5", 0, 55, 100, 105)  # an outline across both (halves of two tiles)
    out = resolve_overlapping_reads([a, b, across])
    assert out == [a, b]  # inside two identified tiles: a straddler, dropped
    out = resolve_overlapping_reads([a, across])  # only one of the pair identified
    assert [r.face for r in out] == [None, None]
    assert all(r.state == "unknown" and "overlapping outlines" in r.reason for r in out)


def test_an_identified_outline_lying_in_an_unread_one_is_not_named():
    """Issue 40 (a camera-trained candidate on scenes_flush_cam scene_02): a flush 1-3 | 2-4
    seen as an unread box over the 2-4 reaching onto the 1-3, and a box across both tiles'
    left halves (the 1 and the 4) lying 69 % inside it, read "1-4" -- a face neither tile has.
    Two real tiles never overlap so, and the unread box is as much a tile as the named one:
    the named one is not taken. The polygons are the picture's (px)."""
    from vision.recognition.decode import TileRead
    from vision.recognition.overlaps import resolve_overlapping_reads

    def read(face, poly):
        poly = np.array(poly, np.float32)
        return TileRead(face, "face_up" if face else "unknown", 0.8, poly,
                        np.concatenate([poly.min(0), poly.max(0)]))

    across = read("1-4", [[1089, 68], [1123, 82], [1094, 152], [1060, 138]])
    unread = with_spots(read(None, [[1070, 119], [1086, 66], [1183, 96], [1167, 148]]),
                        [[1140, 100], [1155, 105], [1140, 125], [1155, 130]])
    out = resolve_overlapping_reads([across, unread])
    assert [r.face for r in out] == [None, None]
    assert out[0].state == "unknown" and "overlapping outlines" in out[0].reason
    assert "(read 1-4)" in out[0].reason
    assert out[1] is unread
    # an identified tile beside an unread one, sharing an edge only, keeps its face
    beside = read("2-4", [[1075, 102], [1086, 66], [1184, 97], [1173, 132]])
    below = with_spots(read(None, [[1063, 138], [1074, 102], [1172, 132], [1161, 168]]),
                       [[1140, 140], [1150, 145]])
    assert resolve_overlapping_reads([beside, below]) == [beside, below]


def test_a_still_tile_taken_for_a_back_is_read_and_a_real_back_stays_face_down():
    scene = scene_of(SEEDS[1])
    fake = GroundTruthDetectors([scene])
    dets = fake.detect(scene.image)
    up = [i for i in range(len(dets)) if dets.class_id[i] == 0]
    assert up
    flipped = dets.class_id.copy()
    flipped[up[0]] = 1  # the tile model calls a face-up tile a back
    backs = Detections(dets.xyxy, dets.confidence, flipped, dets.polygon)
    truth = [t for t in scene.tiles if t.labelled]
    pipe = Pipeline(tile_detector=fake, pip_detector=fake, draw=False, n_stable=1)
    reads, _ = pipe.engine.decode(scene.image, backs, use_cache=False)
    assert reads[up[0]].state == "face_up" and reads[up[0]].face == truth[up[0]].face
    for i in range(len(dets)):
        if dets.class_id[i] == 1:  # real backs: no spots, no face
            assert reads[i].state == "face_down" and reads[i].face is None
    # a "back" with spots that do not make a face (here: below a strict min_confidence) is a
    # face-up tile not read -- unknown, never a face-down stack to set aside beside a hand
    strict = Pipeline(tile_detector=fake, pip_detector=fake, draw=False, n_stable=1,
                      min_confidence=0.999)
    reads_s, _ = strict.engine.decode(scene.image, backs, use_cache=False)
    assert reads_s[up[0]].state == "unknown" and "taken for a back" in reads_s[up[0]].reason
    for i in range(len(dets)):
        if dets.class_id[i] == 1:
            assert reads_s[i].state == "face_down"
    # video frames keep the tile model's call (the identity cache decides what is decoded)
    pipe2 = Pipeline(tile_detector=fake, pip_detector=fake, draw=False, n_stable=1)
    reads2, _ = pipe2.engine.decode(scene.image, backs, use_cache=True)
    assert reads2[up[0]].state == "face_down"


def test_an_identified_outline_across_two_unread_tiles_is_not_taken():
    """An identified box lying a quarter or more inside each of two unread outlines that stay
    (neither mostly inside it) is a box across two tiles, or they are not tiles: its face is
    not taken (seen on a flush 2-5 | 2-4: a box across their halves read 4-5)."""
    from vision.recognition.decode import TileRead
    from vision.recognition.overlaps import resolve_overlapping_reads

    def read(face, x1, y1, x2, y2):
        poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
        st = "face_up" if face else "unknown"
        return TileRead(face, st, 0.9, poly, np.array([x1, y1, x2, y2], np.float32),
                        reason=None if face else "read A: no face")

    a, b = read(None, 0, 0, 50, 100), read(None, 50, 0, 100, 100)  # the hand, unread
    across = read("4-5", 0, 70, 100, 110)  # 0.375 of it inside each; 0.3 of each inside it
    out = resolve_overlapping_reads([a, b, across])
    assert [r.face for r in out] == [None, None, None] and len(out) == 3
    assert "across two other tile outlines (read 4-5)" in out[2].reason
    # one unread tile under it is not enough: that may be its own tile's second box
    assert resolve_overlapping_reads([a, across]) == [a, across]
    # a second box on the same tile (IoU >= SAME_TILE_IOU) does not count as a neighbour
    t = read("3-4", 0, 0, 50, 100)
    dup1, dup2 = read(None, 0, 5, 50, 105), read(None, 2, 0, 52, 100)
    assert resolve_overlapping_reads([t, dup1, dup2]) == [t]


def test_two_unknown_boxes_on_one_tile_are_one_unread_tile():
    """Two unknown outlines with polygon IoU >= SAME_TILE_IOU cannot be two real tiles (they
    share at most an edge): one unread tile, the surer box kept; a neighbour stays."""
    from vision.recognition.decode import TileRead
    from vision.recognition.overlaps import resolve_overlapping_reads

    def read(x1, y1, x2, y2, conf):
        poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
        return TileRead(None, "unknown", conf, poly, np.array([x1, y1, x2, y2], np.float32),
                        reason="read A: no face")

    a, a2 = read(0, 0, 50, 100, 0.6), read(4, 8, 54, 108, 0.8)   # IoU 0.77
    neighbour = read(50, 0, 100, 100, 0.9)                       # shares an edge with a
    out = resolve_overlapping_reads([a, a2, neighbour])
    assert out == [a2, neighbour]
    assert all(r.face is None for r in out)
