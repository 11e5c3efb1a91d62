"""Benchmark and full figures of the scoring engine (no assertions on time; figures printed).

Usage: .venv/bin/python scripts/bench_scoring.py [--rules pa] [--way reference] [--json out.json]

Measures: vectorised hand comparisons per second; the house way of all 35,960 four-tile sets
(cold: a fresh house-way object, memo filled on the way); exact house-vs-house and
optimal-vs-house analyses over all 736,281,000 deals, non-banking and banking.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time

import numpy as np

from scoring.analysis import analyze, class_sets, house_way_keys, _HW_CACHE
from scoring.hands import beats
from scoring.setting import PAMinimalHouseWay, ReferenceHouseWay
from scoring.tiles import STANDARD_SET


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="pa")
    ap.add_argument("--way", default="reference")
    ap.add_argument("--json", default=None, help="write the figures as JSON here")
    a = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}  cpus: {os.cpu_count()}")
    out: dict = {}

    rng = np.random.default_rng(0)
    n = 20_000_000
    pk = rng.integers(0, 417, n, dtype=np.int16)
    bk = rng.integers(0, 417, n, dtype=np.int16)
    beats(pk[:1000], bk[:1000])
    t = time.perf_counter()
    reps = 5
    for _ in range(reps):
        beats(pk, bk)
    dt = time.perf_counter() - t
    rate = n * reps / dt
    print(f"hand comparisons (numpy int16 keys): {rate / 1e6:,.0f} million/s")
    out["comparisons_per_s"] = rate

    # House way of all 35,960 physical four-tile sets, cold (fresh object, empty memo).
    fresh = ReferenceHouseWay() if a.way == "reference" else PAMinimalHouseWay()
    t = time.perf_counter()
    sets = list(itertools.combinations(STANDARD_SET, 4))
    for ts in sets:
        fresh.set(ts, a.rules)
    dt = time.perf_counter() - t
    print(f"house way of all {len(sets):,} four-tile sets (cold): {dt:.3f} s "
          f"({len(fresh._memo)} class sets memoised)")
    out["house_way_all_sets_s"] = dt
    t = time.perf_counter()
    _HW_CACHE.clear()
    class_sets()
    house_way_keys(a.way, a.rules)
    print(f"house-way key arrays for the 3,620 class sets: {time.perf_counter() - t:.3f} s")

    for strategy in ("house", "optimal"):
        for banking in (False, True):
            r = analyze(strategy, banking=banking, rules=a.rules, way=a.way)
            d = r.to_dict()
            label = f"{strategy} vs house way, {'banking' if banking else 'non-banking'}"
            print(f"\n{label}: {r.seconds:.2f} s (load {os.getloadavg()[0]:.2f})")
            print(f"  wins {r.wins:,}  losses {r.losses:,}  pushes {r.pushes:,}  "
                  f"total {r.total:,}")
            for k in ("p_win", "p_loss", "p_push", "edge"):
                print(f"  {k:6s} = {d[k]:>28s} = {100 * d[k + '_float']:.4f}%")
            out[f"{strategy}_{'banking' if banking else 'player'}"] = d
            comps = 2 * 3620 * 3620 * (1 if strategy == "house" else 3)
            print(f"  ({comps / r.seconds / 1e6:,.0f} million class-level hand comparisons/s)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
