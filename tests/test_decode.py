"""Decode logic (vision/recognition/decode.py): exact faces from spots, and never a wrong face."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.tiles import FACES
from vision.recognition.decode import TileRead, decode_face, half_shape_ok, run_pip_detector
from vision.detections import PIP_RED, PIP_WHITE, TILE, TILE_BACK, Detections
from vision.geometry import CROP_H, CROP_MARGIN, CROP_W

# the tile proper inside the crop
BX = CROP_W * CROP_MARGIN / (1 + 2 * CROP_MARGIN)
BY = CROP_H * CROP_MARGIN / (1 + 2 * CROP_MARGIN)
TW, TH = CROP_W - 2 * BX, (CROP_H - 2 * BY) / 2  # half square

LAYOUT = {  # unit half-square coordinates (u across, v along the tile)
    1: [(0.5, 0.5)],
    2: [(0.3, 0.3), (0.7, 0.3)],  # Chinese 2: a pair across the tile, towards its end
    3: [(0.25, 0.25), (0.5, 0.5), (0.75, 0.75)],
    4: [(0.3, 0.3), (0.7, 0.3), (0.3, 0.7), (0.7, 0.7)],
    5: [(0.25, 0.25), (0.75, 0.25), (0.5, 0.5), (0.25, 0.75), (0.75, 0.75)],
    6: [(0.3, 0.2), (0.7, 0.2), (0.3, 0.5), (0.7, 0.5), (0.3, 0.8), (0.7, 0.8)],
}


def half_pips(n: int, top: bool, teen: bool = False):
    pts, cls = [], []
    for k, (u, v) in enumerate(LAYOUT[n]):
        x = BX + u * TW
        y = BY + v * TH if top else CROP_H / 2 + (1 - v) * TH
        pts.append((x, y))
        if teen:
            cls.append(PIP_RED if k % 2 == 0 else PIP_WHITE)  # one column red
        else:
            cls.append(PIP_RED if n in (1, 4) else PIP_WHITE)
    return pts, cls


def face_pips(face: str, flip: bool = False):
    a, b = (int(v) for v in face.split("-"))
    if flip:
        a, b = b, a
    teen = face == "6-6"
    p1, c1 = half_pips(a, True, teen)
    p2, c2 = half_pips(b, False, teen)
    pts = np.array(p1 + p2, dtype=np.float64)
    cls = np.array(c1 + c2)
    return pts, cls, np.full(len(pts), 0.9)


def long_33():
    cx = CROP_W / 2
    pts = [(cx, BY + 0.3 * TH), (cx, BY + 0.7 * TH),
           (cx - 0.2 * TW, CROP_H / 2), (cx + 0.2 * TW, CROP_H / 2),
           (cx, CROP_H / 2 + 0.3 * TH), (cx, CROP_H / 2 + 0.7 * TH)]
    return np.array(pts), np.full(6, PIP_WHITE), np.full(6, 0.8)


@pytest.mark.parametrize("face", [t.face for t in FACES])
@pytest.mark.parametrize("flip", [False, True])
def test_every_face_decodes_exactly(face, flip):
    pts, cls, conf = face_pips(face, flip)
    got, c, reads = decode_face(pts, cls, conf)
    assert got == face, reads
    assert c == pytest.approx(0.9)
    assert reads["reason"] is None


def test_every_face_upside_down_crop():
    for t in FACES:
        pts, cls, conf = face_pips(t.face)
        rot = np.stack([CROP_W - pts[:, 0], CROP_H - pts[:, 1]], 1)
        assert decode_face(rot, cls, conf)[0] == t.face


def test_two_six_and_three_five_split_by_halves():
    for face in ("2-6", "3-5"):
        pts, cls, conf = face_pips(face)
        got, _, reads = decode_face(pts, cls, conf)
        assert reads["A"]["candidates"] == ["2-6", "3-5"]
        assert got == face


def test_three_three_both_layouts():
    pts, cls, conf = face_pips("3-3")
    assert decode_face(pts, cls, conf)[0] == "3-3"
    pts, cls, conf = long_33()
    got, c, reads = decode_face(pts, cls, conf)
    assert got == "3-3" and reads["B"]["layout"] == "long" and reads["B"]["face"] is None
    assert c == pytest.approx(0.8)


def test_long_layout_with_a_spot_missing_is_unknown():
    pts, cls, conf = long_33()
    for i in range(6):
        keep = np.arange(6) != i
        assert decode_face(pts[keep], cls[keep], conf[keep])[0] is None


def test_long_pattern_with_red_spots_is_not_three_three():
    pts, cls, conf = long_33()
    cls = cls.copy()
    cls[0] = PIP_RED
    assert decode_face(pts, cls, conf)[0] is None


@pytest.mark.parametrize("face", [t.face for t in FACES])
def test_a_missing_spot_is_never_a_wrong_face(face):
    pts, cls, conf = face_pips(face)
    for i in range(len(pts)):
        keep = np.arange(len(pts)) != i
        got, c, reads = decode_face(pts[keep], cls[keep], conf[keep])
        assert got is None, (face, i, got, reads)
        assert reads["reason"]


@pytest.mark.parametrize("face", [t.face for t in FACES])
def test_a_spot_of_the_wrong_colour_is_never_a_wrong_face(face):
    pts, cls, conf = face_pips(face)
    for i in range(len(pts)):
        c2 = cls.copy()
        c2[i] = PIP_WHITE if c2[i] == PIP_RED else PIP_RED
        assert decode_face(pts, c2, conf)[0] is None


def test_missing_spot_example_reason():
    pts, cls, conf = face_pips("4-6")
    # drop a white spot of the 6: counts say 4-5 (4 red, 5 white; halves 4/5), shape says no
    i = int(np.where(cls == PIP_WHITE)[0][-1])
    keep = np.arange(len(pts)) != i
    got, _, reads = decode_face(pts[keep], cls[keep], conf[keep])
    assert reads["A"]["candidates"] == ["4-5"] and reads["B"]["face"] == "4-5"
    assert got is None and "centre" in reads["reason"]


def test_spots_outside_the_tile_are_ignored():
    pts, cls, conf = face_pips("1-5")
    extra = np.array([[2.0, 50.0], [CROP_W - 1.0, 150.0]])  # a neighbour's spots in the border
    got, _, reads = decode_face(np.vstack([pts, extra]), np.r_[cls, [PIP_WHITE, PIP_WHITE]],
                                np.r_[conf, [0.9, 0.9]])
    assert got == "1-5" and reads["ignored"] == 2


def test_an_unsure_spot_in_a_rounded_corner_is_ignored():
    # ../shared/realdata fintech 1-1: the grey behind a cut-out's rounded corner was read as
    # a white spot at confidence 0.26 (seen in the crop at about (7.5, 9.6) px)
    pts, cls, conf = face_pips("1-1")
    corner = np.array([[BX + 1.0, BY + 1.5]])
    got, c, reads = decode_face(np.vstack([pts, corner]), np.r_[cls, [PIP_WHITE]],
                                np.r_[conf, [0.26]])
    assert got == "1-1" and reads["ignored"] == 1 and c == pytest.approx(0.9)
    # a confident spot there is counted (and then no face fits): nothing is hidden
    got, _, reads = decode_face(np.vstack([pts, corner]), np.r_[cls, [PIP_WHITE]],
                                np.r_[conf, [0.8]])
    assert got is None and reads["ignored"] == 0


def test_no_spots_and_bad_classes():
    got, c, reads = decode_face(np.zeros((0, 2)), np.zeros(0), np.zeros(0))
    assert got is None and c == 0.0 and reads["reason"] == "no spots found"
    with pytest.raises(ValueError):
        decode_face([[10, 10]], [0], [0.9])


def test_half_shape_rules():
    assert half_shape_ok([[10, 10], [30, 11]])[0]          # across
    assert not half_shape_ok([[20, 10], [21, 30]])[0]      # along: two spots of a shifted 3
    assert not half_shape_ok([[10, 10], [30, 30]])[0]      # diagonal pair
    assert half_shape_ok([[10, 10], [30, 30]], allow_diagonal_two=True)[0]
    assert half_shape_ok([[10, 10], [20, 20], [30, 30]])[0]
    assert not half_shape_ok([[10, 10], [20, 20], [40, 30]])[0]


def test_a_six_is_two_columns_along_the_tile_not_two_rows_across():
    # crop x runs across the tile, y along it: a 6 is two columns (x) of three (y)
    along = [[25, 20], [70, 20], [25, 45], [70, 45], [25, 70], [70, 70]]
    assert half_shape_ok(along) == (True, None)
    # rows packed closer than the columns are still a 6 along the tile
    packed = [[20, 30], [76, 30], [20, 45], [76, 45], [20, 60], [76, 60]]
    assert half_shape_ok(packed)[0]
    # the top halves of two touching tiles seen crosswise (scene_18-like: 3 columns, 2 rows,
    # rows further apart than columns after rectification)
    across = [[30, 32], [53, 27], [74, 22], [27, 75], [49, 70], [71, 64]]
    ok, why = half_shape_ok(across)
    assert not ok and "two columns of three" in why


def test_a_six_s_columns_run_along_the_tile():
    # scenes_flush scene_22 at input size 832: an outline shifted across a flush 1-3 | 1-5
    # held the 3's diagonal (left) and one column of the 5 (right); crop px as the pip
    # model gave them. With the tile's red 1 it read 1-6 (a wrong face) before the rule.
    diagonal_and_column = [[43, 94], [76, 103], [31, 126], [85, 127], [18, 158], [74, 154]]
    ok, why = half_shape_ok(diagonal_and_column)
    assert not ok and "columns must run along the tile" in why
    face, _, reads = decode_face(np.array([[33, 32]] + diagonal_and_column),
                                 np.array([PIP_RED] + [PIP_WHITE] * 6), np.full(7, 0.8))
    assert face is None and reads["A"]["candidates"] == ["1-6"]
    # a 6 whose outline is 8 degrees off: its columns drift by a quarter of a spacing
    t = np.radians(8.0)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    six = np.array([[25, 20], [70, 20], [25, 45], [70, 45], [25, 70], [70, 70]], float)
    tilted = (six - six.mean(0)) @ rot.T + six.mean(0)
    assert half_shape_ok(tilted) == (True, None)


def test_a_five_with_a_stray_corner_spot_is_not_a_six():
    # held-out table 1000016 as JPEG quality 60: the 5 of a 2-5 (four corners + centre) and a
    # stray detection on the felt at the tile's corner (crop px, as the pip model gave them)
    five_and_stray = [[44.4, 64.2], [25.6, 44.1], [60.5, 40.3], [62.6, 84.2], [27.7, 87.9],
                      [74.0, 15.9]]
    ok, why = half_shape_ok(five_and_stray)
    assert not ok and "pair row by row" in why
    # the whole tile with its 2: no face (it read 2-6 before the rule), never 2-6
    two = [[30.6, 141.1], [64.9, 137.3]]
    face, _, reads = decode_face(np.array(five_and_stray + two), np.full(8, PIP_WHITE),
                                 np.full(8, 0.7))
    assert face is None and "2-6" not in reads["B"].get("split_faces", [])
    # a true 6 outlined 10 degrees off still pairs row by row
    th = np.deg2rad(10)
    rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    six = np.array([[25, 20], [70, 20], [25, 45], [70, 45], [25, 70], [70, 70]], float)
    assert half_shape_ok(six @ rot.T) == (True, None)


class FakePips:
    """The pip model's interface (``detect_batch``): canned spot detections per crop, in call
    order; crops beyond the canned faces get none."""

    def __init__(self, faces):
        self.faces = list(faces)
        self.calls = 0

    def detect_batch(self, crops):
        self.calls += 1
        out = []
        for k, crop in enumerate(crops):
            assert crop.shape == (CROP_H, CROP_W, 3)
            face = self.faces[k] if k < len(self.faces) else None
            if face is None:
                out.append(Detections.empty())
                continue
            pts, cls, conf = face_pips(face)
            xyxy = np.concatenate([pts - 4, pts + 4], 1)
            out.append(Detections(xyxy, conf, cls))
        return out


def test_still_decode_states_and_threshold():
    """The pipeline's still decoding (what production runs): one batch for the pip model,
    face-down tiles stay face down, a tile below the confidence is unknown."""
    from vision.pipeline import Pipeline

    frame = np.zeros((300, 400, 3), np.uint8)
    polys = np.array([
        [[10, 10], [60, 10], [60, 110], [10, 110]],
        [[100, 10], [150, 10], [150, 110], [100, 110]],
        [[200, 10], [250, 10], [250, 110], [200, 110]],
        [[300, 10], [350, 10], [350, 110], [300, 110]],
    ], np.float32)
    dets = Detections.from_polygons(polys, [0.95, 0.9, 0.3, 0.9], [TILE, TILE_BACK, TILE, TILE])
    pips = FakePips(["5-6", "3-5", None])
    pipe = Pipeline(tile_detector=object(), pip_detector=pips, draw=False)
    reads, n = pipe.engine.decode(frame, dets, use_cache=False)
    assert pips.calls == 1 and n == 4  # one batch: the three face-up tiles and the back
    assert [r.state for r in reads] == ["face_up", "face_down", "unknown", "unknown"]
    assert reads[0].face == "5-6" and reads[0].confidence == pytest.approx(0.9)
    assert "below" in reads[2].reason  # 3-5 read, but the tile itself is unsure
    assert reads[3].reason == "no spots found"
    d = reads[0].to_dict()
    assert d["face"] == "5-6" and d["xyxy"] == [10.0, 10.0, 60.0, 110.0]
    assert isinstance(reads[1], TileRead) and reads[1].face is None


def test_run_pip_detector_takes_only_the_pip_model_interface():
    crops = [np.zeros((CROP_H, CROP_W, 3), np.uint8)] * 2
    assert run_pip_detector(FakePips([]), []) == []
    got = run_pip_detector(FakePips(["5-6"]), crops)
    assert [len(d) for d in got] == [11, 0]
    with pytest.raises(AttributeError):  # a bare callable is not a pip model
        run_pip_detector(lambda cs: [Detections.empty()] * len(cs), crops)

    class Short:
        def detect_batch(self, crops):
            return [Detections.empty()]

    with pytest.raises(ValueError, match="1 results for 2 crops"):
        run_pip_detector(Short(), crops)


def _synth_tile_pips(a, b, st, rng, long33=False):
    from vision.synth.draw import tile_spots

    sp = tile_spots(a, b, st, rng, long33=long33)
    pts = np.array([(BX + x * TW, BY + y / st.aspect * (CROP_H - 2 * BY)) for x, y, _, _ in sp])
    cls = np.array([PIP_RED if c == 0 else PIP_WHITE for _, _, _, c in sp])
    return pts, cls, np.full(len(pts), 0.9)


def test_renderer_layouts_decode_exactly_or_unknown_never_wrong():
    """Spot layouts of vision.synth.draw (every style knob), each face, each spot removed."""
    synth_draw = pytest.importorskip("vision.synth.draw")
    rng = np.random.default_rng(1_000_123)
    exact = unknown = 0
    for k in range(40):
        st = synth_draw.random_style(rng, "black" if k % 2 else "ivory")
        for t in FACES:
            for long33 in ((False, True) if t.face == "3-3" else (False,)):
                pts, cls, conf = _synth_tile_pips(t.low, t.high, st, rng, long33)
                got = decode_face(pts, cls, conf)[0]
                diagonal_two = st.two_style == 1 and 2 in (t.low, t.high)
                if diagonal_two:
                    assert got in (None, t.face)
                else:
                    assert got == t.face, (t.face, st)
                exact += got == t.face
                for i in range(len(pts)):
                    keep = np.arange(len(pts)) != i
                    g2 = decode_face(pts[keep], cls[keep], conf[keep])[0]
                    assert g2 is None, (t.face, i, g2, st)
                    unknown += 1
    assert exact > 700 and unknown > 5000


def test_rendered_tiles_with_polygon_error_are_exact_or_unknown():
    """Spots of a rendered held-out table, mapped through crops from jittered polygons (corner
    noise 3% of the short side, like a detector's error): never a wrong face."""
    synth = pytest.importorskip("vision.synth.render")
    import cv2

    from vision.geometry import rectify

    scene = synth.render_table(1_000_301)
    rng = np.random.default_rng(7)
    exact = unknown = 0
    for t in scene.tiles:
        if t.state != "face_up" or not t.labelled:
            continue
        poly = t.polygon.astype(np.float64)
        side = min(np.linalg.norm(poly[1] - poly[0]), np.linalg.norm(poly[2] - poly[1]))
        _, M = rectify(scene.image, (poly + rng.normal(0, 0.03 * side, poly.shape)).astype(np.float32))
        pts, cls = [], []
        for outline, c, visible in t.spots:
            if visible:
                pts.append(cv2.perspectiveTransform(np.asarray(outline, np.float32)[None], M)[0].mean(0))
                cls.append(PIP_RED if c == 0 else PIP_WHITE)
        got = decode_face(np.array(pts).reshape(-1, 2), np.array(cls), np.full(len(cls), 0.9))[0]
        assert got in (None, t.face), (t.face, got)
        exact += got == t.face
        unknown += got is None
    assert exact >= 0.85 * (exact + unknown)


# -- the dividing line found where the spots allow one (drawings, small tiles; realdata) -----

def _decode_pts(red_pts, white_pts):
    pts = np.array(list(red_pts) + list(white_pts), dtype=np.float64)
    cls = np.array([2] * len(red_pts) + [3] * len(white_pts))
    return decode_face(pts, cls, np.full(len(pts), 0.9))


def test_one_drawn_at_the_end_and_a_three_from_the_midline_reads_1_3():
    # the 1 at the tile's end, the 3's diagonal starting on the midline (y = 96)
    face, conf, reads = _decode_pts([(48, 30)], [(70, 95), (48, 130), (26, 165)])
    assert face == "1-3" and reads["B"]["layout"] == "split"
    assert conf == pytest.approx(0.9)


def test_four_four_with_an_inner_row_inside_the_midline_band_reads_4_4():
    red = [(30, 30), (66, 30), (30, 80), (66, 80), (30, 101), (66, 101), (30, 155), (66, 155)]
    face, _, reads = _decode_pts(red, [])
    assert reads["B"]["midline"] == 2 and face == "4-4"


def test_staggered_long_three_three_reads_3_3_and_loses_a_spot_to_unknown():
    white = [(48, 35), (48, 65), (25, 88), (71, 104), (48, 130), (48, 160)]
    assert _decode_pts([], white)[0] == "3-3"
    for k in range(6):
        face, _, _ = _decode_pts([], white[:k] + white[k + 1:])
        assert face is None, k  # five white spots also fit 2-3: never a wrong face


def test_split_search_respects_half_colours():
    # a red spot counted in a "2" half: no split may name 1-2 from a 1-3 that lost a spot
    face, _, reads = _decode_pts([(48, 30)], [(70, 95), (26, 165)])
    assert face is None


def test_a_three_is_a_diagonal_not_a_column_of_a_six():
    assert half_shape_ok([[20, 10], [30, 20], [40, 30]])[0]        # the diagonal 3
    assert not half_shape_ok([[20, 10], [20, 30], [20, 50]])[0]    # one column of a 6
    assert not half_shape_ok([[10, 20], [30, 20], [50, 20]])[0]    # one row
    # 1-6 whose 6 lost a column: 1 red + 3 white fits 1-3 by colour, but is unknown
    face, _, reads = decode_face(np.array([[48, 40], [30, 110], [30, 135], [30, 160]], float),
                                 np.array([PIP_RED, PIP_WHITE, PIP_WHITE, PIP_WHITE]),
                                 np.full(4, 0.9))
    assert face is None and "diagonal" in reads["reason"]


def _drawn_tile(face_colours):
    """A black 96x192 crop with spots of the given BGR colours at the given centres; returns
    (crop, pip Detections in crop px)."""
    import cv2

    crop = np.full((CROP_H, CROP_W, 3), 20, np.uint8)
    boxes, cls = [], []
    for (x, y), bgr, c in face_colours:
        cv2.circle(crop, (int(x), int(y)), 9, bgr, -1)
        boxes.append([x - 10, y - 10, x + 10, y + 10])
        cls.append(c)
    n = len(boxes)
    return crop, Detections(np.array(boxes, np.float32), np.full(n, 0.9, np.float32),
                            np.array(cls, np.int64))


def test_spot_colours_must_agree_with_the_pixels():
    from vision.recognition.decode import read_from_pips, spot_redness

    RED, WHITE = (40, 40, 220), (235, 235, 235)
    pts, cls, _ = face_pips("1-3")  # the 1 is red, the 3 white
    spec = [((x, y), RED if c == PIP_RED else WHITE, c) for (x, y), c in zip(pts, cls)]
    crop, pips = _drawn_tile(spec)
    a = spot_redness(crop, pips.xyxy)
    assert a[cls == PIP_RED].min() > 40 and abs(a[cls == PIP_WHITE]).max() < 5
    poly = np.array([[0, 0], [100, 0], [100, 220], [0, 220]], np.float32)
    xyxy = np.array([0, 0, 100, 220], np.float32)
    r = read_from_pips(pips, poly, xyxy, 0.9, crop=crop)
    assert r.face == "1-3" and r.evidence.colour_separation > 40
    # a spot the model calls white but that is drawn red: the colours do not check out
    spec[1] = (spec[1][0], RED, PIP_WHITE)
    crop, pips = _drawn_tile(spec)
    r = read_from_pips(pips, poly, xyxy, 0.9, crop=crop)
    assert r.face is None and r.state == "unknown" and "looks as red" in r.reason
    assert read_from_pips(pips, poly, xyxy, 0.9).face == "1-3"  # no crop: no colour check
