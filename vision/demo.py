"""``paigow demo``: a rendered table round (held-out seed) through the whole frame loop.

:func:`demo_frames` renders the dealing (positions appear one after another while a
hand-shaped occluder covers the newest) and the still table; :func:`demo` runs them through
:func:`vision.session.run` like any source and prints the settlement table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from scoring.settle import POSITIONS

from vision.recognition.models import load_detectors
from vision.session import run
from vision.table.rounds import Layout
from vision.io.views import settlement_table

__all__ = ["demo", "demo_frames", "demo_deal", "DEMO_SEED"]

DEMO_SEED = 1_000_777


def demo_deal(seed: int = DEMO_SEED) -> dict[str, list[str]]:
    """The demo's deal: 32 tiles shuffled by ``seed``; the dealer's four set by the house way
    (high hand first), the seats' four as dealt."""
    from scoring.setting import house_way_setting
    from scoring.tiles import STANDARD_SET

    rng = np.random.default_rng(seed)
    faces = [STANDARD_SET[i].face for i in rng.permutation(len(STANDARD_SET))]
    deal = {p: faces[4 * k: 4 * k + 4] for k, p in enumerate(POSITIONS)}
    s = house_way_setting(deal["dealer"])
    deal["dealer"] = [t.face for t in (*s.high, *s.low)]
    return deal


def demo_frames(seed: int = DEMO_SEED, n_deal: int = 12, n_still: int = 24,
                size=(1920, 1080)):
    """Frames of a short rendered round: the dealing (positions appear one after another while
    a hand-shaped occluder covers the newest), then the still table.

    Returns:
        ``(frames, scene)``: list of :class:`vision.io.capture.Frame` (``n_deal + n_still``,
        30 fps timestamps) and the final :class:`vision.synth.render.TableScene`.
    """
    import cv2

    from vision.io.capture import Frame
    from vision.geometry import expand_polygon
    from vision.synth.render import render_table

    scene = render_table(seed, size=size, deal=demo_deal(seed))
    full = scene.image
    rng = np.random.default_rng(seed)
    order = list(POSITIONS)
    masks = {p: np.zeros(full.shape[:2], np.uint8) for p in order}
    for t in scene.tiles:
        if t.position in masks:
            cv2.fillConvexPoly(masks[t.position],
                               np.round(expand_polygon(t.polygon, 0.25)).astype(np.int32), 255)
    everything = np.zeros(full.shape[:2], np.uint8)
    for m in masks.values():
        everything |= m
    empty = cv2.inpaint(full, everything, 5, cv2.INPAINT_TELEA)  # the table before the deal
    frames = []
    idx = 0
    shown_mask = np.zeros(full.shape[:2], bool)
    n_shown = 0
    for k in range(n_deal):
        want = int(round((k + 1) / n_deal * len(order)))
        while n_shown < want:
            shown_mask |= masks[order[n_shown]] > 0
            n_shown += 1
        img = np.where(shown_mask[..., None], full, empty)
        pts = np.concatenate([t.polygon for t in scene.tiles if t.position == order[n_shown - 1]])
        c = pts.mean(0) + rng.normal(0, 10, 2)
        cv2.ellipse(img, (int(c[0]), int(c[1])), (90, 55), float(rng.uniform(0, 180)), 0, 360,
                    (60, 80, 110), -1)
        frames.append(Frame(img, idx / 30.0, idx, f"demo:{seed}", None))
        idx += 1
    for _ in range(n_still):
        frames.append(Frame(full, idx / 30.0, idx, f"demo:{seed}", None))
        idx += 1
    return frames, scene


def demo(out_dir: str | Path = "demo_out", models_dir: str | Path | None = None,
         backend: str | None = None, json_events: bool = False, seed: int = DEMO_SEED,
         tile_detector=None, pip_detector=None, stdout=None, n_stable: int = 8,
         prepared: tuple | None = None) -> dict:
    """Render a short table round (held-out seed), run the full pipeline, write
    ``annotated.mp4`` and ``events.jsonl`` to ``out_dir`` and print the settlement table
    (or the events as JSON lines with ``json_events``).

    ``prepared``: ``(frames, scene)`` from :func:`demo_frames` (skips rendering; tests).

    Returns:
        the :func:`run` summary plus ``"truth"``: the rendered deal.

    Raises:
        InputError: missing models (naming the file).
    """
    stdout = stdout or sys.stdout
    if tile_detector is None or pip_detector is None:
        load_detectors(models_dir, backend)  # fail fast, before rendering
    frames, scene = prepared if prepared is not None else demo_frames(seed)
    layout = Layout.from_dict(scene.layout, where="demo layout")
    summary = run(f"demo:{seed}", layout=layout, out_dir=out_dir, json_events=json_events,
                  models_dir=models_dir, backend=backend, n_stable=n_stable, frames=frames,
                  tile_detector=tile_detector, pip_detector=pip_detector, stdout=stdout,
                  progress=False)
    if not json_events:
        for ev in summary["events"]:
            print(settlement_table(ev), file=stdout)
        if not summary["events"]:
            print("no round settled (tiles not read well enough)", file=stdout)
        ms = summary["ms_per_frame"]
        print(f"{summary['frames']} frames, {summary['rounds']} round(s); ms/frame "
              + ", ".join(f"{k} {v}" for k, v in ms.items())
              + f"; {summary['fps_pipeline']} fps; output {summary['output']}", file=stdout)
    summary["truth"] = scene.deal
    return summary
