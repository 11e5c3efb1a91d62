"""The still reading as one ordered list of rules (vision.recognition.still): the order, the
switches, what each rule changes on a small case, and any one rule left out of the list."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from helpers.table_reads import tile
from vision.config import RecognitionConfig
from vision.detections import TILE, Detections
from vision.recognition import still
from vision.recognition.decode import TileRead
from vision.recognition.engine import Detectors, RecognitionEngine
from vision.recognition.fill import SECOND_MODEL_SIZE
from vision.recognition.scales import STILL_SCALES
from vision.recognition.still import STILL_RULES, StillContext, without

NAMES = ("scales", "second_look", "second_model", "long_as_peers", "refit", "guards",
         "missed_beside", "turned", "dealt_blocks", "own_spots", "crop_check")
RULE = {r.name: r for r in STILL_RULES}
SCENE = Path(__file__).resolve().parents[2] / "shared" / "scenes" / "scene_00.jpg"
MODELS = Path(__file__).resolve().parents[1] / "models"


class OneTile:
    """A tile detector that finds one tile (40 x 80 px at 300, 300 of any picture) and records
    each call's input size; a pip detector that finds no spot."""

    def __init__(self):
        self.sizes = []

    def detect(self, image, imgsz=None):
        self.sizes.append(imgsz)
        poly = tile(None, 300, 300).polygon[None]
        return Detections.from_polygons(poly, np.array([0.9], np.float32),
                                        np.array([TILE], np.int64))

    def detect_batch(self, crops):
        return [Detections.empty() for _ in crops]


def make(shape=(1080, 1920), second=None, crops=None, **cfg):
    det = OneTile()
    e = RecognitionEngine(RecognitionConfig(**cfg), detectors=Detectors(det, det, second,
                                                                        crops=crops))
    return StillContext(e, np.full((*shape, 3), 90, np.uint8), STILL_RULES), det


@pytest.fixture
def quiet_guards(monkeypatch):
    """The four flush guards pass every read through (a rule's own change shows alone)."""
    for name in ("flush_beside", "cut_either_way", "stubby_boxes", "notched_boxes"):
        monkeypatch.setattr(still, name, lambda rs, *a, **k: list(rs))


def test_the_rules_are_one_ordered_list_each_switched_by_the_configuration():
    assert tuple(r.name for r in STILL_RULES) == NAMES
    ctx, _ = make(second=OneTile(), crops=object())
    assert all(r.on(ctx) for r in STILL_RULES)
    ctx, _ = make()  # no second model, no crop classifier
    assert [r.name for r in STILL_RULES if not r.on(ctx)] == ["second_model", "crop_check"]
    ctx, _ = make(zoom=False, second_model=False, refine=False, turn=False,
                  second=OneTile())
    assert [r.name for r in STILL_RULES if r.on(ctx)] == ["scales", "long_as_peers", "guards",
                                                          "dealt_blocks", "own_spots"]
    assert [r.name for r in without(STILL_RULES, "turned", "nothing")] == list(NAMES[:-4]) + [
        "dealt_blocks", "own_spots", "crop_check"]


def test_scales_reads_at_every_input_size_up_to_the_picture_s_side():
    ctx, det = make()
    got = RULE["scales"].apply(ctx, [])
    sizes = [s for s in STILL_SCALES if s <= 1920]
    assert det.sizes == sizes and len(ctx.per_scale) == len(sizes)
    assert [r.state for r in got] == ["unknown"] and ctx.first is not None and len(ctx.first) == 1
    small, det = make((200, 400))
    RULE["scales"].apply(small, [])
    assert det.sizes == [None] and small.sizes == (None,)  # one pass at the model's own size


def test_second_look_fuses_the_windows_faces_only_where_a_tile_is_unread():
    ctx, _ = make()
    unknown = tile(None, 300, 300)
    looked = tile("3-4", 300, 300)
    calls = []
    ctx.engine._second_look = lambda image, reads: calls.append(reads) or [[looked]]
    ctx.per_scale = [[unknown]]
    got = RULE["second_look"].apply(ctx, [unknown])
    assert [r.face for r in got] == ["3-4"] and ctx.looks == [[looked]] and len(calls) == 1
    known = tile("1-2", 300, 300)
    assert RULE["second_look"].apply(ctx, [known]) == [known] and len(calls) == 1


def test_second_model_adds_its_tile_where_the_first_model_read_none():
    second = OneTile()
    ctx, _ = make(second=second)
    ctx.engine.decode = lambda image, dets, use_cache=True: (
        [TileRead("5-6", "face_up", 0.9, p.copy(), np.r_[p.min(0), p.max(0)])
         for p in dets.polygon], len(dets))
    runs = ctx.engine.detector_runs
    got = RULE["second_model"].apply(ctx, [])
    assert second.sizes == [SECOND_MODEL_SIZE] and ctx.engine.detector_runs == runs + 1
    assert [r.face for r in got] == ["5-6"] and [r.face for r in ctx.second] == ["5-6"]
    small, _ = make((300, 400), second=OneTile())  # below the second model's input size
    assert RULE["second_model"].apply(small, []) == [] and small.second == []


def test_long_as_peers_takes_the_configuration_s_minimum_confidence(monkeypatch):
    seen = []
    ctx, _ = make(min_confidence=0.7)
    read = tile("2-2", 300, 300)
    monkeypatch.setattr(still, "long_as_peers", lambda rs, c: seen.append(c) or [read])
    assert RULE["long_as_peers"].apply(ctx, [tile(None, 300, 300)]) == [read]
    assert seen == [0.7]


def test_refit_refits_only_a_reading_with_an_unknown_outline(monkeypatch):
    ctx, _ = make()
    fitted = tile("4-4", 300, 300)
    calls = []
    monkeypatch.setattr(still, "refine_unknowns",
                        lambda rs, *a, **k: calls.append(list(rs)) or [fitted])
    known = [tile("1-1", 100, 100)]
    assert RULE["refit"].apply(ctx, known) == known and not calls
    assert ctx.start == known  # the way's vote starts from the reading the refit is given
    assert RULE["refit"].apply(ctx, known + [tile(None, 300, 300)]) == [fitted]
    assert ctx.start == known and len(calls) == 1


def test_guards_make_a_guess_unknown_and_with_refine_refit_it(monkeypatch):
    def guess_out(rs, *a, **k):  # the flush guard: a 1-3 is a guess
        return [r.as_unknown("a guess") if r.face == "1-3" else r for r in rs]

    monkeypatch.setattr(still, "flush_beside", guess_out)
    for name in ("cut_either_way", "stubby_boxes", "notched_boxes"):
        monkeypatch.setattr(still, name, lambda rs, *a, **k: list(rs))
    reads = [tile("1-3", 300, 300), tile("6-6", 100, 100)]
    plain, _ = make(refine=False)
    got = RULE["guards"].apply(plain, reads)
    assert [r.state for r in got] == ["unknown", "face_up"] and plain.start == reads
    split = [tile("1-1", 300, 260), tile("2-3", 300, 340)]
    monkeypatch.setattr(still, "refine_unknowns", lambda rs, *a, only=None, **k: [
        x for r in rs for x in (split if only and only(r) else [r])])
    ctx, _ = make()
    got = RULE["guards"].apply(ctx, reads)
    assert sorted(r.face for r in got) == ["1-1", "2-3", "6-6"]


def test_missed_beside_adds_the_neighbour_the_tile_model_missed(quiet_guards, monkeypatch):
    ctx, _ = make()
    reads = [tile("2-5", 300, 300)]
    seed = tile(None, 342, 300)
    monkeypatch.setattr(still, "missed_beside", lambda rs, *a, **k: [])
    assert RULE["missed_beside"].apply(ctx, reads) is reads
    monkeypatch.setattr(still, "missed_beside", lambda rs, *a, **k: [seed])
    found = tile("3-3", 342, 300)
    monkeypatch.setattr(still, "refine_unknowns", lambda rs, *a, only=None, **k: [
        found if only(r) else r for r in rs])
    got = RULE["missed_beside"].apply(ctx, reads)
    assert [r.face for r in got] == ["2-5", "3-3"]


def test_turned_reads_the_turned_picture_without_itself_and_adds_its_tiles(quiet_guards,
                                                                            monkeypatch):
    ctx, _ = make()
    lists = []
    monkeypatch.setattr(still, "read_still",
                        lambda e, pic, rules: lists.append([r.name for r in rules]) or ([], None))
    added = tile("1-6", 500, 300)

    def look(reads, image, read_turned, read_outlines, fill):
        read_turned(np.zeros((50, 50, 3), np.uint8))
        return list(reads) + [added]

    monkeypatch.setattr(still, "turned_look", look)
    reads = [tile(None, 300, 300)]
    got = RULE["turned"].apply(ctx, reads)
    assert lists == [[n for n in NAMES if n != "turned"]]
    assert [r.face for r in got] == [None, "1-6"]
    known = [tile("1-6", 300, 300)]
    assert RULE["turned"].apply(ctx, known) is known and len(lists) == 1  # nothing unread


def test_dealt_blocks_judges_a_reading_with_an_unknown_with_the_second_model_s(monkeypatch):
    ctx, _ = make()
    ctx.second = [tile("1-5", 300, 300)]
    seen = []
    given = tile("1-1", 300, 300)
    monkeypatch.setattr(still, "dealt_blocks",
                        lambda rs, second, *a: seen.append(second) or [given])
    known = [tile("1-1", 100, 100)]
    assert RULE["dealt_blocks"].apply(ctx, known) is known and not seen
    assert RULE["dealt_blocks"].apply(ctx, [tile(None, 300, 300)]) == [given]
    assert seen == [ctx.second]


def test_crop_check_refits_a_tile_it_makes_unknown_and_checks_the_refit(quiet_guards,
                                                                        monkeypatch):
    """Issue 40 (scenes_cam scene_16): a 6-6's outline reaching a third of its width onto its
    flush neighbour gives a crop the classifier takes for ``other``; the face region under it
    is the block of the two, whose lengthwise cut gives the 6-6 on its own tile. The refitted
    tile is checked again; where the classifier reads that otherwise too, it stays unknown."""
    off, on = tile("6-6", 300, 310), tile("6-6", 300, 300)
    vetoed = [off.polygon]

    def check(rs, image, classifier):  # the classifier: `other` for the outlines in `vetoed`
        return [r.as_unknown("the crop classifier reads other") if r.face and any(
            np.array_equal(r.polygon, q) for q in vetoed) else r for r in rs]

    monkeypatch.setattr(still, "cross_check", check)
    refitted = []
    monkeypatch.setattr(still, "refine_unknowns", lambda rs, *a, only=None, **k: [
        (refitted.append(r) or on) if only and only(r) else r for r in rs])
    near = tile("2-4", 100, 100)
    plain, _ = make(refine=False)
    got = RULE["crop_check"].apply(plain, [off, near])
    assert [r.face for r in got] == [None, "2-4"] and not refitted
    ctx, _ = make()
    got = RULE["crop_check"].apply(ctx, [off, near])
    assert [r.face for r in got] == ["6-6", "2-4"]
    assert np.array_equal(got[0].polygon, on.polygon) and len(refitted) == 1
    vetoed.append(on.polygon)  # the classifier reads the refitted crop otherwise too
    ctx, _ = make()
    got = RULE["crop_check"].apply(ctx, [off, near])
    assert sorted(str(r.face) for r in got) == ["2-4", "None"]


@pytest.mark.slow
@pytest.mark.skipif(not SCENE.is_file() or not (MODELS / "tiles.onnx").is_file(),
                    reason="needs ../shared/scenes and the trained models")
@pytest.mark.parametrize("name", NAMES)
def test_a_rendered_table_reads_with_any_one_rule_left_out(name):
    """scenes scene_00 (a rendered table, read at run time): every list less one rule reads
    it without error; without the tile model's own reading (``scales``) there are no first
    detections, and only the second model's tiles are read."""
    engine = RecognitionEngine()
    image = cv2.imread(str(SCENE))
    reads, dets = engine._read_still(image, rules=without(STILL_RULES, name))
    assert all(isinstance(r, TileRead) for r in reads)
    assert isinstance(dets, Detections)
    if name == "scales":
        assert len(dets) == 0
    else:
        assert sum(r.state == "face_up" for r in reads) >= 4 and len(dets) >= 4
