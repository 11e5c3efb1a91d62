#!/usr/bin/env python
"""Throughput for many tables (issue 12): frames per second per table and tables per machine
at 10 fps each on 1080p video; onnxruntime vs OpenVINO per frame; Ray speed-up of
``paigow reaudit`` from one to two workers.

1. **Per table**: a 1080p round rendered by the project's renderer (held-out seed,
   :func:`vision.demo.demo_frames`: ``--deal`` frames of dealing in which the picture changes,
   then ``--still`` frames of the still table, so the motion gate counts), written as mp4v,
   run through the loop of ``paigow run`` (:func:`vision.session.run`, no outputs, real models)
   by K worker processes at once (K = ``--min-workers`` ... ``--max-workers``; each a table),
   per backend (``--backends``) and detector arrangement (``--detector``): ``shared``, one
   detector process for all tables fed through shared memory, as ``paigow serve --tables``
   runs them (:mod:`vision.recognition.service`; each worker 1 thread, the service all
   cores), or ``own``, each table its own models (the cores split between the tables).
   Reported: each table's fps and the sum; **tables per machine at 10 fps** = the best sum /
   10 (a table's camera delivering 10 frames/s with this mix of changing and still frames),
   and the most tables that all ran at >= 10 fps at once; and, because a loaded machine
   gives these wall-clock figures no meaning, the CPU time per table frame (user + system of
   the table processes and the detector process, all threads) and the tables the machine's
   cores carry at 10 fps by it (``cpus x 1000 / (cpu ms per frame x 10)``).
2. **Detector backends**: the tile model on the still 1080p frame, the same pre- and
   post-processing (:class:`vision.recognition.detect.TileDetector`), inference by onnxruntime
   (``models/tiles.onnx``) and by OpenVINO (skipped without the ``openvino`` package), twice:
   OpenVINO running the same ``tiles.onnx`` graph (the backends alone), and ``models/tiles.pt``
   exported with ultralytics' ``export(format="openvino")`` into a temporary folder (that graph
   has no NMS: the detector's own NMS runs on its output). Median ms per frame of ``detect``
   and whether both read the same tiles (same count and classes, every box matched at IoU >=
   0.9). Also the pip model on the frame's tile crops.
3. **Ray**: ``--recordings`` short 1080p round videos re-read by :func:`vision.reaudit.reaudit`
   with 1 and then 2 Ray workers (one local Ray, 2 CPUs, started before timing).
4. **The pit on Ray** (``--ray-pit TABLES``): TABLES tables of the same video as Ray actors
   (:class:`vision.pit.ray_pit.RayPit`, each 1 CPU, its own models on 1 thread) on a throwaway
   local cluster of 1, then 2 Ray nodes on this machine (its CPUs split between the nodes):
   fps per table (first frame to end) and their sum (:func:`bench_ray_pit`). Two nodes on one
   machine add no cores: the figure shows what placing actors on nodes costs, not a speed-up.

The machine's other load changes every figure: run it on a quiet machine for numbers to keep.

Usage::

    .venv/bin/python scripts/bench_tables.py [--deal 30] [--still 90] [--max-workers 2]
        [--min-workers 1] [--recordings 4] [--backends onnx,openvino]
        [--detector shared|own|both] [--no-batch] [--streams N] [--ray-pit TABLES]
        [--skip-ray] [--skip-openvino] [--json]

Exit code 0; 2 for bad arguments or missing models.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_CONFIG_DIR", str(ROOT / ".yolo_config"))


def _write_video(path: Path, frames) -> None:
    import cv2

    h, w = frames[0].image.shape[:2]
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 30.0, (w, h))
    for f in frames:
        vw.write(f.image)
    vw.release()


def _table_worker(video: str, models: str | None, backend: str, ready, start, out,
                  service=None, threads: int | None = None) -> None:
    from vision.config import OutputConfig, PipelineConfig, RunConfig
    from vision.pit.worker import _shared_config
    from vision.recognition.backends import THREADS_ENV, configure_threads
    from vision.session import Session

    if threads is not None:  # as the pit sets it: once for this process
        os.environ[THREADS_ENV] = str(threads)
        configure_threads(threads)
    cfg = RunConfig(video, PipelineConfig.build(models_dir=models, backend=backend,
                                                source=video), OutputConfig(progress=False))
    if service is not None:
        cfg = _shared_config(cfg, service)
    session = Session(cfg)  # models loaded before the clock starts
    ready.put(1)
    start.wait()
    t0, c0 = time.perf_counter(), time.process_time()
    s = session.run()
    out.put({"frames": s.get("frames"), "wall_s": time.perf_counter() - t0,
             "cpu_s": time.process_time() - c0,
             "rounds": len(s.get("events") or []), "detector_runs": s.get("detector_runs"),
             "region_runs": s.get("region_runs")})


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used so far."""
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def bench_tables(video: Path, models: str | None, max_workers: int, backend: str,
                 detector: str = "shared", min_workers: int = 1, batch: bool = True,
                 streams: int | None = None) -> dict:
    """K tables at once (K = min_workers..max_workers) on one video; ``detector``: ``shared``
    (one detector process for all, :class:`vision.recognition.service.DetectorService`, as
    ``paigow serve --tables`` runs them) or ``own`` (each table its models, the cores split)."""
    from vision.recognition.service import DetectorService

    ctx = mp.get_context("spawn")
    cpus = os.cpu_count() or 1
    rows = []
    svc = DetectorService(max_workers, threads=cpus, batch=batch, streams=streams).start() \
        if detector == "shared" else None
    try:
        for k in range(min_workers, max_workers + 1):
            ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
            threads = 1 if svc else max(1, cpus // k)
            procs = [ctx.Process(target=_table_worker,
                                 args=(str(video), models, backend, ready, start, out,
                                       svc.handle(i) if svc else None, threads))
                     for i in range(k)]
            for p in procs:
                p.start()
            for _ in procs:
                ready.get(timeout=600)
            svc_cpu0 = _cpu_s(svc.process.pid) if svc else 0.0
            start.set()
            res = [out.get(timeout=1800) for _ in procs]
            svc_cpu = (_cpu_s(svc.process.pid) - svc_cpu0) if svc else 0.0
            for p in procs:
                p.join()
            per = [r["frames"] / r["wall_s"] for r in res]
            frames = sum(r["frames"] for r in res)
            cpu_ms = 1000 * (sum(r["cpu_s"] for r in res) + svc_cpu) / max(frames, 1)
            rows.append({"workers": k, "fps_per_table": [round(x, 2) for x in per],
                         "fps_total": round(sum(per), 2), "rounds": [r["rounds"] for r in res],
                         "detector_runs": res[0]["detector_runs"],
                         "region_runs": res[0]["region_runs"],
                         "cpu_ms_per_frame": round(cpu_ms, 1),
                         "detector_cpu_share": round(svc_cpu * 1000 / max(frames, 1) / cpu_ms, 2)
                         if svc else None,
                         # what the machine's cores carry at 10 fps per table when nothing
                         # else runs: a figure a loaded machine can still measure
                         "tables_at_10fps_by_cpu": round(cpus * 1000 / (cpu_ms * 10), 2)})
    finally:
        if svc is not None:
            svc.stop()
    # tables at 10 fps: the most tables that each ran at >= 10 fps at once, else best sum / 10
    at10 = [r["workers"] for r in rows if min(r["fps_per_table"]) >= 10.0]
    best = max(r["fps_total"] for r in rows)
    return {"backend": backend, "detector": detector, "batch": batch,
            "streams": svc.streams if svc is not None else None, "runs": rows,
            "best_fps_total": best, "tables_all_at_10fps": max(at10) if at10 else 0,
            "tables_at_10fps": round(best / 10.0, 2),
            "tables_at_10fps_by_cpu": max(r["tables_at_10fps_by_cpu"] for r in rows)}


def _median_ms(fn, n: int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(1000 * (time.perf_counter() - t0))
    return round(statistics.median(ts), 1)


def _same(a, b) -> dict:
    from vision.geometry import iou_matrix

    same_count = len(a) == len(b)
    matched = 0
    if len(a) and len(b):
        iou = iou_matrix(a.xyxy, b.xyxy)
        for i in range(len(a)):
            j = int(iou[i].argmax())
            if iou[i, j] >= 0.9 and a.class_id[i] == b.class_id[j]:
                matched += 1
    return {"onnxruntime": len(a), "openvino": len(b),
            "same": bool(same_count and matched == len(a))}


def bench_backends(image, models: Path, n: int) -> dict:
    from vision.recognition.detect import PipDetector, TileDetector
    from vision.geometry import rectify

    out: dict = {}
    tiles = TileDetector(models / "tiles.onnx", backend="onnx")
    pips = PipDetector(models / "pips.onnx", backend="onnx")
    dets = tiles.detect(image)
    crops = [rectify(image, p)[0] for p in dets.polygon]
    out["tile_ms"] = {"onnxruntime": _median_ms(lambda: tiles.detect(image), n)}
    out["pip_ms_all_crops"] = {"onnxruntime": _median_ms(lambda: pips.detect_batch(crops), n)}
    out["tiles_found"] = len(dets)
    try:
        import openvino  # noqa: F401

        # OpenVINO running the very same ONNX graph (embedded NMS included): the backends alone
        same = TileDetector(models / "tiles.onnx", backend="openvino")
        out["tile_ms"]["openvino_same_onnx"] = _median_ms(lambda: same.detect(image), n)
        out["tiles_read_same_onnx"] = _same(dets, same.detect(image))
    except Exception as exc:  # noqa: BLE001 - reported, the rest goes on
        out["tile_ms"]["openvino_same_onnx"] = f"failed: {type(exc).__name__}: {exc}"
    try:
        import openvino  # noqa: F401
        from ultralytics import YOLO

        from vision.recognition.backends import OpenVINOBackend
    except ImportError as exc:
        out["openvino"] = f"skipped: {exc}"
        return out
    with tempfile.TemporaryDirectory() as tmp:
        for name, det, key in (("tiles", tiles, "tile_ms"), ("pips", pips, "pip_ms_all_crops")):
            pt = Path(tmp) / f"{name}.pt"
            shutil.copy(models / f"{name}.pt", pt)
            h, w = det.info.imgsz
            t0 = time.perf_counter()
            from ultralytics.utils import LOGGER

            level = LOGGER.level
            LOGGER.setLevel(logging.ERROR)  # the export's progress lines would mix into --json
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    folder = YOLO(str(pt)).export(format="openvino", imgsz=(h, w),
                                                  dynamic=True, verbose=False)
            finally:
                LOGGER.setLevel(level)
            out.setdefault("export_s", {})[name] = round(time.perf_counter() - t0, 1)
            xml = next(Path(folder).glob("*.xml"))
            ov_det = TileDetector(models / "tiles.onnx", backend="onnx") if name == "tiles" \
                else PipDetector(models / "pips.onnx", backend="onnx")
            ov_det.runtime = OpenVINOBackend(xml)  # OpenVINO reads its IR as it reads ONNX
            # ultralytics' OpenVINO export has no NMS in the graph (the ONNX files may): the
            # detector's own NMS runs on the raw output, counted in the per-frame time
            ov_det.info.nms = False
            if name == "tiles":
                out[key]["openvino_ultralytics_export"] = _median_ms(
                    lambda: ov_det.detect(image), n)
                out["tiles_read_ultralytics_export"] = _same(dets, ov_det.detect(image))
            else:
                out[key]["openvino_ultralytics_export"] = _median_ms(
                    lambda: ov_det.detect_batch(crops), n)
                a, b = pips.detect_batch(crops), ov_det.detect_batch(crops)
                agree = [_same(x, y)["same"] for x, y in zip(a, b)]
                out["pips_read"] = {"crops": len(crops), "same": sum(agree)}
    return out


def bench_ray(videos: list[Path], models: str | None) -> dict:
    import ray

    from vision.reaudit import reaudit

    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    init_s = time.perf_counter() - t0
    rows = {}
    try:
        for k in (1, 2):
            t0 = time.perf_counter()
            res = reaudit(videos, options={"models": models}, workers=k, progress=False)
            rows[k] = {"wall_s": round(time.perf_counter() - t0, 2),
                       "rounds": sum(len(r["events"]) for r in res),
                       "frames": sum(r["frames"] for r in res)}
    finally:
        ray.shutdown()
    return {"ray_init_s": round(init_s, 1), "recordings": len(videos), "workers_1": rows[1],
            "workers_2": rows[2], "speedup": round(rows[1]["wall_s"] / rows[2]["wall_s"], 2)}


def _cluster_pids(temp_dir: str) -> list[int]:
    """Processes whose command line names this cluster's temp folder (its raylets, GCS,
    workers): the only ones :func:`bench_ray_pit` stops (psutil, as :func:`_cpu_s`)."""
    import psutil

    return [p.pid for p in psutil.process_iter(["cmdline"])
            if p.pid != os.getpid() and temp_dir in " ".join(p.info["cmdline"] or ())]


def bench_ray_pit(video: Path, models: str | None, backend: str, tables: int,
                  nodes: int, timeout_s: float = 900.0) -> dict:
    """The pit on Ray (:class:`vision.pit.ray_pit.RayPit`): ``tables`` tables of ``video``
    (not paced, not looped) as actors on a throwaway local cluster of ``nodes`` Ray nodes on
    this machine (``ray start --head`` and ``ray start --address``, loopback, the machine's CPUs
    split between them, RAY_AUTH_MODE=disabled as tests/test_ray_pit.py), each actor 1 CPU and 1
    inference thread. Reported: frames per second of each table from its first frame to its
    end (the pit view's ``frames``, polled every 0.2 s), their sum, and the wall time; the
    cluster's own processes are stopped after."""
    import signal
    import subprocess

    import ray

    from vision.pit.ray_pit import RayPit
    from vision.pit.tables import TableSpec

    cpus = os.cpu_count() or 1
    per_node = max(1, cpus // nodes)
    ray_bin = Path(sys.executable).with_name("ray")
    temp_dir = tempfile.mkdtemp(prefix="bt", dir="/tmp")  # short: Ray's socket paths
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "PYTHONPATH": os.pathsep.join([str(ROOT)] + [
               p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "RAY_AUTH_MODE")}
    common = ["--num-cpus", str(per_node), "--node-ip-address", "127.0.0.1",
              "--disable-usage-stats"]
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    pit = None
    try:
        t0 = time.perf_counter()
        subprocess.run([str(ray_bin), "start", "--head", "--port", str(port),
                        "--include-dashboard", "false", "--temp-dir", temp_dir,
                        "--min-worker-port", "0", "--max-worker-port", "0", *common],
                       env=env, check=True, capture_output=True, timeout=300)
        for _ in range(nodes - 1):
            subprocess.run([str(ray_bin), "start", "--address", f"127.0.0.1:{port}", *common],
                           env=env, check=True, capture_output=True, timeout=300)
        os.environ["PYTHONPATH"], os.environ["RAY_AUTH_MODE"] = env["PYTHONPATH"], "disabled"
        ray.init(address=f"127.0.0.1:{port}", include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        while len([n for n in ray.nodes() if n["Alive"]]) < nodes:
            time.sleep(0.2)
        start_s = time.perf_counter() - t0
        specs = [TableSpec(f"t{i + 1}", str(video), {"models": models, "backend": backend},
                           loop=False, realtime=False) for i in range(tables)]
        t0 = time.perf_counter()
        pit = RayPit(specs, address=f"127.0.0.1:{port}", threads=1).start()
        first: dict[str, float] = {}
        last: dict[str, tuple[float, int]] = {}
        nodes_used = None
        while time.perf_counter() - t0 < timeout_s:
            now = time.perf_counter()
            rows = pit.state()["tables"]
            for t in rows:
                n = int(t.get("frames") or 0)
                if n and t["table_id"] not in first:
                    first[t["table_id"]] = now
                if n and last.get(t["table_id"], (0, -1))[1] != n:
                    last[t["table_id"]] = (now, n)
            if nodes_used is None and len(first) == tables:  # every actor placed and running
                nodes_used = len({ray.get(a.node.remote(), timeout=60)
                                  for a in pit.actors.values()})
            if rows and all(t["worker"]["state"] in ("ended", "stopped") for t in rows):
                break
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        fps = {tid: round(n / max(at - first[tid], 1e-6), 2) for tid, (at, n) in last.items()}
        return {"nodes": nodes, "cpus_per_node": per_node, "tables": tables,
                "cluster_start_s": round(start_s, 1), "wall_s": round(wall, 1),
                "frames": {tid: n for tid, (_, n) in last.items()},
                "fps_per_table": fps, "fps_total": round(sum(fps.values()), 2),
                "nodes_used": nodes_used}
    finally:
        if pit is not None:
            pit.stop()
        if ray.is_initialized():
            ray.shutdown()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = _cluster_pids(temp_dir)
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            if pids:
                time.sleep(2)
        shutil.rmtree(temp_dir, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deal", type=int, default=30, help="changing frames per round (30)")
    ap.add_argument("--still", type=int, default=90, help="still frames per round (90)")
    ap.add_argument("--seed", type=int, default=1_000_911, help="render seed (held out)")
    ap.add_argument("--max-workers", type=int, default=2, help="most tables at once (2)")
    ap.add_argument("--recordings", type=int, default=4, help="videos for the Ray part (4)")
    ap.add_argument("--repeat", type=int, default=10, help="detector timings per backend (10)")
    ap.add_argument("--models", default=None, help="models folder (default: models/)")
    ap.add_argument("--backends", default="onnx,openvino",
                    help="detector backends of the per-table part, comma-separated "
                         "(default onnx,openvino)")
    ap.add_argument("--detector", default="shared", choices=("shared", "own", "both"),
                    help="per-table part: one shared detector process (as serve --tables), "
                         "each table its own models, or both (default shared)")
    ap.add_argument("--min-workers", type=int, default=1, help="fewest tables at once (1)")
    ap.add_argument("--no-batch", action="store_true",
                    help="shared detector: one inference call per request (no batching)")
    ap.add_argument("--streams", type=int, default=None,
                    help="shared detector: inference calls at once, each on cpus / streams "
                         "threads (default: one per CPU, a thread each; 1: one call on "
                         "every CPU)")
    ap.add_argument("--ray-pit", type=int, default=0, metavar="TABLES",
                    help="also the pit on Ray: TABLES tables as Ray actors on a throwaway "
                         "local cluster of 1, then 2 Ray nodes (0: not run; default 0)")
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--skip-openvino", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.deal < 1 or args.still < 0 or args.max_workers < 1 or args.recordings < 1 or \
            not 1 <= args.min_workers <= args.max_workers:
        print("bench_tables: --deal, --max-workers, --recordings must be >= 1 and --still >= 0",
              file=sys.stderr)
        return 2
    if args.streams is not None and not 1 <= args.streams <= (os.cpu_count() or 1) or \
            args.ray_pit < 0:
        print(f"bench_tables: --streams must be 1..{os.cpu_count() or 1} (the CPUs) and "
              f"--ray-pit >= 0", file=sys.stderr)
        return 2
    models = Path(args.models) if args.models else ROOT / "models"
    if not (models / "tiles.onnx").is_file() or not (models / "pips.onnx").is_file():
        print(f"bench_tables: models not found in {models}", file=sys.stderr)
        return 2
    from vision.demo import demo_frames

    res: dict = {"cpus": os.cpu_count(), "load_avg_at_start": [round(x, 2) for x in
                                                              os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        frames, _ = demo_frames(args.seed, n_deal=args.deal, n_still=args.still)
        video = Path(tmp) / "table.mp4"
        _write_video(video, frames)
        res["video"] = {"size": list(frames[0].image.shape[1::-1]), "frames": len(frames),
                        "changing": args.deal, "still": args.still}
        res["tables"] = []
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            for det in (("shared", "own") if args.detector == "both" else (args.detector,)):
                res["tables"].append(bench_tables(video, str(models), args.max_workers,
                                                  backend, det, args.min_workers,
                                                  not args.no_batch, args.streams))
        if not args.skip_openvino:
            res["backends"] = bench_backends(frames[-1].image, models, args.repeat)
        if not args.skip_ray:
            vids = []
            for i in range(args.recordings):
                fr, _ = demo_frames(args.seed + 1 + i, n_deal=10, n_still=30)
                vids.append(Path(tmp) / f"rec{i + 1}.mp4")
                _write_video(vids[-1], fr)
            res["ray"] = bench_ray(vids, str(models))
        if args.ray_pit > 0:
            backend = [b.strip() for b in args.backends.split(",") if b.strip()][-1]
            res["ray_pit"] = [bench_ray_pit(video, str(models), backend, args.ray_pit, n)
                              for n in (1, 2)]
    res["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    v = res["video"]
    print(f"{res['cpus']} CPUs, load average {res['load_avg_at_start']} at start, "
          f"{res['load_avg_at_end']} at end")
    print(f"video {v['size'][0]}x{v['size'][1]}, {v['frames']} frames ({v['changing']} changing, "
          f"{v['still']} still)")
    for t in res["tables"]:
        streams = "" if t["streams"] is None else f", {t['streams']} stream(s)"
        print(f"backend {t['backend']}, detector {t['detector']}"
              f"{'' if t['detector'] == 'own' else ' (batched)' if t['batch'] else ''}"
              f"{streams}:")
        for r in t["runs"]:
            print(f"  {r['workers']} table(s) at once: fps per table {r['fps_per_table']}, "
                  f"total {r['fps_total']}")
        print(f"  tables per machine at 10 fps each: {t['tables_at_10fps']} (best total / 10); "
              f"tables that all ran at >= 10 fps at once: {t['tables_all_at_10fps']}; by CPU "
              f"time per frame: {t['tables_at_10fps_by_cpu']}")
    if "backends" in res:
        print(f"detector backends: {json.dumps(res['backends'])}")
    if "ray" in res:
        r = res["ray"]
        print(f"ray (init {r['ray_init_s']} s): {r['recordings']} recordings, 1 worker "
              f"{r['workers_1']['wall_s']} s, 2 workers {r['workers_2']['wall_s']} s, speed-up "
              f"{r['speedup']}x")
    for r in res.get("ray_pit", []):
        print(f"ray pit, {r['nodes']} node(s) x {r['cpus_per_node']} CPU(s), {r['tables']} "
              f"table(s): fps per table {r['fps_per_table']}, total {r['fps_total']} "
              f"(actors on {r['nodes_used']} node(s); cluster start {r['cluster_start_s']} s, "
              f"pit {r['wall_s']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
