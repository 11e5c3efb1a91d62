#!/usr/bin/env python
"""Evaluate the recogniser on the real validation images (../shared/realdata), per folder.

Runs :func:`vision.recognition.identify.identify` over every image listed in ``labels.jsonl`` (read at run
time; never copied) and reports, per folder:

* chinese folders (pai gow tiles): faces identified vs labelled, as multisets per image:
  ``correct`` (identified and labelled), ``wrong`` (identified, not labelled: a misread),
  ``unknown`` (tiles found but not read), ``missed`` (labelled tiles with no matching read),
  face accuracy = correct / labelled, and the confusions (label -> read, where one image's
  unmatched label and unmatched read pair up, or label -> "unknown" / "missed").
* western folders (dominoes with blanks, outside the game): tile recall = tiles found / tiles
  labelled (capped per image), and per-half spot-count accuracy: each found tile's read B
  half counts (spots above / below the midline, as "low-high", blanks 0) matched against the
  labels as multisets, over the labelled tiles. Frames labelled only with
  ``faces_fully_visible`` use that list (tiles cut by the frame edge are not counted).

Usage::

    .venv/bin/python scripts/eval_realdata.py [--realdata DIR] [--models DIR]
        [--backend onnx|ultralytics] [--min-confidence 0.5] [--pad F] [--single]
        [--no-closeups] [--json]

Exit code 0; 2 for bad input (missing folder, models).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_REALDATA = ROOT.parent / "shared" / "realdata"


def _multiset_match(a: list[str], b: list[str]) -> tuple[int, list[str], list[str]]:
    """(matched count, unmatched of a, unmatched of b)."""
    ca, cb = Counter(a), Counter(b)
    common = ca & cb
    return sum(common.values()), list((ca - common).elements()), list((cb - common).elements())


def _half_pair(tile: dict) -> str | None:
    b = (tile.get("reads") or {}).get("B")
    if not b:
        return None
    lo, hi = sorted((int(b["top"]), int(b["bottom"])))
    return f"{lo}-{hi}"


def evaluate(realdata: Path, models_dir: Path | None = None, backend: str = "onnx",
             min_confidence: float = 0.5, progress: bool = True, tile_detector=None,
             pip_detector=None, pad: float = 0.0, single: bool = False,
             closeups: bool = True) -> dict:
    """Per-folder results (see module docstring) as a JSON-ready dict."""
    from scoring.errors import InputError
    from vision.recognition.identify import identify

    labels_path = realdata / "labels.jsonl"
    if not labels_path.is_file():
        raise InputError(f"labels file not found: {labels_path}")
    records = [json.loads(line) for line in labels_path.read_text().splitlines() if line.strip()]
    if single:  # one tile per picture: only the single-tile (chinese) folders qualify
        records = [r for r in records if r.get("tile_style") == "chinese"
                   and len(r.get("tiles") or []) == 1]
    paths = [str(realdata / r["file"]) for r in records]
    results = identify(paths, models_dir=models_dir, backend=backend,
                       min_confidence=min_confidence, progress=progress, with_reads=True,
                       tile_detector=tile_detector, pip_detector=pip_detector, pad=pad,
                       single=single, closeups=closeups)
    by_image = {r["image"]: r["tiles"] for r in results}
    folders: dict[str, dict] = {}
    for rec, path in zip(records, paths):
        folder = rec["file"].split("/")[0]
        style = rec.get("tile_style", "chinese")
        tiles = by_image.get(path, [])
        f = folders.setdefault(folder, {
            "style": style, "images": 0, "labelled_tiles": 0, "found_tiles": 0,
            "correct": 0, "wrong": 0, "unknown": 0, "missed": 0, "face_down": 0,
            "halves_correct": 0, "recall_found": 0, "confusions": Counter(), "unlabelled_images": 0,
        })
        f["images"] += 1
        labels = rec.get("tiles")
        partial = False
        if labels is None:
            labels = rec.get("faces_fully_visible")
            partial = labels is not None
        f["found_tiles"] += len(tiles)
        if labels is None:
            f["unlabelled_images"] += 1
            continue
        f["labelled_tiles"] += len(labels)
        f["recall_found"] += min(len(tiles), len(labels))
        if style == "chinese":
            read = [t["face"] for t in tiles if t["state"] == "face_up"]
            n_unknown = sum(t["state"] == "unknown" for t in tiles)
            f["face_down"] += sum(t["state"] == "face_down" for t in tiles)
            ok, lab_left, read_left = _multiset_match(labels, read)
            f["correct"] += ok
            f["wrong"] += len(read_left)
            f["unknown"] += n_unknown
            f["missed"] += max(0, len(lab_left) - n_unknown)
            if len(lab_left) == 1 and len(read_left) == 1:
                f["confusions"][f"{lab_left[0]} -> {read_left[0]}"] += 1
            else:
                for lab in lab_left:
                    f["confusions"][f"{lab} -> {'unknown' if n_unknown else 'missed'}"] += 1
                for r in read_left:
                    f["confusions"][f"(none) -> {r}"] += 1
        else:
            halves = [h for h in (_half_pair(t) for t in tiles) if h is not None]
            ok, _, _ = _multiset_match(labels, halves)
            f["halves_correct"] += ok
            if partial:
                f["partial_labels"] = True
    out: dict[str, dict] = {}
    for name, f in sorted(folders.items()):
        n = max(f["labelled_tiles"], 1)
        d = {"style": f["style"], "images": f["images"], "labelled_tiles": f["labelled_tiles"],
             "found_tiles": f["found_tiles"],
             "tile_recall": round(f["recall_found"] / n, 4)}
        if f["style"] == "chinese":
            d.update(correct=f["correct"], wrong=f["wrong"], unknown=f["unknown"],
                     missed=f["missed"], face_down=f["face_down"],
                     face_accuracy=round(f["correct"] / n, 4),
                     confusions=dict(f["confusions"].most_common()))
        else:
            d.update(halves_correct=f["halves_correct"],
                     half_count_accuracy=round(f["halves_correct"] / n, 4),
                     unlabelled_images=f["unlabelled_images"],
                     partial_labels=bool(f.get("partial_labels", False)))
        out[name] = d
    chinese = [d for d in out.values() if d["style"] == "chinese"]
    total = {
        "chinese_labelled": sum(d["labelled_tiles"] for d in chinese),
        "chinese_correct": sum(d["correct"] for d in chinese),
        "chinese_wrong": sum(d["wrong"] for d in chinese),
        "chinese_unknown": sum(d["unknown"] for d in chinese),
    }
    return {"realdata": str(realdata), "backend": backend, "min_confidence": min_confidence,
            "folders": out, "totals": total}


def format_table(res: dict) -> str:
    """Readable per-folder report."""
    lines = []
    lines.append(f"{'folder':<30}{'imgs':>5}{'tiles':>6}{'found':>6}{'recall':>8}"
                 f"{'ok':>5}{'wrong':>6}{'unk':>5}{'miss':>5}{'acc':>7}")
    for name, d in res["folders"].items():
        if d["style"] == "chinese":
            lines.append(f"{name:<30}{d['images']:>5}{d['labelled_tiles']:>6}{d['found_tiles']:>6}"
                         f"{d['tile_recall']:>8.2f}{d['correct']:>5}{d['wrong']:>6}"
                         f"{d['unknown']:>5}{d['missed']:>5}{d['face_accuracy']:>7.2f}")
        else:
            lines.append(f"{name:<30}{d['images']:>5}{d['labelled_tiles']:>6}{d['found_tiles']:>6}"
                         f"{d['tile_recall']:>8.2f}{'halves ok':>16} {d['halves_correct']:>4}"
                         f"{d['half_count_accuracy']:>7.2f}")
    for name, d in res["folders"].items():
        if d.get("confusions"):
            top = ", ".join(f"{k} x{v}" for k, v in list(d["confusions"].items())[:8])
            lines.append(f"  {name} confusions: {top}")
    t = res["totals"]
    lines.append(f"chinese total: {t['chinese_correct']}/{t['chinese_labelled']} correct, "
                 f"{t['chinese_wrong']} wrong, {t['chinese_unknown']} unknown")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from scoring.errors import InputError

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--realdata", type=Path, default=DEFAULT_REALDATA)
    ap.add_argument("--models", type=Path, default=None)
    ap.add_argument("--backend", choices=("onnx", "ultralytics"), default="onnx")
    ap.add_argument("--min-confidence", type=float, default=0.5)
    ap.add_argument("--pad", type=float, default=0.0,
                    help="context border for close-ups (fraction of the longer side)")
    ap.add_argument("--no-closeups", action="store_true",
                    help="tile model only: no picture-outline candidate for one-tile close-ups")
    ap.add_argument("--single", action="store_true",
                    help="single-tile folders only: tile outline from the picture (identify --single)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    try:
        if not args.realdata.is_dir():
            raise InputError(f"realdata folder not found: {args.realdata}")
        res = evaluate(args.realdata, args.models, args.backend, args.min_confidence,
                       progress=not args.json, pad=args.pad, single=args.single,
                       closeups=not args.no_closeups)
    except InputError as exc:
        print(f"eval_realdata: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(res, indent=2) if args.json else format_table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
