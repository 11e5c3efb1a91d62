#!/usr/bin/env python
"""Soak: does `paigow serve`'s memory level off over a night shift? (issue 42, item 8)

Renders a multi-round table video with the live benchmark's rounds
(:func:`bench_live.build_table`: held-out seeds, three tile styles, hands on the table ``--deal``
s, cleared ``--clear`` s), then runs ``paigow serve VIDEO --loop`` on it in real time for
``--minutes`` and samples the resident memory (RSS) of serve and its children every
``--every`` s, the rounds reported (``events.jsonl``) and the frames processed
(``/api/stats``). Prints RSS at 1, 5, 15, 30 and 60 minutes (those within the run) and the
growth over the second half of the run in MB per hour -- a process whose memory levels off
grows by about nothing there. A benchmark, not a test: it takes the time it is given.

Usage::

    .venv/bin/python scripts/soak_serve.py [--minutes 60] [--every 30] [--size 1920x1080]
        [--rounds 3] [--deal 7] [--clear 2] [--json]

Exit code 0; 1 when serve died during the soak; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))


def write_video(path: Path, size: tuple[int, int], rounds: int, deal_s: float, clear_s: float,
                fps: float, seed: int) -> int:
    """Render the rounds into an MP4 (mp4v) at ``fps``; returns the frame count."""
    import cv2

    import bench_live

    timeline, _ = bench_live.build_table("soak", 0, [seed + r for r in range(rounds)], size,
                                         fps, deal_s, clear_s, 0.0)
    pictures = [cv2.imdecode(np.frombuffer(j, np.uint8), cv2.IMREAD_COLOR)
                for j in timeline.jpegs]
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
    if not vw.isOpened():
        raise SystemExit("soak_serve: OpenCV cannot write mp4v here")
    for i in timeline.schedule:
        vw.write(pictures[int(i)])
    vw.release()
    return len(timeline.schedule)


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, MB (psutil)."""
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p] + p.children(recursive=True)
    except psutil.NoSuchProcess:
        return float("nan")
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2 ** 20


def growth_mb_per_h(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of RSS (MB) over time (s) in the second half of the run, MB/h."""
    if len(samples) < 4:
        return None
    t_end = samples[-1][0]
    half = [(t, m) for t, m in samples if t >= t_end / 2]
    if len(half) < 2:
        return None
    t, m = np.array(half).T
    return float(np.polyfit(t, m, 1)[0] * 3600.0)


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60.0, help="soak length (60)")
    ap.add_argument("--every", type=float, default=30.0, help="seconds between samples (30)")
    ap.add_argument("--size", default="1920x1080", help="video size WxH (1920x1080)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds in the looped video (3)")
    ap.add_argument("--deal", type=float, default=7.0, help="hands on the table, s (7)")
    ap.add_argument("--clear", type=float, default=2.0, help="table cleared, s (2)")
    ap.add_argument("--fps", type=float, default=15.0, help="video frame rate (15)")
    ap.add_argument("--seed", type=int, default=3_000_101, help="first round's seed")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    try:
        w, h = (int(v) for v in args.size.lower().split("x"))
        if args.minutes <= 0 or args.every <= 0 or args.rounds < 1 or w < 64 or h < 64:
            raise ValueError
    except ValueError:
        print(f"soak_serve: error: bad arguments (size {args.size!r}, minutes {args.minutes}, "
              f"every {args.every}, rounds {args.rounds})", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="soak_"))
    video = work / "rounds.mp4"
    n = write_video(video, (w, h), args.rounds, args.deal, args.clear, args.fps, args.seed)
    import bench_live

    port = bench_live._free_port()
    out = work / "out"
    env = dict(os.environ, YOLO_OFFLINE="1", YOLO_AUTOINSTALL="false",
               YOLO_CONFIG_DIR=str(ROOT / ".yolo_config"))
    cmd = bench_live._paigow_cmd() + ["serve", str(video), "--loop", "--no-video",
                                      "--port", str(port), "--out", str(out)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(
        work / "serve.log", "wb"), start_new_session=True)
    t0 = time.monotonic()
    samples: list[tuple[float, float]] = []
    rows = []
    died = False
    try:
        while (el := time.monotonic() - t0) < args.minutes * 60:
            if proc.poll() is not None:
                died = True
                break
            rss = tree_rss_mb(proc.pid)
            _, stats = bench_live._get_json(f"http://127.0.0.1:{port}/api/stats")
            rounds = _count_lines(out / "events.jsonl")
            samples.append((el, rss))
            rows.append({"s": round(el, 1), "rss_mb": round(rss, 1), "rounds": rounds,
                         "stats": stats if isinstance(stats, dict) else None})
            if not args.json:
                print(f"{el / 60:6.1f} min  RSS {rss:8.1f} MB  rounds {rounds}", flush=True)
            time.sleep(max(0.0, args.every - (time.monotonic() - t0 - el)))
    finally:
        bench_live.stop_product(proc)

    def at(minute: float):
        best = min(samples, key=lambda s: abs(s[0] - minute * 60), default=None)
        return None if best is None or abs(best[0] - minute * 60) > args.every else \
            round(best[1], 1)

    res = {"video": {"frames": n, "fps": args.fps, "size": [w, h], "rounds": args.rounds},
           "minutes": args.minutes, "rss_mb_at_min": {m: at(m) for m in (1, 5, 15, 30, 60)
                                                      if m <= args.minutes},
           "growth_mb_per_h_second_half": growth_mb_per_h(samples),
           "rounds_reported": rows[-1]["rounds"] if rows else 0, "died": died,
           "samples": rows, "log": str(work / "serve.log")}
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print("RSS at minute:", res["rss_mb_at_min"])
        g = res["growth_mb_per_h_second_half"]
        print("growth over the second half:", "n/a" if g is None else f"{g:.1f} MB/h")
        print("rounds reported:", res["rounds_reported"], "| serve died" if died else "")
    return 1 if died else 0


if __name__ == "__main__":
    sys.exit(main())
