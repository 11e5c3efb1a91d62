"""``paigow audit verify|anchor|check-payouts|report`` (audit store, docs/audit.md); ``paigow
export`` lives in export.py.

Exit codes: 0 ok / no differences, 1 the chain is broken (or differs from its anchor) or
payouts differ, 2 bad input. ``check-payouts`` and ``report`` verify the store first (as
``verify`` does, with ``--anchor`` / ``--key-file`` when given): a broken store is not read
(exit 1, one line naming the first broken record) unless ``--force``, whose output starts
with ``STORE BROKEN AT record N`` and marks every row from the break on (still exit 1).
"""

from __future__ import annotations

import json

from scoring.errors import InputError


def _add_verify_options(p) -> None:
    """What ``verify`` checks beyond the chain, and how (``verify``, and the verification
    ``check-payouts`` and ``report`` make first)."""
    p.add_argument("--key-file", default=None, metavar="FILE",
                   help="the store's secret key: check every record's HMAC (default "
                        "$PAIGOW_AUDIT_KEY when set)")
    p.add_argument("--anchor", action="append", default=None, metavar="HASH:COUNT|FILE",
                   help="an anchor printed earlier by 'paigow audit anchor' (or a file of "
                        "them): fail when the store is shorter, different or longer")
    p.add_argument("--allow-after", action="store_true",
                   help="with --anchor: records appended after the last anchor are not a "
                        "failure")
    p.add_argument("--no-frames", action="store_true", help="do not re-hash key frames")
    p.add_argument("--frames-dir", help="key-frame folder (default <db>.frames)")


def _add_integrity_options(p, title: str = "verification first (as 'paigow audit verify')"
                           ) -> None:
    """The verification a reader of the store makes first (check-payouts, report; reaudit's
    ``--compare`` store)."""
    g = p.add_argument_group(title)
    g.add_argument("--force", action="store_true",
                   help="read a store that does not verify anyway: the output starts with "
                        "'STORE BROKEN AT record N' and marks every row from the break on "
                        "(exit 1 all the same)")
    _add_verify_options(g)


def verify_first(args, db=None):
    """Verify the store (``db``, default ``args.db``) before a report, a payout check or a
    re-audit's comparison reads it, with the verification options ``args`` carries
    (``--anchor``, ``--allow-after``, ``--key-file``, ``--no-frames``, ``--frames-dir``,
    ``--force``): the :class:`~vision.audit.VerifyResult` (broken only with ``--force``).

    Raises:
        StoreBroken: the store does not verify and ``--force`` was not given.
        InputError: a bad anchor or key file, a store that cannot be opened.
    """
    from vision.audit.integrity import verify_before_read
    from vision.audit.keys import load_key
    from vision.audit.verification import parse_anchors

    anchors = [a for text in (args.anchor or []) for a in parse_anchors(text)]
    if args.allow_after and not anchors:
        raise InputError("--allow-after needs --anchor")
    return verify_before_read(args.db if db is None else db, key=load_key(args.key_file),
                              anchor=anchors,
                              allow_after=args.allow_after, check_frames=not args.no_frames,
                              frames_dir=args.frames_dir, force=args.force)


def _note(args, res) -> None:
    """A verification's notes (not failures: a keyed store read without its key...), on
    stderr so the output itself stays as it is."""
    import sys

    for note in res.notes:
        print(f"paigow audit {args.audit_command}: note: {note}", file=sys.stderr)


def _refuse(args, exc) -> int:
    """A broken store not read: one line on stderr (and under --json one object on stdout),
    exit 1."""
    import sys

    from vision.sources import redact_text

    msg = redact_text(str(exc))
    command = f"audit {args.audit_command}"
    print(f"paigow {command}: {msg}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps({"error": msg, "command": command, "exit_code": 1,
                          "verify": exc.result.to_dict()}), flush=True)
    return 1


def register(sub) -> None:
    """Add ``audit`` (verify, anchor, check-payouts, report) to the sub-parser collection."""
    p = sub.add_parser("audit", help="audit store of rounds: verify, check payouts, shift report",
                       description="Audit store of rounds (vision/audit/): verify the hash "
                                   "chain, check a payout log, report a shift.")
    asub = p.add_subparsers(dest="audit_command", required=True, metavar="ACTION")

    v = asub.add_parser("verify", help="recompute the hash chain; name the first broken record")
    v.add_argument("db", help="audit store (SQLite file or postgresql:// URL)")
    v.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_verify_options(v)
    v.add_argument("--deep", action="store_true",
                   help="parse every payload and compare every column with it (slower)")
    v.set_defaults(func=_verify)

    a = asub.add_parser("anchor", help="print the head hash and record count, to keep "
                                       "outside the store (verify --anchor checks them)")
    a.add_argument("db", help="audit store (SQLite file or postgresql:// URL)")
    a.add_argument("--json", action="store_true",
                   help="print {head_hash, rounds, store, time} as one JSON line")
    a.set_defaults(func=_anchor)

    c = asub.add_parser("check-payouts",
                        help="compare a payout CSV (round_id|time, seat, amount_paid) with the "
                             "stored nets")
    c.add_argument("db", help="audit store")
    c.add_argument("payouts", help="CSV with columns round_id or time, seat, amount_paid "
                                   "(docs/payouts.md)")
    c.add_argument("--table", default=None, metavar="ID",
                   help="check this table only: round ids are looked up in it; rows of other "
                        "tables (by the CSV's table column) are skipped")
    c.add_argument("--all", dest="all_rounds", action="store_true",
                   help="check every stored round (of --table), also rounds the CSV does not "
                        "cover (default: only the rounds the CSV names)")
    c.add_argument("--report-unknown", action="store_true",
                   help="list rounds missing from the store as differences (default: exit 2)")
    c.add_argument("--json", action="store_true", help="print the differences as JSON")
    _add_integrity_options(c)
    c.set_defaults(func=_check_payouts)

    r = asub.add_parser("report", help="shift report: rounds, unsettled rounds and why, alerts, "
                                       "house-way deviations, house net (CSV or HTML)",
                        description="The shift report of the rounds stored from --from to --to "
                                    "(docs/payouts.md, shift report).")
    r.add_argument("db", help="audit store (SQLite file or postgresql:// URL)")
    r.add_argument("--from", dest="start", default=None, metavar="TIME",
                   help="first round time included (ISO-8601; naive = UTC; default: the first)")
    r.add_argument("--to", dest="end", default=None, metavar="TIME",
                   help="rounds before this time (ISO-8601; default: all)")
    r.add_argument("--table", default=None, metavar="ID", help="one table only (default: all)")
    r.add_argument("--format", dest="fmt", default=None, choices=("csv", "html"),
                   help="csv (default) or html (a printable page); default from --out's suffix")
    r.add_argument("--out", default=None, metavar="FILE",
                   help="write the report to FILE (default: stdout); html: the full key "
                        "frames are copied to FILE's stem + '_frames/' beside it")
    r.add_argument("--json", action="store_true",
                   help="print the report as JSON (with --out: print where it was written)")
    _add_integrity_options(r)
    r.set_defaults(func=_report)


def _verify(args) -> int:
    from vision.audit import verify
    from vision.audit.keys import load_key
    from vision.audit.verification import parse_anchors

    anchors = [a for text in (args.anchor or []) for a in parse_anchors(text)]
    if args.allow_after and not anchors:
        raise InputError("--allow-after needs --anchor")
    res = verify(args.db, check_frames=not args.no_frames, frames_dir=args.frames_dir,
                 deep=args.deep, key=load_key(args.key_file), anchor=anchors,
                 allow_after=args.allow_after)
    if args.json:
        print(json.dumps(res.to_dict(), indent=1))
    else:
        print(res)
        if res.orphan_frames and res.ok:
            print(f"note: {len(res.orphan_frames)} frame file(s) no record names "
                  f"(an interrupted append): {', '.join(res.orphan_frames[:5])}")
        for note in res.notes:
            print(f"note: {note}")
    return 0 if res.ok else 1


def _anchor(args) -> int:
    from datetime import datetime, timezone

    from vision.audit import AuditStore
    from vision.audit.verification import format_anchor

    with AuditStore(args.db, create=False, read_only=True) as st:
        head, n = st.head()
    if args.json:
        now = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        print(json.dumps({"head_hash": head, "rounds": n, "store": str(args.db), "time": now}))
    else:
        print(format_anchor(head, n))
    return 0


def _check_payouts(args) -> int:
    from vision.audit import check_payouts
    from vision.audit.integrity import StoreBroken, broken_block, broken_header

    try:
        res = verify_first(args)
    except StoreBroken as exc:
        return _refuse(args, exc)
    _note(args, res)
    diffs = check_payouts(args.db, args.payouts,
                          unknown="report" if args.report_unknown else "error",
                          table=args.table, all_rounds=args.all_rounds, verified=res)
    mark = f" -- BROKEN (record {res.marked_from} on)" if not res.ok else ""
    if args.json:
        out = {"differences": diffs, "count": len(diffs)}
        if not res.ok:
            out["store_broken"] = broken_block(res)
        print(json.dumps(out, indent=1))
    else:
        if not res.ok:
            print(broken_header(res))
        for d in diffs:
            ref = d["round_id"] or d["time"]
            seat = d["seat"]
            if d.get("table_id"):
                seat += f" (table {d['table_id']})"
            if d.get("manual"):
                seat += " (settled by manual entry)"
            print(f"{d['kind']}: round {ref} seat {seat}: paid {d['paid']}, computed "
                  f"{d['computed']}, difference {d['difference']}"
                  + (mark if d.get("after_break") else ""))
        print(f"{len(diffs)} difference(s)" + (
            f"; STORE BROKEN AT record {res.broken_seq}: not a check of the store as written"
            if not res.ok else ""))
    return 1 if diffs or not res.ok else 0


def _report(args) -> int:
    from pathlib import Path

    from vision.audit.report import shift_report
    from vision.audit.report_csv import report_csv
    from vision.audit.report_html import report_html
    from vision.audit.integrity import StoreBroken

    fmt = args.fmt or ("html" if args.out and Path(args.out).suffix.lower() in
                       (".html", ".htm") else "csv")
    if args.out and not Path(args.out).resolve().parent.is_dir():
        raise InputError(f"--out: folder of {args.out!r} does not exist")
    try:
        res = verify_first(args)
    except StoreBroken as exc:
        return _refuse(args, exc)
    _note(args, res)
    rep = shift_report(args.db, start=args.start, end=args.end, table=args.table,
                       verified=res, frames_dir=args.frames_dir)
    links = None
    if fmt == "html" and args.out:  # the full key frames beside the page (report_frames/)
        from vision.audit.report_media import copy_key_frames

        links = copy_key_frames(rep, args.out)
    text = report_html(rep, links) if fmt == "html" else report_csv(rep)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    broken = rep.get("store_broken")
    if args.json:
        short = {"out": args.out, "format": fmt, "totals": rep["totals"]}
        if broken:
            short["store_broken"] = broken
        print(json.dumps({"out": args.out, "format": fmt, **rep} if not args.out else short,
                         indent=1))
    elif args.out:
        t = rep["totals"]
        if broken:
            print(broken["header"])
        print(f"{args.out}: {t['rounds']} round(s), {t['settled']} settled "
              f"({t['manual']} by manual entry), {t['not_settled']} not settled, "
              f"{t['alerts']} alert(s), house net {t['house_net']}")
    else:
        print(text, end="")
    return 1 if broken else 0
