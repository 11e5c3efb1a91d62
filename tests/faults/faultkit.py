"""Shared pieces of the fault tests (tests/faults/, marker ``faults``): a short multi-round
video rendered by ``vision.synth.render`` (the one of tests/test_run_audit.py: four deals, an empty
table between them), picklable ground-truth detectors for it (tests/fakes.py), and a child
process running the real ``paigow`` CLI with only the model loader replaced by those
detectors, so a fault (a signal, a second writer) hits the product's own code path whatever
the trained models' quality."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from helpers.videos import N_STABLE, SEEDS, render_small_video  # noqa: E402,F401


def make_video(d: Path, delay: float = 0.0) -> dict:
    """Render the four-deal video into folder ``d`` and pickle lossy ground-truth detectors
    for it (``delay`` seconds per detector call). Returns ``{"path", "fake", "scenes"}``."""
    v = render_small_video(d, delay=delay)
    return {"path": v["path"], "fake": v["fake"], "scenes": v["scenes"]}


CLI_CHILD = textwrap.dedent("""
    import pickle, sys
    sys.path.insert(0, {tests!r})
    import fakes  # noqa: F401  (the pickled GroundTruthDetectors)
    import vision.recognition.engine
    with open({fake!r}, "rb") as f:
        fake = pickle.load(f)
    vision.recognition.engine.load_detectors = lambda *a, **k: (fake, fake)
    from vision.cli import main
    sys.exit(main({argv!r}))
""")


def cli_child(fake: Path, argv: list[str], **popen) -> subprocess.Popen:
    """Start ``paigow ARGV`` (vision.cli.main) in a child process with the fake detectors."""
    code = CLI_CHILD.format(tests=str(TESTS), fake=str(fake), argv=list(map(str, argv)))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", code], cwd=str(ROOT), env=env, **popen)
