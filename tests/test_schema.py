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



# --------------------------------------------------------------------------- the models
# The event and its parts are pydantic models; docs/round-event.schema.json is generated from
# them (python -m vision.schema --write-schema) and must be the generated text exactly.

# A fixed JSON form (as stored: header, one seat, a tile, an alert, the bank, then keys the
# model keeps in ``extra``), written out by hand so its bytes are known.
FIXED = {
    "round_id": "r000042", "table_id": "t-1", "time": "2026-12-01T10:00:00.123Z",
    "source": "cam.mp4", "source_file": "cam.mp4", "source_id": "file-0123456789abcdef",
    "frame_index": 17, "rules": "pa", "commission": "0.05", "house_way": "reference",
    "model_version": "tiles-aaaaaaaa+pips-bbbbbbbb", "banker_position": "dealer",
    "settled": True, "reason": None,
    "positions": {
        "dealer": {"tiles": ["6-6", "4-5", "1-3", "2-2"], "states": ["face_up"] * 4,
                   "confidence": [0.99, 0.5, 1.0, 0.0], "high": ["6-6", "4-5"],
                   "low": ["1-3", "2-2"], "high_hand": "gong", "low_hand": "6",
                   "house_way": {"high": ["6-6", "4-5"], "low": ["1-3", "2-2"]},
                   "is_house_way": True, "role": "banker", "result": None, "bet": None,
                   "net": "0.95", "commission": "0.05", "mis_set": False, "reason": None},
        "1": {"tiles": ["1-1", "5-6", "3-4", "2-6"], "states": ["face_up"] * 4,
              "confidence": [0.9, 0.9, 0.9, 0.9], "high": ["1-1", "5-6"], "low": ["3-4", "2-6"],
              "high_hand": "7", "low_hand": "5", "house_way": None, "is_house_way": None,
              "role": "player", "result": "lose", "bet": "1", "net": "-1", "commission": "0",
              "mis_set": False, "reason": None}},
    "alerts": [{"kind": "mis_set", "position": "1", "detail": "x"}],
    "tiles": [{"face": "6-6", "state": "face_up", "confidence": 0.99,
               "xyxy": [1.5, 2.0, 51.5, 102.0],
               "polygon": [[1.5, 2.0], [51.5, 2.0], [51.5, 102.0], [1.5, 102.0]],
               "position": "dealer"}],
    "bank": {"gross": "1", "commission": "0.05", "net": "0.95", "house_net": "0.05",
             "commission_total": "0.05"},
    "operator_note": "n", "kind": "manual",
    "manual": {"round_time": "2026-12-01T10:00:00.000Z", "camera_record": 3,
               "entries": [{"tile": 0, "position": "dealer", "face": "6-6", "camera": {}}],
               "by": "sup", "correction": True}}


def test_the_schema_file_is_the_one_generated_from_the_model(tmp_path, monkeypatch):
    import vision.schema as schema

    text = schema.SCHEMA_FILE.read_text(encoding="utf-8")
    assert text == schema.schema_text()
    generated = json.loads(text)
    assert generated["$id"] == schema.SCHEMA_ID and generated["title"] == "Round event"
    # the constraints come from the model: what a field of the model says is in the schema
    defs = generated["$defs"]
    assert defs["face"]["pattern"] == "^[1-6]-[1-6]$"
    assert defs["position_id"]["enum"] == ["dealer", "1", "2", "3", "4", "5", "6", "7"]
    assert defs["PositionOutcome"]["additionalProperties"] is False
    assert set(defs["PositionOutcome"]["required"]) == \
        set(schema.PositionOutcome.model_fields) - {"reason_code"}  # absent in older events
    assert "source_id" not in generated["required"] and "bank" not in generated["required"]
    # --check-schema / --write-schema on a copy: a stale file is found, then rewritten
    stale = tmp_path / "round-event.schema.json"
    stale.write_text(text.replace('"minLength": 1', '"minLength": 2', 1), encoding="utf-8")
    monkeypatch.setattr(schema, "SCHEMA_FILE", stale)
    assert schema.main(["--check-schema"]) == 1
    assert schema.main(["--write-schema"]) == 0 and schema.main(["--check-schema"]) == 0
    assert stale.read_text(encoding="utf-8") == text


def test_the_json_form_keeps_its_bytes_and_key_order():
    back = RoundEvent.from_dict(json.loads(json.dumps(FIXED)))
    assert json.dumps(back.to_dict()) == json.dumps(FIXED)   # values, key order, floats
    assert back.extra == {"operator_note": "n", "kind": "manual",
                          "manual": FIXED["manual"]}
    assert back.positions["1"].result == "lose" and back.bank.net == "0.95"
    assert event_errors(FIXED) == []
    # source_id and bank are left out when None, never written as null
    older = {k: v for k, v in FIXED.items() if k not in ("source_id", "bank")}
    older.update(settled=False, reason="banker unreadable")
    d = RoundEvent.from_dict(older).to_dict()
    assert "source_id" not in d and "bank" not in d and list(d) == list(older)


def test_the_generated_schema_rejects_what_the_contract_forbids():
    def broken(change):
        bad = json.loads(json.dumps(FIXED))
        change(bad)
        return event_errors(bad)

    assert broken(lambda e: e.update(source_id=None))            # absent, never null
    assert broken(lambda e: e.update(source_id="file-XYZ"))
    assert broken(lambda e: e.update(frame_index=-1))
    assert broken(lambda e: e.update(banker_position="9"))
    assert broken(lambda e: e["positions"].update({"9": e["positions"]["1"]}))
    assert broken(lambda e: e["positions"]["1"].update(colour="red"))  # no other key
    assert broken(lambda e: e["positions"]["1"].update(high=["1-1"]))
    assert broken(lambda e: e["positions"]["1"].pop("reason"))
    assert broken(lambda e: e["tiles"][0].update(polygon=FIXED["tiles"][0]["polygon"][:3]))
    assert broken(lambda e: e["tiles"][0].update(state="sideways"))
    assert broken(lambda e: e["bank"].update(net=0.95))
    assert broken(lambda e: e["alerts"][0].update(kind=""))
    assert broken(lambda e: e.update(kind="other"))
    assert broken(lambda e: e["manual"].update(entries=[]))
    assert broken(lambda e: e.pop("bank"))                        # settled without a bank
    assert not broken(lambda e: e["alerts"][0].update(kind="camera_moved", note="y"))


def test_the_model_refuses_what_the_schema_refuses():
    from vision.schema import Alert, BankTotals, PositionOutcome, TileRecord

    bad = json.loads(json.dumps(FIXED))
    bad["positions"]["1"]["tiles"][0] = "7-1"
    with pytest.raises(InputError, match=r"round event: position 1: tiles/0: .*'7-1'"):
        RoundEvent.from_dict(bad)
    bad = json.loads(json.dumps(FIXED))
    bad["tiles"][0]["state"] = "sideways"
    with pytest.raises(InputError, match="tile: state"):
        RoundEvent.from_dict(bad)
    with pytest.raises(ValueError):
        BankTotals("1", "0.05", "x", "0", "0")               # not an exact decimal
    with pytest.raises(ValueError):
        PositionOutcome(tiles=(), states=(), confidence=(1.5,))
    with pytest.raises(TypeError, match="colour"):
        Alert("mis_set", "1", "x", colour="red")
    # constructed like the dataclasses they replace: positional, frozen
    a = Alert("mis_set", "1", "x")
    assert a.kind == "mis_set" and a.to_dict() == {"kind": "mis_set", "position": "1",
                                                   "detail": "x"}
    t = TileRecord.from_dict(FIXED["tiles"][0])
    with pytest.raises(ValueError):
        t.face = "1-1"
    assert t.to_dict() == FIXED["tiles"][0]


def test_the_settlement_table_reads_the_typed_event():
    from vision.io.views import settlement_table

    ev = RoundEvent.from_dict(FIXED)
    text = settlement_table(ev)
    assert text == settlement_table(FIXED)
    assert text.splitlines()[0].startswith("round r000042  table t-1  banker dealer")
    assert "alert mis_set at 1: x" in text and "NOT SETTLED" not in text
    line = next(x for x in text.splitlines() if x.startswith("1 "))
    assert "1-1 5-6" in line and "lose" in line and line.endswith("-1")
