"""Scenery of the synthetic renderer (:mod:`vision.synth.render`): table backgrounds (felt, wood,
printing), distractors (chips, cards, a hand) and camera effects (blur, noise, light, JPEG).

Numpy + OpenCV drawing, deterministic given a ``numpy.random.Generator``; images are uint8
BGR. Split from :mod:`vision.synth.draw` (the tiles themselves); no pixels of any real image are
used.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from vision.synth.draw import _hsv2bgr, rounded_outline


# ----------------------------------------------------------------------------------------------
# Backgrounds

def _smooth_noise(rng, h, w, scale, ch=1):
    sh, sw = max(2, int(h / scale)), max(2, int(w / scale))
    n = rng.standard_normal((sh, sw, ch)).astype(np.float32)
    n = cv2.resize(n, (w, h), interpolation=cv2.INTER_CUBIC)
    return n.reshape(h, w, ch)


def _textured(rng, h, w, base, amp, scale, sigma) -> np.ndarray:
    """Uniform colour with a smooth low-frequency variation and fine fabric noise (uint8)."""
    sh, sw = max(2, int(h / scale)), max(2, int(w / scale))
    low = np.asarray(base, np.float32)[None, None, :] * (
        1 + amp * rng.standard_normal((sh, sw, 1), dtype=np.float32))
    img = cv2.resize(np.clip(low, 0, 255), (w, h), interpolation=cv2.INTER_CUBIC)
    tile = (rng.standard_normal((256, 256), dtype=np.float32) * np.float32(sigma)).astype(np.int16)
    reps = (-(-h // 256), -(-w // 256))
    noise = np.tile(tile, reps)[:h, :w, None]
    return np.clip(img.astype(np.int16) + noise, 0, 255).astype(np.uint8)


def felt_background(rng: np.random.Generator, w: int, h: int, kind: str | None = None
                    ) -> np.ndarray:
    """A table surface (uint8 BGR h x w): felt (green/blue/red/other) with printing, wood,
    plain cloth, or a flat/checker studio background.

    kind: "felt" | "wood" | "cloth" | "flat" | None (random).
    """
    if kind is None:
        kind = str(rng.choice(["felt", "wood", "cloth", "flat"], p=[0.72, 0.12, 0.1, 0.06]))
    if kind == "felt":
        r = rng.random()
        if r < 0.5:
            base = _hsv2bgr(rng.uniform(50, 85), rng.uniform(120, 255), rng.uniform(50, 160))
        elif r < 0.72:
            base = _hsv2bgr(rng.uniform(95, 120), rng.uniform(120, 255), rng.uniform(50, 160))
        elif r < 0.88:
            base = _hsv2bgr(rng.choice([rng.uniform(0, 8), rng.uniform(165, 180)]),
                            rng.uniform(120, 255), rng.uniform(50, 150))
        else:
            base = _hsv2bgr(rng.uniform(0, 180), rng.uniform(0, 255), rng.uniform(30, 170))
        out = _textured(rng, h, w, base, 0.06, 200, rng.uniform(2, 7))
        _table_printing(out, rng, base)
        return out
    if kind == "wood":
        base = np.array(_hsv2bgr(rng.uniform(8, 22), rng.uniform(100, 220), rng.uniform(70, 200)), np.float32)
        h2, w2 = max(2, h // 2), max(2, w // 2)
        ys, xs = np.mgrid[0:h2, 0:w2].astype(np.float32)
        ang = rng.uniform(0, np.pi)
        u = xs * np.float32(np.cos(ang)) + ys * np.float32(np.sin(ang))
        warp = _smooth_noise(rng, h2, w2, 60)[..., 0] * np.float32(rng.uniform(3, 12))
        grain = np.sin((u + warp) / np.float32(rng.uniform(1.5, 6))) * 0.5 + 0.5
        grain = grain ** np.float32(rng.uniform(1, 4))
        img = base[None, None, :] * (0.75 + 0.35 * grain[..., None])
        img *= (1 + 0.1 * _smooth_noise(rng, h2, w2, 75))
        img = cv2.resize(np.clip(img, 0, 255).astype(np.uint8), (w, h), interpolation=cv2.INTER_LINEAR)
        return img
    if kind == "cloth":
        v = rng.uniform(5, 80) if rng.random() < 0.6 else rng.uniform(80, 230)
        base = np.clip(np.array([v, v, v]) + rng.normal(0, 8, 3), 0, 255)
        return _textured(rng, h, w, base, 0.15, 60, 4.0)
    # flat studio / transparent-looking
    r = rng.random()
    img = np.empty((h, w, 3), np.uint8)
    if r < 0.15:
        img[:] = 0 if rng.random() < 0.7 else int(rng.uniform(0, 40))
    elif r < 0.45:
        img[:] = 255 if rng.random() < 0.6 else int(rng.uniform(200, 255))
    elif r < 0.65:
        c = int(rng.uniform(200, 255)), int(rng.uniform(140, 215))
        cs = max(4, int(rng.uniform(6, 20)))
        ys, xs = np.mgrid[0:h, 0:w]
        chk = ((ys // cs + xs // cs) % 2).astype(bool)
        img[:] = c[0]
        img[chk] = c[1]
    else:
        img[:] = tuple(int(v) for v in rng.uniform(0, 255, 3))
    return img


def _table_printing(img: np.ndarray, rng: np.random.Generator, base) -> None:
    """Arcs, text-like strokes and betting circles printed on felt (in place)."""
    h, w = img.shape[:2]
    lum = float(np.mean(base))
    cols = [(60, 200, 230), (220, 220, 220), (40, 170, 200), (30, 30, 30) if lum > 120 else (200, 200, 200)]
    col = cols[int(rng.integers(len(cols)))]
    col = tuple(int(np.clip(c * rng.uniform(0.7, 1.0) + b * 0.2, 0, 255)) for c, b in zip(col, base))
    # big arcs
    for _ in range(int(rng.integers(0, 4))):
        cx, cy = w / 2 + rng.normal(0, w * 0.05), rng.uniform(-0.6, 0.1) * h
        ax = rng.uniform(0.4, 1.0) * w
        ay = ax * rng.uniform(0.4, 1.1)
        cv2.ellipse(img, (int(cx), int(cy)), (int(ax), int(ay)), 0, 0, 180, col,
                    int(rng.integers(1, 6)), cv2.LINE_AA)
    # betting circles / boxes
    for _ in range(int(rng.integers(0, 9))):
        c = (int(rng.uniform(0, w)), int(rng.uniform(0, h)))
        rad = int(rng.uniform(0.02, 0.06) * w)
        if rng.random() < 0.7:
            cv2.circle(img, c, rad, col, int(rng.integers(1, 4)), cv2.LINE_AA)
        else:
            cv2.rectangle(img, (c[0] - rad, c[1] - rad // 2), (c[0] + rad, c[1] + rad // 2), col,
                          int(rng.integers(1, 4)), cv2.LINE_AA)
    # text-like strokes
    words = ["PAI GOW", "DEALER", "BANKER", "COMMISSION 5%", "PLAYER", "BET", "MIN 25", "MAX 5000",
             "HOUSE WAY", "PUSH", "PAYS 1 TO 1", "TABLE 7"]
    for _ in range(int(rng.integers(0, 5))):
        txt = words[int(rng.integers(len(words)))]
        org = (int(rng.uniform(0, w * 0.85)), int(rng.uniform(0.05, 1.0) * h))
        scale = rng.uniform(0.6, 2.5) * w / 1920
        cv2.putText(img, txt, org, int(rng.choice([0, 2, 3, 4])), max(0.3, scale), col,
                    max(1, int(scale * 2)), cv2.LINE_AA)


# ----------------------------------------------------------------------------------------------
# Distractors (drawn on the table canvas; each also returns its footprint for occlusion)

def draw_chip(img: np.ndarray, mask: np.ndarray, c, rad: float, rng: np.random.Generator,
              stack: int = 1, lift: tuple = (0.0, -1.0)) -> None:
    """A casino chip (or a stack of ``stack`` chips) at centre c, radius rad px."""
    col = _hsv2bgr(rng.uniform(0, 180), rng.uniform(100, 255), rng.uniform(60, 230))
    edge = (235, 235, 235) if rng.random() < 0.8 else _hsv2bgr(rng.uniform(0, 180), 200, 220)
    dark = tuple(v * 0.6 for v in col)
    th = max(1.0, rad * 0.12)
    for k in range(stack):
        cx, cy = c[0] + lift[0] * th * k, c[1] + lift[1] * th * k
        cc = (int(cx), int(cy))
        cv2.circle(img, (int(cx), int(cy + th * 0.8)), int(rad), dark, -1, cv2.LINE_AA)
        cv2.circle(img, cc, int(rad), col, -1, cv2.LINE_AA)
        cv2.circle(mask, (int(cx), int(cy + th * 0.4)), int(rad + th), 255, -1)
        n = int(rng.choice([4, 6, 8]))
        for i in range(n):
            a0 = 360 * i / n
            cv2.ellipse(img, cc, (int(rad * 0.85), int(rad * 0.85)), 0, a0, a0 + 180 / n, edge,
                        max(1, int(rad * 0.22)), cv2.LINE_AA)
    cc = (int(c[0] + lift[0] * th * (stack - 1)), int(c[1] + lift[1] * th * (stack - 1)))
    cv2.circle(img, cc, int(rad * 0.55), edge, max(1, int(rad * 0.05)), cv2.LINE_AA)


def draw_card(img: np.ndarray, mask: np.ndarray, c, size: float, angle: float,
              rng: np.random.Generator) -> None:
    """A playing card (face or back) of long side ``size`` px, rotated by ``angle`` rad."""
    w, h = size * 0.7, size
    R = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    rect = rounded_outline(w, h, 0.07, 3) - np.array([w / 2, h / 2])
    pts = (rect @ R.T + np.array(c)).astype(np.int32)
    face_up = rng.random() < 0.6
    base = (245, 245, 245) if face_up else (
        (40, 40, 170) if rng.random() < 0.5 else (150, 70, 30))
    cv2.fillPoly(img, [pts], tuple(int(v * rng.uniform(0.85, 1.0)) for v in base), cv2.LINE_AA)
    cv2.polylines(img, [pts], True, (90, 90, 90), 1, cv2.LINE_AA)
    cv2.fillPoly(mask, [pts], 255)

    def tp(x, y):
        return tuple(int(v) for v in (np.array([x - w / 2, y - h / 2]) @ R.T + np.array(c)))

    if face_up:
        ink = (30, 30, 200) if rng.random() < 0.5 else (25, 25, 25)
        for _ in range(int(rng.integers(1, 7))):
            cv2.circle(img, tp(rng.uniform(0.3, 0.7) * w, rng.uniform(0.2, 0.8) * h),
                       max(1, int(w * 0.08)), ink, -1, cv2.LINE_AA)
        cv2.putText(img, str(rng.choice(list("A23456789JQK"))), tp(w * 0.08, h * 0.16), 0,
                    max(0.3, size / 160), ink, max(1, int(size / 90)), cv2.LINE_AA)
    else:
        inner = (rounded_outline(w * 0.84, h * 0.88, 0.05, 2) - np.array([w * 0.42, h * 0.44])) @ R.T + np.array(c)
        cv2.polylines(img, [inner.astype(np.int32)], True, (235, 235, 235), max(1, int(size / 60)), cv2.LINE_AA)


def draw_hand(img: np.ndarray, mask: np.ndarray, rng: np.random.Generator,
              target=None) -> None:
    """A skin-coloured arm/hand shape entering from an image edge, reaching toward ``target``."""
    h, w = img.shape[:2]
    skin = _hsv2bgr(rng.uniform(5, 20), rng.uniform(50, 170), rng.uniform(90, 240))
    sleeve = tuple(float(v) for v in rng.uniform(10, 200, 3))
    edge = int(rng.integers(4))
    if target is None:
        target = (rng.uniform(0.2, 0.8) * w, rng.uniform(0.2, 0.8) * h)
    tx, ty = target
    start = [(rng.uniform(0, w), -0.1 * h), (w * 1.1, rng.uniform(0, h)), (rng.uniform(0, w), h * 1.1),
             (-0.1 * w, rng.uniform(0, h))][edge]
    d = np.array([tx - start[0], ty - start[1]])
    L = np.linalg.norm(d) + 1e-6
    u = d / L
    width = rng.uniform(0.03, 0.06) * min(w, h)
    ang = np.degrees(np.arctan2(u[1], u[0]))
    # arm (sleeve part then skin)
    mid = (start[0] + u[0] * L * 0.45, start[1] + u[1] * L * 0.45)
    cv2.ellipse(img, (int(mid[0]), int(mid[1])), (int(L * 0.5), int(width)), ang, 0, 360, sleeve, -1, cv2.LINE_AA)
    cv2.ellipse(mask, (int(mid[0]), int(mid[1])), (int(L * 0.5), int(width)), ang, 0, 360, 255, -1)
    fore = (start[0] + u[0] * L * 0.8, start[1] + u[1] * L * 0.8)
    cv2.ellipse(img, (int(fore[0]), int(fore[1])), (int(L * 0.22), int(width * 0.8)), ang, 0, 360, skin, -1, cv2.LINE_AA)
    cv2.ellipse(mask, (int(fore[0]), int(fore[1])), (int(L * 0.22), int(width * 0.8)), ang, 0, 360, 255, -1)
    # palm and fingers
    palm = (tx, ty)
    cv2.ellipse(img, (int(palm[0]), int(palm[1])), (int(width * 1.1), int(width * 0.95)), ang, 0, 360, skin, -1, cv2.LINE_AA)
    cv2.ellipse(mask, (int(palm[0]), int(palm[1])), (int(width * 1.1), int(width * 0.95)), ang, 0, 360, 255, -1)
    nv = np.array([-u[1], u[0]])
    for k in range(4):
        off = (k - 1.5) * width * 0.45
        fl = width * rng.uniform(0.8, 1.4)
        p = np.array(palm) + u * (width * 0.9 + fl * 0.5) + nv * off
        cv2.ellipse(img, (int(p[0]), int(p[1])), (int(fl * 0.6), int(width * 0.2)), ang + rng.normal(0, 8),
                    0, 360, tuple(v * 0.95 for v in skin), -1, cv2.LINE_AA)
        cv2.ellipse(mask, (int(p[0]), int(p[1])), (int(fl * 0.6), int(width * 0.2)), ang, 0, 360, 255, -1)


# ----------------------------------------------------------------------------------------------
# Camera effects (output image)

def motion_blur(img: np.ndarray, n: int, angle_deg: float) -> np.ndarray:
    """A straight motion smear ``n`` px long at ``angle_deg`` (a line kernel, normalised).
    uint8 BGR in, uint8 BGR out (same shape)."""
    ker = np.zeros((n, n), np.float32)
    ker[n // 2, :] = 1.0
    M = cv2.getRotationMatrix2D((n / 2 - 0.5, n / 2 - 0.5), float(angle_deg), 1.0)
    ker = cv2.warpAffine(ker, M, (n, n))
    ker /= max(float(ker.sum()), 1e-6)
    return cv2.filter2D(img, -1, ker)


def camera_effects(img: np.ndarray, rng: np.random.Generator, strength: float = 1.0) -> np.ndarray:
    """Lighting gradient, vignette, colour cast, blur (motion or defocus), noise and a JPEG
    round trip. uint8 BGR in, uint8 BGR out (same shape)."""
    h, w = img.shape[:2]
    # blur first (optics), then exposure/lighting, then sensor noise
    r = rng.random()
    if r < 0.25 * strength:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.5, 1.8))
    elif r < 0.37 * strength:
        n = int(rng.integers(3, 9))
        img = motion_blur(img, n, rng.uniform(0, 180))
    # colour cast / exposure (per channel gain)
    gain = np.array([rng.uniform(0.85, 1.15) for _ in range(3)], np.float32) * np.float32(rng.uniform(0.7, 1.25))
    # lighting gradient + vignette + spotlight (multiplicative field at low resolution)
    sh, sw = max(2, h // 16), max(2, w // 16)
    ys, xs = np.mgrid[0:sh, 0:sw].astype(np.float32)
    xs = xs / (sw - 1) - 0.5
    ys = ys / (sh - 1) - 0.5
    ang = rng.uniform(0, 2 * np.pi)
    fld = 1 + rng.uniform(0, 0.45) * strength * (xs * np.cos(ang) + ys * np.sin(ang))
    fld *= 1 - rng.uniform(0, 0.6) * strength * (xs ** 2 + ys ** 2) * 2
    if rng.random() < 0.5:
        cx, cy = rng.uniform(-0.4, 0.4, 2)
        fld *= 1 + rng.uniform(0, 0.35) * np.exp(-((xs - cx) ** 2 + (ys - cy) ** 2) / rng.uniform(0.02, 0.2))
    fld3 = (fld[..., None] * gain[None, None, :]).astype(np.float32)
    fld3 = cv2.resize(fld3, (w, h), interpolation=cv2.INTER_LINEAR)
    f = img.astype(np.float32)
    f *= fld3
    if rng.random() < 0.7:
        sigma = np.float32(rng.uniform(1, 9) * strength)
        f += rng.standard_normal((h, w, 1), dtype=np.float32) * sigma
        if rng.random() < 0.4:
            f += rng.standard_normal((h, w, 3), dtype=np.float32) * (sigma * np.float32(0.5))
    img = np.clip(f, 0, 255).astype(np.uint8)
    if rng.random() < 0.3:
        gamma = rng.uniform(0.75, 1.3)
        lut = np.clip(255.0 * (np.arange(256) / 255.0) ** gamma, 0, 255).astype(np.uint8)
        img = cv2.LUT(img, lut)
    # JPEG artefacts
    if rng.random() < 0.7:
        q = int(rng.uniform(25, 95))
        ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, q])
        img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    return img


def occluders(rng, cw, ch, tiles, n_chips, n_cards, n_hands, avoid_tiles: bool):
    """Closures drawing distractors on the canvas (and their footprint into the occlusion
    mask) for the tiles of a scene (objects with ``cx``, ``cy``, ``w``), canvas ``cw`` x ``ch``
    px. With ``avoid_tiles`` they are kept off the tiles (render_table)."""
    fns = []
    centres = np.array([[t.cx, t.cy] for t in tiles]) if tiles else np.zeros((0, 2))
    wmed = float(np.median([t.w for t in tiles])) if tiles else 40.0

    def free(p, rad):
        if not avoid_tiles or len(centres) == 0:
            return True
        return bool(np.min(np.linalg.norm(centres - p, axis=1)) > rad + wmed * 1.6)

    for _ in range(n_chips):
        for _try in range(10):
            p = np.array([rng.uniform(0, cw), rng.uniform(0, ch)])
            rad = wmed * rng.uniform(0.6, 1.1)
            if free(p, rad):
                stack = int(rng.integers(1, 8))
                fns.append(lambda c, m, p=p, rad=rad, stack=stack, s=int(rng.integers(1 << 30)):
                           draw_chip(c, m, p, rad, np.random.default_rng(s), stack))
                break
    for _ in range(n_cards):
        for _try in range(10):
            p = np.array([rng.uniform(0, cw), rng.uniform(0, ch)])
            size = wmed * rng.uniform(2.0, 3.5)
            if free(p, size * 0.6):
                ang = rng.uniform(0, math.pi)
                fns.append(lambda c, m, p=p, size=size, ang=ang, s=int(rng.integers(1 << 30)):
                           draw_card(c, m, p, size, ang, np.random.default_rng(s)))
                break
    for _ in range(n_hands):
        if avoid_tiles:
            break
        tgt = None
        if len(centres) and rng.random() < 0.7:
            tgt = centres[int(rng.integers(len(centres)))] + rng.normal(0, wmed, 2)
        fns.append(lambda c, m, tgt=tgt, s=int(rng.integers(1 << 30)):
                   draw_hand(c, m, np.random.default_rng(s), tgt))
    return fns
