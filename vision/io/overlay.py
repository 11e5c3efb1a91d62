"""Draw a round on a frame: tiles, hands, each position's result, position outlines, legend.

:func:`draw_round` is a pure function of ``(frame, view)``: the same inputs always give the same
pixels, so a live display does not flicker as long as the round view is stable.

The view is a plain dict (:func:`vision.io.views.round_view`) built from the round event
(docs/round-event.md) and the frame's live positions, so this module depends on no other
vision stage:

* ``view["tiles"]``: list of ``{"face": "6-6" | None, "state": "face_up" | "face_down" |
  "unknown", "polygon": [[x, y] x 4] (px), "position": "1" | None, "confidence": float}``;
  a face-up tile without a face, or state "unknown", is drawn as ``"?"``; a face-down one as
  ``"back"``;
* ``view["positions"]``: ``{position: {"high_hand": "Teen pair", "low_hand": "7 points, Foo",
  "result": "win" | "lose" | "push" | "not_settled" | None, "net": "0.95", ...}}`` (hand names
  are ``scoring.hands.HandValue.name``); the dealer / banker position has no result. A missing
  or None result means the round is still in play (label "IN PLAY", blue-grey);
  ``"not_settled"`` means the round was settled without that position (unknown tile, wrong
  tile count...: label "NOT SETTLED", grey, with its ``reason``);
* optional ``view["layout"]["positions"]`` (or ``view["position_polygons"]``): position id ->
  polygon (px), drawn as outlines; ``view["banker_position"]``; ``view["round_id"]``.

Drawing is done with OpenCV (``cv2.polylines``, ``cv2.rectangle``, ``cv2.putText``) rather than
supervision's annotators, so supervision is not a dependency: its ``PolygonAnnotator`` draws from per-detection masks (a
full-frame boolean mask per tile, ~2 MB each at 1080p, slow to build for 32 tiles) and its
``LabelAnnotator`` colours labels by class or track, not by a settlement result; the few OpenCV
calls here are faster, deterministic and give each label the colour of its result.
Sizes scale with the frame height (reference 1080 px).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Mapping

import cv2
import numpy as np

from scoring.errors import InputError

__all__ = [
    "draw_round",
    "label_boxes",
    "RESULT_COLOURS",
    "RESULT_TEXT",
    "TILE_COLOURS",
    "DEALER_COLOUR",
]

#: Label background per result, BGR: WIN green, LOSE red, PUSH amber, NOT SETTLED grey,
#: IN PLAY blue-grey (``"in_play"``: the view's result is None, the round is not settled yet).
RESULT_COLOURS: dict[str, tuple[int, int, int]] = {
    "win": (40, 160, 40),
    "lose": (40, 40, 210),
    "push": (0, 176, 255),
    "not_settled": (140, 140, 140),
    "in_play": (150, 110, 80),
}
RESULT_TEXT = {"win": "WIN", "lose": "LOSE", "push": "PUSH", "not_settled": "NOT SETTLED",
               "in_play": "IN PLAY"}
#: Label background of the dealer / banker position, BGR (blue).
DEALER_COLOUR = (170, 90, 20)
#: Tile outline colours by display state, BGR.
TILE_COLOURS: dict[str, tuple[int, int, int]] = {
    "face_up": (255, 220, 0),      # cyan-blue
    "unknown": (255, 0, 255),      # magenta
    "face_down": (90, 90, 90),     # dark grey
}
_POSITION_COLOUR = (230, 230, 230)
_FONT = cv2.FONT_HERSHEY_SIMPLEX


def _scale(shape: tuple[int, ...]) -> float:
    return max(0.4, shape[0] / 1080.0)


def _polygon(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2 or len(arr) < 3 or not np.all(np.isfinite(arr)):
        raise InputError(f"{what} must be a polygon of >= 3 [x, y] points, got {value!r}")
    return arr


def _tile_display(tile: Mapping[str, Any]) -> tuple[str, str]:
    """(state key for colour, label) of one tile entry."""
    state = tile.get("state", "face_up")
    face = tile.get("face")
    if state == "face_down":
        return "face_down", "back"
    if state == "unknown" or not face:
        return "unknown", "?"
    return "face_up", str(face)


def _net_text(net: Any) -> str:
    if net is None:
        return ""
    try:
        d = Decimal(str(net))
    except InvalidOperation:
        return str(net)
    if d > 0:
        return f"+{d}"
    return str(d) if d != 0 else "0"


def _position_name(pos: str, banker: str | None) -> str:
    if pos == "dealer":
        name = "Dealer"
    else:
        name = f"Seat {pos}"
    if banker is not None and pos == banker and pos != "dealer":
        name += " (banker)"
    return name


def _position_polygons(view: Mapping[str, Any]) -> dict[str, np.ndarray]:
    polys = view.get("position_polygons")
    if polys is None:
        polys = (view.get("layout") or {}).get("positions") or {}
    return {str(k): _polygon(v, f"position {k} polygon") for k, v in polys.items()}


def _label_lines(pos: str, entry: Mapping[str, Any], banker: str | None) -> tuple[list[str], str]:
    """Text lines of a position label and its colour key ("dealer" or a result)."""
    is_banker = pos == (banker or "dealer")
    head = _position_name(pos, banker)
    if is_banker:
        key = "dealer"
    elif entry.get("result") is None:
        key = "in_play"
    else:
        key = str(entry.get("result"))
        if key not in RESULT_COLOURS:
            raise InputError(f"position {pos}: result must be one of "
                             f"{', '.join(RESULT_COLOURS)}, got {key!r}")
    if key != "dealer":
        net = _net_text(entry.get("net"))
        head = f"{head}: {RESULT_TEXT[key]}" + (f" {net}" if net and key in ("win", "lose", "push")
                                                else "")
    lines = [head]
    if entry.get("high_hand"):
        lines.append(f"High: {entry['high_hand']}")
    if entry.get("low_hand"):
        lines.append(f"Low: {entry['low_hand']}")
    if key == "not_settled" and entry.get("reason"):
        import textwrap

        lines += textwrap.wrap(str(entry["reason"]), 34)[:2]  # whole words, two lines at most
    return lines, key


def _text_block_size(lines: list[str], fs: float, th: int) -> tuple[int, int, int]:
    """(width, height, line height) in px of a block of text lines."""
    sizes = [cv2.getTextSize(t, _FONT, fs, th) for t in lines]
    lh = max(s[0][1] + s[1] for s in sizes) + int(6 * fs / 0.6)
    w = max(s[0][0] for s in sizes)
    return w, lh * len(lines), lh


def _anchor(pos: str, view: Mapping[str, Any], pos_polys: dict[str, np.ndarray]
            ) -> tuple[float, float, float, float] | None:
    """Bounding box (x1, y1, x2, y2) the label of a position is placed against."""
    if pos in pos_polys:
        p = pos_polys[pos]
        return float(p[:, 0].min()), float(p[:, 1].min()), float(p[:, 0].max()), \
            float(p[:, 1].max())
    pts = [np.asarray(t["polygon"], float) for t in view.get("tiles", [])
           if str(t.get("position")) == pos and t.get("polygon") is not None]
    if not pts:
        return None
    a = np.concatenate(pts)
    return float(a[:, 0].min()), float(a[:, 1].min()), float(a[:, 0].max()), float(a[:, 1].max())


def label_boxes(frame_shape: tuple[int, ...], view: Mapping[str, Any]
                ) -> dict[str, tuple[int, int, int, int]]:
    """Where :func:`draw_round` puts each position's label: position -> (x1, y1, x2, y2) px.

    The label sits just above the position's outline (or, without one, above its tiles'
    bounding box), moved below it when there is no room above, and kept inside the frame.
    Positions with no geometry at all are listed in the legend instead (not returned here).
    """
    fs, th = 0.55 * _scale(frame_shape), max(1, round(1.5 * _scale(frame_shape)))
    pad = round(5 * _scale(frame_shape))
    banker = view.get("banker_position")
    pos_polys = _position_polygons(view)
    out = {}
    H, W = frame_shape[:2]
    for pos in sorted(view.get("positions", {}), key=_pos_order):
        entry = view["positions"][pos]
        anchor = _anchor(str(pos), view, pos_polys)
        if anchor is None:
            continue
        lines, _ = _label_lines(str(pos), entry, banker)
        w, h, _ = _text_block_size(lines, fs, th)
        w, h = w + 2 * pad, h + 2 * pad
        x1 = int(round(anchor[0]))
        y1 = int(round(anchor[1])) - h - pad
        if y1 < 0:
            y1 = int(round(anchor[3])) + pad
        x1 = min(max(0, x1), max(0, W - w))
        y1 = min(max(0, y1), max(0, H - h))
        out[str(pos)] = (x1, y1, x1 + w, y1 + h)
    return out


def _pos_order(pos: Any) -> tuple[int, str]:
    s = str(pos)
    return (0 if s == "dealer" else 1, s.zfill(4))


def _put_lines(img: np.ndarray, lines: list[str], x: int, y: int, fs: float, th: int,
               lh: int, colour: tuple[int, int, int]) -> None:
    for i, t in enumerate(lines):
        base = y + (i + 1) * lh - int(lh * 0.3)
        cv2.putText(img, t, (x, base), _FONT, fs, colour, th, cv2.LINE_AA)


def _text_colour(bg: tuple[int, int, int]) -> tuple[int, int, int]:
    b, g, r = bg
    return (0, 0, 0) if 0.114 * b + 0.587 * g + 0.299 * r > 140 else (255, 255, 255)


def draw_round(frame: np.ndarray, view: Mapping[str, Any], *, legend: bool = True,
               tile_labels: bool = True) -> np.ndarray:
    """Draw one round view on a copy of a frame.

    Args:
        frame: uint8 (H, W, 3) BGR; not modified.
        view: round view dict (see module docstring; the event schema's ``positions`` and
            ``tiles``, optional ``layout``/``position_polygons``, ``banker_position``,
            ``round_id``).
        legend: draw the colour legend (top-left).
        tile_labels: write each tile's face (``"?"`` unknown, ``"back"`` face down).

    Returns:
        uint8 (H, W, 3) BGR, a new array.

    Raises:
        InputError: frame not (H, W, 3) uint8; malformed polygon; unknown result string.
    """
    img = np.asarray(frame)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8 or img.size == 0:
        raise InputError(f"frame must be uint8 (H, W, 3), got {img.dtype} {img.shape}")
    out = img.copy()
    s = _scale(out.shape)
    lw = max(1, round(2 * s))
    banker = view.get("banker_position")

    # position outlines
    pos_polys = _position_polygons(view)
    for pos in sorted(pos_polys, key=_pos_order):
        cv2.polylines(out, [np.round(pos_polys[pos]).astype(np.int32)], True, _POSITION_COLOUR,
                      max(1, round(s)), cv2.LINE_AA)

    # tiles
    fs_t, th_t = 0.5 * s, max(1, round(1.3 * s))
    for i, tile in enumerate(view.get("tiles", [])):
        if tile.get("polygon") is None:
            continue
        poly = _polygon(tile["polygon"], f"tile {i} polygon")
        key, text = _tile_display(tile)
        colour = TILE_COLOURS[key]
        cv2.polylines(out, [np.round(poly).astype(np.int32)], True, colour, lw, cv2.LINE_AA)
        if tile_labels:
            (tw, tht), bl = cv2.getTextSize(text, _FONT, fs_t, th_t)
            cx, cy = poly.mean(0)
            x, y = int(round(cx - tw / 2)), int(round(cy + tht / 2))
            cv2.rectangle(out, (x - 2, y - tht - 2), (x + tw + 2, y + bl), colour, -1)
            cv2.putText(out, text, (x, y), _FONT, fs_t, _text_colour(colour), th_t,
                        cv2.LINE_AA)

    # position labels
    fs, th = 0.55 * s, max(1, round(1.5 * s))
    pad = round(5 * s)
    boxes = label_boxes(out.shape, view)
    unplaced: list[tuple[list[str], str]] = []
    for pos in sorted(view.get("positions", {}), key=_pos_order):
        lines, key = _label_lines(str(pos), view["positions"][pos], banker)
        bg = DEALER_COLOUR if key == "dealer" else RESULT_COLOURS[key]
        if str(pos) not in boxes:
            unplaced.append((lines, key))
            continue
        x1, y1, x2, y2 = boxes[str(pos)]
        cv2.rectangle(out, (x1, y1), (x2 - 1, y2 - 1), bg, -1)
        _, _, lh = _text_block_size(lines, fs, th)
        _put_lines(out, lines, x1 + pad, y1 + pad, fs, th, lh, _text_colour(bg))

    if legend:
        _draw_legend(out, s, view.get("round_id"), unplaced)
    return out


def _draw_legend(img: np.ndarray, s: float, round_id: Any,
                 unplaced: list[tuple[list[str], str]]) -> None:
    fs, th = 0.5 * s, max(1, round(1.3 * s))
    pad = round(6 * s)
    sw = round(16 * s)
    items: list[tuple[tuple[int, int, int], str, bool]] = []
    if round_id:
        items.append(((0, 0, 0), f"Round {round_id}", False))
    for k in ("win", "lose", "push", "not_settled", "in_play"):
        items.append((RESULT_COLOURS[k], RESULT_TEXT[k], True))
    items.append((DEALER_COLOUR, "DEALER / BANKER", True))
    items.append((TILE_COLOURS["face_up"], "tile", True))
    items.append((TILE_COLOURS["unknown"], "? unknown tile", True))
    items.append((TILE_COLOURS["face_down"], "back: face down", True))
    for lines, key in unplaced:
        colour = DEALER_COLOUR if key == "dealer" else RESULT_COLOURS[key]
        items.append((colour, " / ".join(lines), True))
    sizes = [cv2.getTextSize(t, _FONT, fs, th) for _, t, _ in items]
    lh = max(sz[0][1] + sz[1] for sz in sizes) + pad
    w = max(sz[0][0] for sz in sizes) + sw + 3 * pad
    h = lh * len(items) + pad
    x0, y0 = pad, pad
    roi = img[y0:y0 + h, x0:x0 + w]
    if roi.size:
        roi[:] = (roi.astype(np.uint16) * 2 // 5).astype(np.uint8)  # darken 60 %
    for i, (colour, text, swatch) in enumerate(items):
        yb = y0 + pad + i * lh
        tx = x0 + pad
        if swatch:
            cv2.rectangle(img, (tx, yb), (tx + sw, yb + lh - pad), colour, -1)
            tx += sw + pad
        cv2.putText(img, text, (tx, yb + lh - pad - 2), _FONT, fs, (255, 255, 255), th,
                    cv2.LINE_AA)
