"""Train the tile (OBB), pip (detect) and crop classifier (classify) models from a config YAML
and export them to ONNX.

One entry point, :func:`train`, wraps ``ultralytics.YOLO(model_yaml).train(...)`` (from scratch:
no pretrained weights can be downloaded), copies ``best.pt`` to ``models/<name>.pt``, exports
``models/<name>.onnx`` (fixed input shape, NMS inside the graph) and writes
``models/<name>.json`` with everything a consumer or a later session needs: class names,
input size, task, the ONNX output layout, the training config, seed, epochs, time, hardware
and synthetic-validation metrics.

Config YAML (see ``datasets/train_tiles.yaml``)::

    name: tiles                  # output file stem: models/tiles.pt, .onnx, .json
    task: obb                    # obb | detect | classify
    model: yolo11n-obb.yaml      # ultralytics model yaml (built-in name or a path), or a .pt to fine-tune
    data: tiles.yaml             # dataset yaml (classify: the folder with train/ and val/);
                                 # relative paths are relative to this config file
    imgsz: 640                   # square training / export input size, pixels
    epochs: 60                   # upper bound when ``hours`` is set
    hours: null                  # optional wall-clock budget; ultralytics then fits epochs to it
    batch: 16
    seed: 0
    workers: 2
    threads: 2                   # torch intra-op threads
    patience: 30
    cache: ram                   # false | ram | disk
    train: {...}                 # any further ultralytics train args (augmentation etc.)
    export: {nms: true, conf: 0.05, iou: 0.5, opset: 17, simplify: true, max_det: 300}

Progress goes to ``runs/train/<name>.log`` (ultralytics' own log lines plus ours) and per epoch
to ``runs/train/<name>/results.csv``.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from scoring.errors import InputError

__all__ = ["train", "finalize", "reexport", "onnx_parity", "export_onnx", "load_config", "onnx_layout", "RUNS_DIR"]

RUNS_DIR = Path("runs") / "train"

_REQUIRED = ("name", "task", "model", "data", "imgsz")
_TASKS = ("obb", "detect", "classify")
_DEFAULT_EXPORT = {"nms": True, "conf": 0.05, "iou": 0.5, "opset": 17, "simplify": True,
                   "max_det": 300}

log = logging.getLogger("paigow.train")


def _offline_env() -> None:
    """Set the project's no-download environment before ultralytics is imported."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    os.environ.setdefault("YOLO_AUTOINSTALL", "false")
    repo = Path(__file__).resolve().parents[2]
    os.environ.setdefault("YOLO_CONFIG_DIR", str(repo / ".yolo_config"))


def load_config(config_path: str | Path, need_data: bool = True) -> dict:
    """Read and check a training config YAML.

    Args:
        config_path: path of the YAML file (see the module docstring for the keys).
        need_data: False where only the export settings are read (``scripts/soup_weights.py``):
            the data YAML need not have been rendered then.

    Returns:
        dict: the config with ``data`` (and ``model`` when it names an existing file) resolved
        to absolute paths (relative ones are taken from the config file's folder), defaults filled
        in and ``config_path`` added.

    Raises:
        InputError: the file is missing or unreadable, a required key is absent, ``task`` is not
            obb/detect/classify, or (``need_data``) the data YAML (classify: the data folder)
            does not exist.
    """
    from vision.io.yamlsafe import load_yaml

    path = Path(config_path)
    if not path.is_file():
        raise InputError(f"training config not found: {str(config_path)!r}")
    cfg = load_yaml(path, "training config")  # size, aliases, depth capped
    if not isinstance(cfg, dict):
        raise InputError(f"training config {str(config_path)!r} is not a mapping")
    missing = [k for k in _REQUIRED if k not in cfg]
    if missing:
        raise InputError(f"training config {str(config_path)!r} lacks keys {missing}")
    if cfg["task"] not in _TASKS:
        raise InputError(f"training config {str(config_path)!r}: task {cfg['task']!r} "
                         f"is not one of {_TASKS}")
    base = path.resolve().parent
    data = Path(cfg["data"])
    data = data if data.is_absolute() else base / data
    if need_data and cfg["task"] == "classify" and not (data / "train").is_dir():
        raise InputError(f"training config {str(config_path)!r}: data folder {str(data)!r} "
                         "has no train/ (render the crops first: python -m vision.synth.crops)")
    if need_data and cfg["task"] != "classify" and not data.is_file():
        raise InputError(f"training config {str(config_path)!r}: data YAML {str(data)!r} "
                         "not found (render the datasets first: paigow render)")
    cfg["data"] = str(data)
    model = Path(cfg["model"])
    if not model.is_absolute() and (base / model).is_file():
        cfg["model"] = str(base / model)
    cfg.setdefault("epochs", 50)
    cfg.setdefault("hours", None)
    cfg.setdefault("batch", 16)
    cfg.setdefault("seed", 0)
    cfg.setdefault("workers", 2)
    cfg.setdefault("threads", 2)
    cfg.setdefault("patience", 50)
    cfg.setdefault("cache", False)
    cfg["train"] = dict(cfg.get("train") or {})
    cfg["export"] = {**_DEFAULT_EXPORT, **(cfg.get("export") or {})}
    cfg["config_path"] = str(path)
    return cfg


def onnx_layout(task: str, nms: bool, n_classes: int, imgsz, max_det: int = 300,
                agnostic_nms: bool = False, dynamic: bool = False) -> dict:
    """Describe the exported ONNX model's input and output tensors.

    Args:
        task: "obb", "detect" or "classify".
        nms: whether NMS is inside the graph (ultralytics ``export(nms=True)``).
        n_classes: number of classes of the model.
        imgsz: input size, pixels: an int (square) or ``[height, width]``.
        max_det: rows of the NMS output.
        agnostic_nms: NMS across classes (recorded in the note).
        dynamic: dynamic batch / height / width axes (see :func:`export_onnx`).

    Returns:
        dict with ``input`` and ``output`` descriptions (names, shapes, column meanings).
        Coordinates are pixels of the letterboxed input.
    """
    ih, iw = (int(imgsz), int(imgsz)) if isinstance(imgsz, (int, float)) else map(int, imgsz)
    inp = {"name": "images", "shape": [1, 3, ih, iw], "dtype": "float32",
           "format": "RGB, values 0..1, letterboxed (aspect kept, padded with 114/255, centred)"}
    if dynamic:
        inp["shape"] = ["batch", 3, "height", "width"]
        inp["format"] += (f"; dynamic axes: fed {ih} x {iw} (h x w) or, for other aspect "
                          "ratios, the longer side scaled to the longer of those and the "
                          "other padded to the next multiple of 32 (640 square: a 16:9 frame "
                          "-> 384 x 640)" if ih == iw else
                          f"; dynamic axes: fed {ih} x {iw} (h x w), any batch")
    if task == "classify":
        inp["format"] = "RGB, values 0..1, the crop resized to the input (no letterbox)"
        out = {"name": "output0", "shape": [inp["shape"][0], n_classes],
               "columns": [f"p_{i}" for i in range(n_classes)],
               "note": "class probabilities (softmax inside the graph)"}
    elif nms:
        if task == "obb":
            cols = ["cx", "cy", "w", "h", "confidence", "class_id", "angle_rad"]
        else:
            cols = ["x1", "y1", "x2", "y2", "confidence", "class_id"]
        out = {"name": "output0", "shape": [1, max_det, len(cols)], "columns": cols,
               "note": "rows after " + ("class-agnostic" if agnostic_nms else "class-wise")
                       + " NMS sorted by confidence; unused rows are all zero "
                       "(confidence 0); confidence already >= export conf"}
    else:
        n_anchor = sum((ih // s) * (iw // s) for s in (8, 16, 32))
        if task == "obb":
            rows = ["cx", "cy", "w", "h"] + [f"score_{i}" for i in range(n_classes)] + ["angle_rad"]
        else:
            rows = ["cx", "cy", "w", "h"] + [f"score_{i}" for i in range(n_classes)]
        out = {"name": "output0", "shape": [1, len(rows), n_anchor], "rows": rows,
               "note": "raw predictions, one column per anchor; NMS left to the consumer"}
    return {"input": inp, "output": out}


def _hardware(device: str) -> str:
    import torch

    if device not in ("cpu", "") and torch.cuda.is_available():
        return f"GPU {torch.cuda.get_device_name(0)}, torch {torch.__version__}"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"CPU {cpu}, {torch.get_num_threads()} torch threads, torch {torch.__version__}"


def _attach_log(log_path: Path) -> logging.Handler:
    """Send our and ultralytics' log lines to ``log_path`` as well."""
    from ultralytics.utils import LOGGER

    log_path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    LOGGER.addHandler(handler)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return handler


def _metrics(results: dict | None) -> dict:
    """Pick precision / recall / mAP50 / mAP50-95 (classify: top-1 / top-5 accuracy) from an
    ultralytics results dict."""
    out = {}
    for key, value in (results or {}).items():
        if key in ("metrics/accuracy_top1", "metrics/accuracy_top5"):
            out[key.split("/")[1]] = round(float(value), 4)
        for name in ("precision", "recall", "mAP50-95", "mAP50"):
            if key.startswith(f"metrics/{name}("):
                out[name] = round(float(value), 4)
                break
    return out


def export_onnx(weights: str | Path, imgsz, out_path: str | Path, *, nms: bool = True,
                conf: float = 0.05, iou: float = 0.5, opset: int = 17, simplify: bool = True,
                max_det: int = 300, agnostic_nms: bool = False, dynamic: bool = False) -> Path:
    """Export trained weights to an ONNX file (batch 1 and a fixed input shape, or with
    ``dynamic`` any batch and input height/width).

    Args:
        weights: path of a ``.pt`` file from training.
        imgsz: input size, pixels: an int (square) or ``[height, width]`` -- e.g. the pip
            model at ``[192, 96]``, the crop's own shape, which halves its CPU time against the
            192 x 192 square (measured by scripts/bench_vision.py).
        out_path: where the ``.onnx`` file goes.
        nms: put NMS in the graph (output layout: :func:`onnx_layout`).
        conf: confidence below which the in-graph NMS drops boxes (fraction).
        iou: NMS IoU threshold (fraction).
        opset: ONNX opset.
        simplify: run onnxslim on the graph.
        max_det: rows of the NMS output.
        agnostic_nms: in-graph NMS across classes (a tile is face up OR face down: one box per
            tile) instead of per class.
        dynamic: dynamic batch/height/width axes. The tile model is exported so: a 16:9 frame
            is letterboxed to the minimum 32-multiple rectangle (640 x 384) instead of the
            640 x 640 square, 0.68x the square's time (measured with onnxruntime, 2 threads),
            same scale, so the same detections as ultralytics' own rect inference.

    Returns:
        Path of the written ONNX file.
    """
    _offline_env()
    from ultralytics import YOLO

    model = YOLO(str(weights))
    imgsz = int(imgsz) if isinstance(imgsz, (int, float)) else [int(v) for v in imgsz]
    produced = model.export(format="onnx", imgsz=imgsz, nms=nms, conf=conf, iou=iou,
                            opset=opset, simplify=simplify, dynamic=bool(dynamic), max_det=max_det,
                            device="cpu", half=False, batch=1, agnostic_nms=bool(agnostic_nms))
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if Path(produced).resolve() != out_path.resolve():
        shutil.move(str(produced), out_path)
    return out_path


def _resolved_data_yaml(data_yaml: Path, runs: Path, name: str) -> Path:
    """Copy the data YAML with its ``path:`` made absolute (ultralytics would otherwise look in
    its global datasets folder). A relative ``path`` is taken from the YAML's own folder when
    that exists there, else from the working directory."""
    import yaml

    from vision.io.yamlsafe import load_yaml

    data = load_yaml(data_yaml, "data YAML") or {}
    root = Path(data.get("path") or ".")
    if not root.is_absolute():
        here = Path(data_yaml).resolve().parent / root
        root = here if here.exists() else root.resolve()
    if not root.exists():
        raise InputError(f"data YAML {str(data_yaml)!r}: dataset folder {str(root)!r} not found")
    data["path"] = str(root)
    data.pop("download", None)
    out = runs / f"{name}_data.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def _find_resume_checkpoint(name: str, out_dir: Path, runs: Path) -> Path | None:
    """The checkpoint ``--resume`` continues: this machine's run folder first, then
    ``out_dir/checkpoints/<name>_last.pt``, then the one committed in the project's
    ``models/checkpoints`` (a fresh clone continuing a campaign into another ``--out``)."""
    committed = Path(__file__).resolve().parents[2] / "models" / "checkpoints"
    for cand in (runs / name / "weights" / "last.pt",
                 out_dir / "checkpoints" / f"{name}_last.pt",
                 committed / f"{name}_last.pt"):
        if cand.is_file():
            return cand
    return None


def train(config_path: str | Path, *, epochs: int | None = None, device: str = "cpu",
          out_dir: Path = Path("models"), resume: bool = False, hours: float | None = None,
          runs_dir: Path | None = None) -> dict:
    """Train one model from its config, then copy the weights and export ONNX into ``out_dir``.

    Args:
        config_path: training config YAML (module docstring).
        epochs: overrides the config's ``epochs``.
        device: "cpu" or a CUDA index such as "0".
        out_dir: folder for ``<name>.pt``, ``<name>.onnx``, ``<name>.json``.
        resume: continue from ``runs/train/<name>/weights/last.pt`` (or
            ``out_dir/checkpoints/<name>_last.pt``, or the project's
            ``models/checkpoints/<name>_last.pt``): an interrupted run resumes where it stopped
            (ultralytics resume: same schedule); a finished run starts a new run of ``epochs``
            from its weights.
        hours: overrides the config's ``hours`` (wall-clock training budget; ultralytics sets
            the epoch count from the first epoch's time).
        runs_dir: overrides ``runs/train`` (ultralytics run folders and the log file).

    Returns:
        dict: the metadata written to ``out_dir/<name>.json`` (paths, class names, imgsz,
        task, ONNX layout, config, seed, epochs run, seconds, hardware, metrics).

    Raises:
        InputError: bad config (see :func:`load_config`), or ``resume`` with no checkpoint.
    """
    cfg = load_config(config_path)
    _offline_env()
    import torch

    from ultralytics import YOLO
    from ultralytics.utils import torch_utils

    # ultralytics resets torch to min(8, cpu_count - 1) threads at device selection (1 on a
    # 2-core machine); the config's ``threads`` wins.
    torch_utils.NUM_THREADS = int(cfg["threads"])
    torch.set_num_threads(int(cfg["threads"]))

    name = cfg["name"]
    out_dir = Path(out_dir)
    runs = Path(runs_dir) if runs_dir is not None else RUNS_DIR
    runs.mkdir(parents=True, exist_ok=True)
    handler = _attach_log(runs / f"{name}.log")
    try:
        n_epochs = int(epochs if epochs is not None else cfg["epochs"])
        budget = hours if hours is not None else cfg["hours"]
        data_yaml = (Path(cfg["data"]) if cfg["task"] == "classify"
                     else _resolved_data_yaml(Path(cfg["data"]), runs, name))
        args = dict(data=str(data_yaml), task=cfg["task"], imgsz=int(cfg["imgsz"]), epochs=n_epochs,
                    batch=int(cfg["batch"]), seed=int(cfg["seed"]), deterministic=True,
                    workers=int(cfg["workers"]), patience=int(cfg["patience"]),
                    cache=cfg["cache"], device=device, amp=device != "cpu",
                    # a .pt ``model`` is fine-tuned from its weights (ultralytics drops the
                    # loaded weights when pretrained=False); a model YAML trains from scratch
                    pretrained=str(cfg["model"]).endswith(".pt"),
                    project=str(runs.resolve()), name=name, exist_ok=True,
                    plots=False, verbose=True, **cfg["train"])
        if budget:
            args["time"] = float(budget)
        ckpt = _find_resume_checkpoint(name, out_dir, runs) if resume else None
        if resume and ckpt is None:
            raise InputError(f"--resume: no checkpoint for {name!r} in {str(runs / name)!r} "
                             f"or {str(out_dir / 'checkpoints')!r}")
        started = time.time()
        log.info("train %s: config %s, device %s, epochs %s, hours %s, resume %s",
                 name, cfg["config_path"], device, n_epochs, budget, ckpt)
        if ckpt is not None and _resumable(ckpt):
            model = YOLO(str(ckpt))
            model.train(resume=str(ckpt), device=device, workers=int(cfg["workers"]))
        elif ckpt is not None:  # finished run: a new run starting from its weights
            model = YOLO(str(ckpt))
            model.train(**{**args, "pretrained": True})
        else:
            model = YOLO(cfg["model"], task=cfg["task"])
            model.train(**args)
        seconds = time.time() - started
        trainer = model.trainer
        meta = finalize(cfg, Path(trainer.save_dir), out_dir, device=device,
                        train_seconds=seconds, trainer=trainer)
        return meta
    finally:
        from ultralytics.utils import LOGGER

        LOGGER.removeHandler(handler)
        log.removeHandler(handler)
        handler.close()


def finalize(cfg: dict | str | Path, save_dir: str | Path, out_dir: Path = Path("models"), *,
             device: str = "cpu", train_seconds: float | None = None, trainer=None) -> dict:
    """Turn a (finished, stopped or still running) ultralytics run folder into the product files.

    Copies ``save_dir/weights/best.pt`` (``last.pt`` when there is no best) to
    ``out_dir/<name>.pt`` with the optimizer stripped (EMA weights, fp16), keeps ``last.pt`` as
    ``out_dir/checkpoints/<name>_last.pt`` when it is under 10 MiB, exports
    ``out_dir/<name>.onnx`` and writes ``out_dir/<name>.json``.

    Args:
        cfg: training config dict (from :func:`load_config`) or its YAML path.
        save_dir: the ultralytics run folder (``runs/train/<name>``).
        out_dir: output folder.
        device: device the run trained on (recorded; validation runs on CPU).
        train_seconds: training wall time; read from ``results.csv`` when None.
        trainer: the ultralytics trainer when called right after training (its final
            validation of best.pt gives the metrics); otherwise best.pt is validated here.

    Returns:
        dict: the metadata written to ``<name>.json``.

    Raises:
        InputError: the run folder holds no weights.
    """
    import csv

    from ultralytics import YOLO
    from ultralytics.utils.torch_utils import strip_optimizer

    if not isinstance(cfg, dict):
        cfg = load_config(cfg)
    name = cfg["name"]
    save_dir = Path(save_dir)
    best, last = save_dir / "weights" / "best.pt", save_dir / "weights" / "last.pt"
    src = best if best.is_file() else last
    if not src.is_file():
        raise InputError(f"no weights in {str(save_dir / 'weights')!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    weights = out_dir / f"{name}.pt"
    strip_optimizer(src, s=str(weights))
    ck_info = None
    if last.is_file():
        ck = out_dir / "checkpoints" / f"{name}_last.pt"
        ck.parent.mkdir(exist_ok=True)
        shutil.copy2(last, ck)
        if ck.stat().st_size >= 10 * 2**20:  # a mid-run last.pt carries optimizer state
            strip_optimizer(ck)  # weights-only: a later run restarts from them (no true resume)
        if ck.stat().st_size < 10 * 2**20:
            ck_info = ck
        else:
            ck.unlink()
    rows = []
    if (save_dir / "results.csv").is_file():
        with open(save_dir / "results.csv") as fh:
            rows = [{k.strip(): v for k, v in r.items()} for r in csv.DictReader(fh)]
    if trainer is not None and getattr(trainer, "metrics", None):
        metrics = _metrics(trainer.metrics)
        planned, run = int(trainer.epochs), int(trainer.epoch) + 1
        best_epoch = int(getattr(trainer.stopper, "best_epoch", 0))  # 1-based
        names = [str(v) for _, v in sorted(dict(trainer.data["names"]).items())]
    else:
        data_yaml = (Path(cfg["data"]) if cfg["task"] == "classify"
                     else _resolved_data_yaml(Path(cfg["data"]), save_dir.parent, name))
        res = YOLO(str(weights)).val(data=str(data_yaml), imgsz=int(cfg["imgsz"]),
                                     batch=int(cfg["batch"]), device="cpu", plots=False,
                                     workers=0, project=str(save_dir.parent),
                                     name=f"{name}_val", exist_ok=True)
        metrics = _metrics(res.results_dict)
        planned, run, best_epoch = None, len(rows), None
        names = [str(v) for _, v in sorted(dict(res.names).items())]
    if train_seconds is None and rows:
        train_seconds = float(rows[-1].get("time", 0) or 0)
    ex = dict(cfg["export"])
    export_imgsz = ex.pop("imgsz", None) or int(cfg["imgsz"])
    onnx_path = export_onnx(weights, export_imgsz, out_dir / f"{name}.onnx", **ex)
    meta = {
        "name": name,
        "task": cfg["task"],
        "class_names": names,
        "names": dict(enumerate(names)),  # the key vision/recognition/detect.py reads
        "imgsz": export_imgsz,  # the exported graph's input (train size: config.imgsz)
        "weights": str(weights),
        "onnx": str(onnx_path),
        "checkpoint": str(ck_info) if ck_info else None,
        "onnx_layout": onnx_layout(cfg["task"], bool(ex["nms"]), len(names),
                                   export_imgsz, int(ex["max_det"]),
                                   bool(ex.get("agnostic_nms", False)),
                                   bool(ex.get("dynamic", False))),
        "export": ex,
        "config": dict(cfg),
        "seed": int(cfg["seed"]),
        "epochs_planned": planned,
        "epochs_run": run,
        "best_epoch": best_epoch,
        "train_seconds": round(float(train_seconds or 0), 1),
        "hardware": _hardware(device),
        "device": device,
        "ultralytics": __import__("ultralytics").__version__,
        "run_dir": str(save_dir),
        "per_epoch": rows,
        "metrics_synthetic_val": metrics,
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out_dir / f"{name}.json").write_text(json.dumps(meta, indent=2) + "\n")
    meta["sha256"] = _stamp(weights, onnx_path)
    log.info("finalize %s: metrics %s, files %s %s", name, metrics, weights, onnx_path)
    return meta


def reexport(cfg: dict | str | Path, out_dir: Path = Path("models")) -> dict:
    """Export ``out_dir/<name>.pt`` to ONNX again with the config's current ``export`` settings
    (no training, no validation) and update ``input``/``output`` facts in ``<name>.json``.

    Raises:
        InputError: ``<name>.pt`` is missing.
    """
    if not isinstance(cfg, dict):
        cfg = load_config(cfg)
    name = cfg["name"]
    out_dir = Path(out_dir)
    weights = out_dir / f"{name}.pt"
    if not weights.is_file():
        raise InputError(f"no weights to export: {str(weights)!r}")
    ex = dict(cfg["export"])
    export_imgsz = ex.pop("imgsz", None) or int(cfg["imgsz"])
    onnx_path = export_onnx(weights, export_imgsz, out_dir / f"{name}.onnx", **ex)
    js = out_dir / f"{name}.json"
    meta = json.loads(js.read_text()) if js.is_file() else {"name": name, "task": cfg["task"]}
    from ultralytics import YOLO

    names = [str(v) for _, v in sorted(dict(YOLO(str(weights)).names).items())]
    meta.update({
        "class_names": names,
        "names": dict(enumerate(names)),
        "imgsz": export_imgsz,
        "onnx": str(onnx_path),
        "onnx_layout": onnx_layout(cfg["task"], bool(ex["nms"]), len(names), export_imgsz,
                                   int(ex["max_det"]), bool(ex.get("agnostic_nms", False)),
                                   bool(ex.get("dynamic", False))),
        "export": {**ex, "imgsz": export_imgsz},
        "reexported_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    meta.pop("onnx_parity", None)  # belonged to the previous graph
    js.write_text(json.dumps(meta, indent=2) + "\n")
    meta["sha256"] = _stamp(weights, onnx_path)
    log.info("reexport %s: %s", name, onnx_path)
    return meta


def _stamp(*files: Path) -> dict[str, str]:
    """Record the SHA-256 of the product files in ``<name>.json`` (checked when a detector
    loads them, :mod:`vision.recognition.modelcheck`); returns ``{file name: sha256}``."""
    from vision.recognition.modelcheck import stamp

    return next(iter(stamp(files).values()), {})


def onnx_parity(weights: str | Path, onnx_path: str | Path, images: list[str | Path], *,
                conf: float = 0.25, iou: float = 0.5) -> dict:
    """Compare ultralytics ``.pt`` inference with onnxruntime on the exported ``.onnx``.

    Both get the same letterboxed input (the ONNX input's H x W), so any difference is the
    export's. NMS-in-graph exports: boxes above ``conf`` are matched as sets (nearest box both
    ways) against ``YOLO.predict``; OBB boxes are compared as ``cx, cy, long side, short side``
    (the ONNX rows are not regularised). Raw exports (``(1, C, anchors)``): the whole output
    tensor against the PyTorch model's forward pass.

    Args:
        weights: ``.pt`` file; onnx_path: ``.onnx`` file; images: image files.
        conf: confidence threshold for both (fraction); iou: NMS IoU of the ``.pt`` run.

    Returns:
        dict: ``images`` (count), ``layout`` ("nms" or "raw"), ``count_mismatches`` (images
        where the numbers of boxes differ; raw: 0), ``max_abs_diff`` (largest matched coordinate
        difference in input pixels; raw: largest element difference of the output tensor;
        None when nothing was detected).
    """
    import cv2
    import numpy as np
    import onnxruntime as ort

    _offline_env()
    import torch
    from ultralytics import YOLO

    from vision.recognition.detect import letterbox

    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    shape = sess.get_inputs()[0].shape[2:4]
    dynamic = not all(isinstance(v, int) for v in shape)
    model = YOLO(str(weights))
    square = int(model.model.args.get("imgsz", 640)) if dynamic else None
    obb = model.task == "obb"
    net = None
    worst, mismatches, layout = None, 0, "nms"
    for f in images:
        img = cv2.imread(str(f))
        # the inference letterbox; a dynamic graph gets the minimum 32-multiple rectangle
        target = (square, square) if dynamic else tuple(int(v) for v in shape)
        im, _ = letterbox(img, target, auto=dynamic)
        H, W = im.shape[:2]
        x = np.ascontiguousarray(im[:, :, ::-1].transpose(2, 0, 1)[None], dtype=np.float32) / 255
        raw = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        if raw.shape[1] < raw.shape[2]:  # (1, 4 + nc [+ 1], anchors): no NMS in the graph
            layout = "raw"
            if net is None:
                net = model.model.float().fuse().eval()
            with torch.no_grad():
                ref = net(torch.from_numpy(x))
            ref = (ref[0] if isinstance(ref, (tuple, list)) else ref).numpy()
            diff = float(np.abs(ref - raw).max())
            worst = diff if worst is None else max(worst, diff)
            continue
        out = raw[0][raw[0][:, 4] >= conf]
        res = model.predict(im, imgsz=(H, W), conf=conf, iou=iou, verbose=False, device="cpu")[0]
        if obb:
            canon = lambda q: np.stack([q[:, 0], q[:, 1], q[:, 2:4].max(1), q[:, 2:4].min(1)], 1)  # noqa: E731
            a, b = canon(out[:, :4]), canon(res.obb.xywhr.cpu().numpy()[:, :4])
        else:
            a, b = out[:, :4], res.boxes.xyxy.cpu().numpy()
        mismatches += int(len(a) != len(b))
        if len(a) and len(b):
            d = np.abs(a[:, None, :] - b[None, :, :]).max(-1)
            diff = float(max(d.min(1).max(), d.min(0).max()))
            worst = diff if worst is None else max(worst, diff)
    return {"images": len(images), "layout": layout, "count_mismatches": mismatches,
            "max_abs_diff": None if worst is None else round(worst, 6)}


def _resumable(ckpt: Path) -> bool:
    """True when ``ckpt`` is an unfinished ultralytics checkpoint (has optimizer state)."""
    import torch

    try:
        data = torch.load(ckpt, map_location="cpu", weights_only=False)
    except Exception:  # noqa: BLE001 - unreadable: treat as weights only
        return False
    return data.get("optimizer") is not None and int(data.get("epoch", -1)) >= 0


def main(argv: list[str] | None = None) -> int:
    """``python -m vision.synth.train CONFIG [--hours H] [--epochs N] [--finalize]`` (background runs)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m vision.synth.train")
    ap.add_argument("config")
    ap.add_argument("--epochs", type=int)
    ap.add_argument("--hours", type=float)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default="models")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--finalize", action="store_true",
                    help="no training: copy/export runs/train/<name> as it stands")
    ap.add_argument("--export-only", action="store_true",
                    help="no training: export models/<name>.pt to ONNX again with the config's "
                         "current export settings (updates models/<name>.json)")
    ap.add_argument("--parity", type=int, default=0, metavar="N",
                    help="no training: compare models/<name>.pt and .onnx on N val images "
                         "(result added to models/<name>.json)")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    if a.export_only:
        _offline_env()
        meta = reexport(a.config, Path(a.out))
        print(json.dumps(meta["onnx_layout"]))
        if not a.parity:
            return 0
    if a.parity:
        from vision.io.yamlsafe import load_yaml

        cfg = load_config(a.config)
        data = load_yaml(_resolved_data_yaml(Path(cfg["data"]), RUNS_DIR, cfg["name"]),
                         "data YAML")
        val = Path(data["path"]) / data["val"]
        imgs = sorted(p for p in val.iterdir() if p.suffix.lower() in (".jpg", ".png"))
        step = max(1, len(imgs) // a.parity)
        out = Path(a.out)
        res = onnx_parity(out / f"{cfg['name']}.pt", out / f"{cfg['name']}.onnx",
                          imgs[::step][: a.parity])
        js = out / f"{cfg['name']}.json"
        if js.is_file():
            meta = json.loads(js.read_text())
            meta["onnx_parity"] = res
            js.write_text(json.dumps(meta, indent=2) + "\n")
        print(json.dumps(res))
        return 0
    if a.finalize:
        _offline_env()
        cfg = load_config(a.config)
        meta = finalize(cfg, RUNS_DIR / cfg["name"], Path(a.out), device=a.device)
    else:
        meta = train(a.config, epochs=a.epochs, device=a.device, out_dir=Path(a.out),
                     resume=a.resume, hours=a.hours)
    print(json.dumps(meta["metrics_synthetic_val"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
