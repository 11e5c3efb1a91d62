"""The recognition backend protocol (vision.recognition.backends, docs/architecture.md
"Inference backends"): a backend runs the graph only, the detector's letterbox / parsing / NMS /
mapping run on its output whatever the backend; a backend registered by name runs the production
pipeline strategies (still-image scales, second tile model); threads are set once per process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fakes import ScriptedBackend
from scoring.errors import InputError
from vision.recognition.detect import TileDetector
from vision.recognition import backends

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
HAVE_MODELS = all((MODELS / f"{n}.onnx").is_file() for n in ("tiles", "pips"))
TILE_META = {"names": "{0: 'tile', 1: 'tile_back'}", "task": "obb", "imgsz": "[640, 640]",
             "stride": "32"}


def _one_tile(blob):
    """An embedded-NMS OBB output with one tile: centre (320, 192) in letterbox px, 60 x 30,
    confidence 0.9, class tile, no rotation."""
    out = np.zeros((len(blob), 300, 7), np.float32)
    out[:, 0] = [320, 192, 60, 30, 0.9, 0, 0]
    return [out]


def test_detector_maps_the_backends_output_back_to_the_picture(tmp_path):
    fake = ScriptedBackend(tmp_path / "tiles.onnx", _one_tile, metadata=TILE_META)
    det = TileDetector(tmp_path / "tiles.onnx", backend=fake)
    image = np.zeros((1080, 1920, 3), np.uint8)
    image[:, :] = (255, 0, 0)  # blue in BGR
    d = det.detect(image)
    # 1920x1080 -> 640x360 (gain 1/3), padded to a multiple of 32 in height: 384, 12 px on top
    assert fake.blobs == [((1, 3, 384, 640), "float32", pytest.approx(0.0),
                           pytest.approx(1.0))]
    assert len(d) == 1 and int(d.class_id[0]) == 0
    assert d.confidence[0] == pytest.approx(0.9)
    corners = sorted(map(tuple, np.round(d.polygon[0]).astype(int).tolist()))
    # centre (960, 540) in the picture, 180 x 90 px
    assert corners == [(870, 495), (870, 585), (1050, 495), (1050, 585)]
    assert det.backend == "fake" and det.runtime is fake


def test_the_blob_is_rgb_zero_to_one_with_grey_padding(tmp_path):
    seen = []

    def respond(blob):
        seen.append(blob.copy())
        return [np.zeros((len(blob), 300, 7), np.float32)]

    det = TileDetector(tmp_path / "tiles.onnx",
                       backend=ScriptedBackend(tmp_path / "tiles.onnx", respond,
                                               metadata=TILE_META))
    image = np.zeros((1080, 1920, 3), np.uint8)
    image[:, :] = (255, 0, 0)  # BGR blue
    det.detect(image)
    blob = seen[0]
    assert blob[0, :, 200, 320].tolist() == [0.0, 0.0, 1.0]  # R, G, B
    assert blob[0, 0, 0, 0] == pytest.approx(114 / 255)   # letterbox padding


def test_unknown_backend_names_the_choices(tmp_path):
    with pytest.raises(InputError, match="onnx, openvino"):
        backends.open_backend("tensorrt", tmp_path / "tiles.onnx")
    with pytest.raises(InputError, match="taken"):
        backends.register_backend("ultralytics", ScriptedBackend)


def test_threads_are_set_once_per_process(monkeypatch):
    monkeypatch.setattr(backends, "_threads", None)
    monkeypatch.setenv(backends.THREADS_ENV, "1")
    assert backends.inference_threads() == 1
    assert backends.configure_threads(1) == 1  # the same value again is fine
    with pytest.raises(InputError, match="already set to 1"):
        backends.configure_threads(2)
    monkeypatch.setattr(backends, "_threads", None)
    monkeypatch.setenv(backends.THREADS_ENV, "two")
    with pytest.raises(InputError, match="PAIGOW_THREADS"):
        backends.inference_threads()
    monkeypatch.setattr(backends, "_threads", None)


@pytest.mark.skipif(not HAVE_MODELS, reason="models/tiles.onnx or pips.onnx absent")
def test_onnxruntime_uses_the_process_threads(monkeypatch):
    monkeypatch.setattr(backends, "_threads", None)
    monkeypatch.setenv(backends.THREADS_ENV, "1")
    b = backends.open_backend("onnx", MODELS / "pips.onnx")
    assert b.session.get_session_options().intra_op_num_threads == 1
    assert b.input_shape[1] == 3 and "names" in b.metadata
    monkeypatch.setattr(backends, "_threads", None)


@pytest.mark.skipif(not HAVE_MODELS, reason="models/tiles.onnx or pips.onnx absent")
@pytest.mark.parametrize("name", ["onnx", "openvino"])
def test_streams_answer_calls_at_once_with_the_outputs_of_one(name):
    """A backend with streams=2 (the detector service's) answers two callers at once, each
    call the outputs the one-stream backend gives for that blob, bit for bit; streams must be
    an integer >= 1."""
    import threading

    if name == "openvino":
        pytest.importorskip("openvino")
    rng = np.random.default_rng(5)
    blobs = [rng.random((n, 3, 192, 96), dtype=np.float32) for n in (1, 3, 2, 4, 1, 2)]
    one = backends.open_backend(name, MODELS / "pips.onnx")
    two = backends.open_backend(name, MODELS / "pips.onnx", streams=2)
    want = [one.infer(b)[0] for b in blobs]
    got: dict[int, np.ndarray] = {}

    def run(k: int) -> None:
        for j in range(k, len(blobs), 2):
            got[j] = two.infer(blobs[j])[0]

    ts = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    for j, w in enumerate(want):
        np.testing.assert_array_equal(got[j], w)
    for bad in (0, 1.5, True):
        with pytest.raises(InputError, match="streams"):
            backends.open_backend(name, MODELS / "pips.onnx", streams=bad)


_FIRST_CALLS = """
import sys, threading
import numpy as np
import openvino as ov
from vision.recognition import backends
b = backends.open_backend("openvino", sys.argv[1], streams=2)
x = np.random.default_rng(0).random((1, 3, 192, 96), dtype=np.float32)
gate = threading.Barrier(4)
def call(k):
    gate.wait()
    if k < 2:
        b.infer(x)  # the service's two stream threads
    else:
        ov.Tensor(x).data  # any other first look at a tensor's numpy view
ts = [threading.Thread(target=call, args=(k,)) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("answered")
"""


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MODELS, reason="models/tiles.onnx or pips.onnx absent")
def test_first_openvino_calls_on_four_threads_at_once_do_not_deadlock(tmp_path):
    """A fresh process whose first OpenVINO calls come on four threads at once (two infer
    calls on a two-stream backend, as the detector service's stream threads answer their
    first requests, and two more first looks at a tensor's data): every call returns.
    OpenVINO's binding sets up its numpy bridge on the process's first ``Tensor.data``, and
    threads doing that at once deadlocked (measured: 19 processes of 20 hung without
    ``backends._numpy_bridge_ready``, 0 of 20 with it). Four fresh processes."""
    import os
    import subprocess
    import sys

    pytest.importorskip("openvino")
    env = dict(os.environ, PYTHONPATH=str(ROOT), PAIGOW_MODEL_CACHE=str(tmp_path / "cache"))
    for k in range(4):
        try:
            out = subprocess.run([sys.executable, "-c", _FIRST_CALLS, str(MODELS / "pips.onnx")],
                                 env=env, capture_output=True, text=True, timeout=90)
        except subprocess.TimeoutExpired:
            pytest.fail(f"process {k + 1} of 4: its first calls never returned (deadlock)")
        assert out.returncode == 0 and "answered" in out.stdout, out.stderr[-2000:]


@pytest.mark.skipif(not HAVE_MODELS, reason="models/tiles.onnx or pips.onnx absent")
def test_openvino_reads_the_same_model_facts_as_onnxruntime():
    pytest.importorskip("openvino")
    a = backends.open_backend("onnx", MODELS / "tiles.onnx")
    b = backends.open_backend("openvino", MODELS / "tiles.onnx")
    assert a.input_shape == b.input_shape == (None, 3, None, None)
    for k in ("names", "task", "stride", "imgsz", "args"):
        assert a.metadata[k] == b.metadata[k], k
    blob = np.full((1, 3, 96, 64), 0.5, np.float32)
    oa, ob = a.infer(blob)[0], b.infer(blob)[0]
    assert oa.shape == ob.shape


@pytest.mark.skipif(not HAVE_MODELS, reason="models/tiles.onnx or pips.onnx absent")
def test_openvino_runs_the_models_in_32_bit_floats_as_onnxruntime_does(tmp_path, monkeypatch):
    """On a CPU with bfloat16 units OpenVINO's default precision is bfloat16 (this project's
    session-24 machine, AMD EPYC with AVX-512 BF16): outlines a px off and confidences 0.001
    to 0.01 off turned borderline reads. The backend asks for f32 everywhere; its outputs then
    match onnxruntime's to float rounding (1.5e-5 here; bfloat16: boxes in another order,
    313 apart row for row)."""
    pytest.importorskip("openvino")
    from vision.recognition.detect import _to_blob, letterbox
    from vision.synth.render import render_table

    monkeypatch.setenv("PAIGOW_MODEL_CACHE", str(tmp_path))
    b = backends.OpenVINOBackend(MODELS / "tiles.onnx", split_nms=False)
    assert str(b.compiled.get_property(backends.INFERENCE_PRECISION)) in ("<Type: 'float32'>",
                                                                          "f32", "float32")
    a = backends.OnnxRuntimeBackend(MODELS / "tiles.onnx", split_nms=False)
    img = render_table(1_000_311).image
    blob = _to_blob([letterbox(img, (640, 640), auto=True, stride=32)[0]])
    oa, ob = a.infer(blob)[0][0], b.infer(blob)[0][0]
    real = oa[:, 4] > 0.25
    assert real.sum() >= 10
    # the same boxes in the same order, to float rounding: xywh px, confidence, angle
    assert np.abs(oa[real] - ob[real]).max() < 0.02


@pytest.mark.skipif(not HAVE_MODELS or not (MODELS / "tiles_touch.onnx").is_file(),
                    reason="trained models absent")
def test_a_registered_backend_runs_the_production_strategies():
    """``backend="fake"`` through the models folder: the still image is read at every size of
    vision.recognition.scales.STILL_SCALES and by the second tile model at its size, a video frame at the
    model's own size -- the strategies an injected detector object would skip."""
    from vision.recognition.fill import SECOND_MODEL_SIZE
    from vision.pipeline import Pipeline
    from vision.recognition.scales import STILL_SCALES

    made: dict[str, ScriptedBackend] = {}

    def factory(path, **_):
        b = ScriptedBackend(path, metadata=TILE_META)
        if path.stem == "pips":
            b.metadata = {"names": "{0: 'pip_red', 1: 'pip_white'}", "task": "detect",
                          "imgsz": "[192, 96]", "stride": "32"}
        made[path.stem] = b
        return b

    backends.register_backend("fake", factory)
    try:
        pipe = Pipeline(models_dir=MODELS, backend="fake", n_stable=1, draw=False)
        image = np.full((1080, 1920, 3), 60, np.uint8)
        pipe.engine.read(image, "still")
        assert sorted(made) == ["pips", "tiles", "tiles_touch"]
        assert [s[0][3] for s in made["tiles"].blobs] == list(STILL_SCALES)
        assert [s[0][3] for s in made["tiles_touch"].blobs] == [SECOND_MODEL_SIZE]
        pipe.process(image)
        assert made["tiles"].blobs[-1][0] == (1, 3, 384, 640)
        assert pipe.model_version.startswith("tiles-")
    finally:
        backends.unregister_backend("fake")
    assert "fake" not in backends.backend_names()


@pytest.mark.skipif(not HAVE_MODELS or not (MODELS / "tiles_touch.onnx").is_file(),
                    reason="trained models absent")
def test_a_still_table_is_read_once_not_per_frame():
    """Video of a still picture: one pass at the model's size, the fused still reading once
    after VET_AFTER_STILL frames, then no graph runs and no decode while nothing moves."""
    from vision.pipeline import Pipeline
    from vision.recognition.engine import VET_AFTER_STILL

    made: dict[str, ScriptedBackend] = {}
    pip_meta = {"names": "{0: 'pip_red', 1: 'pip_white'}", "task": "detect",
                "imgsz": "[192, 96]", "stride": "32"}

    def factory(path, **_):
        if path.stem == "pips":  # raw layout, no spot above the threshold
            b = ScriptedBackend(path, lambda blob: [np.zeros((len(blob), 6, 378), np.float32)],
                                metadata=pip_meta)
        else:
            b = ScriptedBackend(path, _one_tile, metadata=TILE_META)
        made[path.stem] = b
        return b

    backends.register_backend("fake", factory)
    try:
        pipe = Pipeline(models_dir=MODELS, backend="fake", n_stable=3, draw=False)
        image = np.full((1080, 1920, 3), 60, np.uint8)
        counts = []
        for _ in range(VET_AFTER_STILL + 5):
            _, res = pipe.process(image)
            counts.append((len(made["tiles"].blobs), len(made["pips"].blobs)))
    finally:
        backends.unregister_backend("fake")
    # frame 1: one pass; the frame that completes VET_AFTER_STILL still frames: the fused
    # reading (3 sizes); after it nothing runs again
    assert counts[0][0] == 1
    assert counts[VET_AFTER_STILL][0] == 1 + 3
    assert counts[-1] == counts[VET_AFTER_STILL]
    assert pipe.engine.still_reuses == len(counts) - 1 - VET_AFTER_STILL
    assert res.decoded == 0  # the standing reading, no decode


def test_openvino_is_the_default_where_installed(monkeypatch):
    monkeypatch.setattr(backends, "_openvino_installed", lambda: True)
    assert backends.default_backend() == "openvino"
    monkeypatch.setattr(backends, "_openvino_installed", lambda: False)
    assert backends.default_backend() == "onnx"


def test_live_sessions_default_to_bfloat16_where_openvino_is_installed(monkeypatch):
    monkeypatch.setattr(backends, "_openvino_installed", lambda: True)
    assert backends.live_backend() == "openvino-bf16"
    assert "openvino-bf16" in backends.backend_names()
    monkeypatch.setattr(backends, "_openvino_installed", lambda: False)
    assert backends.live_backend() == "onnx"


@pytest.mark.skipif(not HAVE_MODELS, reason="models/tiles.onnx or pips.onnx absent")
def test_bfloat16_finds_the_tiles_float32_finds(tmp_path, monkeypatch):
    """``openvino-bf16`` (the live default) asks OpenVINO for bfloat16 (run as f32 on a CPU
    without bfloat16 units) and boxes the tiles of a rendered table as the f32 backend does:
    every tile of one is a tile of the other (polygon IoU >= 0.9), confidences within 0.05."""
    pytest.importorskip("openvino")
    from vision.geometry import polygon_iou_matrix
    from vision.synth.render import render_table

    monkeypatch.setenv("PAIGOW_MODEL_CACHE", str(tmp_path))
    bf = backends.open_backend("openvino-bf16", MODELS / "tiles.onnx")
    ran = str(bf.compiled.get_property(backends.INFERENCE_PRECISION))
    assert ran in ("<Type: 'bfloat16'>", "<Type: 'float32'>"), ran
    assert bf.precision == ("bf16" if "bfloat16" in ran else "f32")
    img = render_table(1_000_311).image
    a = TileDetector(MODELS / "tiles.onnx", backend="openvino").detect(img, 1216)
    b = TileDetector(MODELS / "tiles.onnx", backend="openvino-bf16").detect(img, 1216)
    assert len(a) >= 10 and len(a) == len(b)
    iou = polygon_iou_matrix(a.polygon.astype(np.float32), b.polygon.astype(np.float32))
    assert (iou.max(1) >= 0.9).all() and (iou.max(0) >= 0.9).all()
    match = iou.argmax(1)
    assert np.abs(a.confidence - b.confidence[match]).max() < 0.05
    assert (a.class_id == b.class_id[match]).all()


@pytest.mark.skipif(not HAVE_MODELS, reason="models/tiles.onnx or pips.onnx absent")
def test_the_model_version_records_the_arithmetic_the_cpu_ran(tmp_path, monkeypatch):
    """A round read in bfloat16 says so in its model version (``...@bf16``): the same models
    in other arithmetic can read a borderline tile otherwise. Where the CPU has no bfloat16
    units OpenVINO runs the bf16 backend in f32, and the version says nothing (this session's
    machine, an AMD EPYC without AVX-512: the version said ``@bf16`` for f32 readings)."""
    pytest.importorskip("openvino")
    from vision.config import RecognitionConfig
    from vision.recognition.engine import RecognitionEngine

    monkeypatch.setenv("PAIGOW_MODEL_CACHE", str(tmp_path))
    f32 = RecognitionEngine(RecognitionConfig(backend="openvino", second_model=False))
    bf = RecognitionEngine(RecognitionConfig(backend="openvino-bf16", second_model=False))
    assert f32.model_version.startswith("tiles-") and "@" not in f32.model_version
    ran = str(bf.tile_detector.runtime.compiled.get_property(backends.INFERENCE_PRECISION))
    assert ran in ("<Type: 'bfloat16'>", "<Type: 'float32'>"), ran
    assert bf.model_version == f32.model_version + ("@bf16" if "bfloat16" in ran else "")
    assert backends.backend_precision("openvino-bf16") == "bf16"
    assert backends.backend_precision("onnx") == "f32"


class _Compiled:
    """A compiled model's stand-in: ``get_property`` answers ``value`` (or raises it)."""

    def __init__(self, value):
        self.value = value

    def get_property(self, name):
        assert name == backends.INFERENCE_PRECISION
        if isinstance(value := self.value, Exception):
            raise value
        return value


@pytest.mark.parametrize("said, asked, recorded", [
    ("<Type: 'bfloat16'>", "bf16", "bf16"),  # a CPU with bfloat16 units
    ("<Type: 'float32'>", "bf16", "f32"),    # one without: OpenVINO ran f32
    ("<Type: 'float16'>", "f32", "f16"),
    ("f32", "bf16", "f32"),                  # the hint's text form
    ("<Type: 'u8'>", "bf16", "bf16"),        # a type the version has no name for: as asked
    (RuntimeError("no such property"), "bf16", "bf16"),
])
def test_compiled_precision_is_what_openvino_chose(said, asked, recorded):
    assert backends.compiled_precision(_Compiled(said), asked) == recorded


@pytest.mark.skipif(not HAVE_MODELS, reason="models/tiles.onnx or pips.onnx absent")
def test_the_shared_detector_reports_the_arithmetic_its_service_chose(tmp_path, monkeypatch):
    """A pit's tables read through the detector service: the client's precision (which the
    engine records in the model version) is the one the service's compiled model ran in."""
    pytest.importorskip("openvino")
    from vision.recognition.service import DetectorService, SharedDetectorClient

    monkeypatch.setenv("PAIGOW_MODEL_CACHE", str(tmp_path))
    local = backends.open_backend("openvino-bf16", MODELS / "pips.onnx")
    with DetectorService(1, threads=1, batch=False) as svc:
        client = SharedDetectorClient(MODELS / "pips.onnx", svc.handle(0), "openvino-bf16")
        assert client.precision == local.precision
        assert client.precision in ("bf16", "f32")
