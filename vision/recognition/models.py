"""Finding and loading the trained detectors (docs/configuration.md, models).

The models folder is one documented setting (:func:`vision.config.default_models_dir`): the
``--models DIR`` option of every command, else the environment variable ``PAIGOW_MODELS``, else
the repository's ``models/``. It holds ``tiles.onnx`` and ``pips.onnx`` (backend ``onnx``) or
``tiles.pt`` and ``pips.pt`` (backend ``ultralytics``); see models/MODEL_CARD.md. It may also
hold ``tiles_touch.onnx`` / ``tiles_touch.pt``, the optional second tile model that reads a still
image once more for the tiles the first leaves unread (:mod:`vision.recognition.fill`).
"""

from __future__ import annotations

import functools
import hashlib
import logging
from pathlib import Path

from scoring.errors import InputError

from vision.config import backend_choices, default_models_dir, is_backend
from vision.recognition.backends import default_backend
from vision.recognition.modelcheck import require_description

__all__ = ["model_version", "load_detectors", "load_second_tile_detector", "model_files",
           "second_model_file", "require_description"]

log = logging.getLogger("vision.recognition.models")


@functools.lru_cache(maxsize=8)
def _note_no_second_model(path: str) -> None:
    log.warning("optional second tile model not found (%s): tiles a still image leaves "
                "unread are not read a second time (vision.recognition.fill)", path)


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:8]


def model_files(models_dir: str | Path | None = None, backend: str | None = None
                ) -> tuple[Path, Path]:
    """``(tile model, pip model)`` paths in ``models_dir`` (None: the default folder); the
    ``.onnx`` files for every graph backend, the ``.pt`` for ultralytics (backend None: the
    default, :func:`vision.recognition.backends.default_backend`)."""
    backend = default_backend() if backend is None else backend
    if not is_backend(backend):
        raise InputError(f"unknown backend {backend!r}: choose {', '.join(backend_choices())}")
    d = Path(models_dir) if models_dir is not None else default_models_dir()
    ext = ".pt" if backend == "ultralytics" else ".onnx"  # every graph backend runs the ONNX
    return d / f"tiles{ext}", d / f"pips{ext}"


def second_model_file(models_dir: str | Path | None = None, backend: str | None = None) -> Path:
    """The optional second tile model's path in ``models_dir`` (``tiles_touch.onnx``, or
    ``tiles_touch.pt`` for ultralytics); it may not exist (:mod:`vision.recognition.fill`)."""
    tiles, _ = model_files(models_dir, backend)
    return tiles.with_name("tiles_touch" + tiles.suffix)


def model_version(models_dir: str | Path | None = None, backend: str | None = None) -> str:
    """``"tiles-<sha8>+pips-<sha8>"`` from the model files' SHA-256 (``"unknown"`` parts for
    missing files), with ``"+touch-<sha8>"`` when the second tile model is present and
    ``"+crops-<sha8>"`` when the crop classifier is (:mod:`vision.recognition.crosscheck`)."""
    parts = []
    for name, p in zip(("tiles", "pips"), model_files(models_dir, backend)):
        parts.append(f"{name}-{_file_digest(p)}" if p.is_file() else f"{name}-unknown")
    second = second_model_file(models_dir, backend)
    if second.is_file():
        parts.append(f"touch-{_file_digest(second)}")
    crops = second.with_name("crops.onnx")  # vision.recognition.crosscheck (any backend)
    if crops.is_file():
        parts.append(f"crops-{_file_digest(crops)}")
    return "+".join(parts)


def load_detectors(models_dir: str | Path | None = None, backend: str | None = None,
                   tile_conf: float | None = None, pip_conf: float | None = None):
    """The tile and pip detectors of :mod:`vision.recognition.detect` from ``models_dir``.

    Raises:
        InputError: unknown backend, a missing folder, a missing or corrupt model file, a
            model without its description JSON (:func:`require_description`), naming it.
    """
    tiles_path, pips_path = model_files(models_dir, backend)
    if not tiles_path.parent.is_dir():
        raise InputError(f"models folder not found: {tiles_path.parent}")
    for p in (tiles_path, pips_path):
        if not p.is_file():
            raise InputError(f"model file not found: {p}")
        require_description(p)
    from vision.recognition import detect

    kw_t = {} if tile_conf is None else {"conf": tile_conf}
    kw_p = {} if pip_conf is None else {"conf": pip_conf}
    return (detect.TileDetector(tiles_path, backend=backend, **kw_t),
            detect.PipDetector(pips_path, backend=backend, **kw_p))


def load_second_tile_detector(models_dir: str | Path | None = None, backend: str | None = None,
                              tile_conf: float | None = None):
    """The second tile model (:func:`second_model_file`) as a :class:`vision.recognition.detect.TileDetector`,
    or None when the folder has none (it is optional; :mod:`vision.recognition.fill`; its absence is
    logged once as a warning).

    Raises:
        InputError: the file is there but corrupt, without its description JSON, or its
            checksum or classes are wrong.
    """
    path = second_model_file(models_dir, backend)
    if not path.is_file():
        _note_no_second_model(str(path))
        return None
    require_description(path)
    from vision.recognition import detect

    return detect.TileDetector(path, backend=backend,
                               **({} if tile_conf is None else {"conf": tile_conf}))
