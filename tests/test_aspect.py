"""An outline refused only for being too long, read where the picture's tiles are as long
(vision.recognition.aspect; issue 20).

Why it cannot give a wrong face: the face is the decoder's (both reads agreeing); only the
aspect bound comes from the identified tiles around the outline. These tests hold each
condition: as long as its neighbours (within PEER_FACTOR), one tile's length, sure enough,
enough neighbours -- and that a tile and a third stays unread.
"""

from __future__ import annotations

import numpy as np

from vision.detections import PIP_RED, PIP_WHITE, Detections
from vision.geometry import CROP_H, CROP_W
from vision.recognition.aspect import ASPECT_CAP, MIN_PEERS, PEER_FACTOR, long_as_peers
from vision.recognition.decode import TileRead, read_from_pips


def box(x, y, w, h):
    return np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float32)


def known(face, poly):
    return TileRead(face, "face_up", 0.9, poly, np.r_[poly.min(0), poly.max(0)])


def refused(poly, face="1-5", conf=0.8):
    r = TileRead(None, "unknown", 0.9, poly, np.r_[poly.min(0), poly.max(0)],
                 reason="tile outline too long")
    return r.with_evidence(aspect_face=face, aspect_confidence=conf, reason=r.reason)


# four identified tiles 50 x 150 px (aspect 3.0) around x 100-400
PEERS = [known(f, box(100 + 70 * i, 100, 50, 150)) for i, f in enumerate(("2-2", "6-6", "4-4",
                                                                         "5-5"))]


def test_the_decoder_keeps_what_its_reads_agreed_on_an_outline_too_long():
    c = np.array([[48, 50], [28, 120], [68, 120], [48, 138], [28, 156], [68, 156]], np.float64)
    c[:, 0] *= CROP_W / 96
    c[:, 1] *= CROP_H / 192
    pips = Detections(np.c_[c - 4, c + 4], np.full(6, 0.9), [PIP_RED] + [PIP_WHITE] * 5)
    r = read_from_pips(pips, box(0, 0, 30, 105), np.array([0, 0, 30, 105], np.float32), 0.9)
    assert r.face is None and r.evidence.aspect_face == "1-5"
    assert r.evidence.aspect_confidence == 0.9
    ok = read_from_pips(pips, box(0, 0, 40, 105), np.array([0, 0, 40, 105], np.float32), 0.9)
    assert ok.face == "1-5" and ok.evidence.aspect_face is None


def test_an_outline_as_long_as_its_neighbours_is_read():
    assert (PEER_FACTOR, MIN_PEERS, ASPECT_CAP) == (1.2, 3, 4.0)
    out = long_as_peers(PEERS + [refused(box(380, 100, 45, 150))])  # aspect 3.33 vs 3.0
    assert out[-1].face == "1-5" and out[-1].state == "face_up"
    assert out[-1].evidence.aspect_peers == 3.0 and out[-1].confidence == 0.8


def test_longer_than_its_neighbours_allow_stays_unread():
    # aspect 3.75 > 1.2 x 3.0: a tile and a quarter
    assert long_as_peers(PEERS + [refused(box(380, 100, 40, 150))])[-1].face is None
    # aspect 3.33, but 250 px long: not one tile's length there
    assert long_as_peers(PEERS + [refused(box(380, 100, 75, 250))])[-1].face is None
    # unsure
    assert long_as_peers(PEERS + [refused(box(380, 100, 45, 150), conf=0.3)])[-1].face is None
    # too few identified tiles to tell the picture's shape
    assert long_as_peers(PEERS[:2] + [refused(box(380, 100, 45, 150))])[-1].face is None
    # within the decoder's own bound it was refused for something else: left alone
    assert long_as_peers(PEERS + [refused(box(380, 100, 50, 150))])[-1].face is None


def test_never_above_the_cap():
    long_peers = [known("2-2", box(100 + 40 * i, 100, 30, 120)) for i in range(4)]  # 4.0
    assert long_as_peers(long_peers + [refused(box(300, 100, 28, 120))])[-1].face is None
