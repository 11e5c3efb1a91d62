"""One configuration path for the commands that read still pictures without a session
(issue 44): ``paigow identify``, ``setcheck`` and ``label-server`` build their
:class:`vision.config.RecognitionConfig` with :func:`vision.config.recognition_config` -- an
option given, then the config file's ``recognition`` section, then the defaults, as
:func:`vision.config.build_run_config` does for a session."""

from __future__ import annotations

import json

import cv2
import pytest

from scoring.errors import InputError
from vision.config import RecognitionConfig, recognition_config


def _config(tmp_path, text: str):
    f = tmp_path / "paigow.yaml"
    f.write_text(text)
    return f


def test_the_file_applies_and_an_option_given_wins(tmp_path):
    f = _config(tmp_path, "recognition:\n  min_confidence: 0.9\n  scales: [640]\n"
                          "  turn: false\n")
    rec = recognition_config(f)
    assert (rec.min_confidence, rec.scales, rec.turn, rec.zoom) == (0.9, (640,), False, True)
    rec = recognition_config(f, min_confidence=0.6, scales=(832, 960))
    assert (rec.min_confidence, rec.scales, rec.turn) == (0.6, (832, 960), False)
    assert recognition_config() == RecognitionConfig()


def test_bad_values_are_named(tmp_path):
    with pytest.raises(InputError, match=r"^--min-confidence must be in \[0, 1\], got 1.5$"):
        recognition_config(min_confidence=1.5)
    with pytest.raises(InputError, match="config file not found"):
        recognition_config(tmp_path / "nope.yaml")
    f = _config(tmp_path, "recognition:\n  min_confidence: 2\n")
    with pytest.raises(InputError, match="min confidence must be in"):
        recognition_config(f)
    f = _config(tmp_path, "recognition:\n  zoom_out: true\n")
    with pytest.raises(InputError, match="zoom_out"):
        recognition_config(f)


def test_identify_reads_with_the_config_file(tmp_path, capsys):
    """``paigow identify --config``: a file asking for faces at confidence 1.0 leaves every
    tile of a rendered table unknown; ``--min-confidence 0.5`` given beside it wins."""
    from vision.cli import main
    from vision.synth.render import render_table

    img = tmp_path / "table.png"
    cv2.imwrite(str(img), render_table(1_000_321, size=(960, 540)).image)
    f = _config(tmp_path, "recognition:\n  min_confidence: 1.0\n  scales: [640]\n")

    def faces(*extra):
        assert main(["identify", str(img), "--json", "--config", str(f), *extra]) == 0
        tiles = json.loads(capsys.readouterr().out)[0]["tiles"]
        return sum(t["state"] == "face_up" for t in tiles), len(tiles)

    read, found = faces()
    assert found >= 16 and read == 0
    read, found = faces("--min-confidence", "0.5")
    assert read >= 8


def test_a_bad_option_is_one_line_exit_2(tmp_path, capsys):
    from vision.cli import main

    assert main(["identify", str(tmp_path / "x.png"), "--min-confidence", "7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--min-confidence must be in [0, 1], got 7.0" in err[0]
    assert main(["setcheck", str(tmp_path / "x.png"), "--config",
                 str(tmp_path / "none.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err


def _rules_run(monkeypatch):
    """A function ``(rec, live) -> (names of the still rules applied, reads)`` reading a rendered
    table with ground-truth detectors (``live``: the engine reads beside a live feed's loop)."""
    import numpy as np
    from fakes import GroundTruthDetectors

    import vision.recognition.still as still
    from vision.recognition.engine import Detectors, RecognitionEngine
    from vision.synth.render import render_table

    ran = []
    apply = still.Rule.apply
    monkeypatch.setattr(still.Rule, "apply",
                        lambda self, ctx, reads: ran.append(self.name) or apply(self, ctx, reads))
    sc = render_table(1_000_201, size=(960, 540))
    det = GroundTruthDetectors([sc])
    image = np.ascontiguousarray(sc.image)

    def rules_run(rec=None, live=False):
        ran.clear()
        e = RecognitionEngine(rec, detectors=Detectors(det, det))
        if live:
            e.set_background(True)
        try:
            reads, _ = e._read_still(image)
        finally:
            e.close()
        return list(ran), reads

    return rules_run


def test_rules_named_off_in_the_config_do_not_run(tmp_path, monkeypatch):
    """``recognition.rules_off`` names still-reading rules left out: the engine's still
    reading runs the rest, in their order; an unknown name is refused, named."""
    rules_run = _rules_run(monkeypatch)
    f = _config(tmp_path, "recognition:\n  rules_off: [refit, dealt_blocks]\n")
    rec = recognition_config(f)
    assert rec.rules_off == ("refit", "dealt_blocks")
    everything, _ = rules_run()
    assert {"refit", "dealt_blocks"} <= set(everything)
    ran, reads = rules_run(rec)
    assert ran == [n for n in everything if n not in ("refit", "dealt_blocks")]
    assert sum(r.state == "face_up" for r in reads) >= 16
    with pytest.raises(InputError, match=r"rules_off: unknown rule 'turn' \(rules: scales, "):
        RecognitionConfig(rules_off=("turn",))


def test_a_live_feed_reads_without_the_live_profiles_rules(monkeypatch):
    """``live_rules_off`` (default: ``turned``) leaves rules out of the still reading a live
    feed makes beside its loop only; an offline reading runs them; ``[]`` runs every rule
    live too."""
    rules_run = _rules_run(monkeypatch)
    assert RecognitionConfig().live_rules_off == ("turned",)
    offline, _ = rules_run(RecognitionConfig(), live=False)
    assert "turned" in offline
    assert rules_run(RecognitionConfig(), live=True)[0] == [n for n in offline if n != "turned"]
    assert rules_run(RecognitionConfig(live_rules_off=()), live=True)[0] == offline
    with pytest.raises(InputError, match=r"^live_rules_off: unknown rule 'turn' "):
        RecognitionConfig(live_rules_off=("turn",))
