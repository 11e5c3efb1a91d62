"""Held-out rendered tables with distractors, for the seat-safety checks (issue 8 item 3).

:func:`table_with_distractors` renders :func:`vision.synth.render.render_table` (which already lays
casino chips beside the positions) and adds, in free table space, one or two playing cards and
a woodpile (a row of face-down tile stacks): the things a real table shows besides the hands.
:func:`seat_violations` compares what a round settled with the truth of the scene. Imported by
tests (tests/ is on sys.path, see conftest.py) and by scripts that measure the same figures.
"""

from __future__ import annotations

import math

import numpy as np

from vision.synth import render as synth
from vision.synth import draw as D
from vision.synth import scenery as S


def _free_point(rng, image_size, centres, clearance, tries=200):
    """A random point (x, y) px at least ``clearance`` px from every centre (None if none)."""
    w, h = image_size
    for _ in range(tries):
        p = np.array([rng.uniform(0.06, 0.94) * w, rng.uniform(0.06, 0.94) * h])
        if len(centres) == 0 or np.min(np.linalg.norm(centres - p, axis=1)) > clearance:
            return p
    return None


def table_with_distractors(seed: int, n_cards: int | None = None, woodpile: bool = True):
    """A full rendered table (:func:`vision.synth.render.render_table`) plus cards and a woodpile.

    Args:
        seed: scene seed (>= 1_000_000 for held-out checks); the distractors use the same seed.
        n_cards: playing cards to add (None: 1 or 2).
        woodpile: add a row of 2-6 face-down tile stacks (2-4 levels).

    Returns:
        the :class:`vision.synth.render.TableScene` with its image changed in place (the truth tiles
        are unchanged: distractors are only placed at least 1.3 tile lengths from every tile
        centre, so no tile is covered).
    """
    scene = synth.render_table(seed)
    rng = np.random.default_rng(seed + 7_777)
    img = scene.image
    h, w = img.shape[:2]
    mask = np.zeros((h, w), np.uint8)
    centres = np.array([t.polygon.astype(np.float64).mean(0) for t in scene.tiles])
    longs = [max(np.linalg.norm(t.polygon[1] - t.polygon[0]), np.linalg.norm(t.polygon[2] - t.polygon[1]))
             for t in scene.tiles]
    L = float(np.median(longs))
    st = D.random_style(rng, scene.style or None)
    short = L / st.aspect
    taken = list(centres)
    for _ in range(int(rng.integers(1, 3)) if n_cards is None else n_cards):
        size = short * rng.uniform(2.0, 3.5)
        p = _free_point(rng, (w, h), np.array(taken), 1.3 * L + size * 0.6)
        if p is None:
            continue
        S.draw_card(img, mask, p, size, rng.uniform(0, math.pi), rng)
        taken.append(p)
    if woodpile:
        n_st = int(rng.integers(2, 7))
        levels = int(rng.integers(2, 5))
        ang = rng.normal(0, 0.15) + (math.pi / 2 if rng.random() < 0.3 else 0)
        span = n_st * short * 1.05
        p = _free_point(rng, (w, h), np.array(taken), 1.3 * L + span / 2)
        if p is not None:
            sw = int(np.clip(round(short * 1.4), 12, 220))
            s = short / sw
            ca, sa = math.cos(ang), math.sin(ang)
            light = np.array([0.6, -0.8])
            thick = short * 0.3
            for k in range(n_st):
                off = (k - (n_st - 1) / 2) * short * 1.05
                cx, cy = p[0] + off * ca, p[1] + off * sa
                spr, alpha = D.render_back_sprite(st, sw, rng, light)
                sh = alpha.shape[0]
                for lev in range(levels):
                    A = np.array([[ca * s, -sa * s, 0], [sa * s, ca * s, 0]], np.float64)
                    c = np.array([cx, cy - thick * lev])
                    A[:, 2] = c - A[:, :2] @ np.array([sw / 2, sh / 2])
                    shade = np.float32(0.75 if lev < levels - 1 else 1.0)
                    synth._blend(img, spr * shade, alpha, A)
    return scene


def true_position_sets(scene) -> dict[str, set[int]]:
    """Truth: position -> indices (into ``scene.tiles``) of its tiles."""
    out: dict[str, set[int]] = {}
    for i, t in enumerate(scene.tiles):
        if t.position is not None:
            out.setdefault(t.position, set()).add(i)
    return out


def match_reads(scene, reads) -> list[int | None]:
    """For each read, the index of the true tile whose polygon holds the read's centre (None:
    no true tile there -- a chip, a card or a woodpile stack taken for a tile)."""
    from vision.geometry import points_in_polygon

    out: list[int | None] = []
    for r in reads:
        hit = None
        for i, t in enumerate(scene.tiles):
            if t.position is not None and points_in_polygon([r.centre], t.polygon)[0]:
                hit = i
                break
        out.append(hit)
    return out


def seat_violations(scene, reads, final: dict[str, list], not_seen: set[str] = frozenset()
                    ) -> list[str]:
    """Settled positions whose tiles are not exactly the four tiles of the true position of the
    same name.

    Args:
        scene: the rendered :class:`vision.synth.render.TableScene`.
        reads: every :class:`vision.recognition.decode.TileRead` of the frame.
        final: position -> its four reads, for every position the round settled.
        not_seen: positions settled as three identified tiles and a fourth of any face
            (``PositionState.missing``, vision.table.open_tile): for them ``final`` holds the
            three identified reads, which must be three different tiles of that true position.

    Returns:
        one line per violation (empty when every settled position is right).
    """
    truth = true_position_sets(scene)
    idx = {id(r): m for r, m in zip(reads, match_reads(scene, reads))}
    bad = []
    for pos, tiles in final.items():
        got = [idx.get(id(r)) for r in tiles]
        if pos in not_seen:
            if (None in got or len(got) != 3 or len(set(got)) != 3
                    or not set(got) <= truth.get(pos, set())):
                owners = sorted({scene.tiles[g].position for g in got if g is not None})
                bad.append(f"position {pos} settled with a tile not seen and tiles of "
                           f"{owners or 'no true tile'}{' and non-tiles' if None in got else ''}")
            continue
        halves = [r for r in tiles if _block_read(r)]
        if len(halves) == 2:
            # two unknown tiles of a flush block either cut could read (vision.recognition.refine):
            # the outlines may be the cut across; together they must cover two true tiles of
            # this position and nothing else
            under = set().union(*(_tiles_under(scene, r) for r in halves))
            got = [g for r, g in zip(tiles, got) if not _block_read(r)] + sorted(under)
            if len(under) != 2:
                got.append(None)
        # one such read alone (a flush guard's unknown tile that keeps its face, e.g.
        # vision.recognition.flush.notched_boxes) is an unknown tile like any other: its outline
        # must be a true tile of this position
        if None in got or set(got) != truth.get(pos, set()) or len(set(got)) != len(got):
            owners = sorted({scene.tiles[g].position for g in got if g is not None})
            bad.append(f"position {pos} settled with tiles of {owners or 'no true tile'}"
                       f"{' and non-tiles' if None in got else ''}")
    return bad


def _block_read(r) -> bool:
    """An unknown read that keeps the face its cut of a flush block read (``evidence.disputed``)."""
    return r.state == "unknown" and r.evidence.disputed is not None


def _tiles_under(scene, r, least: float = 0.2) -> set[int]:
    """Indices of the true tiles covering at least ``least`` of the read's outline."""
    import numpy as np

    from vision.geometry import polygon_intersections

    idx = [i for i, t in enumerate(scene.tiles) if t.position is not None]
    polys = np.stack([np.asarray(scene.tiles[i].polygon, np.float32) for i in idx])
    inter, area, _ = polygon_intersections(np.asarray(r.polygon, np.float32)[None], polys)
    return {idx[k] for k in np.flatnonzero(inter[0] >= least * max(area[0], 1e-6))}
