"""Fault: huge or strange numbers as bets. One strict money grammar (ASCII digits, an optional
'.', at most two decimals, at most MAX_MONEY) for the command line and layout files: anything
else is one line naming the value, exit 2 (a JSON object under --json) -- never a traceback
(``1E+999999999`` overflowed Decimal arithmetic) and never silently rounded or re-read
(29-digit bets, ``٣٥``, ``5_000``, ``1e-999999`` were accepted)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from scoring.errors import InputError
from scoring.settle import MAX_MONEY, parse_money, settle_round
from vision.cli import main
from vision.table.rounds import Layout

BANKER = "6-6 4-5 / 1-3 2-2"
SEAT = "1-1 3-6 / 2-2 5-5"
BAD = ["1E+999999999", "\u0663\u0665", "5_000", "1e-999999", "1" * 29, "9" * 40 + ".5",
       "2.505", "10000000.01", "-5", "+5", "0", "0.00", "NaN", "Infinity", "1,000", " ", "",
       "25\u00a0", "１２", "0x10", "1.2.3", ".", "5e2"]
GOOD = [("25", "25"), ("2.50", "2.50"), ("0.01", "0.01"), ("10000000", "10000000"),
        ("007", "7"), ("3.", "3")]


@pytest.mark.faults
@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("form", ["seat", "every seat"])
def test_bad_bet_on_the_command_line(capsys, value, form):
    bet = f"1={value}" if form == "seat" else value
    rc = main(["settle", "--banker", BANKER, "--seat", f"1={SEAT}", f"--bet={bet}", "--json"])
    cap = capsys.readouterr()
    assert rc == 2
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("paigow settle: error: ")
    assert repr(value)[:30].rstrip("'") in lines[0]
    err = json.loads(cap.out)
    assert err["exit_code"] == 2 and err["command"] == "settle" and "bet" in err["error"]


@pytest.mark.faults
@pytest.mark.parametrize("value", ["1E+999999999", "\u0663\u0665", "5_000", "1e-999999",
                                   "1" * 29, 1e300, 10**30, "25\u00a0", 2.505])
def test_bad_bet_in_a_layout_file(value):
    square = [[0, 0], [10, 0], [10, 10], [0, 10]]
    d = {"positions": {"dealer": square, "1": [[20, 0], [30, 0], [30, 10], [20, 10]]},
         "bets": {"1": value}}
    with pytest.raises(InputError, match="bet for position 1"):
        Layout.from_dict(d, where="table.yaml")


@pytest.mark.faults
def test_one_parser_bounds_decimals_and_ints(capsys):
    # the grammar's edges are accepted, exactly
    for value, exact in GOOD:
        rc = main(["settle", "--banker", BANKER, "--seat", f"1={SEAT}", f"--bet=1={value}",
                   "--json"])
        d = json.loads(capsys.readouterr().out)
        assert rc == 0 and Decimal(d["seats"]["1"]["bet"]) == Decimal(exact)
    assert parse_money(Decimal("2.50")) == Decimal("2.5")
    assert parse_money(int(MAX_MONEY)) == MAX_MONEY
    for v in (Decimal("1E+999999999"), Decimal("0.001"), Decimal("NaN"), MAX_MONEY + 1, 0, -3,
              10**40):
        with pytest.raises(InputError):
            parse_money(v)
    # settling a round never meets an overflow
    with pytest.raises(InputError, match="1E"):
        settle_round({"dealer": BANKER, "1": SEAT}, bets={"1": "1E+999999999"})


@pytest.mark.faults
@pytest.mark.parametrize("value", ["1E+999999999%", "\u0660.\u0660\u0665", "5e-2", "0.0_5"])
def test_bad_commission(capsys, value):
    rc = main(["settle", "--banker", BANKER, "--seat", f"1={SEAT}", f"--commission={value}"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "commission" in lines[0]
