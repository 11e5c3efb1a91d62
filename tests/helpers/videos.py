"""A short multi-round table video rendered by vision.synth.render (held-out seeds >= 1_000_000,
each deal held still long enough to settle, an empty table between deals), written losslessly
(FFV1 .avi; MJPG when this OpenCV cannot write FFV1). Shared by the run/audit, pit, reaudit and
fault tests; the module-scoped ``small_video`` fixture is in tests/conftest.py."""

from __future__ import annotations

import pickle
from pathlib import Path

import cv2
import pytest

from fakes import empty_table

SEEDS = (1_000_301, 1_000_302, 1_000_303, 1_000_304)
N_STABLE = 3        # --stable
N_EMPTY = 4         # empty-table frames before each deal (>= N_STABLE: opens a new round)
N_STILL = 12        # frames each deal is held still (decode budget 8/frame + N_STABLE + wait)
SMALL = (640, 360)  # fake detectors: resolution does not matter
LARGE = (1280, 720)  # real models: tiles big enough for the pip model


# --------------------------------------------------------------------------- the video


def write_video(path_stem: Path, scenes, empties,
                codecs=(("FFV1", True), ("MJPG", False))) -> tuple[Path, bool]:
    """Write empty x N_EMPTY, deal x N_STILL per scene, then a final empty table, with the
    first of ``codecs`` (fourcc, lossless) this OpenCV build writes.
    Returns ``(path, lossless)``."""
    h, w = scenes[0].image.shape[:2]
    for fourcc, lossless in codecs:
        path = path_stem.with_suffix(".avi")
        wr = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 30.0, (w, h))
        if wr.isOpened():
            break
        wr.release()
    else:
        pytest.skip("this OpenCV build writes neither FFV1 nor MJPG")
    for sc, em in zip(scenes, empties):
        for _ in range(N_EMPTY):
            wr.write(em)
        for _ in range(N_STILL):
            wr.write(sc.image)
    for _ in range(N_EMPTY):
        wr.write(empties[-1])
    wr.release()
    return path, lossless


def render_small_video(d: Path, *, delay: float = 0.1) -> dict:
    """Render the four-deal video at ``SMALL`` into folder ``d`` and pickle lossy ground-truth
    detectors for it (``delay`` s per detector call). Returns ``{"path", "fake", "scenes",
    "lossless"}``."""
    import vision.synth.render as synth
    from fakes import GroundTruthDetectors

    scenes = [synth.render_table(s, size=SMALL) for s in SEEDS]
    empties = [empty_table(sc) for sc in scenes]
    path, lossless = write_video(d / "rounds", scenes, empties)
    fake_path = d / "fake.pkl"
    with open(fake_path, "wb") as f:
        pickle.dump(GroundTruthDetectors(scenes, empties, delay=delay, lossy=True), f)
    return {"path": path, "fake": fake_path, "scenes": scenes, "lossless": lossless}
