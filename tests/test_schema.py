"""The round contract (vision.schema): JSON form and back, and the schema in docs/."""

from __future__ import annotations

import json

import pytest
from fakes import event_errors, event_from_deal

from scoring.errors import InputError
from vision.schema import RoundEvent

DEAL = {"dealer": ["6-6", "4-5", "1-3", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
        "2": ["1-2", "2-4", "3-3", "5-5"]}


def test_round_trip_keeps_every_value():
    ev = event_from_deal(DEAL, "r000007", table_id="t-3")
    back = RoundEvent.from_dict(json.loads(json.dumps(ev)))
    assert back.to_dict() == ev
    assert back.positions["1"].result == "lose" and back.bank.net == ev["bank"]["net"]
    assert back.settled and back.reason is None


def test_unknown_keys_are_kept_and_missing_ones_named():
    ev = dict(event_from_deal(DEAL), operator_note="x")
    assert RoundEvent.from_dict(ev).to_dict()["operator_note"] == "x"
    del ev["positions"]
    with pytest.raises(InputError, match="positions"):
        RoundEvent.from_dict(ev)


def test_the_schema_rejects_what_the_contract_forbids():
    ev = event_from_deal(DEAL)
    assert event_errors(ev) == []
    bad = json.loads(json.dumps(ev))
    bad["positions"]["1"]["net"] = -1          # money is exact text, never a float
    assert any("positions/1/net" in e for e in event_errors(bad))
    bad = json.loads(json.dumps(ev))
    bad["settled"] = False                    # an unsettled round needs a reason, no bank
    assert event_errors(bad)
    bad = json.loads(json.dumps(ev))
    bad["positions"]["2"].update(result="not_settled", reason=None)
    assert any("positions/2/reason" in e for e in event_errors(bad))


def test_alert_codes_are_the_documented_strings():
    import json

    from vision.schema import Alert, AlertCode, SCHEMA_FILE

    doc = (SCHEMA_FILE.parent / "round-event.md").read_text(encoding="utf-8")
    for code in AlertCode:
        assert f"| `{code.value}` |" in doc, code  # every code is in the Alert table
    a = Alert.from_dict({"kind": "mis_set", "position": "2", "detail": "x"})
    assert a.kind is AlertCode.MIS_SET
    d = a.to_dict()
    assert type(d["kind"]) is str and d == {"kind": "mis_set", "position": "2", "detail": "x"}
    assert json.dumps({"kind": AlertCode.DUPLICATE_FACE}) == '{"kind": "duplicate_face"}'
    other = Alert.from_dict({"kind": "camera_moved", "position": None, "detail": "y"})
    assert other.kind == "camera_moved" and not isinstance(other.kind, AlertCode)
    ev = event_from_deal(DEAL, "r000007")
    assert RoundEvent.from_dict(ev).to_dict() == ev  # codes serialise as the same strings

