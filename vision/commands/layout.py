"""``paigow layout propose``: draft a layout file from frames of the table (stills or a video).

Examples::

    paigow layout propose frame.png --out table.yaml
    paigow layout propose frame.png --json
    paigow layout propose round1.png round2.png --dealer-at 640,600 --picture check.png
    paigow layout propose table.mp4 --out table.yaml
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from scoring.errors import InputError

from vision.config import backend_choices


def register(sub) -> None:
    """Add ``layout`` (sub-command ``propose``) to the argparse sub-parser collection."""
    p = sub.add_parser("layout", help="layout files: pin the positions of a table",
                       description="Layout files map each position (dealer, seats 1-7) to a "
                                   "polygon in image pixels; see README 'Layout files'.")
    lsub = p.add_subparsers(dest="layout_command", required=True, metavar="ACTION")
    q = lsub.add_parser("propose", help="propose a layout from frames of the table",
                        description="Read the tiles of one or more frames (stills, folders "
                                    "of them, or a video) of one fixed camera, find the "
                                    "positions (two hands of two tiles), tell the dealer's "
                                    "from the table's shape or the undealt face-down "
                                    "stacks in front of it (or --dealer-at) and write a "
                                    "polygon around each position. Any rotation or tilt; "
                                    "groups of tiles that are no position are listed and "
                                    "drawn (--picture). docs/layout.md")
    q.add_argument("image", metavar="SOURCE", nargs="+",
                   help="frames of the table with tiles laid out: image files, folders of "
                        "images, or a video (one frame a second); several rounds add the "
                        "seats empty in one of them")
    q.add_argument("--out", default=None, metavar="FILE",
                   help="write the layout YAML here (default: print it)")
    q.add_argument("--dealer-at", default=None, metavar="X,Y",
                   help="a point (px) at the dealer's tiles, where the picture does not "
                        "tell which position is the dealer's (e.g. one or two players and no "
                        "undealt stacks in view)")
    q.add_argument("--picture", default=None, metavar="FILE",
                   help="write the first frame with the proposal drawn (polygons, groups left "
                        "out) to this PNG/JPEG")
    q.add_argument("--table-id", default="table-1", metavar="ID",
                   help="table id written into the layout (default table-1)")
    q.add_argument("--json", action="store_true",
                   help="print the proposal (layout, positions, tiles left out) as JSON")
    q.add_argument("--backend", choices=backend_choices(), default=None,
                   help="inference backend (default: as paigow run)")
    q.add_argument("--models", default=None, metavar="DIR",
                   help="folder with the tile and spot models (default: the repository's models/)")
    q.set_defaults(func=_propose)


def _propose(args) -> int:
    """Bad input raises InputError: ``paigow`` prints it as one line (and as JSON on stdout
    under ``--json``) and exits with code 2."""
    from vision.table.propose import layout_yaml, propose_layout

    if args.out is not None and Path(args.out).is_dir():
        raise InputError(f"--out {args.out} is a folder; give a file name (e.g. layout.yaml)")
    dealer_at = None
    if args.dealer_at is not None:
        try:
            x, y = (float(v) for v in args.dealer_at.split(","))
            if not (np.isfinite(x) and np.isfinite(y)) or max(abs(x), abs(y)) > 100_000:
                raise ValueError
        except ValueError:
            raise InputError(f"--dealer-at {args.dealer_at!r}: give X,Y in picture pixels, "
                             "e.g. 640,600") from None
        dealer_at = (x, y)
    res = propose_layout(args.image, models_dir=args.models, backend=args.backend,
                         table_id=args.table_id, dealer_at=dealer_at, picture=args.picture)
    text = layout_yaml(res)
    if args.out is not None:
        out = Path(args.out)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--out {out}: cannot write ({exc.strerror})") from None
        res["out"] = str(out)
    if args.json:
        print(json.dumps(res, indent=2))
    elif args.out is None:
        sys.stdout.write(text)
    else:
        named = ", ".join(f"{p} ({i['tiles']} tiles)" for p, i in res["positions"].items())
        print(f"layout written to {res['out']}: {named}", file=sys.stderr)
    if not args.json:
        for k, g in enumerate(res["left_out"], 1):  # never silently: on stderr too
            print(f"left out {k}: {g['tiles']} tile(s) at ({g['centre'][0]:.0f}, "
                  f"{g['centre'][1]:.0f}): {g['why']}", file=sys.stderr)
    return 0
