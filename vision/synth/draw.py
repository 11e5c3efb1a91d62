"""Drawing primitives of the synthetic renderer (:mod:`vision.synth.render`): tile styles, spots and
tile sprites (table backgrounds, distractors and camera effects: :mod:`vision.synth.scenery`).

Everything is numpy + OpenCV drawing, deterministic given a ``numpy.random.Generator``.
Images are uint8 BGR unless a docstring says float32 (0..255 range). Sprite coordinates are
pixels of the tile sprite: x across the tile's short side (0..sw), y along its long side
(0..sh); the sprite's rectangle is the tile outline used for labels.

No pixels of any real image are used; appearance parameters were chosen by eye against the
descriptions in ``../shared/realdata/README.md`` (black casino tiles with engraved red/white
spots, ivory tiles with black/red spots, rounded corners, glare).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

# ----------------------------------------------------------------------------------------------
# Tile styles

RED, WHITE = 0, 1  # pip classes of the pip model (pip_red, pip_white)


@dataclass
class TileStyle:
    """Appearance of one tile set (all tiles of a scene usually share one).

    Colours are BGR float tuples 0..255. ``spot_r``: spot radius as a fraction of tile width;
    ``big_r``: radius of the single spot of a 1 half; ``depth``: engraved inner-shadow strength
    0..1; ``gloss``: strength of the face's broad specular sheen; ``aspect``: length / width.
    """

    name: str
    face: tuple
    side: tuple
    back: tuple
    red: tuple
    white: tuple
    spot_r: float
    big_r: float
    depth: float
    gloss: float
    spec: float
    aspect: float
    corner: float
    bevel: float
    divider: int  # 0 none, 1 engraved line, 2 thin light line
    back_pattern: int  # 0 plain, 1 circle, 2 lines, 3 diamond, 4 dots
    two_layer: bool
    col_s: float  # half distance between spot columns, fraction of width
    row_t: float  # row step inside a half, fraction of width
    two_style: int  # 0 horizontal pair, 1 diagonal, 2 vertical
    teen_style: int  # 0 usual (top-left / bottom-right columns red), 1 mirrored
    one_shift: float  # shift of the single spot toward the tile end (fraction of width)
    western: bool = False
    extra: dict = field(default_factory=dict)


def _hsv2bgr(h, s, v) -> tuple:
    px = np.uint8([[[int(h) % 180, int(np.clip(s, 0, 255)), int(np.clip(v, 0, 255))]]])
    return tuple(float(c) for c in cv2.cvtColor(px, cv2.COLOR_HSV2BGR)[0, 0])


def random_red(rng: np.random.Generator) -> tuple:
    """A spot red from orange-red through crimson to pink (BGR floats)."""
    h = rng.uniform(-12, 7) % 180
    s = rng.uniform(140, 255)
    v = rng.uniform(140, 255)
    if rng.random() < 0.15:  # pinkish
        s = rng.uniform(90, 160)
        v = rng.uniform(200, 255)
        h = rng.uniform(-14, 0) % 180
    return _hsv2bgr(h, s, v)


def _multi_palette(rng: np.random.Generator) -> dict:
    """Per-number spot colours of a multi-coloured western set: value -> (BGR, is_red)."""
    cols = [((25, 25, 25), False), ((170, 60, 20), False), ((40, 130, 30), False),
            ((40, 40, 200), True), ((30, 120, 230), False), ((130, 40, 110), False),
            ((30, 70, 110), False), ((160, 140, 20), False)]
    idx = rng.permutation(len(cols))
    return {v: cols[idx[v % len(cols)]] for v in range(7)}


def random_style(rng: np.random.Generator, kind: str | None = None) -> TileStyle:
    """Draw a tile set's appearance.

    Args:
        kind: "black" (casino tiles, white/red spots), "ivory" (bone/ivory, dark/red spots),
            "other" (coloured tiles), "western" (western-style dominoes, non-red spots) or None
            (random: 55% black, 25% ivory, 12% other, 8% western).

    Returns:
        :class:`TileStyle`.
    """
    if kind is None:
        kind = rng.choice(["black", "ivory", "other", "western"], p=[0.55, 0.25, 0.12, 0.08])
    kind = str(kind)
    two_layer = False
    if kind == "black":
        g = rng.uniform(8, 45)
        tint = rng.normal(0, 4, 3)
        face = tuple(np.clip(g + tint, 0, 255))
        side = tuple(np.clip(np.array(face) * rng.uniform(0.8, 1.6) + rng.uniform(0, 25), 0, 255))
        back = face if rng.random() < 0.8 else tuple(np.clip(np.array(face) + rng.uniform(5, 30), 0, 255))
        wv = rng.uniform(185, 255)
        cream = rng.uniform(0, 35) if rng.random() < 0.5 else 0.0
        white = (wv - cream * 1.2, wv - cream * 0.4, wv)
        red = random_red(rng)
    elif kind == "ivory":
        base = np.array([rng.uniform(170, 235), rng.uniform(200, 245), rng.uniform(215, 252)])
        face = tuple(base)
        side = tuple(base * rng.uniform(0.75, 0.95))
        two_layer = rng.random() < 0.45
        if two_layer:  # bone face over a coloured (often green or dark) back
            back = (tuple(np.array(_hsv2bgr(rng.uniform(40, 80), rng.uniform(120, 230), rng.uniform(60, 150))))
                    if rng.random() < 0.6 else tuple(rng.uniform(20, 120, 3)))
        else:
            back = face
        dark = rng.random()
        if dark < 0.6:
            white = tuple(rng.uniform(10, 50, 3))
        elif dark < 0.8:
            white = _hsv2bgr(rng.uniform(100, 125), rng.uniform(150, 255), rng.uniform(60, 140))
        else:
            white = _hsv2bgr(rng.uniform(50, 90), rng.uniform(150, 255), rng.uniform(50, 120))
        red = random_red(rng)
    elif kind == "other":
        face = _hsv2bgr(rng.uniform(0, 180), rng.uniform(80, 255), rng.uniform(40, 160))
        side = tuple(np.array(face) * rng.uniform(0.7, 1.2))
        back = face
        wv = rng.uniform(200, 255)
        white = (wv - rng.uniform(0, 30), wv - rng.uniform(0, 15), wv)
        red = random_red(rng)
    elif kind == "western":
        if rng.random() < 0.6:
            face = tuple(np.array([rng.uniform(175, 235), rng.uniform(200, 245), rng.uniform(215, 252)]))
            white = tuple(rng.uniform(5, 60, 3)) if rng.random() < 0.7 else _hsv2bgr(
                rng.uniform(90, 130), 200, rng.uniform(80, 200))
        else:
            face = _hsv2bgr(rng.uniform(0, 180), rng.uniform(60, 230), rng.uniform(60, 240))
            white = _hsv2bgr(rng.uniform(15, 35), rng.uniform(120, 255), rng.uniform(180, 255)) if \
                rng.random() < 0.5 else (245.0, 245.0, 245.0)
        side = tuple(np.array(face) * rng.uniform(0.7, 0.95))
        back = face
        red = random_red(rng)
    else:
        raise ValueError(f"unknown tile style {kind!r}")
    spot_r = rng.uniform(0.08, 0.19) if rng.random() < 0.6 else rng.uniform(0.14, 0.2)
    st = TileStyle(
        name=kind, face=face, side=side, back=back, red=red, white=white,
        spot_r=spot_r, big_r=min(0.24, spot_r * rng.uniform(1.0, 1.7)),
        depth=rng.uniform(0.0, 0.9) if kind != "western" else rng.uniform(0, 0.4),
        gloss=rng.uniform(0.0, 0.35), spec=rng.uniform(0.0, 1.0),
        aspect=rng.uniform(1.9, 2.45), corner=rng.uniform(0.05, 0.2), bevel=rng.uniform(0.03, 0.1),
        divider=(int(rng.choice([0, 1, 2], p=[0.75, 0.15, 0.10])) if kind != "western"
                 else int(rng.choice([1, 2], p=[0.7, 0.3]))),
        back_pattern=int(rng.choice([0, 1, 2, 3, 4], p=[0.5, 0.15, 0.12, 0.13, 0.1])),
        two_layer=two_layer,
        col_s=rng.uniform(0.2, 0.3), row_t=rng.uniform(0.22, 0.36),
        # Chinese sets draw the 2 across the tile (every set in ../shared/realdata does); a
        # diagonal or lengthwise 2 is left to western tiles: the first is a 3 missing its centre,
        # the second what a shifted outline shows of a 3 (vision/recognition/decode.py reads both unknown).
        two_style=int(rng.choice([0, 1, 2], p=[1.0, 0.0, 0.0])),
        teen_style=int(rng.choice([0, 1], p=[0.85, 0.15])),
        one_shift=rng.uniform(0.0, 0.15) if rng.random() < 0.4 else 0.0,
        western=kind == "western",
        extra={"glare": rng.uniform(0.1, 0.5) if rng.random() < 0.2 else 0.0,
               "pin": rng.random() < 0.5,
               "two_shift": rng.uniform(0.0, 0.3) if rng.random() < 0.5 else 0.0,
               "multi": _multi_palette(rng) if kind == "western" and rng.random() < 0.35 else None},
    )
    _style_family(st, rng)
    return st


def _style_family(st: TileStyle, rng: np.random.Generator) -> None:
    """Widen a drawn style (in place) toward the appearances the base draw misses; the base
    style stays the majority (about 60% of all styles are left as drawn, apart from aspect).

    * long tiles: 25% of the other styles get aspect 2.45-2.9 (some drawn sets are that long).
    * "flat" drawing (black sets ~30%, other ~15%): flat discs without shading, glare or
      bevel, near-black face, spot radius up to 0.24 of the width with tight spacing (the
      layout is scaled from the radius so spots stay inside the half and never overlap), the
      1 and the 2 often at the tile's end row, sometimes a thin light outline; the scene
      code puts such tiles on a black or grey flat background now and then
      (``extra["flat_bg"]``), so the tile edge may be invisible.
    * "photo" (black sets ~17%): large glossy spots with a strong specular highlight and
      frequent glare, a light grey bevel rim (real casino tiles photographed).

    The family is recorded in ``st.extra["family"]`` ("base", "flat", "photo").
    """
    u = rng.random()
    fam = "base"
    if st.western:
        pass
    elif st.name == "black" and u < 0.30 or st.name == "other" and u < 0.15:
        fam = "flat"
    elif st.name == "black" and u < 0.47:
        fam = "photo"
    st.extra["family"] = fam
    if fam == "base":
        if rng.random() < 0.25:
            st.aspect = rng.uniform(2.45, 2.9)
        return
    if fam == "flat":
        st.aspect = rng.uniform(2.45, 2.9) if rng.random() < 0.6 else rng.uniform(1.9, 2.45)
        if st.name == "black":
            g = rng.uniform(0, 14) if rng.random() < 0.7 else 0.0
            st.face = (g, g, g)
            st.side = st.face
            st.back = st.face
        if rng.random() < 0.6:  # pure white / flat red spots
            st.white = (255.0, 255.0, 255.0) if rng.random() < 0.6 else tuple(
                float(v) for v in rng.uniform(225, 255, 3))
        st.spot_r = rng.uniform(0.16, 0.25)
        st.extra["pack"] = rng.uniform(0.44, 0.485)
        st.depth = 0.0
        st.gloss = 0.0
        st.spec = 0.0
        st.bevel = 0.0
        st.divider = 0
        st.two_layer = False
        st.corner = rng.uniform(0.03, 0.15)
        # tight spacing scaled from the radius: columns nearly touching, the outer rows at
        # the tile's end, the inner rows at the midline
        hl = st.aspect / 2
        m = rng.uniform(0.03, 0.09)
        # the largest radius whose three rows still fit a half at this packing
        st.spot_r = min(st.spot_r, st.extra["pack"] * (hl / 2 - m) / (1 + st.extra["pack"]))
        st.col_s = float(np.clip(st.spot_r / (2 * st.extra["pack"]) * rng.uniform(1.0, 1.1),
                                 0.2, 0.47 - st.spot_r))
        st.row_t = float(np.clip(0.5 - (st.spot_r + m) / hl, 0.22, 0.4))
        st.big_r = st.spot_r * rng.uniform(1.0, 1.1)  # fits the end row (m >= 0.03)
        if rng.random() < 0.6:  # the 1 and the 2 on the end row
            st.one_shift = st.row_t
            st.extra["two_shift"] = st.row_t
            st.two_style = 0
        st.extra["glare"] = 0.0
        st.extra["flat"] = True
        st.extra["outline"] = (float(rng.uniform(120, 230)) if rng.random() < 0.3 else 0.0)
        st.extra["flat_bg"] = float(rng.random())
        return
    # photo: real glossy spots, grey bevel rim
    if rng.random() < 0.5:
        st.aspect = rng.uniform(2.2, 2.9)
    st.spot_r = rng.uniform(0.15, 0.22)
    st.col_s = float(np.clip(st.spot_r / rng.uniform(0.8, 0.92), 0.2, 0.47 - st.spot_r))
    st.row_t = rng.uniform(0.26, 0.36)
    st.big_r = min(0.24, st.spot_r * rng.uniform(1.0, 1.25))
    st.spec = rng.uniform(0.8, 1.0)
    st.depth = rng.uniform(0.0, 0.6)
    st.bevel = rng.uniform(0.05, 0.12)
    st.extra["glare"] = rng.uniform(0.3, 0.8) if rng.random() < 0.6 else 0.0
    st.extra["rim_light"] = rng.uniform(30, 90) if rng.random() < 0.7 else 0.0
    st.extra["photo"] = True


# ----------------------------------------------------------------------------------------------
# Spot layouts

def half_layout(n: int, st: TileStyle, rng: np.random.Generator) -> list[tuple[float, float]]:
    """Spot centres of one half showing ``n`` (0..6) spots.

    Coordinates are in units of tile width: x in [0, 1] across the tile, y in [0, 1] from the
    tile's outer end (y=0) to the midline (y=1). Chinese layouts: 1 one big centred spot; 2 a
    horizontal pair (or diagonal / vertical by style); 3 a diagonal (either way at random, or
    one way where ``st.extra["three_way"]`` is +1 or -1); 4 a 2x2 square; 5 a 2x2
    square plus centre; 6 two columns of three. Western tiles use the die layout.
    """
    s, t = st.col_s, st.row_t
    c = 0.5
    if n == 0:
        return []
    if n == 1:
        return [(c, c - st.one_shift)]
    if n == 2:
        style = 1 if st.western else st.two_style
        if style == 0:  # a horizontal pair, centred or toward the tile's end
            y2 = c - min(st.extra.get("two_shift", 0.0), st.row_t)
            return [(c - s, y2), (c + s, y2)]
        if style == 1:
            return [(c - s, c + t), (c + s, c - t)] if rng.random() < 0.5 else [(c - s, c - t), (c + s, c + t)]
        return [(c, c - t), (c, c + t)]
    if n == 3:
        # a diagonal either way at random, or the style's one way (``extra["three_way"]``:
        # +1 top-left to bottom-right, -1 the other), as a real set draws it; the draw is
        # taken either way so that every later draw of the scene stays as it was
        u = rng.random()
        way = st.extra.get("three_way", -1 if u < 0.5 else 1)
        if way < 0:
            return [(c + s, c - t), (c, c), (c - s, c + t)]
        return [(c - s, c - t), (c, c), (c + s, c + t)]
    if n == 4:
        return [(c - s, c - t), (c + s, c - t), (c - s, c + t), (c + s, c + t)]
    if n == 5:
        return [(c - s, c - t), (c + s, c - t), (c, c), (c - s, c + t), (c + s, c + t)]
    if n == 6:
        return [(x, c + dy) for dy in (-t, 0.0, t) for x in (c - s, c + s)]
    raise ValueError(n)


def tile_spots(a: int, b: int, st: TileStyle, rng: np.random.Generator,
               long33: bool = False) -> list[tuple[float, float, float, int]]:
    """All spots of a tile with half ``a`` at the top end and half ``b`` at the bottom end.

    Returns:
        list of ``(x, y, r, cls)``: x, y in units of tile width (x 0..1, y 0..aspect), radius r
        in tile widths, cls 0 red / 1 white. Colour rule (casino tiles, scoring.tiles.Tile.red):
        halves showing 1 or 4 are red; 6-6 (Teen) has six red: in the usual style (as drawn
        by every Chinese set in ../shared/realdata) the left column of the top half and the
        right column of the bottom half; the alternative style mirrors it; everything else
        white. Western tiles: no red spots. ``long33``: the 3-3 in the long
        layout (two spots on the centre line of each half, a horizontal pair on the midline).
    """
    L = st.aspect
    r = st.spot_r
    out: list[tuple[float, float, float, int]] = []
    if long33 and a == 3 and b == 3:
        s = st.col_s
        y1 = rng.uniform(0.22, 0.3) * L / 2
        y2 = rng.uniform(0.55, 0.66) * L / 2
        rr = min(r, 0.45 * (y2 - y1), 0.45 * (L / 2 - y2), 0.9 * s)
        for (x, y) in [(0.5, y1), (0.5, y2), (0.5 - s, L / 2), (0.5 + s, L / 2),
                       (0.5, L - y2), (0.5, L - y1)]:
            out.append((x, y, rr, WHITE))
        return out
    hl = L / 2  # half length in widths (~1)
    # shrink radius so that spots of a 6 never touch
    # (``pack``: radius / spot spacing, below 0.5 so neighbours never overlap; flat drawings
    # pack their spots nearly touching)
    pack = st.extra.get("pack", 0.45) if st.extra else 0.45
    rr = min(r, pack * st.row_t * hl, pack * 2 * st.col_s, 0.5 - st.col_s - 0.03,
             (0.5 - st.row_t) * hl - 0.03)
    teen = (a, b) == (6, 6) and not st.western
    for half, n in ((0, a), (1, b)):
        pts = half_layout(n, st, rng)
        for k, (x, y) in enumerate(pts):
            yh = y * hl  # stretch the unit-square layout along the half's length
            if half == 0:
                px, py = x, yh
            else:  # bottom half: point-symmetric (rotated 180 degrees)
                px, py = 1.0 - x, L - yh
            if n == 1:
                rad = st.big_r
                cls = RED
            else:
                rad = rr
                cls = RED if n == 4 else WHITE
            if st.western:
                cls = WHITE
            if teen:
                # usual: left column of the top half and right column of the bottom half red;
                # alternative (teen_style 1): the mirror image (right top, left bottom)
                left = px < 0.5
                cls = RED if (left if st.teen_style == 0 else not left) == (half == 0) else WHITE
            out.append((px, py, rad, cls))
    return out


# ----------------------------------------------------------------------------------------------
# Tile sprites

def _rounded_sdf(w: int, h: int, rc: float) -> np.ndarray:
    """Signed distance (px, negative inside) to a w x h rounded rectangle with corner radius rc."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    qx = np.abs(xs + 0.5 - w / 2) - (w / 2 - rc)
    qy = np.abs(ys + 0.5 - h / 2) - (h / 2 - rc)
    ox = np.maximum(qx, 0)
    oy = np.maximum(qy, 0)
    return np.sqrt(ox * ox + oy * oy) + np.minimum(np.maximum(qx, qy), 0) - rc


def _face_base(sw: int, sh: int, colour: tuple, st: TileStyle, rng: np.random.Generator,
               light: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Blank tile surface (float32 sh x sw x 3) and its alpha (float32 sh x sw, 0..1)."""
    rc = max(1.0, st.corner * sw)
    d = _rounded_sdf(sw, sh, rc)
    alpha = np.clip(0.5 - d, 0, 1)
    img = np.empty((sh, sw, 3), np.float32)
    img[:] = colour
    if st.extra.get("flat"):  # a flat drawing: one colour, no gradient, sheen or bevel
        return img, alpha
    # broad gradient
    ys, xs = np.mgrid[0:sh, 0:sw].astype(np.float32)
    u = (xs / sw - 0.5) * light[0] + (ys / sh - 0.5) * light[1]
    lum = np.array(colour).mean()
    grad = rng.uniform(0.0, 0.25) * u
    img *= (1 + grad)[..., None]
    img += (rng.uniform(0, 12) * u)[..., None]
    # glossy sheen: a soft diagonal band (strong on dark tiles)
    if st.gloss > 0.02:
        ang = rng.uniform(0, np.pi)
        pos = rng.uniform(-0.4, 0.4)
        v = (xs / sw - 0.5) * np.cos(ang) + (ys / sh - 0.5) * np.sin(ang) * 2 - pos
        band = np.exp(-(v / rng.uniform(0.15, 0.5)) ** 2) * st.gloss * (255 - lum) * 0.5
        img += band[..., None]
    # bevel: brighten edges facing the light, darken the others
    b = max(1.0, st.bevel * sw)
    rim = np.clip(1 + d / b, 0, 1) * (alpha > 0)
    gy, gx = np.gradient(d)
    bevel = (gx * light[0] + gy * light[1]) * rim
    amp = rng.uniform(25, 70)
    img += (bevel * amp)[..., None]
    img -= (rim * rng.uniform(0, 20))[..., None]
    if st.extra.get("rim_light"):  # a light grey bevel rim (photographed casino tiles)
        img += (rim * st.extra["rim_light"])[..., None]
    return img, alpha


def _draw_spot(img: np.ndarray, cx: float, cy: float, R: float, col: tuple, st: TileStyle,
               light: np.ndarray, rng: np.random.Generator, face_lum: float) -> None:
    """Draw one engraved/painted spot into ``img`` (float32) in place."""
    h, w = img.shape[:2]
    x0, x1 = int(max(0, np.floor(cx - R - 2))), int(min(w, np.ceil(cx + R + 2)))
    y0, y1 = int(max(0, np.floor(cy - R - 2))), int(min(h, np.ceil(cy + R + 2)))
    if x1 <= x0 or y1 <= y0:
        return
    ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    dx = xs + 0.5 - cx
    dy = ys + 0.5 - cy
    dist = np.sqrt(dx * dx + dy * dy)
    a = np.clip(R - dist + 0.5, 0, 1)
    if not a.any():
        return
    rn = dist / max(R, 1e-3)
    col = np.array(col, np.float32) * rng.uniform(0.93, 1.05)
    c = np.broadcast_to(col, dx.shape + (3,)).copy()
    ud = (dx * light[0] + dy * light[1]) / np.maximum(dist, 1e-3)  # +1 toward the light
    depth = st.depth
    if st.extra.get("flat"):  # a flat disc: no shading, highlight or glare
        reg = img[y0:y1, x0:x1]
        reg[:] = reg * (1 - a[..., None]) + c * a[..., None]
        return
    if depth > 0:
        # engraved: the rim on the light side shades the inside; a dark ring all round
        sh_in = depth * np.clip(rn - 0.45, 0, 1) * np.clip(ud, 0, 1) * 1.3
        ring = depth * 0.5 * np.clip((rn - 0.78) / 0.22, 0, 1)
        c *= (1 - np.clip(sh_in + ring, 0, 0.85))[..., None]
        # opposite rim catches light
        c += (depth * 40 * np.clip(rn - 0.6, 0, 1) * np.clip(-ud, 0, 1))[..., None]
    else:
        # painted dome: lighter toward the light
        c *= (1 + 0.15 * ud * rn)[..., None]
    if st.spec > 0.05:
        # specular highlight (photo style: a strong, sharper reflection of the light)
        hx = cx + light[0] * R * 0.35 * (1 if depth <= 0 else -1)
        hy = cy + light[1] * R * 0.35 * (1 if depth <= 0 else -1)
        hr = R * rng.uniform(0.2, 0.45)
        hl = np.exp(-((xs + 0.5 - hx) ** 2 + (ys + 0.5 - hy) ** 2) / (2 * hr * hr))
        amp = st.spec * (rng.uniform(0.3, 1.0) if not st.extra.get("photo") else rng.uniform(0.8, 1.2))
        c += (hl * amp * (255 - c.mean(-1)))[..., None] * 0.8
    g = st.extra.get("glare", 0.0) if st.extra else 0.0
    if g > 0 and rng.random() < g:
        # strong glare: a large washed-out highlight (a red spot may look whitish)
        hx, hy = cx + rng.normal(0, 0.3) * R, cy + rng.normal(0, 0.3) * R
        hr = R * rng.uniform(0.5, 0.9)
        hl = np.exp(-((xs + 0.5 - hx) ** 2 + (ys + 0.5 - hy) ** 2) / (2 * hr * hr))
        c += (hl * rng.uniform(0.5, 0.85))[..., None] * (250 - c)
    reg = img[y0:y1, x0:x1]
    reg[:] = reg * (1 - a[..., None]) + c * a[..., None]


def render_face_sprite(a: int, b: int, st: TileStyle, sw: int, rng: np.random.Generator,
                       light: np.ndarray, long33: bool = False, dirt: float = 0.0
                       ) -> tuple[np.ndarray, np.ndarray, list]:
    """Render a face-up tile sprite.

    Args:
        a, b: half values (top end, bottom end), 0..6 (0 only for western tiles).
        sw: sprite width in px (height = round(sw * aspect)).
        light: unit 2-vector, direction toward the light in sprite coordinates.

    Returns:
        ``(bgr float32 (sh, sw, 3), alpha float32 (sh, sw), spots)``: spots as
        ``(cx_px, cy_px, r_px, cls)`` in sprite pixels.
    """
    sh = int(round(sw * st.aspect))
    img, alpha = _face_base(sw, sh, st.face, st, rng, light)
    lum = float(np.mean(st.face))
    if st.divider:
        y = sh / 2
        th = max(1, int(round(sw * rng.uniform(0.01, 0.025))))
        x0, x1 = int(sw * 0.12), int(sw * 0.88)
        if st.divider == 1:
            col = tuple(float(v) for v in np.array(st.face) * 0.55) if lum > 90 else \
                tuple(float(v) for v in np.array(st.face) + 35)
        else:
            col = tuple(float(v) for v in np.clip(np.array(st.face) + 70, 0, 255))
        if st.western:  # a bold dark bar, often with a brass centre pin
            col = tuple(float(v) for v in np.array(st.white) * 0.8)
            th = max(1, int(round(sw * rng.uniform(0.025, 0.06))))
            x0, x1 = int(sw * rng.uniform(0.06, 0.2)), int(sw * rng.uniform(0.8, 0.94))
        cv2.line(img, (x0, int(y)), (x1, int(y)), col, th, cv2.LINE_AA)
        if st.western and st.extra.get("pin"):
            cv2.circle(img, (sw // 2, int(y)), max(1, int(sw * 0.05)), (60, 150, 190), -1, cv2.LINE_AA)
    spots = []
    multi = st.extra.get("multi") if st.extra else None
    for (x, y, r, cls) in tile_spots(a, b, st, rng, long33):
        cx, cy, R = x * sw, y * sw, r * sw
        col = st.red if cls == RED else st.white
        if multi:  # western sets with one colour per number of spots
            n = a if y < st.aspect / 2 else b
            col, is_red = multi[n]
            cls = RED if is_red else WHITE
        _draw_spot(img, cx, cy, R, col, st, light, rng, lum)
        spots.append((cx, cy, R, cls))
    ol = st.extra.get("outline", 0.0) if st.extra else 0.0
    if ol:  # a thin light outline (drawings)
        pts = rounded_outline(sw - 1, sh - 1, st.corner, 6) + 0.5
        cv2.polylines(img, [np.round(pts * 4).astype(np.int32)], True, (ol, ol, ol),
                      max(1, int(round(sw * 0.015))), cv2.LINE_AA, 2)
    _surface_wear(img, sw, sh, rng, dirt, lum)
    return img, alpha, spots


def _surface_wear(img, sw, sh, rng, dirt, lum):
    """Scratches and dust specks (light on dark tiles, dark on light tiles)."""
    if dirt <= 0:
        return
    n = int(rng.poisson(dirt * 6))
    sign = 1 if lum < 100 else -1
    for _ in range(n):
        p0 = (int(rng.uniform(0, sw)), int(rng.uniform(0, sh)))
        ln = rng.uniform(0.05, 0.5) * sw
        ang = rng.uniform(0, np.pi)
        p1 = (int(p0[0] + ln * np.cos(ang)), int(p0[1] + ln * np.sin(ang)))
        v = sign * rng.uniform(8, 35)
        cv2.line(img, p0, p1, tuple(float(c) for c in np.clip(np.array(img[p0[1] % sh, p0[0] % sw]) + v, 0, 255)),
                 1, cv2.LINE_AA)
    for _ in range(int(rng.poisson(dirt * 10))):
        p0 = (int(rng.uniform(0, sw)), int(rng.uniform(0, sh)))
        v = sign * rng.uniform(10, 50)
        cv2.circle(img, p0, int(rng.integers(0, 2)), tuple(float(c) for c in
                   np.clip(np.array(img[p0[1], p0[0]]) + v, 0, 255)), -1, cv2.LINE_AA)


def render_back_sprite(st: TileStyle, sw: int, rng: np.random.Generator, light: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Render a face-down tile (its back, optionally patterned). Returns (bgr float32, alpha)."""
    sh = int(round(sw * st.aspect))
    img, alpha = _face_base(sw, sh, st.back, st, rng, light)
    p = st.back_pattern
    lum = float(np.mean(st.back))
    col = tuple(float(v) for v in (np.clip(np.array(st.back) + (40 if lum < 120 else -50), 0, 255)))
    th = max(1, int(sw * 0.03))
    if p == 1:
        cv2.circle(img, (sw // 2, sh // 2), int(sw * 0.3), col, th, cv2.LINE_AA)
        cv2.circle(img, (sw // 2, sh // 2), int(sw * 0.12), col, -1, cv2.LINE_AA)
    elif p == 2:
        for k in range(3, 8):
            y = int(sh * k / 10)
            cv2.line(img, (int(sw * 0.2), y), (int(sw * 0.8), y), col, th, cv2.LINE_AA)
    elif p == 3:
        pts = np.array([[sw / 2, sh * 0.25], [sw * 0.8, sh / 2], [sw / 2, sh * 0.75], [sw * 0.2, sh / 2]])
        cv2.polylines(img, [pts.astype(np.int32)], True, col, th, cv2.LINE_AA)
    elif p == 4:
        for yy in np.linspace(0.15, 0.85, 7):
            for xx in (0.3, 0.7):
                cv2.circle(img, (int(sw * xx), int(sh * yy)), max(1, int(sw * 0.04)), col, -1, cv2.LINE_AA)
    _surface_wear(img, sw, sh, rng, rng.uniform(0, 1), lum)
    return img, alpha


def rounded_outline(sw: float, sh: float, corner: float, n: int = 4) -> np.ndarray:
    """Outline polygon (k, 2) float32 of a rounded rectangle sprite (corner = fraction of sw)."""
    rc = corner * sw
    pts = []
    for (cx, cy, a0) in ((sw - rc, rc, -90), (sw - rc, sh - rc, 0), (rc, sh - rc, 90), (rc, rc, 180)):
        for k in range(n + 1):
            t = np.deg2rad(a0 + 90 * k / n)
            pts.append((cx + rc * np.cos(t), cy + rc * np.sin(t)))
    return np.array(pts, np.float32)
