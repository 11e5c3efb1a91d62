"""Scoring sub-commands of ``paigow``: hand, set, settle, analyze, poker.

Thin: each handler parses its arguments, calls one function of :mod:`scoring`, prints text or
(with ``--json``) one JSON object on stdout, and returns the exit code. Bad input raises
:class:`scoring.errors.InputError`, which :func:`vision.cli.main` turns into one line on stderr
and exit code 2 (argparse errors exit 2 on their own).

Examples::

    paigow hand 1-2 5-6 --json
    paigow set 6-6 6-6 1-2 1-3 --way reference
    paigow settle --banker "6-6 4-5 / 1-3 2-2" --seat 1="1-1 3-6 / 2-2 5-5" --bet 1=25
    paigow analyze --strategy house --json
    paigow poker As Kd Qh Jc Tc / 2c 2d 5h 9s Kh
"""

from __future__ import annotations

import argparse
import json

from .errors import InputError

__all__ = ["register"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--rules", default="pa", choices=("pa", "nj"), type=str.lower,
                   help="rule profile (default pa: 58 Pa. Code 621a.3; nj: N.J.A.C. 13:69F-10.2)")


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def _tokens(values: list[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(p for p in v.replace(",", " ").split() if p)
    return out


def register(sub) -> None:
    """Add the scoring sub-commands (hand, set, settle, analyze, poker) to ``sub``, an argparse
    sub-parser collection; each sets ``func`` to a handler ``(args) -> int``."""
    p = sub.add_parser("hand", help="value of a two-tile hand",
                       description="Value of a two-tile hand [docs/rules.md 2; NJ (b)-(h), PA (c)-(i)].")
    p.add_argument("tiles", nargs="+", help="two tiles, e.g. 1-2 5-6")
    _common(p)
    p.set_defaults(func=cmd_hand)

    p = sub.add_parser("set", help="set four tiles by a house way or optimally",
                       description="Set four tiles into a high and a low hand.")
    p.add_argument("tiles", nargs="+", help="four tiles, e.g. 6-6 6-6 1-2 1-3")
    p.add_argument("--way", default="reference",
                   help="house way name (reference, pa-minimal, ...) or 'optimal'")
    p.add_argument("--against", default="reference",
                   help="with --way optimal: the house way the opponent plays (default reference)")
    p.add_argument("--banking", action="store_true", help="with --way optimal: set as the bank")
    p.add_argument("--commission", default=None, help="commission rate, e.g. 0.05")
    _common(p)
    p.set_defaults(func=cmd_set)

    p = sub.add_parser(
        "settle", help="settle a round",
        description="Settle a round against the banker [docs/rules.md 4]. A position is 'a b / c d' "
                    "(high / low) or four tiles (set by the house way).")
    p.add_argument("--banker", dest="banker", default=None,
                   help="the dealer's tiles, e.g. '6-6 4-5 / 1-3 2-2'")
    p.add_argument("--dealer", dest="banker", help=argparse.SUPPRESS)  # old name, hidden
    p.add_argument("--seat", action="append", default=[], metavar="N=TILES",
                   help="a seat (1..7) and its tiles, e.g. 1='1-1 3-6 / 2-2 5-5' (repeatable)")
    p.add_argument("--bet", action="append", default=[], metavar="[N=]AMOUNT",
                   help="a seat's bet (N=AMOUNT, repeatable) or, without N=, every seat's bet; "
                        "dealer=AMOUNT is the dealer's wager against a banking seat")
    p.add_argument("--commission", default=None, help="commission rate (default: profile's)")
    p.add_argument("--banking-seat", default=None, metavar="N",
                   help="seat N banks; the dealer and the other seats play against it")
    p.add_argument("--co-bank", action="store_true",
                   help="the house covers half of the banking seat's exposure")
    p.add_argument("--way", default="reference", help="house way for unset tiles and re-sets")
    p.add_argument("--rounding", default=None,
                   choices=("exact", "cent", "unit_down", "unit_up"),
                   help="commission rounding (default: the profile's)")
    p.add_argument("--mis-set", dest="mis_set", default=None, choices=("house_way", "forfeit"),
                   help="policy for a mis-set seat (default: the profile's)")
    _common(p)
    p.set_defaults(func=cmd_settle)

    p = sub.add_parser("analyze", help="exact game analysis (probabilities and edge)",
                       description="Exact enumeration of every deal: P(win), P(lose), P(push) "
                                   "and the edge, as fractions.")
    p.add_argument("--strategy", default="house", choices=("house", "optimal"),
                   help="how the player sets: house (the house way, default) or optimal (the "
                        "setting of highest expected value)")
    p.add_argument("--banking", action="store_true", help="the player banks")
    p.add_argument("--way", default="reference", help="house way name")
    p.add_argument("--commission", default=None, help="commission rate (default: profile's)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _common(p)
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("poker", help="Texas hold 'em bonus poker ranking (N.J.A.C. 13:69F-28.5)",
                       description="Rank one hand, or compare hands separated by '/'.")
    p.add_argument("cards", nargs="+", help="5..7 cards per hand, e.g. As Kd Qh Jc Tc / 2c 2d ...")
    _common(p)
    p.set_defaults(func=cmd_poker)


# --------------------------------------------------------------------------- handlers


def cmd_hand(args) -> int:
    """``paigow hand A B``: category, points, high tile and name of a two-tile hand."""
    from .hands import evaluate, parse_hand

    toks = _tokens(args.tiles)
    a, b = parse_hand(toks)
    v = evaluate(a, b, args.rules)
    out = {"tiles": [a.face, b.face], "category": v.category, "points": v.points,
           "high_tile": v.high_tile.face, "name": v.name, "key": v.key, "rules": args.rules}
    if args.json:
        _print_json(out)
    else:
        print(f"{a.face} {b.face}: {v.name} ({v.category}; rules {args.rules})")
    return 0


def _four(toks: list[str]):
    from .settle import check_faces, parse_position

    tiles = parse_position(toks, where="tiles")
    check_faces({"the four tiles": tiles})
    return tiles


def cmd_set(args) -> int:
    """``paigow set T T T T``: the setting of four tiles by a house way or the optimal one."""
    from . import setting as st
    from .rules import get_profile
    from .settle import parse_commission

    prof = get_profile(args.rules)
    tiles = _four(_tokens(args.tiles))
    commission = None if args.commission is None else parse_commission(args.commission)
    if args.way.strip().lower() == "optimal":
        from .strategy import optimal_setting

        s = optimal_setting(tiles, rules=prof, way=args.against, banking=args.banking,
                            commission=commission)
        way = "optimal"
    else:
        s = st.get_house_way(args.way).set(tiles, prof)
        way = args.way
    c = s.canonical()
    out = {"tiles": [t.face for t in tiles], "high": [t.face for t in c.high],
           "low": [t.face for t in c.low], "way": way,
           "high_hand": s.high_value(prof).name, "low_hand": s.low_value(prof).name,
           "rules": prof.name}
    if way == "optimal":
        out.update({"against": args.against, "banking": args.banking})
    if args.json:
        _print_json(out)
    else:
        print(f"{' '.join(out['tiles'])} -> high {' '.join(out['high'])} ({out['high_hand']}) / "
              f"low {' '.join(out['low'])} ({out['low_hand']})  [way {way}, rules {prof.name}]")
    return 0


def _split_eq(text: str, what: str) -> tuple[str, str]:
    if "=" not in text:
        raise InputError(f"{what} {text!r} is not N=VALUE")
    k, v = text.split("=", 1)
    return k.strip(), v


def cmd_settle(args) -> int:
    """``paigow settle``: settle one round and print a table (or JSON)."""
    from .rules import get_profile
    from .settle import SEAT_IDS, parse_money, settle_round

    if not args.banker:
        raise InputError("--banker is required: the dealer's tiles, e.g. '6-6 4-5 / 1-3 2-2'")
    prof = get_profile(args.rules)
    changes = {}
    if args.rounding:
        changes["commission_rounding"] = args.rounding
    if args.mis_set:
        changes["mis_set"] = args.mis_set
    if changes:
        prof = prof.with_(**changes)
    positions: dict[str, str] = {"dealer": args.banker}
    for s in args.seat:
        k, v = _split_eq(s, "seat")
        if k not in SEAT_IDS:
            raise InputError(f"seat id {k!r} is not one of 1..7")
        if k in positions:
            raise InputError(f"seat {k} given twice")
        positions[k] = v
    bets: dict[str, str] = {}
    default_bet = None
    for b in args.bet:
        if "=" in b:
            k, v = _split_eq(b, "bet")
            bets[k.lower()] = v
        else:
            default_bet = parse_money(b)
    if default_bet is not None:
        for k in positions:
            if k != "dealer":
                bets.setdefault(k, default_bet)
    banker = "dealer"
    if args.banking_seat is not None:
        banker = str(args.banking_seat).strip()
        if banker not in SEAT_IDS:
            raise InputError(f"banking seat {args.banking_seat!r} is not one of 1..7")
    elif args.co_bank:
        raise InputError("--co-bank needs --banking-seat N")
    if args.co_bank and "dealer" in bets:
        raise InputError(f"--bet dealer={bets['dealer']}: with --co-bank the house is half of "
                         f"the bank and places no bet against it; drop the dealer bet or "
                         f"--co-bank")
    r = settle_round(positions, bets=bets, banker=banker, rules=prof, way=args.way,
                     co_bank=args.co_bank, commission=args.commission)
    d = r.to_dict()
    if args.json:
        _print_json(d)
        return 0
    b = d["banker"]
    print(f"bank: {b['position']}  {' '.join(b['high'])} / {' '.join(b['low'])}  "
          f"({b['high_hand']} / {b['low_hand']})"
          + ("  [mis-set, re-set by the house way]" if b["mis_set"] else ""))
    rows = [("pos", "high", "low", "result", "bet", "comm", "net")]
    for pos, s in d["seats"].items():
        rows.append((pos, " ".join(s["high"]), " ".join(s["low"]), s["result"], s["bet"],
                     s["commission"], s["net"]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    if banker != "dealer":
        print(f"banking seat {banker}: gross {b['gross']}, commission {b['commission']}, "
              f"net {b['net']}" + (" (co-bank half)" if r.co_bank else ""))
    else:
        print(f"bank (house) result: {d['bank_net']}")
    print(f"house net {d['house_net']} (commission {d['commission_total']}; rate "
          f"{d['commission']}, rules {d['rules']}, way {d['way']})")
    for a in d["alerts"]:
        print(f"alert {a['kind']} at {a['position']}: {a['detail']}")
    return 0


def cmd_analyze(args) -> int:
    """``paigow analyze``: exact probabilities and edge (delegates to :mod:`scoring.analysis`)."""
    from .analysis import analyze
    from .settle import parse_commission

    commission = None if args.commission is None else parse_commission(args.commission)
    res = analyze(strategy=args.strategy, banking=args.banking, rules=args.rules, way=args.way,
                  commission=commission, progress=not (args.no_progress or args.json))
    d = res.to_dict()
    if args.json:
        _print_json(d)
    else:
        for k, v in d.items():
            print(f"{k}: {v}")
    return 0


def cmd_poker(args) -> int:
    """``paigow poker``: rank one hand or compare several separated by '/'."""
    from .poker import best_hand

    toks = _tokens([a.replace("/", " / ") for a in args.cards])
    groups: list[list[str]] = [[]]
    for t in toks:
        if t == "/":
            groups.append([])
        else:
            groups[-1].append(t)
    if any(not g for g in groups):
        raise InputError(f"empty hand in {' '.join(toks)!r} (hands are separated by '/')")
    hands = [best_hand(g) for g in groups]
    out: dict = {"hands": [dict(h.to_dict(), given=g) for h, g in zip(hands, groups)]}
    if len(hands) > 1:
        top = max(h.key for h in hands)
        winners = [i + 1 for i, h in enumerate(hands) if h.key == top]
        out["winners"] = winners
        out["result"] = "push" if len(winners) > 1 else f"hand {winners[0]} wins"
    if args.json:
        _print_json(out)
    else:
        for i, h in enumerate(out["hands"], 1):
            print(f"hand {i}: {h['rank']}  ({' '.join(h['cards'])})")
        if "result" in out:
            w = out["winners"]
            print("push between hands " + ", ".join(map(str, w)) if len(w) > 1 else out["result"])
    return 0
