"""Tests of the synthetic renderer (vision/synth/render.py): determinism, label geometry, the colour
rule, valid deals, close-ups, both 3-3 layouts and pip-crop labels."""

from __future__ import annotations

import math
from collections import Counter

import cv2
import numpy as np
import pytest

from scoring.errors import InputError
from scoring.tiles import STANDARD_SET, TILES_BY_FACE
from vision.synth import render as synth
from vision.synth import dataset as synth_dataset
from vision.synth import draw as D
from vision.geometry import CROP_H, CROP_W

SMALL = (960, 540)


@pytest.fixture(scope="module")
def table():
    return synth.render_table(1_000_003, size=SMALL, style="black")


@pytest.fixture(scope="module")
def ivory_table():
    return synth.render_table(1_000_004, size=SMALL, style="ivory")


def test_same_seed_identical_bytes_and_different_seed_differs():
    a = synth.render_table(1_000_001, size=(640, 360))
    b = synth.render_table(1_000_001, size=(640, 360))
    c = synth.render_table(1_000_002, size=(640, 360))
    assert a.image.tobytes() == b.image.tobytes()
    assert [t.face for t in a.tiles] == [t.face for t in b.tiles]
    assert a.image.tobytes() != c.image.tobytes()
    s1 = synth.render_scene(12345, (640, 360), mode="train")
    s2 = synth.render_scene(12345, (640, 360), mode="train")
    assert s1.image.tobytes() == s2.image.tobytes()
    assert synth_dataset.obb_label_lines(s1) == synth_dataset.obb_label_lines(s2)


def test_full_table_is_a_valid_deal(table):
    sc = table
    assert sc.image.shape == (SMALL[1], SMALL[0], 3) and sc.image.dtype == np.uint8
    assert len(sc.tiles) == 32
    assert all(t.state == "face_up" and t.labelled for t in sc.tiles)
    faces = Counter(t.face for t in sc.tiles)
    assert faces == Counter(t.face for t in STANDARD_SET)
    assert set(sc.deal) == set(synth.POSITIONS)
    assert Counter(f for fs in sc.deal.values() for f in fs) == faces
    for pos in synth.POSITIONS:
        mine = [t for t in sc.tiles if t.position == pos]
        assert sorted(t.face for t in mine) == sorted(sc.deal[pos])
        assert sorted(t.hand for t in mine) == [0, 0, 1, 1]
        # hands as laid: the first two faces of the deal are hand 0
        assert sorted(t.face for t in mine if t.hand == 0) == sorted(sc.deal[pos][:2])


def test_layout_polygons_enclose_their_tiles_and_do_not_overlap(table):
    pos = table.layout["positions"]
    assert set(pos) == set(synth.POSITIONS)
    quads = {p: np.array(q, np.float32) for p, q in pos.items()}
    for t in table.tiles:
        c = t.polygon.mean(0)
        assert cv2.pointPolygonTest(quads[t.position], (float(c[0]), float(c[1])), False) > 0
    names = list(quads)
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            area, _ = cv2.intersectConvexConvex(quads[names[i]], quads[names[j]])
            assert area <= 1e-3, (names[i], names[j], area)


def test_explicit_deal_and_bad_deals():
    deal = {p: fs for p, fs in synth.render_table(1_000_005, size=(640, 360)).deal.items()}
    sc = synth.render_table(1_000_006, size=(640, 360), deal=deal)
    assert sc.deal == deal
    bad = dict(deal)
    bad["dealer"] = ["6-6", "6-6", "6-6", "1-1"]
    with pytest.raises(InputError, match="6-6"):
        synth.render_table(1, size=(640, 360), deal=bad)
    with pytest.raises(InputError, match="7-7"):
        synth.render_table(1, size=(640, 360), deal={"1": ["7-7", "1-1", "2-2", "3-3"]})
    with pytest.raises(InputError, match="plaid"):
        synth.render_table(1, size=(640, 360), style="plaid")


@pytest.mark.parametrize("fixture", ["table", "ivory_table"])
def test_spot_colours_follow_the_scoring_colour_rule(fixture, request):
    sc = request.getfixturevalue(fixture)
    for t in sc.tiles:
        tile = TILES_BY_FACE[t.face]
        cls = Counter(c for _, c, _ in t.spots)
        assert (cls[D.RED], cls[D.WHITE]) == (tile.red, tile.white), t.face


def test_pip_crop_labels_count_every_spot_of_unoccluded_tiles(table):
    for t in table.tiles:
        crop, boxes = synth_dataset.pip_crop(table.image, t)
        assert crop.shape == (CROP_H, CROP_W, 3)
        tile = TILES_BY_FACE[t.face]
        assert len(boxes) == tile.spots, t.face
        assert sum(1 for b in boxes if b[0] == 0) == tile.red
        for _, x, y, w, h in boxes:
            assert 0 <= x - w / 2 and x + w / 2 <= 1 and 0 <= y - h / 2 and y + h / 2 <= 1
            assert 0.03 < w < 0.6 and 0.015 < h < 0.3  # a spot, not the whole tile
    # a jittered crop still keeps the labels inside the crop
    rng = np.random.default_rng(0)
    crop, boxes = synth_dataset.pip_crop(table.image, table.tiles[0], rng, 0.05)
    assert all(0 <= v <= 1 for b in boxes for v in b[1:])


@pytest.mark.parametrize("seed", [1_000_010, 1_000_011, 1_000_012])
def test_training_frame_labels_inside_image_and_match_polygons(seed):
    sc = synth.render_scene(seed, (800, 450), mode="train")
    h, w = sc.image.shape[:2]
    lines = synth_dataset.obb_label_lines(sc)
    labelled = [t for t in sc.tiles if t.labelled]
    assert len(lines) == len(labelled) > 0
    for ln, t in zip(lines, labelled):
        v = ln.split()
        assert v[0] == ("0" if t.state == "face_up" else "1")
        p = np.array(v[1:], float).reshape(4, 2)
        assert p.min() >= 0 and p.max() <= 1
        px = p * (w, h)
        # same quadrilateral as the scene polygon (up to corner order / clipping)
        assert abs(cv2.contourArea(px.astype(np.float32)) -
                   cv2.contourArea(np.clip(t.polygon, 0, [w, h]).astype(np.float32))) \
            <= 0.02 * cv2.contourArea(px.astype(np.float32)) + 4
        assert t.visible >= 0.6
    for t in sc.tiles:
        if t.state == "face_down":
            assert t.face is None and not t.spots


def test_closeups_fill_a_small_image():
    for seed in range(1_000_020, 1_000_026):
        sc = synth.render_closeup(seed)
        h, w = sc.image.shape[:2]
        assert 20 <= min(h, w) and 55 <= max(h, w) <= 1200
        lab = [t for t in sc.tiles if t.labelled]
        assert 1 <= len(lab) <= 3
        xs = np.concatenate([t.polygon for t in lab])
        span = (xs.max(0) - xs.min(0)) / (w, h)
        assert span.max() >= 0.38  # the tiles fill a large part of the image


def test_both_3_3_layouts_are_drawn():
    st = D.random_style(np.random.default_rng(0), "black")
    rng = np.random.default_rng(1)
    long_ = D.tile_spots(3, 3, st, rng, long33=True)
    diag = D.tile_spots(3, 3, st, rng, long33=False)
    mid = st.aspect / 2
    assert sum(abs(y - mid) < 1e-6 for _, y, _, _ in long_) == 2  # the pair on the midline
    assert sum(abs(y - mid) < 0.05 for _, y, _, _ in diag) == 0
    assert len(long_) == len(diag) == 6
    # and the scenes use both
    seen = set()
    for seed in range(1_000_030, 1_000_060):
        sc = synth.render_closeup(seed, n_tiles=3)
        seen |= {t.layout for t in sc.tiles if t.face == "3-3"}
        if seen == {"long", "standard"}:
            break
    assert seen == {"long", "standard"}


def test_render_datasets_writes_both_datasets(tmp_path):
    stats = synth_dataset.render_datasets(tmp_path, n_tiles=8, n_pips=12, seed=7, val_fraction=0.25,
                                  progress=False)
    imgs = sorted((tmp_path / "tiles" / "images").rglob("*.jpg"))
    assert len(imgs) == 8 == stats["tiles_train"] + stats["tiles_val"]
    assert stats["tiles_val"] == 2
    for f in imgs:
        lab = tmp_path / "tiles" / "labels" / f.parent.name / (f.stem + ".txt")
        for ln in lab.read_text().splitlines():
            v = ln.split()
            assert v[0] in ("0", "1") and len(v) == 9
    small = sum(1 for f in imgs if max(cv2.imread(str(f)).shape[:2]) < 1280)
    assert small == stats["closeups"]
    assert 1 <= stats["closeups"] <= 6
    crops = sorted((tmp_path / "pips" / "images").rglob("*.jpg"))
    assert len(crops) == 12
    assert cv2.imread(str(crops[0])).shape == (CROP_H, CROP_W, 3)
    assert stats["pip_red"] > 0 and stats["pip_white"] > 0
    assert "path: tiles" in (tmp_path / "tiles.yaml").read_text()
    assert "1: pip_white" in (tmp_path / "pips.yaml").read_text()
    assert str((tmp_path / "pips").resolve()) in (tmp_path / "pips" / "data.yaml").read_text()


def test_render_datasets_threes_one_way_redraws_only_the_threes(tmp_path):
    # every 3 of a frame one way (as a real set draws them): the same tiles in the same
    # places (labels unchanged), only some 3s drawn the other way (pixels changed)
    kw = dict(n_tiles=4, n_pips=0, seed=11, val_fraction=0.0, progress=False,
              closeup_fraction=0.0)
    synth_dataset.render_datasets(tmp_path / "a", **kw)
    synth_dataset.render_datasets(tmp_path / "b", threes_one_way=1.0, **kw)
    la = sorted((tmp_path / "a" / "tiles" / "labels").rglob("*.txt"))
    lb = sorted((tmp_path / "b" / "tiles" / "labels").rglob("*.txt"))
    assert [f.name for f in la] == [f.name for f in lb] and len(la) == 4
    assert all(x.read_text() == y.read_text() for x, y in zip(la, lb))
    ia = sorted((tmp_path / "a" / "tiles" / "images").rglob("*.jpg"))
    ib = sorted((tmp_path / "b" / "tiles" / "images").rglob("*.jpg"))
    differ = [not np.array_equal(cv2.imread(str(x)), cv2.imread(str(y))) for x, y in zip(ia, ib)]
    assert any(differ)


def test_render_cli_rejects_bad_values(tmp_path, capsys):
    from vision.cli import main

    assert main(["render", "--n", "1", "--threes-one-way", "1.5", "--out", str(tmp_path)]) == 2
    assert "1.5" in capsys.readouterr().err

    assert main(["render", "--n", "-1", "--out", str(tmp_path)]) == 2
    assert "-1" in capsys.readouterr().err
    assert main(["render", "--n", "1", "--val-fraction", "0.9", "--out", str(tmp_path)]) == 2
    assert "0.9" in capsys.readouterr().err
    assert main(["render", "--n", "1", "--seed", "1000000", "--out", str(tmp_path)]) == 2


# ---------------------------------------------------------------------------------------------
# Style families (long tiles, flat drawings, glossy photo spots)

def _styles(n=400, kind=None):
    return [D.random_style(np.random.default_rng(s), kind) for s in range(n)]


def test_style_families_and_aspect_range():
    sts = _styles(600)
    fams = Counter(st.extra["family"] for st in sts)
    assert set(fams) == {"base", "flat", "photo"}
    assert fams["base"] > 0.6 * len(sts)  # the original distribution stays the majority
    aspects = np.array([st.aspect for st in sts])
    assert aspects.min() >= 1.9 and aspects.max() <= 2.9
    assert (aspects > 2.6).sum() >= 0.08 * len(sts)  # elongated drawn tiles are covered
    for st in sts:
        if st.extra["family"] == "flat":
            assert st.depth == 0 and st.spec == 0 and st.bevel == 0 and st.extra["glare"] == 0
            if st.name == "black":
                assert max(st.face) <= 14  # near-black
        if st.western:
            assert st.extra["family"] == "base"


def _spots_ok(st, rng):
    """Every face of the set: counts and colours as scoring.tiles, spots inside their half,
    no two spots overlapping, and a 2 drawn across (or along) the tile, never diagonally."""
    L = st.aspect
    for tile in STANDARD_SET:
        lo, hi = (int(v) for v in tile.face.split("-"))
        for a, b in ((lo, hi), (hi, lo)):
            spots = D.tile_spots(a, b, st, rng)
            cls = Counter(c for _, _, _, c in spots)
            assert (cls[D.RED], cls[D.WHITE]) == (tile.red, tile.white), (tile.face, st)
            for x, y, r, _ in spots:
                assert r > 0.05
                assert x - r >= -1e-9 and x + r <= 1 + 1e-9
                top = y < L / 2
                assert (y - r >= -1e-9 and y + r <= L / 2 + 1e-9) if top else \
                    (y - r >= L / 2 - 1e-9 and y + r <= L + 1e-9), (tile.face, y, r, L)
            for i in range(len(spots)):
                for j in range(i + 1, len(spots)):
                    (x1, y1, r1, _), (x2, y2, r2, _) = spots[i], spots[j]
                    assert math.hypot(x1 - x2, y1 - y2) >= r1 + r2 - 1e-9, (tile.face, st.extra)
            for half, n in ((0, a), (1, b)):
                if n == 2:
                    two = [s for s in spots if (s[1] < L / 2) == (half == 0)]
                    assert abs(two[0][0] - two[1][0]) < 1e-9 or abs(two[0][1] - two[1][1]) < 1e-9


@pytest.mark.parametrize("family", ["base", "flat", "photo"])
def test_every_family_draws_scoring_counts_inside_halves_without_overlap(family):
    sts = [st for st in _styles(300) if st.extra["family"] == family and not st.western][:25]
    assert len(sts) >= 10
    rng = np.random.default_rng(5)
    for st in sts:
        _spots_ok(st, rng)
    if family == "flat":
        # big tight discs: the spots of a 6 nearly fill the width on some sets
        widest = max(2 * max(r for _, _, r, _ in D.tile_spots(6, 6, st, rng)) for st in sts)
        assert widest >= 0.38


def test_flat_and_photo_closeups_are_deterministic_and_labelled():
    seen = set()
    for seed in range(1_000_100, 1_000_400):
        fam = D.random_style(np.random.default_rng(seed), "black").extra["family"]
        if fam in seen or fam == "base":
            continue
        seen.add(fam)
        a = synth.render_closeup(seed, style="black", n_tiles=1)
        b = synth.render_closeup(seed, style="black", n_tiles=1)
        assert a.image.tobytes() == b.image.tobytes()
        t = a.tiles[0]
        if t.face is not None and t.labelled and t.visible > 0.999:
            tile = TILES_BY_FACE[t.face]
            crop, boxes = synth_dataset.pip_crop(a.image, t)
            assert len(boxes) == tile.spots
            assert sum(1 for bx in boxes if bx[0] == 0) == tile.red
        if seen == {"flat", "photo"}:
            break
    assert seen == {"flat", "photo"}


def test_render_datasets_pips_only(tmp_path):
    stats = synth_dataset.render_datasets(tmp_path, n_tiles=0, n_pips=5, seed=3, val_fraction=0.2,
                                  progress=False)
    assert stats["tiles_train"] == stats["tiles_val"] == 0
    assert stats["pips_train"] + stats["pips_val"] == 5 and stats["pips_val"] == 1
    assert len(list((tmp_path / "pips" / "images").rglob("*.jpg"))) == 5
    assert "path: pips" in (tmp_path / "pips.yaml").read_text()


def test_touching_positions_change_only_with_the_option_and_lie_flush():
    from vision.synth.render import render_scene

    a = render_scene(123, (640, 360), mode="train")
    b = render_scene(123, (640, 360), mode="train", touching=0.0)
    assert np.array_equal(a.image, b.image)          # old seeds render unchanged
    c = render_scene(123, (640, 360), mode="train", touching=1.0)
    assert not np.array_equal(a.image, c.image)
    # every position's hands touch flush: each face-up tile has a neighbour whose outline
    # lies within 2 % of a tile width (the hand's other tile)
    ups = [t for t in c.tiles if t.state == "face_up" and t.labelled and t.position]
    whole = {p for p in {t.position for t in ups} if sum(t.position == p for t in ups) == 4}
    ups = [t for t in ups if t.position in whole]
    assert ups
    import cv2

    for t in ups:
        w = min(np.linalg.norm(t.polygon[1] - t.polygon[0]), np.linalg.norm(t.polygon[2] - t.polygon[1]))
        gaps = [cv2.pointPolygonTest(o.polygon.astype(np.float32).reshape(-1, 1, 2),
                                     tuple(float(v) for v in p), True)
                for o in ups if o is not t for p in t.polygon]
        assert max(gaps) > -0.05 * w


def test_square_blocks_make_flush_hands_squares_of_four_halves_and_leave_old_seeds_alone():
    from vision.synth.render import render_scene

    a = render_scene(321, (640, 360), mode="train", touching=1.0)
    b = render_scene(321, (640, 360), mode="train", touching=1.0, square_blocks=0.0)
    assert np.array_equal(a.image, b.image)          # old seeds render unchanged
    seeds = [s for s in range(300, 330)
             if np.random.default_rng([s, 92]).random() < 0.5]
    c = render_scene(seeds[0], (640, 360), mode="train", touching=1.0, square_blocks=0.5)
    ups = [t for t in c.tiles if t.state == "face_up" and t.labelled]
    assert ups
    for t in ups:  # tiles twice as long as wide (within the camera's perspective)
        s0 = np.linalg.norm(t.polygon[1] - t.polygon[0])
        s1 = np.linalg.norm(t.polygon[2] - t.polygon[1])
        assert 1.6 < max(s0, s1) / min(s0, s1) < 2.5
