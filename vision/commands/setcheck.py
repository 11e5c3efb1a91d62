"""``paigow setcheck``: check the 32 tiles laid out face up as one complete set (16 pairs)
before play [58 Pa. Code 621a.4] (:mod:`vision.setcheck`, :mod:`scoring.setcheck`).

Examples::

    paigow setcheck set.jpg                      # "set complete: 32 tiles, 16 pairs"
    paigow setcheck set.jpg --json --audit audit.db --table-id t7 --by "S. Lee"
    paigow setcheck 0 --frame 30                 # camera 0, its 30th frame

Exit codes: 0 every picture shows a complete set, 1 some picture does not (missing, extra,
foreign or unread tiles), 2 bad input (one line naming it).
"""

from __future__ import annotations

import json

from scoring.errors import InputError

from vision.commands.common import add_reading_options, reading_config


def register(sub) -> None:
    """Add ``setcheck`` to the argparse sub-parser collection."""
    p = sub.add_parser("setcheck", help="check the tiles laid out face up as one complete set",
                       description="Read a picture of the 32 tiles laid out face up and say "
                                   "whether they are one complete set of 16 pairs, or which "
                                   "faces are missing, extra or foreign and how many tiles "
                                   "could not be read (never guessed). Exit code 0 complete, "
                                   "1 not complete.")
    p.add_argument("sources", nargs="+", metavar="IMAGE|SOURCE",
                   help="images, folders or globs (each picture checked), or a video, camera "
                        "index or stream (one frame, --frame)")
    p.add_argument("--frame", type=int, default=1, metavar="N",
                   help="video, camera or stream: check its N-th frame (default 1)")
    p.add_argument("--audit", default=None, metavar="DB",
                   help="append a set-check record to this audit store (created when missing; "
                        "docs/audit.md)")
    p.add_argument("--audit-key-file", default=None, metavar="FILE",
                   help="secret key of a keyed audit store (default $PAIGOW_AUDIT_KEY)")
    p.add_argument("--table-id", default="table-1", metavar="ID",
                   help="the table checked, in the audit record (default table-1)")
    p.add_argument("--by", default=None, metavar="NAME", help="who checked (audit record)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_reading_options(p, "unread", scales=False)
    p.set_defaults(func=_setcheck)


def _setcheck(args) -> int:
    from vision.setcheck import check_sources, engine_for

    if args.frame < 1:
        raise InputError(f"--frame must be >= 1, got {args.frame}")
    rec = reading_config(args)
    if not str(args.table_id).strip():
        raise InputError(f"--table-id must not be empty, got {args.table_id!r}")
    store = None
    if args.audit is not None:  # opened before any reading: a bad store fails at once
        from vision.audit import AuditStore
        from vision.audit.keys import load_key

        store = AuditStore(args.audit, key=load_key(args.audit_key_file))
    try:
        engine = engine_for(recognition=rec)
        results = check_sources(args.sources, engine, frames=args.frame)
        if store is not None:
            from vision.audit.entries import append_setcheck
            from vision.sources import redact_url

            for r in results:
                rec = append_setcheck(store, r, table_id=args.table_id,
                                      source=redact_url(r["source"]), by=args.by,
                                      model_version=r.get("model_version"),
                                      reads=r["tiles_read"])
                r["record"] = rec.seq
    finally:
        if store is not None:
            store.close()
    if args.json:
        print(json.dumps({"complete": all(r["complete"] for r in results),
                          "checks": results}, indent=1))
    else:
        for r in results:
            print(f"{r['source']}: {r['summary']}"
                  + (f" (audit record {r['record']})" if "record" in r else ""))
    return 0 if results and all(r["complete"] for r in results) else 1
