"""Review list: every identified tile, lowest confidence first (CSV and JSON).

Files under ``out``: ``review.csv`` (columns :data:`COLUMNS`) and ``review.json`` (a list of
objects with the same keys; ``xyxy`` a list of 4 px values). Order: confidence ascending, then
image and tile index (stable), so a labeller starts with the tiles most likely wrong.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Sequence

__all__ = ["write", "rows", "COLUMNS"]

COLUMNS = ("rank", "image", "tile_index", "class_name", "face", "state", "confidence",
           "x1", "y1", "x2", "y2")


def rows(results: Sequence[dict]) -> list[dict]:
    """The review rows of normalised results, lowest confidence first (``rank`` from 1)."""
    items = []
    for r in results:
        for i, t in enumerate(r["tiles"]):
            x1, y1, x2, y2 = (round(v, 2) for v in t["xyxy"])
            items.append({"image": r["image"], "tile_index": i, "class_name": t["class_name"],
                          "face": t.get("face"), "state": t.get("state", "face_up"),
                          "confidence": round(t["confidence"], 6),
                          "x1": x1, "y1": y1, "x2": x2, "y2": y2})
    items.sort(key=lambda d: (d["confidence"], d["image"], d["tile_index"]))
    return [{"rank": k, **d} for k, d in enumerate(items, 1)]


def write(results: Sequence[dict], out: Path) -> list[Path]:
    """Write ``review.csv`` and ``review.json`` under ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rs = rows(results)
    a, b = out / "review.csv", out / "review.json"
    with open(a, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for d in rs:
            w.writerow({k: ("" if d[k] is None else d[k]) for k in COLUMNS})
    b.write_text(json.dumps(
        [{**{k: d[k] for k in COLUMNS if k not in ("x1", "y1", "x2", "y2")},
          "xyxy": [d["x1"], d["y1"], d["x2"], d["y2"]]} for d in rs], indent=1),
        encoding="utf-8")
    return [a, b]
