"""``paigow layout propose``: draft a layout file from a still frame of the table.

Examples::

    paigow layout propose frame.png --out table.yaml
    paigow layout propose frame.png --json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scoring.errors import InputError


def register(sub) -> None:
    """Add ``layout`` (sub-command ``propose``) to the argparse sub-parser collection."""
    p = sub.add_parser("layout", help="layout files: pin the positions of a table",
                       description="Layout files map each position (dealer, seats 1-7) to a "
                                   "polygon in image pixels; see README 'Layout files'.")
    lsub = p.add_subparsers(dest="layout_command", required=True, metavar="ACTION")
    q = lsub.add_parser("propose", help="propose a layout from a still frame of the table",
                        description="Detect and read the tiles of one frame, group them by "
                                    "table place (dealer at the top, seat 1 at the image "
                                    "right) and write a polygon around each position.")
    q.add_argument("image", metavar="IMAGE", help="a still frame of the table, tiles laid out")
    q.add_argument("--out", default=None, metavar="FILE",
                   help="write the layout YAML here (default: print it)")
    q.add_argument("--table-id", default="table-1", metavar="ID",
                   help="table id written into the layout (default table-1)")
    q.add_argument("--json", action="store_true",
                   help="print the proposal (layout, positions, tiles left out) as JSON")
    q.add_argument("--backend", choices=("onnx", "openvino", "ultralytics"), default=None,
                   help="inference backend (default: as paigow run)")
    q.add_argument("--models", default=None, metavar="DIR",
                   help="folder with the tile and spot models (default: the repository's models/)")
    q.set_defaults(func=_propose)


def _propose(args) -> int:
    """Bad input raises InputError: ``paigow`` prints it as one line (and as JSON on stdout
    under ``--json``) and exits with code 2."""
    from vision.layout_propose import layout_yaml, propose_layout

    if args.out is not None and Path(args.out).is_dir():
        raise InputError(f"--out {args.out} is a folder; give a file name (e.g. layout.yaml)")
    res = propose_layout(args.image, models_dir=args.models, backend=args.backend,
                         table_id=args.table_id)
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
        named = ", ".join(f"{p} ({i['tiles']} tiles)" if i["source"] == "tiles" else f"{p} (fitted)"
                          for p, i in res["positions"].items())
        print(f"layout written to {res['out']}: {named}", file=sys.stderr)
    return 0
