"""Finding and loading the trained detectors (docs/configuration.md, models).

The models folder is one documented setting (:func:`vision.config.default_models_dir`): the
``--models DIR`` option of every command, else the environment variable ``PAIGOW_MODELS``, else
the repository's ``models/``. It holds ``tiles.onnx`` and ``pips.onnx`` (backend ``onnx``) or
``tiles.pt`` and ``pips.pt`` (backend ``ultralytics``); see models/MODEL_CARD.md.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from scoring.errors import InputError

from .config import BACKENDS, default_models_dir

__all__ = ["model_version", "load_detectors", "model_files"]


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:8]


def model_files(models_dir: str | Path | None = None, backend: str = "onnx"
                ) -> tuple[Path, Path]:
    """``(tile model, pip model)`` paths in ``models_dir`` (None: the default folder)."""
    if backend not in BACKENDS:
        raise InputError(f"unknown backend {backend!r}: choose onnx, openvino or ultralytics")
    d = Path(models_dir) if models_dir is not None else default_models_dir()
    ext = ".pt" if backend == "ultralytics" else ".onnx"  # openvino runs the ONNX files
    return d / f"tiles{ext}", d / f"pips{ext}"


def model_version(models_dir: str | Path | None = None, backend: str = "onnx") -> str:
    """``"tiles-<sha8>+pips-<sha8>"`` from the model files' SHA-256 (``"unknown"`` parts for
    missing files)."""
    parts = []
    for name, p in zip(("tiles", "pips"), model_files(models_dir, backend)):
        parts.append(f"{name}-{_file_digest(p)}" if p.is_file() else f"{name}-unknown")
    return "+".join(parts)


def load_detectors(models_dir: str | Path | None = None, backend: str = "onnx",
                   tile_conf: float | None = None, pip_conf: float | None = None):
    """The tile and pip detectors of :mod:`vision.detect` from ``models_dir``.

    Raises:
        InputError: unknown backend, a missing folder, a missing or corrupt model file
            (naming it).
    """
    tiles_path, pips_path = model_files(models_dir, backend)
    if not tiles_path.parent.is_dir():
        raise InputError(f"models folder not found: {tiles_path.parent}")
    for p in (tiles_path, pips_path):
        if not p.is_file():
            raise InputError(f"model file not found: {p}")
    from . import detect

    kw_t = {} if tile_conf is None else {"conf": tile_conf}
    kw_p = {} if pip_conf is None else {"conf": pip_conf}
    return (detect.TileDetector(tiles_path, backend=backend, **kw_t),
            detect.PipDetector(pips_path, backend=backend, **kw_p))
