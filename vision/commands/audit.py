"""``paigow audit verify|check-payouts`` (audit store); ``paigow export`` lives in export.py.

Exit codes: 0 ok / no differences, 1 the chain is broken or payouts differ, 2 bad input.
"""

from __future__ import annotations

import json



def register(sub) -> None:
    """Add ``audit`` (verify, check-payouts) to the sub-parser collection."""
    p = sub.add_parser("audit", help="audit store of settled rounds: verify, check payouts",
                       description="Audit store of settled rounds (vision/audit.py).")
    asub = p.add_subparsers(dest="audit_command", required=True, metavar="ACTION")

    v = asub.add_parser("verify", help="recompute the hash chain; name the first broken record")
    v.add_argument("db", help="audit store (SQLite file or postgresql:// URL)")
    v.add_argument("--no-frames", action="store_true", help="do not re-hash key frames")
    v.add_argument("--frames-dir", help="key-frame folder (default <db>.frames)")
    v.add_argument("--json", action="store_true", help="print the result as JSON")
    v.set_defaults(func=_verify)

    c = asub.add_parser("check-payouts",
                        help="compare a payout CSV (round_id|time, seat, amount_paid) with the "
                             "stored nets")
    c.add_argument("db", help="audit store")
    c.add_argument("payouts", help="CSV with columns round_id or time, seat, amount_paid "
                                   "(docs/payouts.md)")
    c.add_argument("--report-unknown", action="store_true",
                   help="list rounds missing from the store as differences (default: exit 2)")
    c.add_argument("--json", action="store_true", help="print the differences as JSON")
    c.set_defaults(func=_check_payouts)


def _verify(args) -> int:
    from vision.audit import verify

    res = verify(args.db, check_frames=not args.no_frames, frames_dir=args.frames_dir)
    if args.json:
        print(json.dumps(res.to_dict(), indent=1))
    else:
        print(res)
        if res.orphan_frames:
            print(f"note: {len(res.orphan_frames)} frame file(s) no record names "
                  f"(an interrupted append): {', '.join(res.orphan_frames[:5])}")
    return 0 if res.ok else 1


def _check_payouts(args) -> int:
    from vision.audit import check_payouts

    diffs = check_payouts(args.db, args.payouts,
                          unknown="report" if args.report_unknown else "error")
    if args.json:
        print(json.dumps({"differences": diffs, "count": len(diffs)}, indent=1))
    else:
        for d in diffs:
            ref = d["round_id"] or d["time"]
            print(f"{d['kind']}: round {ref} seat {d['seat']}: paid {d['paid']}, computed "
                  f"{d['computed']}, difference {d['difference']}")
        print(f"{len(diffs)} difference(s)")
    return 1 if diffs else 0
