"""Fault: hostile amounts in a payout CSV (issue 23, item 6). ``audit check-payouts`` with
``1E+999999999`` gave a ``decimal.Overflow`` traceback and exit 1 (reserved for "differences
found"); a 47-digit amount was rounded silently. The CSV now follows the one money grammar
(:func:`scoring.settle.parse_amount`: bounded digits, no exponent): exit 2, one line naming the
file's line."""

from __future__ import annotations

import json

import pytest

from scoring.errors import InputError
from scoring.settle import parse_amount
from vision.audit import AuditStore
from vision.cli import main
from fakes import event_from_deal

DEAL = {"dealer": ["6-6", "4-5", "1-3", "2-2"], "1": ["1-1", "3-6", "2-2", "5-5"]}
BAD = ["1E+999999999", "1" * 47, "9" * 13, "NaN", "-Infinity", "1e3", "0x10", "5_000",
       "\u0663\u0665", "2.123456789", "--1", "+1", ".", ""]


@pytest.fixture()
def store(tmp_path):
    db = tmp_path / "audit.db"
    with AuditStore(db, table_id="t1") as st:
        st.append(event_from_deal(DEAL, table_id="t1"))
    return db


@pytest.mark.faults
@pytest.mark.parametrize("amount", BAD)
def test_a_bad_amount_is_exit_2_naming_the_line(store, tmp_path, capsys, amount):
    csv = tmp_path / "pay.csv"
    csv.write_text(f"round_id,seat,amount_paid\nr000001,1,{amount}\n")
    rc = main(["audit", "check-payouts", str(store), str(csv), "--json"])
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert "line 2" in err and "amount_paid" in err and "Traceback" not in err
    assert json.loads(out.splitlines()[-1])["exit_code"] == 2


@pytest.mark.faults
def test_good_amounts_are_read_exactly(store, tmp_path, capsys):
    assert str(parse_amount("-0.95")) == "-0.95"
    assert str(parse_amount("9999999.12345678")) == "9999999.12345678"  # never rounded
    for bad in ("10000000.01", "-10000000.01"):
        with pytest.raises(InputError, match="beyond the limit"):
            parse_amount(bad)
    csv = tmp_path / "pay.csv"
    with AuditStore(store, create=False) as st:
        net = next(iter(st.rounds())).payload["positions"]["1"]["net"]
    csv.write_text(f"round_id,seat,amount_paid\nr000001,1,{net}\n")
    assert main(["audit", "check-payouts", str(store), str(csv)]) == 0
