"""Unread reasons as codes (vision.schema.UnreadReason, issue 44 item 3): every "unknown" tile
read that recognition makes carries its ``reason_code``, and the reason text a person reads is
the code's :meth:`~vision.schema.UnreadReason.say`, word for word the text the stages wrote
before the codes (events, the audit store and the display read it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vision.detections import PIP_RED, PIP_WHITE, TILE, TILE_BACK, Detections
from vision.geometry import CROP_H, CROP_MARGIN, CROP_W
from vision.recognition.decode import TileRead, read_from_pips
from vision.schema import UnreadReason as U

MODELS = Path(__file__).resolve().parents[1] / "models"

# -- the words of every code, as the stages wrote them before the codes --------------------

#: (code, detail, fields, the text the stage wrote): each text copied from the f-string the
#: stage had before the codes, filled with these values.
SAYS = [
    (U.NO_SPOTS, None, {}, "no spots found"),
    (U.SPOT_COUNTS, None, {"red": 3, "white": 0}, "read A: no face has 3 red and 0 white spots"),
    (U.LONG_33_NOT_A, None, {"faces": "2-4/1-5"},
     "read B: 3-3 long layout but read A says 2-4/1-5"),
    (U.LONG_33_MISSING, None, {}, "read B: a 3-3 long layout missing a spot (five white spots)"),
    (U.SPLIT_EITHER, None, {"faces": "1-4 and 2-3"}, "read B: both 1-4 and 2-3 fit the spots"),
    (U.HALVES_NO_FACE, None, {"top": 3, "bottom": 0, "midline": 2},
     "read B: halves 3/0 with 2 on the midline name no face"),
    (U.HALF_SHAPE, None, {"face": "2-2", "shape": "top half: a 2 must lie across the tile"},
     "read B: 2-2 but top half: a 2 must lie across the tile"),
    (U.READS_DISAGREE, "A 2-2 (0 red, 4 white), B 1-3", {},
     "reads disagree: A 2-2 (0 red, 4 white), B 1-3"),
    (U.CROWDS_MIDLINE, None, {"face": "2-4", "half": "top"},
     "read 2-4, but the top half's spots crowd the midline: the tile outline may be shifted "
     "along the tile"),
    (U.COLOUR, None, {"face": "1-3", "sep": 1.6},
     "read 1-3, but a spot called white looks as red as one called red (a* separation 2)"),
    (U.ASPECT, None, {"aspect": 1.3149, "face": "2-4", "lo": 1.6, "hi": 3.2},
     "tile outline 1.31:1 is not tile-shaped (read 2-4; 1.6-3.2 expected)"),
    (U.LOW_CONFIDENCE, None, {"conf": 0.434, "min": 0.5, "face": "2-2"},
     "confidence 0.43 below 0.50 (read 2-2)"),
    (U.SIZES_DISAGREE, "1-5 / 3-5", {}, "input sizes disagree: 1-5 / 3-5"),
    (U.CLOSEUP_DISAGREE, "picture outline 1-5, tile model 2-4, 3-3", {},
     "close-up reads disagree: picture outline 1-5, tile model 2-4, 3-3"),
    (U.BACK_SHOWS_SPOTS, "read A: no face has 3 red and 0 white spots", {"n": 3},
     "read A: no face has 3 red and 0 white spots (taken for a back, shows 3 spots)"),
    (U.SECOND_MODEL_OTHERWISE, None, {"faces": "1-4/4-5", "face": "1-5"},
     "the second tile model outlines this place otherwise (read 1-4/4-5 across it; read 1-5 "
     "here): two tiles touching flush may be cut across"),
    (U.STUBBY, None, {"aspect": 1.6502, "peers": np.float64(2.6), "face": "5-5"},
     "outline stubbier than the picture's tiles (aspect 1.65 against 2.60), halves that look "
     "alike turned a quarter (read 5-5): a box across two flush tiles"),
    (U.NOTCHED, None, {"face": "3-5"},
     "its long side dips at the middle where two tiles' corners meet (read 3-5): a box across "
     "two flush tiles"),
    (U.UNREAD_BESIDE, None, {}, "unread spots flush beside a tile that lies as laid"),
    (U.SPOTS_FLUSH_BESIDE, None, {"face": "1-4"},
     "unread spots lie flush beside its long side (read 1-4): two tiles touching flush may be "
     "cut across"),
    (U.FLUSH_LEVEL, None, {"beside": "a 4-5", "face": "1-4"},
     "flush and level beside a 4-5, halves that look alike turned a quarter (read 1-4): the "
     "block may be cut across"),
    (U.EITHER_CUT, None, {"face": "3-5"},
     "either cut of a flush block of two tiles could read (read 3-5 here): two tiles touching "
     "flush may be cut across"),
    (U.OVERLAPPING, None, {"face": "2-6"}, "overlapping outlines (read 2-6)"),
    (U.ACROSS_TWO, None, {"face": "2-6"}, "outline across two other tile outlines (read 2-6)"),
    (U.SHARED_SPOTS, None, {"face": "1-5"},
     "a spot it counts is another tile's too (read 1-5): an outline reaching onto a "
     "neighbour's face"),
    (U.CROP_DISAGREES, None, {"face": "1-6", "other": "3-3", "p": 0.0123},
     "the crop classifier reads 3-3, not 1-6 (p 0.012), the spots' face: a small tile's spots "
     "merged or missed, or its outline off the tile"),
    (U.SHORT_OUTLINE, None,
     {"who": "one input size", "face": "2-4", "long": 61.4, "seen": 9, "length": 88.6},
     "one input size reads 2-4 on an outline 61 px long, where other readings saw 9 spots on "
     "89 px"),
    (U.STILL_READING_FAILED, "ValueError: boom", {}, "the still reading failed: ValueError: boom"),
    (U.VETOED, None, {"face": "1-5", "other": "unknown"},
     "read 1-5 once, the reading at every input size says unknown"),
    (U.NOT_DECODED_YET, None, {}, "not decoded yet"),
]


@pytest.mark.parametrize("code, detail, fields, text", SAYS, ids=[c.name for c, *_ in SAYS])
def test_each_code_says_the_words_its_stage_wrote(code, detail, fields, text):
    assert code.say(detail, **fields) == text
    # a read made unknown with the code carries both
    r = _read("1-2", 0, 0).as_unknown(code, detail, **fields)
    assert (r.face, r.state, r.reason, r.reason_code) == (None, "unknown", text, code)
    assert r.evidence.reason == text


def test_every_code_has_its_words_checked_and_a_value_of_its_own():
    assert {c for c, *_ in SAYS} == set(U)
    assert len({c.value for c in U}) == len(U)
    # the value is the code as a string (JSON); it reads back as the same member
    assert all(U(c.value) is c and c == c.value for c in U)


def test_a_template_missing_a_field_is_refused_not_said_half():
    with pytest.raises(KeyError):
        U.ASPECT.say(face="2-4")


def test_the_video_cache_constant_is_the_codes_text():
    from vision.recognition.identity import NOT_DECODED_YET

    assert U.NOT_DECODED_YET.say() == NOT_DECODED_YET


# -- the decoder -------------------------------------------------------------------------

BX = CROP_W * CROP_MARGIN / (1 + 2 * CROP_MARGIN)
BY = CROP_H * CROP_MARGIN / (1 + 2 * CROP_MARGIN)
TW, TH = CROP_W - 2 * BX, (CROP_H - 2 * BY) / 2  # half square
LAYOUT = {  # unit half-square coordinates (u across, v along the tile), as tests/test_decode
    1: [(0.5, 0.5)],
    2: [(0.3, 0.3), (0.7, 0.3)],
    3: [(0.25, 0.25), (0.5, 0.5), (0.75, 0.75)],
    4: [(0.3, 0.3), (0.7, 0.3), (0.3, 0.7), (0.7, 0.7)],
    5: [(0.25, 0.25), (0.75, 0.25), (0.5, 0.5), (0.25, 0.75), (0.75, 0.75)],
    6: [(0.3, 0.2), (0.7, 0.2), (0.3, 0.5), (0.7, 0.5), (0.3, 0.8), (0.7, 0.8)],
}
TALL = np.array([[0, 0], [50, 0], [50, 100], [0, 100]], np.float32)  # aspect 2: a tile
SQUARE = np.array([[0, 0], [100, 0], [100, 100], [0, 100]], np.float32)


def face_pips(face: str):
    """Spot centres float (k, 2) (crop px) and classes of ``face`` drawn as the sets do."""
    pts, cls = [], []
    for n, top in zip((int(v) for v in face.split("-")), (True, False)):
        for k, (u, v) in enumerate(LAYOUT[n]):
            pts.append((BX + u * TW, BY + v * TH if top else CROP_H / 2 + (1 - v) * TH))
            red = (k % 2 == 0) if face == "6-6" else n in (1, 4)
            cls.append(PIP_RED if red else PIP_WHITE)
    return np.array(pts, np.float64), np.array(cls)


def pips(pts, cls, conf=0.9) -> Detections:
    pts = np.asarray(pts, np.float32).reshape(-1, 2)
    return Detections(np.concatenate([pts - 4, pts + 4], 1), np.full(len(pts), conf, np.float32),
                      np.asarray(cls, np.int64))


def decoded(p: Detections, polygon=TALL, tile_conf=0.9, **kw) -> TileRead:
    return read_from_pips(p, polygon, np.r_[polygon.min(0), polygon.max(0)], tile_conf, **kw)


def test_each_abstention_of_the_decoder_carries_its_code_and_its_words():
    pts, cls = face_pips("1-3")
    cases = [
        (decoded(Detections.empty()), U.NO_SPOTS, "no spots found"),
        (decoded(pips(pts[:3], [PIP_RED] * 3)), U.SPOT_COUNTS,
         "read A: no face has 3 red and 0 white spots"),
        (decoded(pips(pts, cls), SQUARE), U.ASPECT,
         "tile outline 1.00:1 is not tile-shaped (read 1-3; 1.6-3.2 expected)"),
        (decoded(pips(pts, cls), tile_conf=0.3), U.LOW_CONFIDENCE,
         "confidence 0.30 below 0.50 (read 1-3)"),
        # both colours, the white as red as the red (a* measured before): the colour check
        (decoded(pips(pts, cls), redness=np.full(len(pts), 20.0)), U.COLOUR,
         "read 1-3, but a spot called white looks as red as one called red (a* separation 0)"),
    ]
    for r, code, text in cases:
        assert (r.face, r.state, r.reason_code, r.reason) == (None, "unknown", code, text)
        assert r.evidence.reason == text
    # an accepted face has no code
    ok = decoded(pips(pts, cls))
    assert ok.face == "1-3" and ok.reason is None and ok.reason_code is None


def test_no_decoder_abstention_lacks_a_code_over_every_face_a_spot_lost_or_recoloured():
    """Every face of the set with each spot dropped, and with each spot's colour swapped: the
    decoder names no wrong face (tests/test_decode.py), and each unknown it gives has a code
    whose words are its reason."""
    from scoring.tiles import FACES

    seen = set()
    for t in FACES:
        pts, cls = face_pips(t.face)
        for i in range(len(pts)):
            keep = np.arange(len(pts)) != i
            swapped = cls.copy()
            swapped[i] = PIP_WHITE if cls[i] == PIP_RED else PIP_RED
            for r in (decoded(pips(pts[keep], cls[keep])), decoded(pips(pts, swapped))):
                if r.face is None:
                    assert isinstance(r.reason_code, U), (t.face, i, r.reason)
                    assert r.reason and r.evidence.reason == r.reason
                    seen.add(r.reason_code)
    # the kinds these faults give (read A's counts, read B's halves and shapes, disagreeing)
    assert {U.SPOT_COUNTS, U.READS_DISAGREE, U.HALF_SHAPE} <= seen, seen


class _Pips:
    """The pip model's interface: crop k gets ``spots[k]`` (centres, classes) or none."""

    def __init__(self, spots):
        self.spots = list(spots)

    def detect_batch(self, crops):
        return [pips(*self.spots[k]) if k < len(self.spots) and self.spots[k] is not None
                else Detections.empty() for k in range(len(crops))]


def test_the_engines_decoding_codes_a_back_that_shows_spots_and_a_bare_face():
    from vision.recognition.engine import Detectors, RecognitionEngine

    three_red = (face_pips("1-3")[0][:3], [PIP_RED] * 3)
    polys = np.array([[[10, 10], [60, 10], [60, 110], [10, 110]],
                      [[100, 10], [150, 10], [150, 110], [100, 110]],
                      [[200, 10], [250, 10], [250, 110], [200, 110]]], np.float32)
    # the crops go to the pip model faces first, then backs: here in detection order
    dets = Detections.from_polygons(polys, [0.9, 0.9, 0.9], [TILE, TILE_BACK, TILE_BACK])
    engine = RecognitionEngine(detectors=Detectors(object(), _Pips([None, three_red, None])))
    reads, _ = engine.decode(np.zeros((200, 300, 3), np.uint8), dets, use_cache=False)
    assert [r.state for r in reads] == ["unknown", "unknown", "face_down"]
    assert reads[0].reason_code is U.NO_SPOTS and reads[0].reason == "no spots found"
    assert reads[1].reason_code is U.BACK_SHOWS_SPOTS
    assert reads[1].reason == ("read A: no face has 3 red and 0 white spots "
                               "(taken for a back, shows 3 spots)")
    assert reads[2].reason_code is None  # a back is no abstention


# -- the still reading's guards ------------------------------------------------------------

def _read(face, x, y, w=40, h=80, state=None):
    poly = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float32)
    st = state or ("face_up" if face else "unknown")
    return TileRead(face, st, 0.9, poly, np.array([x, y, x + w, y + h], np.float32))


def _box(face, x1, y1, x2, y2):
    return _read(face, x1, y1, x2 - x1, y2 - y1)


def _coded(reads, code, text=None):
    """The unknown reads of ``reads`` made by a guard: at least one, each with ``code`` (and
    ``text`` when given)."""
    made = [r for r in reads if r.state == "unknown" and r.reason_code is not None]
    assert made, [(r.face, r.reason) for r in reads]
    assert all(r.reason_code is code for r in made), [(r.reason_code, r.reason) for r in made]
    assert all(r.reason == r.evidence.reason for r in made)
    if text is not None:
        assert text in [r.reason for r in made]
    return made


def _spots_reader(n_spots, conf=0.9, surface=lambda x: True):
    """A stand-in for the engine's decoder on outlines: an outline whose centre x is on tile
    surface shows ``n_spots`` spots in the middle of its crop; elsewhere none."""
    def run(polys, conf_=None):
        out = []
        for q in polys:
            n = n_spots if surface(float(np.mean(q[:, 0]))) else 0
            xyxy = np.array([[40, 40 + 20 * i, 56, 56 + 20 * i] for i in range(n)],
                            np.float32).reshape(-1, 4)
            p = Detections(xyxy, np.full(n, conf, np.float32), np.full(n, PIP_WHITE, np.int64))
            out.append(TileRead(None, "unknown", 1.0, q, np.r_[q.min(0), q.max(0)], p))
        return out
    return run


def test_each_guard_codes_the_tiles_it_makes_unknown():
    from vision.recognition.closeup import merge_picture_read
    from vision.recognition.fill import disputed_outlines
    from vision.recognition.flush import (cut_either_way, flush_beside, missed_beside,
                                          notched_boxes, stubby_boxes)
    from vision.recognition.overlaps import resolve_overlapping_reads
    from vision.recognition.scales import fuse_scale_reads

    _coded(fuse_scale_reads([[_read("1-5", 100, 100)], [_read("3-5", 101, 100)]]),
           U.SIZES_DISAGREE, "input sizes disagree: 1-5 / 3-5")
    # two identified outlines overlapping; one across two unread outlines
    _coded(resolve_overlapping_reads([_read("2-6", 0, 0), _read("1-1", 20, 0)]),
           U.OVERLAPPING, "overlapping outlines (read 2-6)")
    out = resolve_overlapping_reads([_box(None, 0, 0, 50, 100), _box(None, 50, 0, 100, 100),
                                     _box("4-5", 0, 70, 100, 110)])
    assert out[2].reason_code is U.ACROSS_TWO
    assert out[2].reason == "outline across two other tile outlines (read 4-5)"
    # a close-up's picture outline against the tile model's read
    _coded(merge_picture_read([_read("2-4", 0, 0)], _read("1-5", 1, 1)), U.CLOSEUP_DISAGREE,
           "close-up reads disagree: picture outline 1-5, tile model 2-4")
    # the second model outlines the place across the tile
    up = [_read("2-5", 300, 100, w=40, h=80)]
    across = [_read("5-5", 280, 120, w=80, h=40)]
    _coded(disputed_outlines(up, across), U.SECOND_MODEL_OTHERWISE)
    # the flush guards
    _coded(flush_beside([_box("1-4", 100, 0, 150, 100)], (400, 400, 3), _spots_reader(3)),
           U.SPOTS_FLUSH_BESIDE, "unread spots lie flush beside its long side (read 1-4): two "
           "tiles touching flush may be cut across")
    a, b = _box("1-4", 100, 0, 150, 100), _box("4-5", 150, 0, 200, 100)
    _coded(cut_either_way([a, b]), U.FLUSH_LEVEL, "flush and level beside a 4-5, halves that "
           "look alike turned a quarter (read 1-4): the block may be cut across")
    _coded(cut_either_way([a, _box(None, 150, 0, 200, 100)]), U.FLUSH_LEVEL,
           "flush and level beside an unread tile, halves that look alike turned a quarter "
           "(read 1-4): the block may be cut across")
    tiles = [_box(f, 100 * k, 0, 100 * k + 20, 52) for k, f in
             enumerate(("6-6", "3-5", "4-5", "1-1"))]
    _coded(stubby_boxes(tiles + [_box("5-5", 500, 0, 522, 36.3)]), U.STUBBY)
    _coded(notched_boxes([_box("3-5", 100, 0, 150, 100)], lambda polygon: True), U.NOTCHED,
           "its long side dips at the middle where two tiles' corners meet (read 3-5): a box "
           "across two flush tiles")
    seeds = missed_beside([_box("4-6", 100, 0, 150, 100)], (400, 400, 3),
                          _spots_reader(3, surface=lambda cx: 100 <= cx <= 200))
    _coded(seeds, U.UNREAD_BESIDE, "unread spots flush beside a tile that lies as laid")


def test_a_face_read_on_an_outline_cut_short_is_coded():
    from helpers.outline_reads import outline_read as read

    from vision.recognition.zoom import cut_short_faces

    short = read("2-5", 60, 7)
    out = cut_short_faces([short], [[short], [read(None, 93, 11)], [read(None, 95, 10)]])
    _coded(out, U.SHORT_OUTLINE, "one input size reads 2-5 on an outline 60 px long, where "
           "other readings saw 11 spots on 94 px")


def test_a_flush_block_either_cut_reads_gives_two_coded_tiles():
    from helpers.refine_block import BOTTOM, KNOWN, LEFT, RIGHT, TOP, decoder, picture, read
    from vision.recognition.refine import refine_unknowns

    both = decoder([(LEFT, "2-6"), (RIGHT, "4-5"), (TOP, "3-4"), (BOTTOM, "1-5")])
    out = refine_unknowns(KNOWN + [read(None, TOP)], picture(), both)
    made = _coded(out, U.EITHER_CUT)
    assert len(made) == 2 and all(r.reason == U.EITHER_CUT.say(face=r.evidence.disputed)
                                  for r in made)


def test_the_identity_cache_codes_a_tile_over_the_decoding_budget_and_keeps_a_reused_code():
    from vision.config import CacheConfig
    from vision.recognition.identity import IdentityCache

    polys = np.array([[[10 + 60 * k, 10], [60 + 60 * k, 10], [60 + 60 * k, 110],
                       [10 + 60 * k, 110]] for k in range(3)], np.float32)
    dets = Detections.from_polygons(polys, [0.9] * 3, [TILE] * 3)
    image = np.zeros((200, 300, 3), np.uint8)
    cache = IdentityCache(CacheConfig(decode_budget=2))
    reads: list = [None] * 3
    todo = cache.plan(image, dets, reads)
    assert todo == [0, 1]
    assert reads[2].reason_code is U.NOT_DECODED_YET and reads[2].reason == "not decoded yet"
    # an unknown read reused from the cache on a later frame keeps its code
    cache.commit(image, dets, {0: _read(None, 10, 10).as_unknown(U.NO_SPOTS), 1: reads[2]})
    cache.tick()
    again: list = [None] * 3
    assert len(cache.plan(image, dets, again)) == 2  # two decoded again, one reused
    assert sum(r is not None for r in again) == 1
    assert {r.reason_code for r in again if r is not None} <= {U.NO_SPOTS, U.NOT_DECODED_YET}
    assert all(r.reason_code is not None for r in again if r is not None)


# -- the engine on a rendered table -------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not (MODELS / "tiles.pt").is_file() and not (MODELS / "tiles.onnx").is_file(),
                    reason="no tile model in models/")
def test_no_unknown_read_of_a_rendered_table_lacks_a_code():
    """Held-out rendered tables (pale tiles touching flush: 1000005; 1000007) read by the
    engine from models/, as a still (every stage) and as a first video frame whose decoding
    budget leaves tiles for later: every unknown read has a code whose words are its reason,
    no identified or face-down one has a code."""
    from vision.pipeline import Pipeline
    from vision.recognition.engine import RecognitionEngine
    from vision.synth.render import render_table

    engine = RecognitionEngine()
    codes = set()
    for seed in (1_000_005, 1_000_007):
        image = render_table(seed).image
        reads = list(engine.read(image, "still"))
        assert any(r.state == "face_up" for r in reads)
        for r in reads:
            if r.state == "unknown":
                assert isinstance(r.reason_code, U), r.reason
                assert r.reason and r.reason == r.evidence_dict().get("reason", r.reason)
                codes.add(r.reason_code)
            else:
                assert r.reason_code is None, (r.state, r.reason_code)
    assert codes, "the tables leave some tile unknown"
    _, res = Pipeline(n_stable=1, draw=False, decode_budget=4).process(image)
    unknown = [r for r in res.reads if r.state == "unknown"]
    assert any(r.reason_code is U.NOT_DECODED_YET for r in unknown)
    assert all(isinstance(r.reason_code, U) for r in unknown)
