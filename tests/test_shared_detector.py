"""The pit's one detector service (vision.recognition.service, docs/pit.md): tables' blobs go to
one detector process through shared memory and a queue and come back as the outputs the backend
gives in-process -- the same detections, batched across clients or not, and a blob too big for
the shared block still answered."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from scoring.errors import InputError
from vision.recognition.backends import open_backend
from vision.recognition.service import DetectorService, SharedDetectorClient

MODELS = Path(__file__).resolve().parents[1] / "models"
pytestmark = pytest.mark.skipif(not (MODELS / "pips.onnx").is_file(),
                                reason="models/pips.onnx absent")


def test_two_clients_get_what_the_backend_gives_in_process():
    rng = np.random.default_rng(3)
    blobs = [rng.random((n, 3, 192, 96), dtype=np.float32) for n in (1, 3, 2, 4)]
    here = open_backend("onnx", MODELS / "pips.onnx")
    want = [here.infer(b)[0] for b in blobs]
    with DetectorService(2, threads=1) as svc:
        clients = [SharedDetectorClient(MODELS / "pips.onnx", svc.handle(i), "onnx")
                   for i in range(2)]
        assert clients[0].metadata["names"] == here.metadata["names"]
        assert clients[0].input_shape == here.input_shape
        got: dict[int, np.ndarray] = {}

        def run(k: int) -> None:  # two tables at once: their requests may share a call
            for j in range(k, len(blobs), 2):
                got[j] = clients[k].infer(blobs[j])[0]

        ts = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        for j, w in enumerate(want):
            assert got[j].shape == w.shape
            np.testing.assert_allclose(got[j], w, atol=1e-4)


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_two_streams_answer_what_the_backend_gives_in_process(backend):
    """The service with two single-thread streams (the default on a 2-core machine): four
    tables' requests, batched or not, split between the streams, answered with the
    in-process outputs; the service stops cleanly; streams above its threads are refused."""
    if backend == "openvino":
        pytest.importorskip("openvino")
    rng = np.random.default_rng(6)
    blobs = [rng.random((n, 3, 192, 96), dtype=np.float32) for n in (1, 3, 2, 4, 2, 1, 3, 1)]
    here = open_backend(backend, MODELS / "pips.onnx")
    want = [here.infer(b)[0] for b in blobs]
    for batch in (True, False):
        with DetectorService(4, threads=2, batch=batch) as svc:
            assert svc.streams == 2
            clients = [SharedDetectorClient(MODELS / "pips.onnx", svc.handle(i), backend)
                       for i in range(4)]
            got: dict[int, np.ndarray] = {}

            def run(k: int) -> None:
                for j in range(k, len(blobs), 4):
                    got[j] = clients[k].infer(blobs[j])[0]

            ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(60)
            for j, w in enumerate(want):
                np.testing.assert_allclose(got[j], w, atol=1e-4)
            process = svc.process
        assert not process.is_alive()
    with pytest.raises(InputError, match="streams"):
        DetectorService(1, threads=2, streams=3)


def test_a_blob_bigger_than_the_block_and_an_unreadable_model(tmp_path):
    blob = np.random.default_rng(4).random((2, 3, 192, 96), dtype=np.float32)
    want = open_backend("onnx", MODELS / "pips.onnx").infer(blob)[0]
    with DetectorService(1, threads=1, batch=False, slot_bytes=4096) as svc:
        c = SharedDetectorClient(MODELS / "pips.onnx", svc.handle(0), "onnx")
        np.testing.assert_allclose(c.infer(blob)[0], want, atol=1e-4)
        bad = tmp_path / "bad.onnx"
        bad.write_bytes(b"not a model")
        with pytest.raises(InputError, match="bad.onnx"):
            SharedDetectorClient(bad, svc.handle(0), "onnx")


def test_the_service_counts_its_calls_for_the_live_figures():
    """DetectorService.stats (the pit's ``/api/stats``, vision/io/stats.py): the detector
    process's calls, requests answered and ms in calls, read from its shared counters."""
    blob = np.random.default_rng(5).random((1, 3, 192, 96), dtype=np.float32)
    with DetectorService(1, threads=1, batch=False) as svc:
        assert svc.stats()["calls"] == 0 and svc.stats()["infer_ms_last"] is None
        c = SharedDetectorClient(MODELS / "pips.onnx", svc.handle(0), "onnx")
        for _ in range(3):
            c.infer(blob)
        st = svc.stats()
        assert (st["calls"], st["requests"], st["pending"], st["queued"]) == (3, 3, 0, 0)
        assert 0 < st["infer_ms_last"] <= st["infer_ms_total"]
        assert st["alive"] and st["ping_waiting_s"] == 0.0


@pytest.mark.skipif(not (MODELS / "tiles.onnx").is_file(), reason="models/tiles.onnx absent")
def test_the_tile_detector_on_the_service_reads_what_it_reads_in_process():
    from vision.recognition.detect import TileDetector
    from vision.synth.render import render_table

    image = render_table(1_000_931, size=(1920, 1080)).image
    a = TileDetector(MODELS / "tiles.onnx", backend="onnx").detect(image)
    with DetectorService(1, threads=1) as svc:
        client = SharedDetectorClient(MODELS / "tiles.onnx", svc.handle(0), "onnx")
        b = TileDetector(MODELS / "tiles.onnx", backend=client).detect(image)
    assert len(a) >= 8 and len(a) == len(b)
    np.testing.assert_allclose(a.polygon, b.polygon, atol=0.01)
    np.testing.assert_array_equal(a.class_id, b.class_id)


@pytest.mark.slow
@pytest.mark.skipif(not (MODELS / "tiles.onnx").is_file(), reason="models/tiles.onnx absent")
def test_a_pit_worker_on_the_service_reads_a_still_as_in_process():
    """The worker's configuration (vision.pit.worker._shared_config): every model of the table
    -- the tile model at each still size, the second tile model, the spot model -- answered
    by the service, with the same reads as in the worker's own process."""
    from vision.config import PipelineConfig, RunConfig
    from vision.pipeline import Pipeline
    from vision.pit.worker import _shared_config
    from vision.synth.render import render_table

    image = render_table(1_000_933, size=(1280, 720)).image
    cfg = RunConfig("x.png", PipelineConfig.build(backend="onnx", n_stable=1, draw=False))
    own = list(Pipeline(cfg.pipeline).engine.read(image, "still"))
    with DetectorService(1, threads=1) as svc:
        shared_cfg = _shared_config(cfg, svc.handle(0))
        pipe = Pipeline(shared_cfg.pipeline)
        assert pipe.engine.tile_detector.backend == pipe.engine.pip_detector.backend == "shared"
        assert pipe.engine.second_detector is None or pipe.engine.second_detector.backend == "shared"
        got = list(pipe.engine.read(image, "still"))
    assert len(own) >= 8
    assert [(r.face, r.state) for r in got] == [(r.face, r.state) for r in own]
    np.testing.assert_allclose([r.xyxy for r in got], [r.xyxy for r in own], atol=0.05)


def test_a_hung_service_is_seen_by_its_watchdog_and_restarted():
    """A detector process that is alive but takes no request (stopped with SIGSTOP): the
    watchdog's ping goes unanswered and ``answering`` turns False after ``hang_s``, not before;
    ``restart`` kills it and starts a new process on fresh queues, whose clients are answered
    with the same outputs."""
    import os
    import signal
    import time

    blob = np.random.default_rng(8).random((2, 3, 192, 96), dtype=np.float32)
    want = open_backend("onnx", MODELS / "pips.onnx").infer(blob)[0]
    with DetectorService(1, threads=1, batch=False) as svc:
        c = SharedDetectorClient(MODELS / "pips.onnx", svc.handle(0), "onnx")
        np.testing.assert_allclose(c.infer(blob)[0], want, atol=1e-4)
        deadline = time.monotonic() + 10
        while svc._pings < 2 and time.monotonic() < deadline:  # pings sent and answered
            assert svc.answering(hang_s=1.5, every_s=0.05)
            time.sleep(0.05)
        assert svc._pings >= 2
        old = svc.process
        os.kill(old.pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        while svc.answering(hang_s=1.5, every_s=0.05):
            assert time.monotonic() - stopped_at < 20, "the watchdog never saw the hang"
            time.sleep(0.05)
        assert time.monotonic() - stopped_at >= 1.5
        svc.restart()
        assert svc.restarts == 1 and svc.alive() and svc.process.pid != old.pid
        assert not old.is_alive()
        c2 = SharedDetectorClient(MODELS / "pips.onnx", svc.handle(0), "onnx")
        np.testing.assert_allclose(c2.infer(blob)[0], want, atol=1e-4)
        for _ in range(20):
            assert svc.answering(hang_s=1.5, every_s=0.05)
            time.sleep(0.05)
