"""The one configuration model (vision.config): pydantic checks every field's type, each part
its own values, and every failure is one InputError line naming the value; the command line,
the pit and reaudit all build a run's configuration through build_run_config."""

from dataclasses import replace

import pytest

from scoring.errors import InputError
from vision.config import (GateConfig, PipelineConfig, RecognitionConfig, SessionOptions,
                           TableConfig, build_run_config)


def test_a_wrong_type_is_one_line_naming_the_setting():
    with pytest.raises(InputError, match=r"^zoom must be true or false, got 'yes'$"):
        RecognitionConfig(zoom="yes")
    with pytest.raises(InputError, match=r"^turn must be true or false, got 1$"):
        RecognitionConfig(turn=1)
    assert RecognitionConfig().turn is True
    assert PipelineConfig.build(turn=False).recognition.turn is False
    with pytest.raises(InputError, match=r"^symmetry must be true or false, got 'on'$"):
        RecognitionConfig(symmetry="on")
    assert RecognitionConfig().symmetry is True
    assert PipelineConfig.build(symmetry=False).recognition.symmetry is False
    with pytest.raises(InputError, match=r"^redetect_every must be an integer, got 2\.5$"):
        GateConfig(redetect_every=2.5)
    with pytest.raises(InputError, match=r"^min_confidence must be a number, got 'high'$"):
        RecognitionConfig(min_confidence="high")


def test_own_checks_keep_their_words_and_replace_validates_again():
    cfg = TableConfig(banker="3")
    assert cfg.banker == "3"
    with pytest.raises(InputError, match="banker 'x' is not 'dealer' or a seat id"):
        replace(cfg, banker="x")
    # a list from YAML becomes the tuple the gate compares
    assert GateConfig(thumb_size=[96, 54], blocks=[16, 9]).thumb_size == (96, 54)
    with pytest.raises(InputError, match="gate blocks"):
        GateConfig(thumb_size=(100, 50), blocks=(3, 7))


def test_session_options_refuse_what_is_not_an_option():
    with pytest.raises(InputError, match="stable must be an integer"):
        SessionOptions(source="a.mp4", stable="three")
    with pytest.raises(InputError, match="no_such"):
        SessionOptions(source="a.mp4", no_such=1)


def test_build_run_config_merges_option_file_layout_in_that_order(tmp_path):
    layout = tmp_path / "layout.yaml"
    layout.write_text(
        "table_id: felt-9\nbanker: dealer\npositions:\n"
        "  dealer: [[0, 0], [100, 0], [100, 100], [0, 100]]\n"
        "  '1': [[200, 0], [300, 0], [300, 100], [200, 100]]\n")
    conf = tmp_path / "conf.yaml"
    conf.write_text("table:\n  n_stable: 4\n  table_id: from-file\ngate:\n  redetect_every: 7\n")
    cfg = build_run_config(SessionOptions(source="a.mp4", layout=str(layout), config=str(conf),
                                          stable=2))
    assert isinstance(cfg.pipeline, PipelineConfig)
    assert cfg.pipeline.table.n_stable == 2          # the option beats the file
    assert cfg.pipeline.table.table_id == "from-file"  # the file beats the layout
    assert cfg.pipeline.gate.redetect_every == 7
    assert cfg.output.progress is True and cfg.capture.wait_at_start is False
    conf.write_text("gate:\n  redetect_every: seven\n")
    with pytest.raises(InputError, match="redetect_every must be an integer, got 'seven'"):
        build_run_config(SessionOptions(source="a.mp4", config=str(conf)))


def test_a_live_sessions_default_backend_yields_to_the_option_and_the_file(tmp_path):
    """``default_backend`` (serve and the pit: bfloat16) applies only where neither the option
    nor the config file names a backend."""
    def backend(**kw):
        return build_run_config(SessionOptions(source="a.mp4", **kw)).pipeline.recognition.backend

    assert backend(default_backend="onnx") == "onnx"
    assert backend(default_backend="onnx", backend="openvino") == "openvino"
    conf = tmp_path / "conf.yaml"
    conf.write_text("recognition:\n  backend: openvino\n")
    assert backend(default_backend="onnx", config=str(conf)) == "openvino"
    assert backend() != "openvino-bf16"  # offline: the built-in default (f32)
