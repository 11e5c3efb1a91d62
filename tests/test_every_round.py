"""Every round is reported, with or without a layout (issue 22 item 4), and layouts are
validated (issue 22 item 3).

Hand-made tile reads go through the real table logic (``Pipeline.process`` with its reading
stage replaced by the reads, then grouping, tracking, the round event and the overlay view):
a table the table model cannot place, tiles outside every layout polygon, the overlay after
the next round's tiles are laid. The layout checks go through ``Layout.from_dict`` and the
``paigow run`` command (exit code 2, the position named).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from scoring.errors import InputError
from vision.recognition.engine import Reads as EngineReads
from vision.recognition.decode import TileRead
from vision.table.propose import propose_from_reads
from vision.pipeline import Pipeline
from vision.table.rounds import FrameHeader, Layout, RoundTracker

FRAME = (1280, 720)
TW, TH = 30.0, 66.0

DEAL = {"dealer": ["6-6", "4-5", "1-3", "2-2"], "1": ["1-1", "3-6", "5-5", "1-6"],
        "2": ["2-4", "1-2", "4-4", "3-4"]}
NEXT = {"dealer": ["5-6", "4-6", "1-5", "2-3"], "1": ["3-3", "2-6", "1-4", "2-5"],
        "2": ["6-6", "3-5", "1-3", "2-2"]}
#: where each position's four tiles lie (centre px): the dealer at the BOTTOM of the picture
#: (the table model without a layout expects it at the top), the seats across from it
PLACES = {"dealer": (640, 600), "1": (340, 200), "2": (940, 200)}


def tile(face, cx, cy):
    poly = np.array([[cx - TW / 2, cy - TH / 2], [cx + TW / 2, cy - TH / 2],
                     [cx + TW / 2, cy + TH / 2], [cx - TW / 2, cy + TH / 2]], np.float32)
    return TileRead(face, "face_up", 0.95, poly, np.r_[poly.min(0), poly.max(0)])


def position(faces, cx, cy):
    """Two hands of two touching tiles, 30 px apart, centred on (cx, cy)."""
    xs = [-1.5 * TW - 17, -0.5 * TW - 15, 0.5 * TW + 15, 1.5 * TW + 17]
    return [tile(f, cx + x, cy) for f, x in zip(faces, xs)]


def table(deal=DEAL, places=PLACES):
    return [r for p, fs in deal.items() for r in position(fs, *places[p])]


def box(cx, cy, w=260, h=140):
    return [[cx - w / 2, cy - h / 2], [cx + w / 2, cy - h / 2], [cx + w / 2, cy + h / 2],
            [cx - w / 2, cy + h / 2]]


LAYOUT = {"positions": {p: box(*c) for p, c in PLACES.items()}}


class Reads:
    """Stands for the reading stage: each call returns the next list of reads."""

    def __init__(self, *frames):
        self.frames = list(frames)

    def __call__(self, image, mode, clock=None):
        return EngineReads(tuple(self.frames.pop(0)))


def pipeline(reads, layout=None, still=True, n_stable=1):
    opts = {"n_stable": n_stable, "draw": True}
    if layout is not None:
        opts["layout"] = Layout.from_dict(layout)
    pipe = Pipeline(tile_detector=object(), pip_detector=object(), **opts)
    pipe.still_images = True  # reads is the stand-in for the engine's every reading
    pipe.engine.read = reads
    return pipe


IMAGE = np.zeros((FRAME[1], FRAME[0], 3), np.uint8)


def test_no_layout_unplaceable_table_still_gives_its_round():
    """The table model cannot place a table with the dealer at the bottom: the picture still
    gives one round, not settled, saying why, with every tile read."""
    pipe = pipeline(Reads(table()))
    _, res = pipe.process(IMAGE)
    events = [res.event] if res.event else []
    fl = pipe.flush()
    events += [fl.event] if fl is not None else []
    assert len(events) == 1
    ev = events[0]
    assert ev["settled"] is False
    assert "no layout: the positions could not be placed" in ev["reason"]
    assert sorted(t["face"] for t in ev["tiles"]) == sorted(f for fs in DEAL.values() for f in fs)
    assert any(a["kind"] == "tiles_outside_positions" and a["detail"].startswith("12 tile(s)")
               for a in ev["alerts"])


#: a table turned upside down (the dealer at the bottom) with four players on the arc
ARC = {"dealer": (640, 620), "1": (300, 330), "2": (520, 160), "3": (760, 160),
       "4": (980, 330)}
ARC_DEAL = dict(DEAL, **{"3": ["5-6", "4-6", "1-5", "2-3"], "4": ["3-3", "2-6", "1-4", "2-5"]})


def test_no_layout_turned_table_is_not_guessed():
    """Without a layout, a table the table model cannot fit is not named another way (seat
    numbers guessed from the picture could pay the wrong seat): its round is reported, not
    settled, saying to give a layout -- which `layout propose` drafts from the same tiles."""
    pipe = pipeline(Reads(table(ARC_DEAL, ARC)))
    _, res = pipe.process(IMAGE)
    ev = res.event or pipe.flush().event
    assert ev["settled"] is False and "give a layout (paigow layout propose)" in ev["reason"]
    layout, _, left = propose_from_reads(table(ARC_DEAL, ARC), FRAME)
    assert left == [] and len(layout["positions"]) == 5
    pipe = pipeline(Reads(table(ARC_DEAL, ARC)), layout=layout)
    _, res = pipe.process(IMAGE)
    assert res.event["settled"] is True
    seats = {tuple(sorted(o["tiles"])) for p, o in res.event["positions"].items()
             if p != "dealer" and o["result"] in ("win", "lose", "push")}
    assert seats == {tuple(sorted(f)) for p, f in ARC_DEAL.items() if p != "dealer"}


def test_tiles_outside_every_polygon_are_reported_with_an_alert():
    lay = {"positions": {p: v for p, v in LAYOUT["positions"].items() if p != "2"}}
    pipe = pipeline(Reads(table()), layout=lay)
    _, res = pipe.process(IMAGE)
    ev = res.event
    assert ev is not None and ev["settled"] is True  # dealer and seat 1 are in their polygons
    assert ev["positions"]["1"]["result"] in ("win", "lose", "push")
    outside = [a for a in ev["alerts"] if a["kind"] == "tiles_outside_positions"]
    assert len(outside) == 1 and outside[0]["detail"].startswith("4 tile(s) in no position")
    assert sorted(t["face"] for t in ev["tiles"] if t["position"] is None) == sorted(DEAL["2"])


def test_round_with_every_tile_outside_the_layout_is_not_lost():
    """A layout drawn for another table: no tile in any polygon. The round is reported (not
    settled, the tiles in no position counted) instead of disappearing."""
    far = {"positions": {"dealer": box(100, 80, 100, 60), "1": box(1180, 80, 100, 60)}}
    pipe = pipeline(Reads(table()), layout=far)
    _, res = pipe.process(IMAGE)
    assert res.event is None
    fl = pipe.flush()
    assert fl is not None and fl.event["settled"] is False
    assert "12 tile(s) in no position" in fl.event["reason"]


def test_video_round_without_placement_reported_when_table_cleared():
    """Video (n_stable 2): an unplaceable table dealt, then cleared: exactly one round."""
    frames = [table()] * 4 + [[]] * 3
    pipe = pipeline(Reads(*frames), n_stable=2)
    events = []
    for _ in range(len(frames)):
        _, res = pipe.process(IMAGE)
        if res.event:
            events.append(res.event)
    assert pipe.flush() is None
    assert len(events) == 1 and events[0]["settled"] is False
    assert events[0]["reason"].startswith("table cleared before the round settled: no layout")


def test_overlay_never_shows_a_round_over_the_next_rounds_tiles():
    """Round 1 settles; the next deal is laid before the banker's tiles have been stably
    different for n_stable frames: the overlay view shows no result of round 1 then."""
    n = 3
    frames = [table()] * n + [table(NEXT)] * 2
    pipe = pipeline(Reads(*frames), layout=LAYOUT, n_stable=n)
    views = []
    for _ in range(len(frames)):
        _, res = pipe.process(IMAGE)
        views.append((res.event, pipe.round_view(res)))
    settled = [k for k, (ev, _) in enumerate(views) if ev]
    assert settled == [n - 1]
    assert views[n - 1][1]["positions"]["1"]["result"] in ("win", "lose", "push")
    for ev, view in views[n:]:
        assert not pipe.tracker.open  # the tracker still holds round 1 ...
        assert view["event"] is None and view["round_id"] is None  # ... but shows nothing
        assert all(v["result"] is None for v in view["positions"].values())


def test_overlay_keeps_result_of_an_unchanged_position_only():
    """Seat 2 picks up its tiles and lays others: its old result is not drawn, the rest is."""
    changed = [r for r in table() if r.centre[0] < 800] + position(NEXT["2"], *PLACES["2"])
    pipe = pipeline(Reads(table(), changed), layout=LAYOUT, n_stable=3)
    pipe.tracker = RoundTracker(n_stable=1)  # settle at once, stay closed after
    pipe.process(IMAGE)
    _, res = pipe.process(IMAGE)
    view = pipe.round_view(res)
    assert view["round_id"] is not None
    assert view["positions"]["1"]["result"] is not None
    assert view["positions"]["2"]["result"] is None


def test_tracker_loose_tiles_keep_the_round_open():
    """A frame with tiles in no position only (nothing named) still counts as the round."""
    tr = RoundTracker(n_stable=1)
    reads = table()
    assert tr.update({}, FrameHeader(index=0), loose=reads, placement="no layout: test") is None
    rnd = tr.flush()
    assert rnd is not None and rnd.result is None and rnd.reason.endswith("no layout: test")
    assert tr.flush() is None


# ------------------------------------------------------------------ layout validation


@pytest.mark.parametrize("polygon,what", [
    ([[0, 0], [100, 100], [100, 0], [0, 100]], "self-intersecting"),
    ([[0, 0], [50, 50], [100, 100]], "zero area"),
    ([[0, 0], [1e308, 0], [1e308, 1e308]], "beyond any picture"),
    ([[0, 0], [-200000, 0], [0, 50]], "beyond any picture"),
])
def test_bad_polygon_names_the_position(polygon, what):
    lay = {"positions": {"dealer": box(640, 600), "3": polygon}}
    with pytest.raises(InputError, match=rf"position '3'.*{what}|position '3' has .*{what}"):
        Layout.from_dict(lay)


def test_overlapping_polygons_name_both_positions():
    lay = {"positions": {"dealer": box(640, 600), "4": box(700, 620)}}
    with pytest.raises(InputError, match=r"positions 'dealer' and '4' overlap"):
        Layout.from_dict(lay)


def test_touching_polygons_are_fine():
    lay = {"positions": {"dealer": [[0, 0], [10, 0], [10, 10], [0, 10]],
                         "1": [[10, 0], [20, 0], [20, 10], [10, 10]]}}
    assert list(Layout.from_dict(lay).positions) == ["dealer", "1"]


def test_banker_not_a_position():
    with pytest.raises(InputError, match=r"banker '5' is not one of its positions"):
        Layout.from_dict(dict(LAYOUT, banker="5"))


def test_polygon_off_the_picture_names_the_position():
    part = Layout.from_dict({"positions": {"dealer": box(640, 600), "2": box(1250, 300)}})
    part.check_frame(*FRAME)  # 62 % of seat 2's polygon in the picture: fine
    with pytest.raises(InputError, match=r"position '2' lies mostly off the 1200 x 720 px"):
        part.check_frame(1200, 720)  # 31 % inside
    off = Layout.from_dict({"positions": {"dealer": box(640, 600), "2": box(2000, 300)}})
    with pytest.raises(InputError, match=r"position '2' lies off the 1280 x 720 px picture"):
        off.check_frame(*FRAME)


@pytest.mark.parametrize("positions,needle", [
    ({"dealer": box(640, 600), "2": [[0, 0], [100, 100], [100, 0], [0, 100]]},
     "position '2' is self-intersecting"),
    ({"dealer": box(640, 600), "1": box(660, 600)}, "positions 'dealer' and '1' overlap"),
    ({"dealer": box(640, 600), "6": [[0, 0], [1e308, 0], [0, 1e308]]}, "position '6' has a"),
])
def test_run_exits_2_naming_the_position(tmp_path, capsys, positions, needle):
    from vision.cli import main

    f = tmp_path / "layout.yaml"
    f.write_text(yaml.safe_dump({"positions": positions}, sort_keys=False))
    img = tmp_path / "t.png"
    import cv2

    cv2.imwrite(str(img), IMAGE)
    assert main(["run", str(img), "--layout", str(f), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert main(["run", str(img), "--layout", str(f), "--json", "--no-progress"]) == 2
    out = capsys.readouterr()
    assert needle in json.loads((out.out or out.err).strip().splitlines()[-1])["error"]


# ------------------------------------------------------------------ shared scenes, no layout

SCENES = __import__("pathlib").Path(__file__).resolve().parents[1].parent / "shared" / "scenes"


@pytest.mark.slow
@pytest.mark.skipif(not (SCENES / "truth.jsonl").is_file(), reason="needs ../shared/scenes")
def test_run_without_layout_gives_a_round_per_scene(capsys):
    """``paigow run`` on every shared scene (one process, a glob of stills: one round each)
    without a layout: at least one round event per picture, and a reason on each unsettled
    one or position."""
    from vision import MODELS_DIR
    from vision.cli import main

    if not (MODELS_DIR / "tiles.onnx").is_file():
        pytest.skip("shipped models not present")
    truth = [json.loads(x) for x in (SCENES / "truth.jsonl").read_text().splitlines() if x]
    assert main(["run", str(SCENES / "scene_*.jpg"), "--json", "--no-progress"]) == 0
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    per = {}
    for ev in events:
        per.setdefault(__import__("pathlib").Path(ev["source_file"]).name, []).append(ev)
        assert ev["settled"] or ev["reason"]
        assert ev["tiles"]  # the tiles read are reported
        for p, o in ev["positions"].items():
            assert o["result"] != "not_settled" or o["reason"], (ev["source_file"], p)
    assert sorted(per) == sorted(r["image"] for r in truth)


def test_stray_tile_outside_does_not_hold_a_round_open():
    """A chip taken for an unknown tile lies outside the layout all along: a round whose
    banker is never readable still ends when its positions are cleared (not merged into the
    next round), and the chip alone makes no round."""
    chip = TileRead(None, "unknown", 0.6, np.array([[5, 5], [35, 5], [35, 70], [5, 70]],
                                                    np.float32), np.array([5, 5, 35, 70]),
                    reason="test")
    unread = [TileRead(None, "unknown", 0.6, r.polygon, r.xyxy, reason="test")
              if r.face == "6-6" else r for r in table()]  # the dealer's 6-6 unreadable
    frames = [unread + [chip]] * 4 + [[chip]] * 4 + [table(NEXT) + [chip]] * 4 + [[chip]] * 4
    pipe = pipeline(Reads(*frames), layout=LAYOUT, n_stable=2)
    events = []
    for _ in frames:
        _, res = pipe.process(IMAGE)
        events += [res.event] if res.event else []
    fl = pipe.flush()
    assert fl is None  # the chip alone is no round
    assert [e["settled"] for e in events] == [False, True]
    assert events[0]["reason"].startswith("table cleared before the round settled")
    assert sorted(events[1]["positions"]["dealer"]["tiles"]) == sorted(NEXT["dealer"])
    assert all(any(a["kind"] == "tiles_outside_positions" for a in e["alerts"]) for e in events)
