"""The crop classifier on crops it was not trained on (issue 40 item 3; models/MODEL_CARD.md,
"The crop classifier").

Reads a folder of classifier crops (``python -m vision.synth.crops OUT --seed S``: its ``val/``,
or a fresh seed's ``train/`` and ``val/``) with ``MODELS/crops.onnx`` and reports, as JSON:

* ``top1``: the share of crops whose most likely class is their own, per class and in all;
* ``p_true_quantiles``: the probability each face crop's own face gets, at 0.5 / 1 / 2 / 5 %
  -- ``vision.recognition.crosscheck.MIN_FACE_P`` is set from the 1 % quantile of the
  training run's own validation crops (a right face is ruled out about 1 time in 100);
* ``catch``: for every face crop and every *other* face, whether the rule would make that
  face unknown (the classifier gives it a probability under ``--min-face-p``, or takes the crop
  for ``other``): the share of wrong faces caught, over all 20 other faces and over the faces
  one spot away (a spot merged or missed: the total differs by one), and ``veto_right``: the
  share of right faces it would make unknown; ``other_caught``: the share of ``other`` crops
  (outlines that are not one tile) the classifier takes for ``other``.

With ``--realdata`` FOLDER is ../shared/realdata instead (read at run time, never copied): each
single Chinese tile picture (the picture is the tile) brought down to a tile ``--long`` px long
(and through JPEG quality 60), its outline the picture's own, is cross-checked; reported per
folder and length: how many of the right faces the rule would rule out (``veto_right``) and
the classifier's top-1 -- the rule's cost on tiles the renderer never drew.

Usage: ``python scripts/eval_crops.py FOLDER [--models DIR] [--min-face-p P] [--json]``, or
``python scripts/eval_crops.py ../shared/realdata --realdata [--long 40,60,80]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _spots(face: str) -> int:
    a, b = face.split("-")
    return int(a) + int(b)


def evaluate(folder: Path, models: Path, min_face_p: float) -> dict:
    """The figures of the module docstring for the crops under ``folder`` (any depth,
    ``<class>/<name>.png``)."""
    import cv2

    from vision.recognition.crosscheck import load_crop_classifier

    clf = load_crop_classifier(models)
    if clf is None:
        raise SystemExit(f"error: no crops.onnx in {models}")
    files = sorted(folder.rglob("*.png"))
    labels = [f.parent.name for f in files]
    probs = []
    for i in range(0, len(files), 64):
        probs.append(clf.classify([cv2.imread(str(f)) for f in files[i:i + 64]]))
    p = np.concatenate(probs) if probs else np.zeros((0, len(clf.names)), np.float32)
    col = {n: j for j, n in enumerate(clf.names)}
    y = np.array([col[n] for n in labels])
    top = p.argmax(1)
    per = {n: round(float((top[y == j] == j).mean()), 4) for n, j in col.items() if (y == j).any()}
    faces = [n for n in clf.names if n != "other"]
    is_face = np.array([n != "other" for n in labels])
    p_true = p[np.arange(len(y)), y][is_face]
    says_other = top == col["other"]
    caught = caught1 = pairs = pairs1 = 0
    for k in np.nonzero(is_face)[0]:
        for f in faces:
            if f == labels[k]:
                continue
            out = p[k, col[f]] < min_face_p or says_other[k]
            pairs += 1
            caught += int(out)
            if abs(_spots(f) - _spots(labels[k])) == 1:
                pairs1 += 1
                caught1 += int(out)
    return {
        "folder": str(folder), "crops": len(files), "face_crops": int(is_face.sum()),
        "top1": round(float((top == y).mean()), 4) if len(y) else None, "top1_per_class": per,
        "p_true_quantiles": {str(q): round(float(np.quantile(p_true, q / 100)), 4)
                             for q in (0.5, 1, 2, 5)} if len(p_true) else {},
        "min_face_p": min_face_p,
        "veto_right": (round(float(((p_true < min_face_p) | says_other[is_face]).mean()), 4)
                       if len(p_true) else None),
        "other_caught": (round(float(says_other[~is_face].mean()), 4)
                         if (~is_face).any() else None),
        "catch": {"other_faces": round(caught / max(pairs, 1), 4),
                  "one_spot_away": round(caught1 / max(pairs1, 1), 4)},
    }


def evaluate_realdata(folder: Path, models: Path, min_face_p: float, lengths: list[int]) -> dict:
    """``--realdata``: per folder of single Chinese tiles and tile length, the right faces the
    rule would rule out and the classifier's top-1 (module docstring)."""
    import cv2

    from vision.recognition.crosscheck import load_crop_classifier, square_crop

    clf = load_crop_classifier(models)
    if clf is None:
        raise SystemExit(f"error: no crops.onnx in {models}")
    col = {n: j for j, n in enumerate(clf.names)}
    recs = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines()
            if line.strip()]
    out: dict = {}
    for rec in recs:
        if rec.get("tile_style") != "chinese" or not rec.get("tiles") or len(rec["tiles"]) != 1:
            continue
        face = rec["tiles"][0]
        img = cv2.imread(str(folder / rec["file"]))
        if img is None or face not in col:
            continue
        h, w = img.shape[:2]
        for L in lengths:
            f = L / max(h, w)
            small = cv2.resize(img, (max(4, round(w * f)), max(4, round(h * f))),
                               interpolation=cv2.INTER_AREA)
            ok, buf = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, 60])
            small = cv2.imdecode(buf, cv2.IMREAD_COLOR)
            sh, sw = small.shape[:2]
            pad = cv2.copyMakeBorder(small, 20, 20, 20, 20, cv2.BORDER_REPLICATE)
            poly = np.array([[20, 20], [20 + sw, 20], [20 + sw, 20 + sh], [20, 20 + sh]],
                            np.float32)
            p = clf.classify([square_crop(pad, poly)])[0]
            key = f"{rec['file'].split('/')[0]} {L}px"
            acc = out.setdefault(key, {"tiles": 0, "top1": 0, "ruled_out": 0, "examples": []})
            acc["tiles"] += 1
            acc["top1"] += int(clf.names[int(p.argmax())] == face)
            if p[col[face]] < min_face_p or clf.names[int(p.argmax())] == "other":
                acc["ruled_out"] += 1
                acc["examples"].append(f"{rec['file']}: {face} ruled out, reads "
                                       f"{clf.names[int(p.argmax())]}")
    return {"min_face_p": min_face_p, "by_folder_and_length": out}


def main(argv: list[str] | None = None) -> int:
    from vision.recognition.crosscheck import MIN_FACE_P

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--models", type=Path, default=Path("models"))
    ap.add_argument("--min-face-p", type=float, default=MIN_FACE_P)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--realdata", action="store_true",
                    help="FOLDER is ../shared/realdata: its single Chinese tiles at low resolution")
    ap.add_argument("--long", default="40,60,80", help="--realdata: tile lengths, px")
    a = ap.parse_args(argv)
    if not a.folder.is_dir():
        print(f"error: crop folder not found: {a.folder}", file=sys.stderr)
        return 2
    if a.realdata:
        try:
            lengths = [int(v) for v in a.long.split(",") if v.strip()]
        except ValueError:
            print(f"error: --long {a.long!r} is not a list of px", file=sys.stderr)
            return 2
        res = evaluate_realdata(a.folder, a.models, a.min_face_p, lengths)
        if a.json:
            print(json.dumps(res, indent=1))
        else:
            for k, v in res["by_folder_and_length"].items():
                print(f"{k}: {v['tiles']} tiles, top-1 {v['top1']}, right faces ruled out "
                      f"{v['ruled_out']}")
        return 0
    res = evaluate(a.folder, a.models, a.min_face_p)
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"{res['crops']} crops, top-1 {res['top1']}, p(true face) quantiles "
              f"{res['p_true_quantiles']}, at min_face_p {res['min_face_p']}: right faces "
              f"vetoed {res['veto_right']}, wrong faces caught {res['catch']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
