"""Hand-written round events, JPEG bytes and payout CSVs for the audit-store tests (no
pipeline): shared by tests/test_audit.py, tests/test_audit_backends.py and the tamper faults."""

from __future__ import annotations

import numpy as np

from fakes import event_from_deal


def make_event(i: int, *, net1="0.95", net2="-1", table="table-1", dealer=None, **kw):
    """A settled round: dealer banks; seat 1 wins 1 (nets 0.95), seat 2 loses 1."""
    dealer = dealer or (["6-6", "4-5"], ["1-3", "2-2"])
    ev = {
        "round_id": f"r{i:06d}", "table_id": table,
        "time": f"2026-11-29T12:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
        "source": "table.mp4", "source_file": "table.mp4", "frame_index": 100 * i,
        "rules": "pa", "commission": "0.05",
        "house_way": "reference", "model_version": "tiles-v1+pips-v1",
        "banker_position": "dealer",
        "positions": {
            "dealer": {"tiles": dealer[0] + dealer[1], "high": dealer[0], "low": dealer[1],
                       "mis_set": False, "confidence": [0.99, 0.98, 0.97, 0.99]},
            "1": {"tiles": ["1-1", "5-6", "3-3", "1-5"], "high": ["1-1", "5-6"],
                  "low": ["3-3", "1-5"], "result": "win" if net1 != "0" else "push",
                  "bet": "1", "net": net1, "commission": "0.05", "mis_set": False,
                  "reason": None, "confidence": [0.91, 0.95, 0.9, 0.88]},
            "2": {"tiles": ["2-6", "3-4", "1-4", "2-5"], "high": ["2-6", "3-4"],
                  "low": ["1-4", "2-5"], "result": "lose", "bet": "1", "net": net2,
                  "commission": "0", "mis_set": False, "reason": None,
                  "confidence": [0.8, 0.7, 0.75, 0.6]},
        },
        "alerts": [],
        "tiles": [{"face": "6-6", "state": "face_up", "confidence": 0.99,
                   "xyxy": [10.0, 20.0, 70.0, 140.0],
                   "polygon": [[10.0, 20.0], [70.0, 20.0], [70.0, 140.0], [10.0, 140.0]],
                   "position": "dealer"}],
    }
    ev.update(kw)
    return ev


def jpeg(seed: int) -> bytes:
    import cv2

    img = np.random.default_rng(seed).integers(0, 255, (24, 32, 3), dtype=np.uint8)
    ok, buf = cv2.imencode(".jpg", img)
    assert ok
    return buf.tobytes()


def write_csv(path, rows, header="round_id,seat,amount_paid,cashier"):
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows))
    return path


DEALS = [
    {"dealer": ["6-6", "1-3", "4-5", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
     "2": ["1-2", "2-4", "3-3", "5-5"], "3": ["4-4", "1-6", "2-3", "3-6"]},
    {"dealer": ["1-1", "5-6", "3-4", "2-6"], "1": ["6-6", "4-5", "1-3", "2-2"],
     "2": ["1-2", "2-4", "3-3", "5-5"], "3": ["4-4", "1-6", "2-3", "3-6"]},
    {"dealer": ["3-3", "5-5", "1-4", "2-5"], "1": ["2-2", "6-6", "1-5", "3-5"],
     "2": ["4-6", "1-1", "3-4", "2-4"]},
]


def _event(deal, i, table, minute):
    ev = event_from_deal(deal, f"r{i:06d}", table_id=table)
    ev["time"] = f"2026-11-30T22:{minute:02d}:00.000Z"
    return ev


def _unread_round(table="A", i=4):
    """A round whose banker (the dealer) shows one tile the camera could not read: nothing
    settled, as the pipeline emits it."""
    ev = _event(DEALS[0], i, table, 40)
    rid = ev["round_id"]
    k = next(n for n, t in enumerate(ev["tiles"]) if t["position"] == "dealer")
    true_face = ev["tiles"][k]["face"]
    ev["tiles"][k].update(face=None, state="unknown", confidence=0.2)
    why = "1 tile(s) unknown (read A: no face has 0 red and 2 white spots)"
    ev["reason"] = f"source ended before the round settled: banker dealer not settled ({why})"
    ev["settled"] = False
    del ev["bank"]
    for pos, p in ev["positions"].items():
        p.update(result="not_settled", net=None, commission=None,
                 reason=why if pos == "dealer" else ev["reason"])
    d = ev["positions"]["dealer"]
    d.update(high=None, low=None, high_hand=None, low_hand=None, house_way=None,
             is_house_way=None)
    d["tiles"] = [None if f == true_face else f for f in d["tiles"]]
    ev["alerts"] = [{"kind": "unknown_tile", "position": "dealer", "detail": why}]
    return ev, rid, k, true_face
