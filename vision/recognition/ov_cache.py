"""A verified on-disk cache of OpenVINO's compiled models (docs/configuration.md, model cache).

Compiling the three models for the CPU is most of a table worker's start; importing a
compiled model that an earlier start exported is several times faster (figures: docs/pit.md). A table re-placed on another Ray node, a
restarted ``paigow run`` or ``paigow serve`` start that much sooner.

Why not OpenVINO's own ``CACHE_DIR``: it imports whatever blob it finds under its key without
checking it. Measured (OpenVINO 2026.4, 2026-12-02): a cached blob with a few KiB of its middle
overwritten was imported without an error and ran, and the pip model's outputs were NaN -- a
damaged cache would read wrong faces, and a wrong face is what this project never gives. So
the blob is OpenVINO's own export (``CompiledModel.export_model`` / ``Core.import_model``), and
this module adds:

* a key of everything that shapes the compiled graph: the ONNX file's SHA-256, OpenVINO's
  version, the CPU's name and optimization capabilities (bfloat16 units or not), the compile
  configuration and the process's inference threads;
* one file per key that holds the SHA-256 of its blob, checked before every import: a
  mismatch (a damaged, truncated or tampered file) is never imported -- the model is compiled
  again and the file rewritten;
* an atomic write (a temporary file renamed into place): a start killed mid-write, or two
  workers writing the same key, leave either no file or a whole one;
* nothing fatal: a cache folder that cannot be made or written (read-only, disk full) costs
  the compile time only, with one warning.

The folder is ``$PAIGOW_MODEL_CACHE`` (``off`` turns the cache off), else
``$XDG_CACHE_HOME/paigow/openvino``, else ``~/.cache/paigow/openvino``. At most
:data:`KEEP` files are kept (the oldest go): old model versions do not pile up.

Public API: :func:`compile_cached`, :func:`cache_dir`, :data:`CACHE_ENV`, :data:`KEEP`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping

from vision.recognition.modelcheck import file_sha256

__all__ = ["compile_cached", "cache_dir", "CACHE_ENV", "KEEP"]

#: Environment variable: the cache folder, or ``off`` (also ``0``, ``no``, ``false``).
CACHE_ENV = "PAIGOW_MODEL_CACHE"
#: Most compiled models kept in the folder (three models, a few configurations each).
KEEP: int = 24
_MAGIC = b"PAIGOW-OV1\n"
_warned: set[str] = set()


def cache_dir() -> Path | None:
    """The cache folder from the environment (module docstring); None when turned off."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if env.lower() in ("off", "0", "no", "false"):
        return None
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "paigow" / "openvino"


def _warn_once(what: str, detail: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"model cache: {detail}", RuntimeWarning, stacklevel=3)


def _key(core, path: Path, config: Mapping[str, Any], threads: int, variant: str = "") -> str:
    import openvino as ov

    try:
        cpu = str(core.get_property("CPU", "FULL_DEVICE_NAME"))
    except Exception:  # noqa: BLE001 - a plugin without the property: the key still differs by path
        cpu = "?"
    try:  # what the CPU can run (BF16 or not): one name covers both kinds of AMD EPYC here
        caps = sorted(str(c) for c in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
    except Exception:  # noqa: BLE001 - a plugin without the property
        caps = ["?"]
    # the file's digest is the one the checksum check computed (modelcheck caches it)
    parts = {"model_sha256": file_sha256(path), "openvino": ov.__version__, "cpu": cpu,
             "cpu_capabilities": caps, "config": {str(k): str(v) for k, v in sorted(config.items())},
             "threads": int(threads)}
    if variant:  # a part of the file's graph (vision.recognition.obb_nms.head_graph)
        parts["variant"] = str(variant)
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _read_verified(file: Path) -> bytes | None:
    """The blob in ``file`` if its recorded SHA-256 matches; None (and the file removed) when
    it does not; None when there is no file."""
    try:
        data = file.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        _warn_once("read", f"cannot read {file} ({exc}); compiling")
        return None
    head = len(_MAGIC) + 64
    if len(data) > head and data.startswith(_MAGIC):
        digest, blob = data[len(_MAGIC):head].decode("ascii", "replace"), data[head:]
        if hashlib.sha256(blob).hexdigest() == digest:
            return blob
    # every time, not once: a damaged or tampered file is worth a line in every log
    warnings.warn(f"model cache: {file} is damaged (checksum mismatch): not used, compiling "
                  f"again", RuntimeWarning, stacklevel=3)
    try:
        file.unlink()
    except OSError:
        pass
    return None


def _write(folder: Path, file: Path, blob: bytes) -> None:
    """Write ``blob`` atomically with its SHA-256; prune the folder to :data:`KEEP` files."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=file.name + ".", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(blob).hexdigest().encode("ascii") + blob)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, file)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        _warn_once("write", f"cannot write to {folder} ({exc}); models are compiled at every "
                            f"start")
        return
    try:
        files = sorted(folder.glob("*.ovc"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[KEEP:]:
            old.unlink()
    except OSError:
        pass


def compile_cached(core, model, path: Path, config: Mapping[str, Any], threads: int,
                   folder: Path | None = None, variant: str = ""):
    """``core.compile_model(model, "CPU", config)``, from the verified cache where it holds
    this compilation (module docstring).

    Args:
        core: the process's ``openvino.Core``.
        model: the ``openvino.Model`` read from ``path``.
        path: the ``.onnx`` file (its bytes are part of the key).
        config: the compile configuration (``PERFORMANCE_HINT``, ``NUM_STREAMS``).
        threads: the process's inference threads (part of the key).
        folder: the cache folder; None: :func:`cache_dir`.
        variant: names the part of the file's graph that ``model`` is, when it is not the
            whole graph (``"head"``: :func:`vision.recognition.obb_nms.head_graph`); part of
            the key.

    Returns:
        an ``openvino.CompiledModel`` -- the same graph either way (tests/test_ov_cache.py
        checks the outputs bit for bit).

    Raises:
        whatever ``core.compile_model`` raises (the cache itself never raises).
    """
    folder = cache_dir() if folder is None else Path(folder)
    if folder is None:
        return core.compile_model(model, "CPU", dict(config))
    try:
        file = folder / f"{_key(core, Path(path), config, threads, variant)}.ovc"
    except OSError as exc:
        _warn_once("key", f"cannot hash {path} ({exc}); compiling")
        return core.compile_model(model, "CPU", dict(config))
    blob = _read_verified(file)
    if blob is not None:
        try:
            return core.import_model(blob, "CPU", dict(config))
        except Exception as exc:  # noqa: BLE001 - OpenVINO refuses a blob of another build
            _warn_once(f"import:{file}", f"OpenVINO refused {file} ({exc}); compiling again")
    compiled = core.compile_model(model, "CPU", dict(config))
    try:
        stream = compiled.export_model()
        data = stream.getvalue() if hasattr(stream, "getvalue") else bytes(stream)
    except Exception as exc:  # noqa: BLE001 - a plugin that cannot export
        _warn_once("export", f"OpenVINO cannot export the compiled model ({exc})")
        return compiled
    _write(folder, file, data)
    return compiled
