"""Propose a layout file from a still frame of the table (``paigow layout propose``).

A layout pins the positions: with it every tile belongs to the polygon that holds its centre
(:func:`vision.table.assign_positions`) and no grouping is needed. Drawing polygons by hand is
tedious, so this module drafts them from one frame with the tiles laid out: the product's
detection and reading (:class:`vision.pipeline.Pipeline`, still frame), then the grouping by
table place (:func:`vision.table.group_seats`, which names positions by where they lie on the
table). Each named position with tiles gets the minimum-area rectangle around its tiles,
grown by ``MARGIN`` tile widths (room for tiles laid a little differently next round); a seat
of the fitted table model showing no tiles gets a rectangle of the median position size at its
fitted place (marked ``"fitted place"``). Where two rectangles overlap both shrink about their
centres until they do not. The result is a dict that :meth:`vision.table.Layout.from_dict`
accepts (format: README "Layout files"); check it
over the frame before a game (the polygons are in the frame's pixels).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from scoring.errors import InputError

from .table import Layout, SeatGrouping, group_seats

__all__ = ["propose_layout", "propose_from_reads", "layout_yaml", "MARGIN"]

#: Rectangles around a position's tiles are grown by this many tile widths on every side.
MARGIN = 1.0


def _rect(points: np.ndarray, grow: float) -> np.ndarray:
    """float64 (4, 2) corners of the minimum-area rectangle around ``points`` (k, 2) px, grown
    by ``grow`` px on every side."""
    import cv2

    (c, (w, h), a) = cv2.minAreaRect(points.astype(np.float32))
    return cv2.boxPoints((c, (w + 2 * grow, h + 2 * grow), a)).astype(np.float64)


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    import cv2

    area, _ = cv2.intersectConvexConvex(a.astype(np.float32), b.astype(np.float32))
    return area > 0


def propose_from_reads(reads, frame_size: tuple[int, int], table_id: str = "table-1"
                       ) -> tuple[dict, dict, SeatGrouping]:
    """Layout dict from a frame's tile reads.

    Args:
        reads: :class:`vision.decode.TileRead` s of the frame.
        frame_size: ``(width, height)`` px.
        table_id: the table's name in the layout.

    Returns:
        ``(layout dict, positions info {position: {"source": "tiles" | "fitted place",
        "tiles": n, "problems": [detail, ...]}}, the SeatGrouping)``.

    Raises:
        InputError: the seats could not be placed (the grouping's reason), or no position
            could be drawn.
    """
    g = group_seats(reads, frame_size)
    if g.reason is not None:
        raise InputError(f"cannot place the seats: {g.reason} (lay out the dealer's and at least "
                         "two seats' tiles, camera upright with the dealer at the top)")
    widths = [min(np.linalg.norm(np.roll(np.asarray(r.polygon, np.float64), -1, 0)
                                 - np.asarray(r.polygon, np.float64), axis=1)) for r in reads]
    width = float(np.median(widths)) if widths else 1.0
    polys: dict[str, np.ndarray] = {}
    info: dict[str, dict[str, Any]] = {}
    for p, tiles in g.groups.items():
        pts = np.concatenate([np.asarray(t.polygon, np.float64).reshape(4, 2) for t in tiles])
        polys[p] = _rect(pts, MARGIN * width)
        info[p] = {"source": "tiles", "tiles": len(tiles),
                   "problems": [d for _, d in g.problems.get(p, [])]}
    if not polys:
        raise InputError("no position with tiles found")
    sizes = np.array([[np.linalg.norm(q[1] - q[0]), np.linalg.norm(q[2] - q[1])]
                      for q in polys.values()])
    half = np.median(sizes.max(1)) / 2, np.median(sizes.min(1)) / 2
    for p, c in g.places.items():
        if p in polys:
            continue
        polys[p] = np.array([[c[0] - half[0], c[1] - half[1]], [c[0] + half[0], c[1] - half[1]],
                             [c[0] + half[0], c[1] + half[1]], [c[0] - half[0], c[1] + half[1]]])
        info[p] = {"source": "fitted place", "tiles": 0,
                   "problems": [d for _, d in g.problems.get(p, [])]}
    names = [p for p in g.places if p in polys]  # table order
    for _ in range(20):  # shrink overlapping pairs about their centres
        changed = False
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                a, b = names[i], names[j]
                if _overlap(polys[a], polys[b]):
                    for q in (a, b):
                        c = polys[q].mean(0)
                        polys[q] = c + (polys[q] - c) * 0.9
                    changed = True
        if not changed:
            break
    w, h = frame_size
    layout = {"table_id": table_id, "rules": "pa", "banker": "dealer",
              "positions": {p: [[round(float(np.clip(x, 0, w - 1)), 1),
                                 round(float(np.clip(y, 0, h - 1)), 1)] for x, y in polys[p]]
                            for p in names}}
    Layout.from_dict(layout, where="proposed layout")  # what load_layout will accept
    return layout, {p: info[p] for p in names}, g


def propose_layout(image: str | Path, models_dir=None, backend: str | None = None,
                   table_id: str = "table-1", min_confidence: float = 0.5) -> dict:
    """Propose a layout from a still frame of the table.

    Args:
        image: path of the frame (any format OpenCV reads).
        models_dir: folder with the tile and spot models (default: the repository's models/).
        backend: ``"onnx"`` or ``"ultralytics"``.
        table_id: the table's name written into the layout.
        min_confidence: faces below this confidence are unknown (it does not change the
            grouping: every tile counts).

    Returns:
        ``{"image", "frame_size": [w, h], "layout": layout dict, "positions": {position:
        {"source", "tiles", "problems"}}, "left_out": [{"tiles": n, "why"}]}``.

    Raises:
        InputError: missing or unreadable image, missing models, or a frame whose seats cannot
            be placed (the message says why).
    """
    import cv2

    from . import MODELS_DIR
    from .pipeline import Pipeline

    p = Path(image)
    if not p.is_file():
        raise InputError(f"image not found: {p}")
    frame = cv2.imread(str(p), cv2.IMREAD_COLOR)
    if frame is None:
        raise InputError(f"cannot read image {p} (not an image file?)")
    pipe = Pipeline(models_dir=models_dir or MODELS_DIR, backend=backend, n_stable=1,
                    draw=False, min_confidence=min_confidence, source=str(p))
    pipe.still_images = True
    _, res = pipe.process(frame)
    try:
        layout, info, g = propose_from_reads(res.reads, (frame.shape[1], frame.shape[0]),
                                             table_id)
    except InputError as exc:
        raise InputError(f"{p}: {exc}") from None
    return {"image": str(p), "frame_size": [int(frame.shape[1]), int(frame.shape[0])],
            "layout": layout, "positions": info,
            "left_out": [{"tiles": len(ts), "why": why} for ts, why in g.unplaced]}


def layout_yaml(proposal: dict) -> str:
    """The proposal's layout as YAML text, with a header comment naming the frame and the
    positions drawn at fitted places (no tiles there) or with problems."""
    import yaml

    lines = [f"# layout proposed by `paigow layout propose` from {proposal['image']} "
             f"({proposal['frame_size'][0]} x {proposal['frame_size'][1]} px)",
             "# polygons in image pixels; check them over the frame, edit, then "
             "`paigow run SOURCE --layout FILE`"]
    for pos, i in proposal["positions"].items():
        if i["source"] != "tiles" or i["problems"]:
            note = "no tiles: drawn at the fitted place" if i["source"] != "tiles" else \
                "; ".join(i["problems"])
            lines.append(f"# position {pos}: {note}")
    lay = dict(proposal["layout"])
    positions = lay.pop("positions")
    lines.append(yaml.safe_dump(lay, sort_keys=False).rstrip("\n"))
    lines.append("positions:")
    for pos, poly in positions.items():
        pts = ", ".join(f"[{x:g}, {y:g}]" for x, y in poly)
        lines.append(f'  "{pos}": [{pts}]' if pos != "dealer" else f"  dealer: [{pts}]")
    return "\n".join(lines) + "\n"
