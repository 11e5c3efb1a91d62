"""``paigow render``: render the synthetic tile (OBB) and pip (detect) training datasets."""

from __future__ import annotations

import json
from pathlib import Path


def register(sub) -> None:
    """Add ``paigow render`` to the argparse sub-parser collection."""
    p = sub.add_parser(
        "render", help="render synthetic training data (tile frames and pip crops)",
        description="Writes DIR/tiles/{images,labels}/{train,val}, DIR/pips/..., DIR/tiles.yaml "
                    "and DIR/pips.yaml (see vision/synth/render.py). Deterministic by --seed.")
    p.add_argument("--n", type=int, required=True, help="number of tile-model images")
    p.add_argument("--n-pips", type=int, default=None,
                   help="number of pip crops (default 4 x --n)")
    p.add_argument("--out", default="datasets", help="output folder (default datasets)")
    p.add_argument("--seed", type=int, default=0, help="dataset seed, 0..999999 (default 0)")
    p.add_argument("--val-fraction", type=float, default=0.1,
                   help="fraction of images in val, 0..0.5 (default 0.1)")
    p.add_argument("--closeup-fraction", type=float, default=0.25,
                   help="fraction of tile-model images that are close-ups, 0..1 (default 0.25)")
    p.add_argument("--catalogue", type=float, default=0.0,
                   help="fraction of close-ups that are catalogue pictures (one tile filling "
                        "90-100%% of the picture), 0..1 (default 0)")
    p.add_argument("--touching", type=float, default=0.0,
                   help="per-position probability, in table frames, of hands at any angle with "
                        "their tiles touching flush, 0..1 (default 0)")
    p.add_argument("--square-blocks", type=float, default=0.0,
                   help="per-frame probability of tiles exactly twice as long as wide, so "
                        "that flush hands are squares of four halves, 0..1 (default 0)")
    p.add_argument("--threes-one-way", type=float, default=0.0,
                   help="per-frame probability that every 3 of a table frame runs one way, "
                        "as a real set draws them, 0..1 (default 0)")
    p.add_argument("--camera", type=float, default=0.0,
                   help="per-frame probability that a table frame is seen through a dim, "
                        "compressed surveillance camera (480-720 lines, H.264 or JPEG), 0..1 "
                        "(default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from scoring.errors import InputError

    if args.n < 1:
        raise InputError(f"--n must be >= 1 (images to render), got {args.n}")
    n_pips = 4 * args.n if args.n_pips is None else args.n_pips
    if n_pips < 0:
        raise InputError(f"--n-pips must be >= 0, got {n_pips}")
    if not 0 <= args.seed < 1_000_000:
        raise InputError(f"--seed must be in 0..999999 (larger seeds are held out), got {args.seed}")
    if not 0.0 <= args.val_fraction <= 0.5:
        raise InputError(f"--val-fraction must be in [0, 0.5], got {args.val_fraction}")
    for name in ("closeup_fraction", "catalogue", "touching", "square_blocks", "threes_one_way",
                 "camera"):
        v = getattr(args, name)
        if not 0.0 <= v <= 1.0:
            raise InputError(f"--{name.replace('_', '-')} must be in [0, 1], got {v}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out is not a folder: {str(out)!r}")

    from vision.synth.dataset import render_datasets

    stats = render_datasets(out, args.n, n_pips, args.seed, val_fraction=args.val_fraction,
                            progress=not args.no_progress and not args.json,
                            closeup_fraction=args.closeup_fraction, catalogue=args.catalogue,
                            touching=args.touching, square_blocks=args.square_blocks,
                            threes_one_way=args.threes_one_way, camera=args.camera)
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(f"tiles: {stats['tiles_train']} train + {stats['tiles_val']} val images "
              f"({stats['closeups']} close-ups, {stats['camera']} through a surveillance camera; "
              f"{stats['tile_labels']} tile, "
              f"{stats['tile_back_labels']} tile_back labels) -> {stats['tiles_yaml']}")
        print(f"pips: {stats['pips_train']} train + {stats['pips_val']} val crops "
              f"({stats['pip_red']} red, {stats['pip_white']} white) -> {stats['pips_yaml']}")
        print(f"{stats['seconds']} s")
    return 0
