"""Synthetic training data: rendered pai gow tables, close-ups and per-tile pip crops.

There are no labelled pai gow photographs, so everything the tile and pip detectors know comes
from this renderer; it randomises appearance widely (domain randomisation) so that real images
(../shared/realdata, never used here) look like one more variation.

Scene model. Tiles are drawn as sprites (rounded, bevelled face with engraved/painted spots,
see :mod:`vision.synth.draw`) onto a flat *table canvas* (the table plane), with a drop shadow
and a thickness side toward the camera; face-down tiles, stacks of face-down tiles (the
woodpile), chips, playing cards and arm/hand shapes are added; the canvas is then warped to the
output image by a camera homography (up to ~40 degrees of tilt, yaw, roll), and camera effects
are applied (lighting gradient, vignette, colour cast, blur, noise, JPEG). Labels are the tile
sprite's rectangle and spot circles mapped through the same transforms, so they are exact.

Conventions and choices (documented for the consumers):

* Colour rule (scoring.tiles.Tile.red / .white): halves showing 1 or 4 have red spots; 6-6
  (Teen) has six red spots: the left column of one half and the right column of the other
  (point-symmetric, as every Chinese set in realdata draws it); all other spots are "white"
  (white on dark tiles, black/blue/green on ivory tiles: class pip_white = not red).
* 3-3 (Chong) has two layouts: two diagonals, or the "long" layout (two spots on the centre
  line of each half and a horizontal pair on the midline); a tile set uses one of them.
* Occlusion: a tile more than 40% hidden (by a chip, card or hand, or by the frame edge) gets
  no label at all (it is left in the image unlabelled); a spot more than 50% hidden gets no
  pip label. Tiles cut by the frame edge but >= 60% inside are labelled with the minimum-area
  rectangle of their visible part (clipped to the image).
* Training seeds are < 1_000_000; seeds >= 1_000_000 are held out for tests / E2E.

* Styles: "black" (casino tiles, white/red spots), "ivory" (bone, some with a green or dark
  back layer; black/blue/green and red spots), "other" (coloured tiles, white/red spots),
  "western" (western dominoes: blanks, bold divider bar with a pin, one colour or one colour
  per number; only for tile-model variety and the western validation images). Each style is
  widened by a family (vision.synth.draw._style_family, ~28% of styles): "flat" drawings
  (flat discs up to ~0.23 of the width packed nearly touching, near-black face without bevel,
  sometimes a thin light outline, in close-ups often on a black or grey background), "photo"
  (large glossy spots with a strong highlight and glare, light bevel rim); tile aspect 1.9-2.9
  (the original 1.9-2.45 for most).
* Tile-model frames (:func:`vision.synth.dataset.render_datasets`): 25% close-ups (1-3 tiles filling 40-100% of a
  50-600 px image), ~11% scattered loose tiles / chains (larger tiles), the rest partial or
  full tables (tile long side 60-200 px at 1920 wide, saved 1280 wide), with face-down
  positions, the woodpile, chips, cards and arms as distractors/occluders.

Public API: :class:`SceneTile`, :class:`TableScene`, :func:`render_table`,
:func:`render_closeup`, :func:`render_scene`. The renderer's other modules:
:mod:`vision.synth.deal` (deals, camera), :mod:`vision.synth.draw` (tile styles, spots,
sprites), :mod:`vision.synth.scenery` (backgrounds, distractors, camera effects) and
:mod:`vision.synth.dataset` (labels, pip crops and :func:`vision.synth.dataset.render_datasets`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from scoring.errors import InputError
from scoring.settle import POSITIONS
from scoring.tiles import STANDARD_SET
from vision.synth import draw as D
from vision.synth import scenery as S
from vision.synth.deal import camera_homography, check_deal, random_deal
from vision.geometry import convex_intersection

__all__ = ["SceneTile", "TableScene", "render_table", "render_closeup", "render_scene",
           "POSITIONS", "HELD_OUT_SEED", "TILE_CLASSES", "PIP_CLASSES"]

HELD_OUT_SEED = 1_000_000
TILE_CLASSES = ("tile", "tile_back")
PIP_CLASSES = ("pip_red", "pip_white")


@dataclass
class SceneTile:
    """One tile in a rendered image.

    Attributes:
        face: ``"low-high"`` (e.g. ``"1-6"``; western tiles may show 0) or None when face down.
        state: ``"face_up"`` | ``"face_down"``.
        polygon: float32 (4, 2) corner points in image pixels (the tile's top face, corners in
            drawing order: sprite (0,0), (w,0), (w,h), (0,h); for a tile cut by the frame edge
            the minimum-area rectangle of its visible part -- use
            :func:`vision.geometry.order_polygon` for the canonical order).
        position: ``"dealer"``, ``"1"``..``"7"`` or None (woodpile, loose tiles, close-ups).
        hand: 0 or 1 (which of the position's two hands), or None.
        labelled: False when the tile is too hidden (> 40% occluded or outside the frame) to
            carry a label.
        visible: fraction of the tile visible (0..1).
        layout: spot layout name: "standard", or "long" for the long 3-3 layout.
        spots: list of ``(points float32 (16, 2) image px on the spot's outline, cls 0 red /
            1 white, visible bool)``.
    """

    face: str | None
    state: str
    polygon: np.ndarray
    position: str | None = None
    hand: int | None = None
    labelled: bool = True
    visible: float = 1.0
    layout: str = "standard"
    spots: list = field(default_factory=list, repr=False)


@dataclass
class TableScene:
    """A rendered image with its ground truth.

    Attributes:
        image: uint8 (H, W, 3) BGR.
        tiles: list of :class:`SceneTile` (every tile drawn, labelled or not).
        layout: layout-YAML dict ``{"table_id", "rules", "commission", "positions":
            {name: [[x, y], ...]}}`` (image px; one polygon per position enclosing its 4 tiles,
            no overlaps); empty ``positions`` for scenes without positions.
        deal: position -> its 4 faces as laid (hand 0's two tiles, then hand 1's).
        style: tile style name ("black", "ivory", "other", "western").
        kind: "table" or "closeup".
        empty: uint8 (H, W, 3) BGR, the same table without its tiles and their shadows (felt,
            lettering, chips, camera and camera effects as in ``image``), where asked for
            (:func:`render_table` ``empty=True``); else None.
    """

    image: np.ndarray
    tiles: list
    layout: dict
    deal: dict
    style: str = ""
    kind: str = "table"
    empty: np.ndarray | None = None


# ----------------------------------------------------------------------------------------------
# Tile placement model

@dataclass
class _Tile:
    face: str | None           # "l-h" or None (face down)
    halves: tuple              # (top, bottom) half values in sprite order
    cx: float                  # canvas centre
    cy: float
    angle: float               # radians, sprite y axis rotated by this
    w: float                   # short side, canvas px
    position: str | None = None
    hand: int | None = None
    long33: bool = False
    levels: int = 1            # >1: a stack of face-down tiles (top face labelled)
    aspect: float = 2.2        # long side / short side (the style's)


def _affine(t: _Tile, sw: int, sh: int, lift: np.ndarray | None = None) -> np.ndarray:
    s = t.w / sw
    ca, sa = math.cos(t.angle), math.sin(t.angle)
    A = np.array([[ca * s, -sa * s, 0], [sa * s, ca * s, 0]], np.float64)
    c = np.array([t.cx, t.cy]) + (lift if lift is not None else 0)
    A[:, 2] = c - A[:, :2] @ np.array([sw / 2, sh / 2])
    return A


def _apply(A: np.ndarray, pts: np.ndarray) -> np.ndarray:
    return (pts @ A[:, :2].T + A[:, 2]).astype(np.float32)


def _position_tiles(rng, faces, cx, cy, angle, w, aspect, pos, long33, arrangement,
                    flush: bool = False):
    """Four tiles of one position as two hands lying together (two pairs); ``flush``: the
    two tiles of a hand touch exactly (no gap: on flat drawn tiles the seam is invisible)."""
    L = w * aspect
    gap_in = rng.uniform(0.0, 0.08) * w      # inside a hand (touching or nearly)
    if flush:
        gap_in = 0.0
    gap_h = rng.uniform(0.25, 1.2) * w       # between the two hands
    ca, sa = math.cos(angle), math.sin(angle)
    out = []
    if arrangement == "row":  # [h0 t0][h0 t1]  gap  [h1 t0][h1 t1]
        xs = [0, w + gap_in, 2 * w + gap_in + gap_h, 3 * w + 2 * gap_in + gap_h]
        xs = [x - (xs[-1]) / 2 for x in xs]
        ys = [0, 0, 0, 0]
    else:  # column: hand 0 nearer the player, hand 1 behind it
        xs = [-(w + gap_in) / 2, (w + gap_in) / 2] * 2
        ys = [(L + gap_h) / 2] * 2 + [-(L + gap_h) / 2] * 2
    for k in range(4):
        jx, jy = rng.normal(0, 0.03 * w, 2)
        if flush:
            jx = jy = 0.0
        lx, ly = xs[k] + jx, ys[k] + jy
        tx = cx + lx * ca - ly * sa
        ty = cy + lx * sa + ly * ca
        f = faces[k]
        lo, hi = (int(v) for v in f.split("-"))
        halves = (lo, hi) if rng.random() < 0.5 else (hi, lo)
        tilt = rng.normal(0, math.radians(3))
        a = angle + (0.0 if flush else tilt) + (math.pi if rng.random() < 0.5 else 0)
        out.append(_Tile(f, halves, tx, ty, a, w, pos, k // 2, long33 and f == "3-3",
                         aspect=aspect))
    return out


def _table_layout(rng, origin, out_w, out_h, w, zoom, deal, long33, arrangement, spread=1.0,
                  aspect=2.2, touching: float = 0.0, rng_touch=None):
    """Tiles of dealer + 7 seats placed around an arc (dealer at the top centre; seat 1 at the
    image right, 7 at the left). With ``touching`` > 0, each position with that probability
    (drawn from ``rng_touch``, so the main stream and old seeds are unchanged) lies at any
    angle with its hands' tiles touching flush (hard cases: touching pairs at every angle)."""
    ox, oy = origin
    W, H = out_w * zoom * spread, out_h * zoom * spread
    tiles = []
    for i, pos in enumerate(POSITIONS):
        if pos not in deal:
            continue
        if pos == "dealer":
            px, py, ang = 0.0, -0.30 * H, 0.0
        else:
            t = (int(pos) - 1) / 6.0
            px = (0.5 - t) * 2 * 0.40 * W
            py = 0.30 * H - 0.34 * H * (2 * t - 1) ** 2
            ang = math.atan2(px, (0.9 * H)) * 0.9  # face the table centre, roughly
        px += rng.normal(0, 0.008 * W)
        py += rng.normal(0, 0.008 * H)
        ang += rng.normal(0, math.radians(4))
        arr = arrangement if arrangement else ("row" if rng.random() < 0.6 else "column")
        flush = False
        if rng_touch is not None and rng_touch.random() < touching:
            ang, flush = rng_touch.uniform(-math.pi, math.pi), True
        tiles += _position_tiles(rng, deal[pos], ox + px, oy + py, ang, w, aspect, pos,
                                 long33, arr, flush)
    return tiles



# ----------------------------------------------------------------------------------------------
# Compositing

def _blend(canvas: np.ndarray, img: np.ndarray, alpha: np.ndarray, A: np.ndarray) -> None:
    """Warp a float sprite (img, alpha) with affine A into the uint8 canvas (in place)."""
    sh, sw = alpha.shape
    corners = _apply(A, np.array([[0, 0], [sw, 0], [sw, sh], [0, sh]], np.float32))
    x0, y0 = np.floor(corners.min(0)).astype(int) - 2
    x1, y1 = np.ceil(corners.max(0)).astype(int) + 2
    H, W = canvas.shape[:2]
    x0c, y0c, x1c, y1c = max(x0, 0), max(y0, 0), min(x1, W), min(y1, H)
    if x1c <= x0c or y1c <= y0c:
        return
    Ar = A.copy()
    Ar[:, 2] -= (x0c, y0c)
    size = (x1c - x0c, y1c - y0c)
    wi = cv2.warpAffine(img, Ar, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    wa = cv2.warpAffine(alpha, Ar, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    roi = canvas[y0c:y1c, x0c:x1c].astype(np.float32)
    roi = roi * (1 - wa[..., None]) + wi * wa[..., None]
    canvas[y0c:y1c, x0c:x1c] = np.clip(roi, 0, 255).astype(np.uint8)


def _circle_pts(cx, cy, r, n=16):
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.stack([cx + r * np.cos(t), cy + r * np.sin(t)], 1).astype(np.float32)


def _compose(rng, st: D.TileStyle, tiles: list, canvas: np.ndarray, down: np.ndarray,
             tilt: float, occluders: list, H: np.ndarray, out_size, effects: float = 1.0,
             shadow: bool = True, bare: list | None = None):
    """Draw tiles and occluders on the canvas, warp to the output, apply camera effects.

    ``bare``: a list to which the same picture without the tiles and their shadows is
    appended (the occluders, the warp and the camera effects with the same random draws);
    the picture with the tiles and every draw of ``rng`` are what they are without it.

    Returns (image uint8, list[SceneTile]).
    """
    ch, cw = canvas.shape[:2]
    bare_canvas = canvas.copy() if bare is not None else None
    out_w, out_h = out_size
    light = rng.normal(0, 1, 2)
    light /= np.linalg.norm(light) + 1e-9
    thick_frac = rng.uniform(0.28, 0.5)
    side_k = 0.04 + math.sin(math.radians(tilt)) * 0.9
    sprites = []
    # painter's order: far (small along "down") first
    order = sorted(range(len(tiles)), key=lambda i: tiles[i].cx * down[0] + tiles[i].cy * down[1])
    # shadows of everything at once
    if shadow:
        smask = np.zeros((ch, cw), np.uint8)
        sv = rng.normal(0, 1, 2)
        sv = sv / (np.linalg.norm(sv) + 1e-9) * rng.uniform(0.05, 0.3)
    dirt = rng.uniform(0, 1) if rng.random() < 0.5 else 0.0
    for i in order:
        t = tiles[i]
        sw = int(np.clip(round(t.w * 1.4), 12, 220))
        sh = int(round(sw * st.aspect))
        outline = D.rounded_outline(sw, sh, st.corner)
        tv = down * thick_frac * t.w * side_k
        if shadow:
            A = _affine(t, sw, sh, -tv * (t.levels - 1))
            o = _apply(A, outline) + sv * t.w * (t.levels + 0.5)
            o2 = _apply(A, outline)
            cv2.fillConvexPoly(smask, np.round(np.vstack([o, o2 + tv * t.levels])).astype(np.int32), 255,
                               cv2.LINE_AA)
        sprites.append((i, sw, sh, outline, tv))
    if shadow:
        k = max(3.0, float(np.median([t.w for t in tiles])) * 0.25) if tiles else 3.0
        small = cv2.resize(smask, (max(1, cw // 4), max(1, ch // 4)), interpolation=cv2.INTER_AREA)
        small = cv2.GaussianBlur(small, (0, 0), max(0.8, k / 4))
        sm = cv2.resize(small, (cw, ch), interpolation=cv2.INTER_LINEAR)
        sm = (sm.astype(np.float32) * np.float32(rng.uniform(0.25, 0.6) / 255.0))
        canvas[:] = (canvas * (1 - sm[..., None])).astype(np.uint8)
    side_col = np.array(st.side, np.float32)
    back_col = np.array(st.back, np.float32)
    result = []
    for (i, sw, sh, outline, tv) in sprites:
        t = tiles[i]
        # body / thickness, bottom layer first
        for lev in range(t.levels):
            A = _affine(t, sw, sh, -tv * lev)
            o = _apply(A, outline)
            hull = cv2.convexHull(np.vstack([o, o + tv]).astype(np.float32))
            col = side_col if not st.two_layer else back_col
            shade = 0.7 + 0.3 * max(0.0, float(-(down @ light)))
            cv2.fillConvexPoly(canvas, np.round(hull * 4).astype(np.int32),
                               tuple(float(v) for v in col * shade), cv2.LINE_AA, 2)
            if st.two_layer:  # face layer on top of the coloured back
                hull2 = cv2.convexHull(np.vstack([o, o + tv * 0.45]).astype(np.float32))
                cv2.fillConvexPoly(canvas, np.round(hull2 * 4).astype(np.int32),
                                   tuple(float(v) for v in side_col * shade), cv2.LINE_AA, 2)
            if t.levels > 1:
                cv2.polylines(canvas, [np.round((o + tv) * 4).astype(np.int32)], True,
                              tuple(float(v) for v in col * 0.4), 1, cv2.LINE_AA, 2)
        lift = -tv * (t.levels - 1)
        A = _affine(t, sw, sh, lift)
        # light direction in sprite coordinates
        ca, sa = math.cos(-t.angle), math.sin(-t.angle)
        ls = np.array([ca * light[0] - sa * light[1], sa * light[0] + ca * light[1]])
        if t.face is not None:
            img, alpha, spots = D.render_face_sprite(t.halves[0], t.halves[1], st, sw, rng, ls,
                                                     t.long33, dirt)
        else:
            img, alpha = D.render_back_sprite(st, sw, rng, ls)
            spots = []
        _blend(canvas, img, alpha, A)
        poly_c = _apply(A, np.array([[0, 0], [sw, 0], [sw, sh], [0, sh]], np.float32))
        spots_c = [(_apply(A, _circle_pts(cx, cy, r)), cls) for (cx, cy, r, cls) in spots]
        result.append((i, poly_c, spots_c))
    # occluders
    occ = np.zeros((ch, cw), np.uint8)
    for fn in occluders:
        fn(canvas, occ)
    # warp to output
    image = cv2.warpPerspective(canvas, H, (out_w, out_h), flags=cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_REFLECT)
    if bare is not None:
        import copy

        rng_fx = copy.deepcopy(rng)  # the effects' draws, the same for both pictures
        for fn in occluders:  # each occluder draws from its own seed: the same again
            fn(bare_canvas, np.zeros_like(occ))
        empty = cv2.warpPerspective(bare_canvas, H, (out_w, out_h), flags=cv2.INTER_LINEAR,
                                    borderMode=cv2.BORDER_REFLECT)
        bare.append(S.camera_effects(empty, rng_fx, effects) if effects > 0 else empty)
    if effects > 0:
        image = S.camera_effects(image, rng, effects)
    # labels
    scene_tiles = []
    frame = np.array([[0, 0], [out_w, 0], [out_w, out_h], [0, out_h]], np.float32)
    for (i, poly_c, spots_c) in sorted(result, key=lambda r: r[0]):
        t = tiles[i]
        poly_o = cv2.perspectiveTransform(poly_c[None], H)[0]
        # occluded fraction on the canvas
        x0, y0 = np.maximum(np.floor(poly_c.min(0)).astype(int), 0)
        x1, y1 = np.minimum(np.ceil(poly_c.max(0)).astype(int) + 1, (cw, ch))
        vis = 1.0
        if x1 > x0 and y1 > y0:
            m = np.zeros((y1 - y0, x1 - x0), np.uint8)
            cv2.fillConvexPoly(m, np.round(poly_c - (x0, y0)).astype(np.int32), 1)
            area = max(int(m.sum()), 1)
            hidden = int((occ[y0:y1, x0:x1] > 0)[m > 0].sum())
            vis = 1.0 - hidden / area
        # inside-frame fraction
        area_o = abs(cv2.contourArea(poly_o))
        inter, ipoly = convex_intersection(poly_o, frame)
        inside = inter / max(area_o, 1e-6)
        vis_total = vis * inside
        labelled = vis_total >= 0.6
        polygon = poly_o
        if labelled and inside < 0.999 and ipoly is not None and len(ipoly) >= 3:
            rect = cv2.minAreaRect(ipoly.reshape(-1, 2))
            polygon = cv2.boxPoints(rect).astype(np.float32)
            polygon[:, 0] = np.clip(polygon[:, 0], 0, out_w)
            polygon[:, 1] = np.clip(polygon[:, 1], 0, out_h)
        spots_o = []
        for (pts_c, cls) in spots_c:
            pts_o = cv2.perspectiveTransform(pts_c[None], H)[0]
            c = pts_c.mean(0)
            r = float(np.linalg.norm(pts_c[0] - c))
            samp = [c] + [c + r * 0.6 * np.array([math.cos(a), math.sin(a)]) for a in
                          np.linspace(0, 2 * math.pi, 8, endpoint=False)]
            hid = 0
            for s in samp:
                xi, yi = int(s[0]), int(s[1])
                if 0 <= xi < cw and 0 <= yi < ch and occ[yi, xi]:
                    hid += 1
            co = pts_o.mean(0)
            in_frame = 0 <= co[0] < out_w and 0 <= co[1] < out_h
            spots_o.append((pts_o, int(cls), hid / len(samp) <= 0.5 and in_frame))
        scene_tiles.append(SceneTile(
            face=t.face, state="face_up" if t.face is not None else "face_down",
            polygon=polygon.astype(np.float32), position=t.position, hand=t.hand,
            labelled=bool(labelled), visible=float(vis_total),
            layout="long" if t.long33 else "standard", spots=spots_o))
    return image, scene_tiles


# ----------------------------------------------------------------------------------------------
# Scenes

def _layout_dict(H, tiles, seed) -> dict:
    """One quadrilateral per position enclosing its 4 tiles with margin, shrunk until no two
    overlap (image px)."""
    groups = _position_groups(tiles)
    margin = {p: 0.6 for p in groups}

    def quad(p):
        return cv2.perspectiveTransform(_group_rect(groups[p], margin[p])[None], H)[0]

    for _ in range(12):
        changed = False
        names = list(groups)
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                a, b = quad(names[i]), quad(names[j])
                area, _ = convex_intersection(a, b)
                if area > 0:
                    margin[names[i]] *= 0.6
                    margin[names[j]] *= 0.6
                    changed = True
        if not changed:
            break
    return {"table_id": f"synth-{seed}", "rules": "pa", "commission": "0.05",
            "positions": {p: [[round(float(x), 1), round(float(y), 1)] for x, y in quad(p)]
                          for p in POSITIONS if p in groups}}


def _position_groups(tiles) -> dict[str, list]:
    """Position -> its laid tiles (tiles without a position left out), in tile order."""
    groups: dict[str, list] = {}
    for t in tiles:
        if t.position is not None:
            groups.setdefault(t.position, []).append(t)
    return groups


def _group_rect(ts, margin):
    """float32 (4, 2) corners (table-plane px) of the tiles' minimum-area rectangle grown by
    ``margin`` x the first tile's width on every side."""
    pts = []
    for t in ts:
        L = t.w * t.aspect
        ca, sa = math.cos(t.angle), math.sin(t.angle)
        for dx, dy in ((-t.w / 2, -L / 2), (t.w / 2, -L / 2), (t.w / 2, L / 2), (-t.w / 2, L / 2)):
            pts.append((t.cx + dx * ca - dy * sa, t.cy + dx * sa + dy * ca))
    (c, (rw, rh), a) = cv2.minAreaRect(np.array(pts, np.float32))
    m = margin * ts[0].w
    return cv2.boxPoints((c, (rw + 2 * m, rh + 2 * m), a)).astype(np.float32)


def _groups_overlap(tiles, margin) -> bool:
    """True when two positions' rectangles (tiles + margin x tile width) intersect."""
    rects = [_group_rect(ts, margin) for ts in _position_groups(tiles).values()]
    for i in range(len(rects)):
        for j in range(i + 1, len(rects)):
            if convex_intersection(rects[i], rects[j])[0] > 0:
                return True
    return False


def _scatter_tiles(rng, H, out_w, out_h, w, st, long33) -> list:
    """4-14 loose tiles scattered or in short chains (end to end or side by side), like
    photos of tiles on a table; faces from one set (western styles may show blanks)."""
    Hinv = np.linalg.inv(H)
    L = w * st.aspect
    pool = [t.face for t in STANDARD_SET]
    order = list(rng.permutation(len(pool)))
    n = int(rng.integers(4, 15))
    tiles: list[_Tile] = []
    placed = np.zeros((0, 2))
    tries = 0
    while len(tiles) < n and tries < 60 and order:
        tries += 1
        p = np.array([rng.uniform(0.08, 0.92) * out_w, rng.uniform(0.08, 0.92) * out_h], np.float32)
        c = cv2.perspectiveTransform(p[None, None], Hinv)[0, 0]
        ang = rng.uniform(0, 2 * math.pi)
        chain = int(rng.integers(1, 4)) if rng.random() < 0.5 else 1
        side = rng.random() < 0.5
        step = (w if side else L) + rng.uniform(0, 0.06) * w
        d = np.array([math.cos(ang), math.sin(ang)]) if side else np.array([-math.sin(ang), math.cos(ang)])
        cents = [c + d * step * k for k in range(chain)]
        if len(placed) and min(np.min(np.linalg.norm(placed - q, axis=1)) for q in cents) < L * 1.15:
            continue
        for q in cents:
            if not order:
                break
            f = pool[order.pop()]
            lo, hi = (int(v) for v in f.split("-"))
            if st.western and rng.random() < 0.6:
                lo, hi = sorted((int(rng.integers(0, 7)), int(rng.integers(0, 7))))
                f = f"{lo}-{hi}"
            halves = (lo, hi) if rng.random() < 0.5 else (hi, lo)
            face = f if rng.random() < 0.9 else None
            tiles.append(_Tile(face, halves, float(q[0]), float(q[1]), ang + rng.normal(0, 0.03), w,
                               long33=long33 and f == "3-3" and not st.western))
            placed = np.vstack([placed, q[None]])
    return tiles


def render_scene(seed: int, size=(1280, 720), mode: str = "train", style: str | None = None,
                 deal: dict | None = None, tile_long=None, touching: float = 0.0,
                 square_blocks: float = 0.0, threes_one_way: bool = False,
                 empty: bool = False) -> TableScene:
    """Render one table scene.

    Args:
        seed: scene seed (numpy Generator).
        size: output ``(width, height)`` px.
        mode: "table" (render_table: full table, every tile face up and unoccluded, mild
            tilt), "scatter" (4-14 loose tiles, larger, like photos of tiles on a table),
            "train" (tile-model frames: partial or full tables, zoom, face-down tiles,
            woodpile, occluders, up to ~40 degrees tilt) or "pips" (like train but larger
            tiles, for pip crops).
        style: tile style ("black", "ivory", "other", "western") or None for random.
        deal: position -> 4 faces (validated) or None for a random valid deal.
        tile_long: tile long side in output px at the image centre (None: random by mode).
        touching: probability in [0, 1] that a position lies at any angle with flush-touching
            hands (drawn from a second generator: 0 renders every old seed unchanged).
        square_blocks: probability in [0, 1] that the scene's tiles are exactly twice as long
            as wide, so that a hand laid flush and level is a square of four equal halves --
            the block a crosswise box cuts into two tile-shaped halves (drawn from a third
            generator: 0 renders every old seed, touching or not, unchanged). With
            ``touching``, the flush hands become such squares at every angle: the
            lengthwise labels teach the model the cut, and a crosswise box is a false
            positive there (hard negatives).
        threes_one_way: every 3 of the scene runs one way (drawn from a fourth generator),
            as a real set draws the 3 of its tiles (docs/rules.md section 5); False: each 3
            either way at random, as before. Every other draw of the scene is unchanged.
        empty: ``mode="table"``: also the same table without its tiles
            (:attr:`TableScene.empty`); the scene itself is unchanged.

    Returns:
        :class:`TableScene`.
    """
    rng = np.random.default_rng(seed)
    rng_touch = np.random.default_rng([seed, 91]) if touching > 0 else None
    out_w, out_h = int(size[0]), int(size[1])
    if style is None and mode == "table":
        style = str(rng.choice(["black", "ivory", "other"], p=[0.65, 0.25, 0.10]))
    st = D.random_style(rng, style)
    if square_blocks > 0 and np.random.default_rng([seed, 92]).random() < square_blocks:
        st.aspect = 2.0  # flush, level hands: squares of four halves
    if threes_one_way:
        st.extra["three_way"] = 1 if np.random.default_rng([seed, 93]).random() < 0.5 else -1
    full = mode == "table"
    scale = out_w / 1920.0
    if tile_long is None:
        if full:
            tile_long = rng.uniform(80, 100) * scale
        elif mode == "pips":
            tile_long = rng.uniform(55, 240)  # absolute px: like a part of a 1920 frame
        elif mode == "scatter":
            tile_long = math.exp(rng.uniform(math.log(70), math.log(320))) * out_w / 1280
        else:
            tile_long = math.exp(rng.uniform(math.log(60), math.log(200))) * scale
    w = tile_long / st.aspect
    H, cw, ch, origin, down, tilt = camera_homography(
        rng, out_w, out_h, max_tilt=25 if full else 40, max_roll=4 if full else 12,
        yaw=rng.normal(0, 3) if full else (rng.uniform(-25, 25) if rng.random() < 0.75
                                           else rng.uniform(-180, 180)))
    if deal is None:
        deal = random_deal(rng)
    else:
        deal = check_deal(deal)
    long33 = rng.random() < 0.4
    if mode == "scatter":
        tiles = _scatter_tiles(rng, H, out_w, out_h, w, st, long33)
    else:
        base_long = 90 * scale
        zoom = max(1.0, tile_long / base_long)
        spread = 1.0 if full else rng.uniform(0.9, 1.1)
        face_deal = dict(deal)
        if not full:
            # empty seats and unrevealed (face-down) positions
            for p in POSITIONS[1:]:
                if rng.random() < 0.15:
                    face_deal.pop(p, None)
        arrangement = None if not full else ("row" if rng.random() < 0.7 else "column")
        for _try in range(8):
            tiles = _table_layout(rng, origin, out_w, out_h, w, 1.0, face_deal, long33, arrangement,
                                  spread, st.aspect, touching, rng_touch)
            if not full or not _groups_overlap(tiles, 0.3):
                break
            w *= 0.9  # positions too crowded for this tile size: smaller tiles
        if not full:
            # zoom: scale the layout about a random anchor so only part of the table is seen
            ax, ay = origin
            anchor = np.array([ax, ay])
            if zoom > 1.3:
                anchor = anchor + (rng.uniform(-0.4, 0.4) * out_w, rng.uniform(-0.35, 0.35) * out_h)
            # each position moves as a whole: its tiles keep their offsets from its centre, so
            # the tiles of a hand still touch (zooming every tile centre opened gaps of
            # (zoom - 1) tile widths inside the hands: the tile model rarely saw touching
            # tiles up close)
            centre = {}
            for t in tiles:
                if t.position:
                    centre.setdefault(t.position, []).append((t.cx, t.cy))
            centre = {p: np.mean(v, 0) for p, v in centre.items()}
            for t in tiles:
                px, py = centre[t.position] if t.position else (t.cx, t.cy)
                nx = ax + (px - ax) * zoom - (anchor[0] - ax) * (zoom - 1)
                ny = ay + (py - ay) * zoom - (anchor[1] - ay) * (zoom - 1)
                t.cx, t.cy = nx + (t.cx - px), ny + (t.cy - py)
                t.w = w
            # keep the canvas-visible tiles only
            tiles = [t for t in tiles
                     if -t.w * 3 < t.cx < cw + t.w * 3 and -t.w * 3 < t.cy < ch + t.w * 3]
            # face-down positions / single tiles
            if rng.random() < 0.35:
                present = sorted({t.position for t in tiles if t.position})
                posd = {p for p in present if rng.random() < 0.3}
                for t in tiles:
                    if t.position in posd:
                        t.face = None
            for t in tiles:
                if rng.random() < 0.04:
                    t.face = None
            # the woodpile: stacks of face-down tiles
            if rng.random() < 0.45:
                n_st = int(rng.integers(2, 9))
                levels = int(rng.integers(2, 5))
                ang = rng.normal(0, 0.15) + (math.pi / 2 if rng.random() < 0.3 else 0)
                px = origin[0] + rng.uniform(-0.45, 0.45) * out_w
                py = origin[1] + rng.uniform(-0.45, 0.0) * out_h
                gap = rng.uniform(0, 0.05) * w
                occupied = np.array([[t.cx, t.cy] for t in tiles]) if tiles else np.zeros((0, 2))
                new = []
                for k in range(n_st):
                    off = (k - (n_st - 1) / 2) * (w + gap)
                    cx = px + off * math.cos(ang)
                    cy = py + off * math.sin(ang)
                    new.append(_Tile(None, (0, 0), cx, cy, ang, w, levels=levels))
                if len(occupied) == 0 or all(
                        np.min(np.linalg.norm(occupied - (n.cx, n.cy), axis=1)) > w * 3 for n in new):
                    tiles += new
            # loose scattered tiles
            if rng.random() < 0.25:
                faces_used = [t.face for t in tiles if t.face]
                pool = [f.face for f in STANDARD_SET]
                for f in faces_used:
                    if f in pool:
                        pool.remove(f)
                occupied = np.array([[t.cx, t.cy] for t in tiles]) if tiles else np.zeros((0, 2))
                for _ in range(int(rng.integers(1, 5))):
                    if not pool:
                        break
                    p = np.array([rng.uniform(0, cw), rng.uniform(0, ch)])
                    if len(occupied) and np.min(np.linalg.norm(occupied - p, axis=1)) < w * 3:
                        continue
                    f = pool.pop(int(rng.integers(len(pool))))
                    lo, hi = (int(v) for v in f.split("-"))
                    tiles.append(_Tile(f if rng.random() < 0.8 else None, (lo, hi), p[0], p[1],
                                       rng.uniform(0, 2 * math.pi), w, long33=long33 and f == "3-3"))
                    occupied = np.vstack([occupied, p])
            if st.western:
                # western dominoes: faces with blanks too (0..6 halves)
                for t in tiles:
                    if t.face is not None and rng.random() < 0.5:
                        a, b = int(rng.integers(0, 7)), int(rng.integers(0, 7))
                        t.halves = (a, b)
                        t.face = f"{min(a, b)}-{max(a, b)}"
                        t.long33 = False
    background = S.felt_background(rng, cw, ch, "felt" if full else None)
    if not full and st.extra.get("flat") and st.extra.get("flat_bg", 1.0) < 0.25:
        background[:] = int(rng.uniform(0, 14))  # black tiles on black: no visible edge
    occ = S.occluders(rng, cw, ch, tiles, n_chips=int(rng.integers(0, 8)),
                     n_cards=int(rng.integers(0, 3)) if not full else 0,
                     n_hands=(int(rng.random() < 0.3) + int(rng.random() < 0.1)) if not full else 0,
                     avoid_tiles=full or rng.random() < 0.5)
    bare: list | None = [] if empty else None
    image, stiles = _compose(rng, st, tiles, background, down, tilt, occ, H, (out_w, out_h),
                             effects=rng.uniform(0.3, 0.8) if full else rng.uniform(0.4, 1.0),
                             bare=bare)
    layout = _layout_dict(H, tiles, seed) if full else {
        "table_id": f"synth-{seed}", "rules": "pa", "commission": "0.05", "positions": {}}
    out_deal = {p: deal[p] for p in POSITIONS if p in deal} if full else {}
    return TableScene(image=image, tiles=stiles, layout=layout, deal=out_deal, style=st.name,
                      kind="table", empty=bare[0] if bare else None)


def render_table(seed: int, size=(1920, 1080), deal: dict[str, list[str]] | None = None,
                 style: str | None = None, empty: bool = False) -> TableScene:
    """Render a full pai gow table: dealer + 7 seats, 32 face-up tiles from one set, each
    position's 4 tiles laid as two hands of two tiles lying together; positions around an arc
    with the dealer at the top centre (seat 1 at the image right ... seat 7 at the left).

    Args:
        seed: int; same seed -> identical image bytes. Seeds >= 1_000_000 are the held-out
            range for tests / E2E.
        size: ``(width, height)`` of the image in px (tile long side about 80-100 px at 1920
            wide, scaled with the width).
        deal: position -> 4 faces ("low-high"; the first two are hand 0, the last two hand 1),
            or None for a random valid deal from one 32-tile set.
        style: "black" | "ivory" | "other" | "western" | None (random).
        empty: also render the same table without its tiles (:attr:`TableScene.empty`: the
            felt and its lettering as an empty table shows them, e.g. a live benchmark's
            cleared table); the table with its tiles is the same either way.

    Returns:
        :class:`TableScene` with ``image`` (H, W, 3) uint8 BGR, 32 :class:`SceneTile`, the
        layout dict (one polygon per position, no overlaps) and the deal.

    Raises:
        InputError: a bad deal (unknown position or face, a face more often than the set
            holds) or style.
    """
    if style is not None and style not in ("black", "ivory", "other", "western"):
        raise InputError(f"unknown tile style {style!r} (black, ivory, other, western)")
    if size is None or len(size) != 2 or int(size[0]) < 64 or int(size[1]) < 64:
        raise InputError(f"bad image size {size!r} (width, height >= 64)")
    return render_scene(seed, size, mode="table", style=style, deal=deal, empty=empty)


def render_closeup(seed: int, style: str | None = None, n_tiles: int | None = None,
                   catalogue: float = 0.0) -> TableScene:
    """A close-up: one to three tiles filling 40-100% of a small image (about 50-600 px a
    side), straight on or slightly rotated, on a flat / white / checker / cloth / felt / wood
    background (like single-tile product photos and renders).

    Args:
        seed: scene seed.
        style: tile style name (None: random).
        n_tiles: 1-3 (None: random).
        catalogue: probability (0-1) of a "catalogue" picture: one tile filling 90-100% of
            each side, the picture's edge at or just outside the tile's (a single-tile drawing
            or a cut-out product photo). 0 keeps the renders of earlier data sets unchanged.
    """
    rng = np.random.default_rng(seed)
    st = D.random_style(rng, style)
    n = n_tiles or int(rng.choice([1, 2, 3], p=[0.6, 0.25, 0.15]))
    L = math.exp(rng.uniform(math.log(60), math.log(420)))
    w = L / st.aspect
    horizontal = rng.random() < 0.2
    gap = rng.uniform(0, 0.4) * w if rng.random() < 0.6 else 0.0
    gw, gh = n * w + (n - 1) * gap, L
    fill = rng.uniform(0.4, 1.0, 2)
    # catalogue pictures: the picture is the tile (a drawing or a cut-out photo, as in
    # ../shared/realdata); drawn from a second generator so the other draws keep their values
    rng_cat = np.random.default_rng([seed, 7, 1])
    if rng_cat.random() < catalogue:
        n, gap = 1, 0.0
        gw = w
        fill = rng_cat.uniform(0.9, 1.0, 2)
    iw, ih = max(int(gw / fill[0]), int(gw) + 2), max(int(gh / fill[1]), int(gh) + 2)
    if horizontal:
        iw, ih = ih, iw
    out_w, out_h = iw, ih
    bg = S.felt_background(rng, out_w + 8, out_h + 8,
                           str(rng.choice(["flat", "felt", "cloth", "wood"], p=[0.55, 0.2, 0.15, 0.1])))
    flat = bool(st.extra.get("flat"))
    if flat:
        fb = st.extra.get("flat_bg", 1.0)
        if fb < 0.3:  # black on black: the tile edge is invisible
            bg[:] = 0 if rng.random() < 0.7 else int(rng.uniform(0, 14))
        elif fb < 0.6:  # a transparent drawing composited on grey
            bg[:] = int(rng.uniform(110, 150)) if rng.random() < 0.5 else 128
    H = np.array([[1, 0, -4], [0, 1, -4], [0, 0, 1]], np.float64)
    rot = rng.normal(0, math.radians(4)) if rng.random() < 0.5 else 0.0
    if rng.random() < 0.15:
        rot = rng.uniform(-0.35, 0.35)
    base = math.pi / 2 if horizontal else 0.0
    cx0, cy0 = 4 + out_w / 2 + rng.normal(0, 0.02) * out_w, 4 + out_h / 2 + rng.normal(0, 0.02) * out_h
    deal_faces = [STANDARD_SET[i].face for i in rng.permutation(32)[:n]]
    long33 = rng.random() < 0.4
    tiles = []
    for k, f in enumerate(deal_faces):
        off = (k - (n - 1) / 2) * (w + gap)
        ang = base + rot
        cx = cx0 + off * math.cos(ang)
        cy = cy0 + off * math.sin(ang)
        lo, hi = (int(v) for v in f.split("-"))
        if st.western and rng.random() < 0.5:  # western dominoes have blanks
            lo, hi = sorted((int(rng.integers(0, 7)), int(rng.integers(0, 7))))
            f = f"{lo}-{hi}"
        halves = (lo, hi) if rng.random() < 0.5 else (hi, lo)
        face = f if rng.random() < 0.93 else None
        tiles.append(_Tile(face, halves, cx, cy, ang + (math.pi if rng.random() < 0.3 else 0), w,
                           long33=long33 and f == "3-3"))
    # keep the tiles inside the image (shrink if rotation pushed them out)
    image, stiles = _compose(rng, st, tiles, bg, np.array([0.0, 1.0]), rng.uniform(0, 20), [], H,
                             (out_w, out_h),
                             effects=0.0 if rng.random() < (0.6 if flat else 0.3) else rng.uniform(0.1, 0.6),
                             shadow=rng.random() < (0.15 if flat else 0.5))
    return TableScene(image=image, tiles=stiles, layout={"table_id": f"synth-{seed}", "rules": "pa",
                      "commission": "0.05", "positions": {}}, deal={}, style=st.name, kind="closeup")
