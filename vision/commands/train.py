"""``paigow train``: train the tile or pip detector from a config YAML and export it to ONNX."""

from __future__ import annotations

import json
from pathlib import Path


def register(sub) -> None:
    """Add ``paigow train`` to the argparse sub-parser collection."""
    p = sub.add_parser(
        "train", help="train a detector (tiles: OBB, pips: detect) and export ONNX",
        description="Train from a config YAML (datasets/train_tiles.yaml, datasets/train_pips.yaml); "
                    "writes <out>/<name>.pt, .onnx and .json (default runs/, never the shipped "
                    "models/ unless asked); log in runs/train/<name>.log.")
    p.add_argument("--config", required=True, help="training config YAML")
    p.add_argument("--epochs", type=int, default=None, help="override the config's epochs")
    p.add_argument("--hours", type=float, default=None,
                   help="wall-clock budget in hours (epochs fitted to it by ultralytics)")
    p.add_argument("--device", default="cpu", help="cpu or a CUDA index such as 0")
    p.add_argument("--out", default="runs", metavar="DIR",
                   help="output folder for the trained weights, ONNX and metadata (default "
                        "runs/; copy them to models/ or point --models at DIR to use them)")
    p.add_argument("--resume", action="store_true",
                   help="continue from runs/train/<name>/weights/last.pt or models/checkpoints")
    p.add_argument("--json", action="store_true", help="print the metadata as JSON")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from scoring.errors import InputError
    from vision.synth.train import load_config, train

    if args.epochs is not None and args.epochs < 1:
        raise InputError(f"--epochs must be >= 1, got {args.epochs}")
    load_config(args.config)  # bad path -> InputError before heavy imports
    meta = train(args.config, epochs=args.epochs, device=str(args.device), out_dir=Path(args.out),
                 resume=args.resume, hours=args.hours)
    if args.json:
        print(json.dumps(meta, indent=2, default=str))
    else:
        m = meta["metrics_synthetic_val"]
        print(f"{meta['name']}: {meta['epochs_run']} epochs in {meta['train_seconds']:.0f} s; "
              f"val mAP50-95 {m.get('mAP50-95')} P {m.get('precision')} R {m.get('recall')}; "
              f"{meta['weights']} {meta['onnx']}")
    return 0
