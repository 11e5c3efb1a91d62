"""The typed evidence of a tile read (vision.recognition.evidence, docs/architecture.md
"Evidence"): a frozen record set on a new read, never a dict changed in place; the reads'
evidence columns; the ``reads`` shape ``identify(with_reads=True)`` reports."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from vision.detections import PIP_RED, Detections
from vision.recognition.decode import TileRead, decode_face, read_from_pips
from vision.recognition.evidence import EVIDENCE_FIELDS, Evidence

ROOT = Path(__file__).resolve().parents[1]


def read(face, x1, y1, x2, y2):
    poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
    st = "face_up" if face else "unknown"
    return TileRead(face, st, 0.9, poly, np.array([x1, y1, x2, y2], np.float32),
                    reason=None if face else "test")


def one_one(width=50.0):
    """A 1-1 read by the decoder on a ``width`` x 100 px outline (1 red spot in each half)."""
    xy = np.array([[40, 40, 56, 56], [40, 136, 56, 152]], np.float32)
    pips = Detections(xy, np.array([0.95, 0.95], np.float32), np.array([PIP_RED, PIP_RED]))
    poly = np.array([[0, 0], [width, 0], [width, 100], [0, 100]], np.float32)
    return read_from_pips(pips, poly, np.array([0, 0, width, 100], np.float32), 0.9)


def test_evidence_is_a_frozen_record_set_on_a_new_one():
    ev = Evidence()
    assert ev.as_dict() == {} and ev.disputed is None and ev.seed is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.disputed = "1-4"  # type: ignore[misc]
    got = ev.record(disputed="1-4", either_cut="1-4")
    assert (got.disputed, got.either_cut) == ("1-4", "1-4")
    assert ev == Evidence()  # the record it came from is as it was
    # recorded in the order first set; setting again keeps the place
    got = got.record(spared="x", disputed="2-6")
    assert list(got.as_dict()) == ["disputed", "either_cut", "spared"]
    assert got.as_dict()["disputed"] == "2-6"
    # dropped: back to the default, no longer recorded
    less = got.dropped("disputed")
    assert less.disputed is None and list(less.as_dict()) == ["either_cut", "spared"]
    with pytest.raises(TypeError, match="no evidence field"):
        ev.record(disptued="1-4")
    assert set(EVIDENCE_FIELDS) == {f.name for f in dataclasses.fields(Evidence)} - {"recorded"}


def test_a_guard_records_the_evidence_on_a_new_read_and_leaves_its_input_as_it_was():
    from vision.recognition.flush import cut_either_way, stubby_boxes

    a, b = read("1-4", 100, 0, 150, 100), read("4-5", 150, 0, 200, 100)
    out = cut_either_way([a, b])
    assert [r.face for r in out] == [None, None]
    assert [(r.evidence.disputed, r.evidence.either_cut) for r in out] == [("1-4", "1-4"),
                                                                        ("4-5", "4-5")]
    assert all(r is not x for r, x in zip(out, (a, b)))
    # the reads handed in: untouched, their evidence empty
    assert (a.face, a.state, a.evidence, a.reads) == ("1-4", "face_up", Evidence(), {})
    assert (b.face, b.evidence) == ("4-5", Evidence())
    # stubby_boxes: disputed only (no either_cut)
    tiles = [read(f, 100 * k, 0, 100 * k + 20, 52) for k, f in
             enumerate(("6-6", "3-5", "4-5", "1-1"))]
    box = read("5-5", 500, 0, 522, 36.3)
    got = stubby_boxes(tiles + [box])[-1]
    assert (got.evidence.disputed, got.evidence.either_cut) == ("5-5", None)
    assert box.face == "5-5" and box.evidence == Evidence()
    # as_unknown keeps the evidence recorded before and records the reason
    again = got.as_unknown("why")
    assert again.evidence.disputed == "5-5" and again.evidence.reason == "why"


def test_the_decoders_record_and_its_evidence_keep_the_reported_shape():
    """``identify(with_reads=True)`` reports ``evidence_dict()``: the decoder's record, then the
    evidence in the order the decoder and the rules recorded it (the dict as it was)."""
    r = one_one()
    assert r.face == "1-1" and list(r.reads) == ["ignored", "A", "B"]
    d = r.evidence_dict()
    assert list(d) == ["ignored", "A", "B", "reason", "aspect"]
    assert d["reason"] is None and d["aspect"] == 2.0
    # the same as the pure decoder's record, with the aspect after it
    face, _, rec = decode_face(np.array([[48, 48], [48, 144]]), [PIP_RED, PIP_RED], [0.95, 0.95])
    assert face == "1-1" and {k: v for k, v in d.items() if k != "aspect"} == rec
    # refused for its aspect alone: what the two reads agreed on kept
    long = one_one(width=20.0)
    assert long.face is None and long.evidence.aspect_face == "1-1"
    assert list(long.evidence_dict()) == ["ignored", "A", "B", "reason", "aspect",
                                          "aspect_face", "aspect_confidence"]
    # a guard's evidence after it
    u = r.as_unknown("test").with_evidence(disputed="1-1", either_cut="1-1")
    assert list(u.evidence_dict())[3:] == ["reason", "aspect", "disputed", "either_cut"]
    assert r.evidence_dict() == d  # the read it came from unchanged
    assert r.read_a == {"red": 2, "white": 0, "candidates": ["1-1"]}
    assert r.read_b["layout"] == "halves" and TileRead(None, "face_down", 1.0, r.polygon,
                                                        r.xyxy).read_b is None


def test_reads_carry_the_evidence_as_columns():
    from vision.recognition.reads import Reads
    from vision.schema import UnreadReason

    a = read("1-4", 100, 0, 150, 100)
    b = a.as_unknown(UnreadReason.NOTCHED, face="1-4").with_evidence(disputed="1-4")
    c = a.as_unknown(UnreadReason.EITHER_CUT, face="1-4").with_evidence(disputed="1-4",
                                                                        either_cut="1-4")
    d = a.as_unknown(UnreadReason.SPOTS_FLUSH_BESIDE, face="1-4").with_evidence(spared="six")
    rs = Reads((a, b, c, d))
    assert rs.disputed.tolist() == [None, "1-4", "1-4", None]
    assert rs.either_cut.tolist() == [None, None, "1-4", None]
    assert rs.spared.tolist() == [False, False, False, True]
    assert rs.reason_codes.tolist() == [None, UnreadReason.NOTCHED, UnreadReason.EITHER_CUT,
                                        UnreadReason.SPOTS_FLUSH_BESIDE]
    # filtered by a mask
    assert rs.states[rs.disputed != None].tolist() == ["unknown", "unknown"]  # noqa: E711
    empty = Reads(())
    assert empty.disputed.shape == (0,) and empty.spared.dtype == bool


def test_the_table_reads_disputed_faces_from_the_evidence():
    from vision.table.open_tile import block_fills

    a = read(None, 100, 0, 150, 100).with_evidence(disputed="1-4")
    b = read(None, 150, 0, 200, 100).with_evidence(disputed="4-5")
    fills = block_fills(a, b)
    assert fills is not None and fills[0] == ("1-4", "4-5") and len(fills) >= 2
    # a dict with the key is no evidence: only the typed field counts
    c = read(None, 150, 0, 200, 100)
    c.reads = {"disputed": "4-5"}
    assert block_fills(a, c) is None


#: A write or read of a rule's evidence through the untyped dict: ``x.reads["disputed"] = ``,
#: ``r.reads.get("either_cut")``, ``"spared" in r.reads`` ...
_EVIDENCE_KEYS = "|".join(EVIDENCE_FIELDS)
_UNTYPED = re.compile(
    rf"""reads\[["']({_EVIDENCE_KEYS})["']\]|reads\.get\(["']({_EVIDENCE_KEYS})["']"""
    rf"""|["']({_EVIDENCE_KEYS})["'] (not )?in \(?\w+\.reads""")


def test_no_untyped_evidence_dict_is_left_in_vision():
    found = []
    for p in sorted((ROOT / "vision").rglob("*.py")):
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if _UNTYPED.search(line) or re.search(r"\.reads\[", line):
                found.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)
