"""``paigow reaudit VIDEO_OR_FOLDER... --audit DB [--compare LIVE_DB]``: recordings re-read in
parallel as Ray tasks (:mod:`vision.reaudit`, docs/reaudit.md).

Exit codes: 0 done (no disagreement with ``--compare``), 1 the re-read disagrees with the live
record, or the live store does not verify, 2 bad input. The live store is verified first (as
``paigow audit verify``, with ``--anchor`` / ``--key-file`` when given; docs/reaudit.md): a
broken one is not read -- exit 1, one line naming the first broken record, before any
recording is read -- unless ``--force``, whose output starts with ``STORE BROKEN AT record
N`` and marks every difference from the break on (still exit 1).
"""

from __future__ import annotations

import json
import sys

from scoring.errors import InputError

from vision.commands.audit import verify_first
from vision.commands.common import add_hidden_alias, add_model_options


def register(sub) -> None:
    """Add ``reaudit`` to the sub-parser collection."""
    p = sub.add_parser("reaudit", help="re-read recorded video in parallel (Ray) into an audit "
                                       "store; compare with what was recorded live",
                       description="Re-read recordings (video files or folders of them) as "
                                   "Ray tasks, one per recording, on a local Ray or a cluster "
                                   "(--address); append the rounds found to --audit; with "
                                   "--compare list where they disagree with the live store.")
    p.add_argument("paths", nargs="+", metavar="VIDEO_OR_FOLDER",
                   help="recorded videos, or folders of them")
    p.add_argument("--audit", default=None, metavar="DB",
                   help="append the rounds found to this audit store (SQLite file or "
                        "postgresql:// URL)")
    p.add_argument("--compare", default=None, metavar="LIVE_DB",
                   help="the audit store recorded live: list every round where the re-read "
                        "disagrees (exit code 1 when any)")
    p.add_argument("--workers", type=int, default=2, metavar="N",
                   help="recordings read at once (Ray tasks; default 2)")
    p.add_argument("--address", default=None,
                   help="Ray cluster address (ray://host:10001, or 'auto'); default: a local Ray")
    p.add_argument("--layout", default=None, metavar="FILE", help="layout YAML (docs/layout.md)")
    p.add_argument("--config", default=None, metavar="FILE", help="config file (YAML)")
    p.add_argument("--stable", type=int, default=None, metavar="N",
                   help="frames a position must stay identical to be final (default 10)")
    p.add_argument("--banking-seat", dest="banker", default=None, metavar="POS",
                   help="banking position: dealer (default) or a seat id 1..7")
    add_hidden_alias(p, "--banker", "banker")
    p.add_argument("--table-id", default=None, metavar="ID",
                   help="table id of every recording (default: each file's stem)")
    p.add_argument("--min-confidence", type=float, default=None,
                   help="faces below this confidence are unknown (default 0.5)")
    add_model_options(p, scales=False)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    from vision.commands.audit import _add_integrity_options

    _add_integrity_options(p, "verification of --compare's live store first (as 'paigow "
                              "audit verify')")
    p.set_defaults(func=_reaudit)


def _reaudit(args) -> int:
    from vision import reaudit as mod

    if args.audit is None and args.compare is None:
        raise InputError("reaudit needs --audit DB (where to store the rounds) and/or "
                         "--compare LIVE_DB")
    if args.compare is None and (args.force or args.anchor or args.key_file):
        raise InputError("--force, --anchor and --key-file verify the live store: they need "
                         "--compare LIVE_DB")
    live, res, last_seq = None, None, {}
    if args.compare is not None:  # the live store is verified and read before any work
        from vision.audit.integrity import StoreBroken

        try:
            res = verify_first(args, args.compare)  # before --compare reads it
        except StoreBroken as exc:
            return _refuse(args, exc)
        for note in res.notes:
            print(f"paigow reaudit: note: {note}", file=sys.stderr)
        live, last_seq = mod.live_rounds(args.compare, res)
    broken = res is not None and not res.ok
    options = {"layout": args.layout, "config": args.config, "stable": args.stable,
               "banker": args.banker, "table_id": args.table_id,
               "min_confidence": args.min_confidence, "models": args.models,
               "backend": args.backend}
    results = mod.reaudit(args.paths, audit=args.audit, options=options, workers=args.workers,
                          address=args.address, progress=not args.no_progress)
    events = [e for r in results for e in r["events"]]
    diffs = mod.compare_rounds(events, live) if live is not None else None
    if broken:  # a difference is marked when the live round draws on a record from M on
        for d in diffs:
            seq = last_seq.get((str(d["table_id"]), str(d["round_id"])))
            d["after_break"] = seq is None or seq >= res.marked_from
    if args.json:
        from vision.audit.integrity import broken_block

        print(json.dumps({"recordings": [{k: r[k] for k in ("path", "table_id", "frames",
                                                            "stored", "wall_s")}
                                         | {"rounds": len(r["events"])} for r in results],
                          "rounds": len(events),
                          "differences": diffs}
                         | ({"store_broken": broken_block(res)} if broken else {}),
                         indent=1))
    else:
        out = sys.stdout
        if broken:
            from vision.audit.integrity import broken_header

            print(broken_header(res), file=out)
        for r in results:
            print(f"{r['path']}: table {r['table_id']}, {r['frames']} frames, "
                  f"{len(r['events'])} round(s), {r['stored']} stored", file=out)
        if diffs is not None:
            for d in diffs:
                where = f"round {d['round_id']} of {d['table_id']}"
                if d["position"]:
                    where += f" position {d['position']}"
                what = d["field"] or d["kind"]
                mark = f" -- BROKEN (record {res.marked_from} on)" if d.get("after_break") \
                    else ""
                print(f"{d['kind']}: {where}: {what}: live {d['live']!r}, re-read "
                      f"{d['reread']!r}{mark}", file=out)
            print(f"{len(diffs)} difference(s) with {args.compare}" + (
                f"; STORE BROKEN AT record {res.broken_seq}: not a comparison with the store "
                "as written" if broken else ""), file=out)
    return 1 if diffs or broken else 0


def _refuse(args, exc) -> int:
    """A broken live store not read: one line on stderr (and under --json one object on
    stdout), exit 1."""
    from vision.sources import redact_text

    msg = redact_text(str(exc))
    print(f"paigow reaudit: {msg}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps({"error": msg, "command": "reaudit", "exit_code": 1,
                          "verify": exc.result.to_dict()}), flush=True)
    return 1
