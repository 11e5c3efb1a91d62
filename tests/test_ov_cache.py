"""The verified cache of OpenVINO's compiled models (vision/recognition/ov_cache.py): the same
outputs bit for bit from a cached start, a damaged or tampered cache file never run, a cache
folder that cannot be written costing nothing but time, and the switch."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

from vision.recognition import ov_cache  # noqa: E402
from vision.recognition.ov_cache import CACHE_ENV, cache_dir, compile_cached  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PIPS = ROOT / "models" / "pips.onnx"
CONFIG = {"PERFORMANCE_HINT": "LATENCY"}
X = np.random.default_rng(0).random((4, 3, 192, 96), dtype=np.float32)


@pytest.fixture(scope="module")
def core():
    return ov.Core()


@pytest.fixture(autouse=True)
def _fresh_warnings():
    ov_cache._warned.clear()
    yield
    ov_cache._warned.clear()


def _out(compiled) -> np.ndarray:
    return np.array(compiled.create_infer_request().infer({0: X})[0], copy=True)


@pytest.fixture(scope="module")
def plain(core):
    """The pip model's outputs compiled without any cache."""
    return _out(core.compile_model(core.read_model(str(PIPS)), "CPU", dict(CONFIG)))


def _compile(core, folder):
    return compile_cached(core, core.read_model(str(PIPS)), PIPS, CONFIG, 2, folder)


def test_second_start_imports_the_same_graph(core, plain, tmp_path, monkeypatch):
    assert np.array_equal(_out(_compile(core, tmp_path)), plain)
    files = list(tmp_path.glob("*.ovc"))
    assert len(files) == 1 and files[0].stat().st_size > 1_000_000
    # the second start imports: compile_model is not called again
    calls = []
    real = core.compile_model
    monkeypatch.setattr(type(core), "compile_model",
                        lambda self, *a, **k: calls.append(1) or real(*a, **k))
    assert np.array_equal(_out(_compile(core, tmp_path)), plain)
    assert calls == []


def test_a_damaged_cache_file_is_never_run(core, plain, tmp_path):
    _compile(core, tmp_path)
    (file,) = tmp_path.glob("*.ovc")
    size = file.stat().st_size
    with open(file, "r+b") as f:  # a few KiB in the middle of the blob overwritten
        f.seek(size // 2)
        f.write(os.urandom(4096))
    with pytest.warns(RuntimeWarning, match="damaged"):
        compiled = _compile(core, tmp_path)
    assert np.array_equal(_out(compiled), plain)  # compiled again, not the damaged blob
    # and the file was rewritten whole: the next start imports it
    assert np.array_equal(_out(_compile(core, tmp_path)), plain)
    # a truncated file (a start killed mid-copy, a full disk) is refused the same way
    (file,) = tmp_path.glob("*.ovc")
    file.write_bytes(file.read_bytes()[:1000])
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert np.array_equal(_out(_compile(core, tmp_path)), plain)


def test_another_model_file_or_configuration_is_another_key(core, tmp_path):
    _compile(core, tmp_path)
    compile_cached(core, core.read_model(str(PIPS)), PIPS, CONFIG, 1, tmp_path)
    compile_cached(core, core.read_model(str(PIPS)), PIPS,
                   {"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": 2}, 2, tmp_path)
    assert len(list(tmp_path.glob("*.ovc"))) == 3


class _Core:
    """An ``openvino.Core`` stand-in for the key: a CPU's name and capabilities."""

    def __init__(self, caps):
        self.caps = caps

    def get_property(self, device, name):
        assert device == "CPU"
        return "AMD EPYC" if name == "FULL_DEVICE_NAME" else self.caps


def test_a_cpu_with_other_units_is_another_key():
    """Two kinds of this project's machines both call themselves "AMD EPYC"; one has bfloat16
    units, the other not (session 42): a blob compiled on one is not the other's."""
    from vision.recognition.ov_cache import _key

    key = lambda caps: _key(_Core(caps), PIPS, CONFIG, 1)  # noqa: E731
    assert key(["FP32", "INT8"]) == key(["INT8", "FP32"])
    assert key(["FP32", "INT8"]) != key(["BF16", "FP32", "INT8"])


def test_a_folder_that_cannot_be_written_costs_only_time(core, plain, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.warns(RuntimeWarning, match="cannot write"):
        compiled = _compile(core, blocker / "cache")
    assert np.array_equal(_out(compiled), plain)


def test_the_switch_and_the_default_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, "off")
    assert cache_dir() is None
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "paigow" / "openvino"
