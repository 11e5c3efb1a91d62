"""The one frame loop (vision.session): every round accounted for, stored before reported, and
the same loop behind `paigow run`, `paigow serve` and the demo.

The detectors are the ground-truth doubles of fakes.py (patched in where the commands load
models), so these tests check the loop and the contract, not the models."""

from __future__ import annotations

import json
import socket
import threading
import time

import cv2
import numpy as np
import pytest
import yaml
from fakes import GroundTruthDetectors, assert_valid_event

from vision.audit import AuditStore
from vision.cli import main
from vision.session import run
from vision.table.rounds import Layout

synth = pytest.importorskip("vision.synth.render")

SEED = 1_000_012  # every tile readable


@pytest.fixture(scope="module")
def scene():
    return synth.render_table(SEED)


def _dealer_unreadable(scene):
    """Detectors that miss one spot of every dealer tile: the banker is never readable."""
    drop = {(0, k): 0 for k, t in enumerate(scene.tiles)
            if t.position == "dealer" and t.face and t.labelled}
    return GroundTruthDetectors([scene], drop=drop)


@pytest.fixture
def fake_models(monkeypatch):
    """Make the commands' model loading return the given detectors."""
    import vision.recognition.engine as pipeline_mod

    class AnySize:
        """The ground-truth detector behind the trained models' interface (an input size for
        still images, which the ground truth does not need)."""

        def __init__(self, det):
            self.det = det

        def detect(self, image, imgsz=None):
            return self.det.detect(image)

        def __getattr__(self, name):
            return getattr(self.det, name)

    def use(det):
        monkeypatch.setattr(pipeline_mod, "load_detectors",
                            lambda *a, **k: (AnySize(det), AnySize(det)))
        monkeypatch.setattr(pipeline_mod, "model_version", lambda *a, **k: "fake-models")
    return use


def _table_folder(tmp_path, scene, n=1):
    d = tmp_path / "frames"
    d.mkdir()
    for i in range(n):
        cv2.imwrite(str(d / f"table{i}.png"), scene.image)
    lay = tmp_path / "layout.yaml"
    lay.write_text(yaml.safe_dump(scene.layout))
    return d, lay


def test_banker_never_readable_is_stored_and_printed_with_its_reason(tmp_path, scene,
                                                                      fake_models, capsys):
    fake_models(_dealer_unreadable(scene))
    frames, lay = _table_folder(tmp_path, scene)
    db = tmp_path / "audit.db"
    assert main(["run", str(frames), "--layout", str(lay), "--audit", str(db),
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "NOT SETTLED: source ended before the round settled: banker dealer not settled (" \
        in printed
    assert "1 round(s) (0 settled, 1 not settled)" in printed
    with AuditStore(db, create=False) as st:
        (rec,) = list(st.rounds())
    ev = rec.payload
    assert_valid_event(ev)
    assert ev["settled"] is False and "bank" not in ev
    assert ev["reason"].startswith("source ended before the round settled: banker dealer")
    assert "unknown" in ev["positions"]["dealer"]["reason"]
    assert all(p["result"] == "not_settled" and p["reason"] for p in ev["positions"].values())
    assert ev["source_file"] == str(frames / "table0.png")
    assert rec.frame_path is not None and rec.frame_path.is_file()  # the picture it showed
    line = (tmp_path / "out" / "events.jsonl").read_text().splitlines()
    assert [json.loads(x)["round_id"] for x in line] == [rec.round_id]
    assert main(["audit", "verify", str(db)]) == 0


def test_each_still_image_is_a_round_settled_or_not(tmp_path, scene):
    """Two images of an unreadable banker: two unsettled rounds, each naming its file."""
    frames, lay = _table_folder(tmp_path, scene, n=2)
    s = run(str(frames), layout=str(lay), progress=False, tile_detector=_dealer_unreadable(scene),
            pip_detector=_dealer_unreadable(scene))
    assert [e["source_file"] for e in s["events"]] == [str(frames / "table0.png"),
                                                        str(frames / "table1.png")]
    assert [e["settled"] for e in s["events"]] == [False, False]
    assert [e["round_id"] for e in s["events"]] == ["r000001", "r000002"]


def test_round_covered_until_the_table_is_cleared_is_emitted_at_clearing(scene):
    det = _dealer_unreadable(scene)
    blank = np.zeros_like(scene.image)
    from vision.io.capture import Frame

    images = [scene.image] * 4 + [blank] * 4 + [scene.image] * 4
    frames = [Frame(im, i / 30, i, "camera-test", None) for i, im in enumerate(images)]
    s = run("camera-test", layout=Layout.from_dict(scene.layout), frames=frames, n_stable=3,
            tile_detector=det, pip_detector=det, progress=False)
    first, second = s["events"]
    assert first["reason"].startswith("table cleared before the round settled")
    assert first["frame_index"] == 3  # the last frame that showed the round
    assert second["reason"].startswith("source ended before the round settled")
    assert first["source_file"] is None  # a camera has no file


def test_stored_before_reported(tmp_path, scene, monkeypatch):
    """A sink sees a round only once the audit store holds it."""
    from vision.io.sinks import Sink

    det = GroundTruthDetectors([scene])
    db = tmp_path / "a.db"
    seen = []

    class Probe(Sink):
        def round(self, event):
            with AuditStore(db, create=False) as st:
                seen.append((event.round_id, [r.round_id for r in st.rounds()]))

    from vision.config import OutputConfig, PipelineConfig, RunConfig
    from vision.session import Session

    cfg = RunConfig("x", PipelineConfig.build(layout=Layout.from_dict(scene.layout), n_stable=1),
                    OutputConfig(audit=db, progress=False))
    Session(cfg, frames=[scene.image], sinks=[Probe()], tile_detector=det,
            pip_detector=det).run()
    assert seen == [("r000001", ["r000001"])]


def _free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def test_serve_with_audit_records_every_round_it_shows(tmp_path, scene, fake_models):
    """`paigow serve SOURCE --audit DB` through the real command: every round the display shows
    is in the store, the chain verifies."""
    import httpx

    import vision.commands.serve as serve_cmd

    other = synth.render_table(SEED + 1)
    fake_models(GroundTruthDetectors([scene, other]))
    frames, lay = _table_folder(tmp_path, scene)
    cv2.imwrite(str(frames / "table1.png"), other.image)  # a second table: auto layout below
    db = tmp_path / "serve.db"
    made = {}
    real_make_server = serve_cmd.make_server

    def capture(app, feed, log_level="warning"):
        made["server"], made["feed"] = real_make_server(app, feed, log_level), feed
        return made["server"]

    serve_cmd.make_server = capture
    port = _free_port()
    rc = {}
    t = threading.Thread(target=lambda: rc.setdefault("rc", main(
        ["serve", str(frames), "--port", str(port), "--audit", str(db), "--no-realtime",
         "--table-id", "t-serve"])))
    t.start()
    try:
        deadline = time.monotonic() + 120
        while "server" not in made or not made["server"].started:
            t.join(0.05)
            assert t.is_alive() and time.monotonic() < deadline, rc
        base = f"http://127.0.0.1:{port}"
        while (st := httpx.get(base + "/api/state", timeout=10).json())["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert st["status"] == "ended", st
        shown = [r["round_id"] for r in st["rounds"]]
    finally:
        serve_cmd.make_server = real_make_server
        if "server" in made:
            made["server"].stop()
        t.join(30)
    assert rc == {"rc": 0}
    assert len(shown) == 2  # each image is its own table
    with AuditStore(db, create=False) as store:
        stored = [r.round_id for r in store.rounds()]
        for r in store.rounds():
            assert_valid_event(r.payload)
            assert r.payload["table_id"] == "t-serve"
    assert sorted(stored) == sorted(shown)
    assert main(["audit", "verify", str(db)]) == 0


def test_a_picture_nobody_looks_at_is_drawn_only_for_a_round(scene, monkeypatch):
    """Pipeline.process(draw=False) (the session when no sink wants the frame's picture):
    the same results, and the rounds' key frames byte for byte the pictures drawn eagerly --
    each drawn from the view of its own frame -- while frames without a round are not drawn."""
    import vision.io.overlay as overlay
    from vision.pipeline import Pipeline

    blank = np.zeros_like(scene.image)
    images = [scene.image] * 4 + [blank] * 4 + [scene.image] * 4
    layout = Layout.from_dict(scene.layout)

    def play(draw: bool):
        det = _dealer_unreadable(scene)
        pipe = Pipeline(layout=layout, n_stable=3, tile_detector=det, pip_detector=det)
        got = [pipe.process(im, draw=draw) for im in images]
        end = pipe.flush()
        keys = [r.key_frame for _, r in got if r.round is not None] + [end.key_frame]
        return got, keys

    eager, eager_keys = play(True)
    drawn = []
    real = overlay.draw_round
    monkeypatch.setattr(overlay, "draw_round", lambda *a, **k: drawn.append(1) or real(*a, **k))
    lazy, lazy_keys = play(False)
    assert len(eager_keys) == len(lazy_keys) == 2
    for a, b in zip(eager_keys, lazy_keys):
        assert a.shape == b.shape and np.array_equal(a, b)
    assert not np.array_equal(eager_keys[0], scene.image)  # annotated, not the bare frame
    assert len(drawn) == len(lazy_keys)  # only the key frames were drawn
    for (out_e, res_e), (out_l, res_l), im in zip(eager, lazy, images):
        assert out_l is im  # the frame itself comes back
        assert [(r.face, r.state) for r in res_e.reads] == [(r.face, r.state) for r in res_l.reads]
        assert res_e.tile_positions == res_l.tile_positions


def test_the_session_draws_for_the_sinks_that_want_the_picture(tmp_path, scene):
    """A sink that wants the picture gets it annotated; with only sinks that do not, the
    session hands them the captured frame itself (and the round its annotated key frame)."""
    from vision.config import OutputConfig, PipelineConfig, RunConfig
    from vision.io.sinks import Sink
    from vision.session import Session

    folder, _ = _table_folder(tmp_path, scene, n=3)

    class Probe(Sink):
        def __init__(self, want: bool):
            self.want, self.same = want, []

        def wants_picture(self) -> bool:
            return self.want

        def frame(self, image, frame, result):
            self.same.append(image is frame.image)
            return True

    keys = []
    for want in (True, False):
        det = GroundTruthDetectors([scene])
        probe = Probe(want)
        cfg = RunConfig(str(folder), PipelineConfig.build(
            layout=Layout.from_dict(scene.layout), n_stable=2), OutputConfig(progress=False))
        s = Session(cfg, sinks=[probe], tile_detector=det, pip_detector=det)
        orig = s._emit
        s._emit = lambda event, key_frame: keys.append(key_frame) or orig(event, key_frame)
        s.run()
        assert probe.same == [not want] * 3
        assert s.events and s.events[0]["settled"]
    assert len(keys) == 2 and np.array_equal(keys[0], keys[1])
    assert not np.array_equal(keys[1], scene.image)  # the key frame is annotated


@pytest.mark.parametrize("video", [True, False])
def test_no_video_writes_the_events_only(tmp_path, scene, video):
    """``--no-video`` (``output.video: false``, a pit table's ``video: false``): the round
    events are written, no annotated video or pictures (their drawing and encoding is the
    CPU a shared box's other tables need)."""
    from vision.config import SessionOptions, build_run_config
    from vision.session import Session

    folder, lay = _table_folder(tmp_path, scene, n=2)
    out = tmp_path / "out"
    cfg = build_run_config(SessionOptions(source=str(folder), layout=str(lay), out=str(out),
                                          progress=False, video=video))
    assert cfg.output.video is video
    det = GroundTruthDetectors([scene])
    s = Session(cfg, tile_detector=det, pip_detector=det).run()
    lines = (out / "events.jsonl").read_text().splitlines()
    assert len(lines) == 2 and s["rounds"] == 2
    assert (out / "annotated").exists() is video
    assert (s["output"] is not None) is video
