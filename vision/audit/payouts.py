"""Checking a payout log (CSV, docs/payouts.md) against the nets of the stored rounds, per
table."""

from __future__ import annotations

import csv
import os
import re
from datetime import datetime
from decimal import Decimal

from scoring.errors import InputError
from scoring.settle import POSITIONS, parse_amount

from vision.audit.chain import VerifyResult, parse_time
from vision.audit.store import AuditStore


def _seat_id(text: str, where: str) -> str:
    s = str(text).strip().lower()
    if s.startswith("seat"):
        s = s[4:].strip()
    if s in ("d", "dealer", "house"):
        return "dealer"
    if s.isdigit() and str(int(s)) in POSITIONS:
        return str(int(s))
    raise InputError(f"{where}: seat {text!r} is not 'dealer' or a seat id 1..7")


_LONE_CR = re.compile(r"(?<=\r)(?!\n)")


def _lines(f, name: str):
    """The text lines of a payout file opened in binary (UTF-8, a BOM dropped; ``\\r\\n``,
    ``\\n`` and ``\\r`` end lines, kept as ``csv`` wants them), read one at a time.

    Raises:
        InputError: naming the file when it is not text: not UTF-8 (a picture, a spreadsheet
            saved in another encoding: the byte, its offset and line named) or holding a NUL
            byte (a binary file: the line named).
    """
    offset = 0
    for n, raw in enumerate(f, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"payouts file {name!r} is not a CSV payout log: not UTF-8 text "
                             f"(byte 0x{raw[exc.start]:02x} at offset {offset + exc.start}, "
                             f"line {n})") from None
        if n == 1 and text.startswith("\ufeff"):
            text = text[1:]
        if "\x00" in text:
            raise InputError(f"payouts file {name!r} is not a CSV payout log: binary data (a NUL "
                             f"byte on line {n})")
        offset += len(raw)
        yield from (p for p in _LONE_CR.split(text) if p) if "\r" in text else (text,)


def _rows(reader, name: str):
    """The rows of a ``csv.DictReader``; a CSV syntax error (a field over the size limit...)
    as an InputError naming the file and line."""
    try:
        yield from reader
    except csv.Error as exc:  # line_num counts the lines read before the one that failed
        raise InputError(f"payouts file {name!r} is not a CSV payout log: line "
                         f"{reader.line_num + 1}: {exc}") from None


def check_payouts(db: "AuditStore | str | os.PathLike", csv_path: str | os.PathLike, *,
                  unknown: str = "error", table: str | None = None,
                  all_rounds: bool = False, verified: VerifyResult | None = None) -> list[dict]:
    """Compare a payout log with the nets computed for the stored rounds (exact Decimal).

    The CSV (UTF-8, header row) needs ``seat``, ``amount_paid`` and a round reference:
    ``round_id`` (the event's round id) or ``time`` (ISO-8601, compared as an instant: ``...Z``,
    an offset, or naive = UTC); an optional ``table`` (or ``table_id``) column names each
    row's table. Round ids repeat from table to table: a row's round is looked up in its own
    table (the row's column, else ``table``); a round id that names rounds of several tables
    and no table is an error naming them. Other columns are ignored. ``amount_paid`` is a
    signed decimal from the player's side: ``0.95`` paid to the player, ``-1`` collected from
    the player, ``0`` a push. Several rows for the same round and seat add up. A seat's
    computed amount is its ``net`` in the round's settlement: the stored event, or the newest
    manual record of the round (a supervisor's entry, :mod:`vision.audit.entries`; its
    differences carry ``"manual": True``).

    Args:
        db: an open :class:`AuditStore` or its path / URL.
        csv_path: the payout log.
        unknown: ``"error"`` (a row naming no stored round is an error) or ``"report"`` (a
            ``round_not_in_store`` difference).
        table: only this table: rows of other tables (by their table column) are skipped,
            rows without one are this table's.
        all_rounds: check every stored round (of ``table``), also rounds the CSV does not
            cover (their settled seats are then ``not_paid``); default: only the rounds the
            CSV names.
        verified: the store's verification made just before
            (:func:`vision.audit.integrity.verify_before_read`): when ok, only the records
            it covered are read; when broken (read with ``--force``), every difference gets
            ``after_break`` (True when a record its round draws on -- camera, manual or ack --
            is :attr:`~vision.audit.VerifyResult.marked_from` or later). None: not verified
            here.

    Differences (dicts with keys ``kind``, ``table_id``, ``round_id``, ``time``, ``seq``,
    ``seat``, ``paid``, ``computed``, ``difference`` = paid - computed, ``manual``; amounts as
    exact decimal text or None):

    * ``amount``: both sides have the seat and the amounts differ;
    * ``seat_not_in_round``: paid for a seat the stored round did not settle;
    * ``not_paid``: a settled seat with a non-zero net and no CSV row (a zero net needs no
      payment; nor does the ``dealer`` position, whose net -- the house bank's, as the
      pipeline's events carry it -- is the house's own result: a ``dealer`` row, when given,
      is compared like any other);
    * ``round_not_in_store``: only with ``unknown="report"``.

    Order: store order (record id), seats dealer, 1..7; then rounds missing from the store.

    Raises:
        InputError: naming the file for a file that is not UTF-8 CSV text (a picture, a
            binary file: the byte offset or line), a missing column (named), a non-numeric
            amount or a bad seat / time (named with its line number), a round id naming rounds
            of several tables (or several rounds of one table), and (with
            ``unknown="error"``, the default) a round that is not in the store (named with its
            line number).
    """
    from vision.audit.report import stored_rounds

    if unknown not in ("error", "report"):
        raise InputError(f"unknown={unknown!r} is not 'error' or 'report'")
    broken = verified is not None and not verified.ok
    rounds = stored_rounds(db, table=table,
                           upto=verified.rounds if verified is not None and not broken else None)

    name = str(csv_path)
    try:
        f = open(csv_path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read payouts file {name!r}: {exc.strerror or exc}") from None
    with f:
        return _check(rounds, _lines(f, name), name, unknown=unknown, table=table,
                      all_rounds=all_rounds, verified=verified if broken else None)


def _check(rounds, lines, name: str, *, unknown: str, table: str | None, all_rounds: bool,
           verified: VerifyResult | None) -> list[dict]:
    """:func:`check_payouts` once the rounds are read and the file is open (``lines``);
    ``verified``: the result of a broken store read anyway, else None."""
    by_id: dict[str, list] = {}
    by_time: dict[datetime, list] = {}
    for r in rounds:
        by_id.setdefault(r.round_id, []).append(r)
        by_time.setdefault(parse_time(r.time, f"stored time of record {r.seq}"), []).append(r)
    reader = csv.DictReader(lines)
    paid: dict[tuple[int, str], Decimal] = {}
    covered: set[int] = set()
    missing_rounds: dict[tuple, dict] = {}
    try:
        fieldnames = reader.fieldnames
    except csv.Error as exc:
        raise InputError(f"payouts file {name!r} is not a CSV payout log: line 1: "
                         f"{exc}") from None
    header = [(h or "").strip().lower() for h in (fieldnames or [])]
    reader.fieldnames = header
    key_col = "round_id" if "round_id" in header else ("time" if "time" in header else None)
    table_col = "table" if "table" in header else ("table_id" if "table_id" in header
                                                    else None)
    missing = [c for c in ("seat", "amount_paid") if c not in header]
    if key_col is None:
        missing.insert(0, "round_id or time")
    if missing:
        raise InputError(f"payouts file {name!r} lacks column(s): {', '.join(missing)} "
                         f"(header: {', '.join(header) or 'none'})")
    for row in _rows(reader, name):
        line = reader.line_num
        extra = row.pop(None, None)  # fields beyond the header's (csv.DictReader's restkey)
        blank = not any((v or "").strip() for v in row.values() if isinstance(v, str))
        if extra is not None and not (blank and not any((v or "").strip() for v in extra)):
            # `r1,2,0,95` is 0 paid and a stray 95 (a decimal comma): never read silently
            raise InputError(f"{name}: line {line}: {len(header) + len(extra)} fields, the "
                             f"header has {len(header)} (a decimal comma? write 0.95, or "
                             f"quote a field holding a comma)")
        if blank:
            continue
        where = f"{name}: line {line}"
        row_table = (row.get(table_col) or "").strip() if table_col else ""
        if table is not None and row_table and row_table != table:
            continue  # another table's payment
        ref = (row.get(key_col) or "").strip()
        if not ref:
            raise InputError(f"{where}: empty {key_col}")
        seat = _seat_id(row.get("seat") or "", where)
        text = (row.get("amount_paid") or "").strip()
        # the one money grammar: bounded digits, no exponent (1E+999999999), never rounded
        amount = parse_amount(text, what=f"{where}: amount_paid")
        if key_col == "round_id":
            found = by_id.get(ref, [])
        else:
            found = by_time.get(parse_time(ref, f"{where}: time"), [])
        if row_table:
            found = [r for r in found if r.table_id == row_table]
        if len(found) > 1:
            tables = sorted({r.table_id for r in found})
            if len(tables) > 1:
                raise InputError(f"{where}: {key_col} {ref!r} names rounds of {len(tables)} "
                                 f"tables ({', '.join(tables)}); give --table or a table "
                                 f"column")
            raise InputError(f"{where}: {key_col} {ref!r} names {len(found)} stored rounds "
                             f"of table {tables[0]!r} (records "
                             f"{', '.join(str(r.seq) for r in found)}); use "
                             f"{'time' if key_col == 'round_id' else 'round_id'}")
        if not found:
            if unknown == "error":
                what = f" of table {row_table or table!r}" if (row_table or table) else ""
                raise InputError(f"{where}: unknown round {ref!r}{what} (not in the audit "
                                 f"store)")
            d = missing_rounds.setdefault((row_table or table, ref, seat), {
                "kind": "round_not_in_store", "seq": None, "table_id": row_table or table,
                "round_id": ref if key_col == "round_id" else None,
                "time": ref if key_col == "time" else None, "seat": seat,
                "paid": Decimal(0), "computed": None, "difference": None,
                "manual": False})
            d["paid"] += amount
            continue
        k = (found[0].seq, seat)
        covered.add(found[0].seq)
        paid[k] = paid.get(k, Decimal(0)) + amount

    out: list[dict] = []
    for r in rounds:
        if not all_rounds and r.seq not in covered:
            continue
        positions = r.event.get("positions") or {}
        nets = {}
        for pos, p in positions.items():
            if isinstance(p, dict) and p.get("net") is not None:
                nets[str(pos)] = Decimal(str(p["net"]))
        seats = [s for s in POSITIONS if s in nets or (r.seq, s) in paid]
        seats += sorted({s for (q, s) in paid if q == r.seq} - set(seats))
        for s in seats:
            got = paid.get((r.seq, s))
            want = nets.get(s)
            base = {"seq": r.seq, "table_id": r.table_id, "round_id": r.round_id,
                    "time": r.time, "seat": s, "manual": r.manual is not None}
            if want is None:
                out.append({"kind": "seat_not_in_round", **base, "paid": got,
                            "computed": None, "difference": None})
            elif got is None:
                if want != 0 and s != "dealer":
                    out.append({"kind": "not_paid", **base, "paid": None, "computed": want,
                                "difference": -want})
            elif got != want:
                out.append({"kind": "amount", **base, "paid": got, "computed": want,
                            "difference": got - want})
    out.extend(missing_rounds.values())
    if verified is not None:  # a broken store read anyway: what draws on the break on
        last = {r.seq: r.last_seq for r in rounds}
        for d in out:  # a round the store lacks may be one of the records removed
            d["after_break"] = d["seq"] is None or last[d["seq"]] >= verified.marked_from
    for d in out:
        for k in ("paid", "computed", "difference"):
            if d[k] is not None:
                d[k] = str(d[k])
    return out
