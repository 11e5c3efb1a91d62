"""Inference backends: the one place a model graph is run (docs/architecture.md, backends).

A :class:`DetectorBackend` runs a detector's graph and nothing else -- modelled on frigate's
``DetectionApi`` plugins (one small class per runtime, chosen by name): its input is the
letterboxed float32 blob ``(N, 3, H, W)``, RGB, values 0..1; its output the graph's raw output
arrays. Letterboxing, parsing the output, NMS and mapping boxes back to the picture stay in
:class:`vision.recognition.detect.Detector`, identical for every backend, so two backends that run the same
graph read the same tiles.

Backends, chosen by name (``--backend``, ``recognition.backend``):

* ``openvino`` (:class:`OpenVINOBackend`): OpenVINO on the CPU, reading the project's ONNX
  files directly (one ``openvino.Core`` per process). The default where installed
  (:data:`DEFAULT_BACKEND`): it reads exactly what onnxruntime reads on ../shared/scenes and
  ../shared/scenes_flush (``scripts/eval_scenes.py --backend``, the same JSON byte for byte),
  and the tile model runs faster (the model card's speed section).
* ``onnx`` (:class:`OnnxRuntimeBackend`): ONNX Runtime, CPU execution provider.
* more by :func:`register_backend` -- the pit's shared detector client
  (:mod:`vision.recognition.service`) and the fakes of the tests, which then run the real
  detector code paths and pipeline strategies.

Both built-in backends run a tile model exported with its NMS in the graph (an ultralytics
OBB export) without that NMS and compute the same output array outside it
(:mod:`vision.recognition.obb_nms`): faster, and right for every image of a batch, which the
whole graph is not (``split_nms=False`` runs the whole graph, one image per call:
:func:`vision.recognition.obb_nms.batches_right`).

Threads are set once per process (:func:`configure_threads`), from configuration: the
environment variable ``PAIGOW_THREADS`` (the pit sets it for its workers, splitting the
machine's cores between them, or 1 each when they share a detector service), else the machine's
CPU count read once. A backend never asks ``os.cpu_count()`` itself, so N tables on one machine
no longer start N x cores inference threads.

Streams (the pit's detector service): a backend built with ``streams=S`` answers up to S
``infer`` calls at once, from S caller threads, each call on ``threads / S`` of the process's
inference threads (OpenVINO: S infer requests of a model compiled with ``NUM_STREAMS = S``;
ONNX Runtime: one session, ``intra_op_num_threads = threads / S``, whose ``run`` is
thread-safe). Several tables' requests on one thread each cost less CPU per call than one call
on every core (no sync between the threads of one call; measured in docs/pit.md), and the same
graph on the same blob gives the same outputs, bit for bit, on any number of threads
(tests/test_backends.py).
"""

from __future__ import annotations

import os
import queue
import threading
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from scoring.errors import InputError
from vision.recognition.obb_nms import embedded_nms, head_graph, nms_settings, onnx_head
from vision.recognition.ov_cache import compile_cached

__all__ = ["DetectorBackend", "OnnxRuntimeBackend", "OpenVINOBackend", "register_backend",
           "unregister_backend", "backend_names", "open_backend", "configure_threads",
           "inference_threads", "THREADS_ENV", "DEFAULT_BACKEND", "default_backend"]

#: Environment variable: inference threads of one process (an integer >= 1).
THREADS_ENV = "PAIGOW_THREADS"


@runtime_checkable
class DetectorBackend(Protocol):
    """Runs one detector graph (frigate's ``DetectionApi``: graph only, no pre/post-processing).

    Attributes:
        name: the backend's registered name (``"onnx"``, ``"openvino"``, ...).
        path: the model file it runs.
        input_shape: the graph's input shape ``(N, 3, H, W)``; an axis that is dynamic is None.
        metadata: the model file's own metadata (ultralytics' export keys ``task``, ``names``,
            ``imgsz``, ``stride``, ``args``, ``end2end`` ... as strings).
    """

    name: str
    path: Path
    input_shape: tuple[int | None, ...]
    metadata: Mapping[str, str]

    def infer(self, blob: np.ndarray) -> list[np.ndarray]:
        """Run the graph.

        Args:
            blob: float32 ``(N, 3, H, W)``, RGB, 0..1, C-contiguous (the letterboxed images).

        Returns:
            the graph's outputs, float32 arrays, first axis N (output 0 is what the detector
            parses: ``(N, 4+nc[+1], anchors)`` raw or ``(N, max_det, 6|7)`` embedded NMS).
        """
        ...


# ----------------------------------------------------------------------------- threads

_threads: int | None = None
_shared: bool | None = None
_threads_lock = threading.Lock()


def configure_threads(n: int | None = None, *, shared: bool | None = None) -> int:
    """Set this process's inference threads once (later calls with another value are refused).

    Args:
        n: threads (>= 1); None: ``$PAIGOW_THREADS`` when set, else the machine's CPU count.
        shared: other busy processes share the machine's cores (the pit's detector service
            beside its table workers): idle inference threads sleep instead of spinning;
            None: when ``n`` is below the CPU count.

    Returns:
        the threads in effect.

    Raises:
        InputError: ``n`` or ``$PAIGOW_THREADS`` not an integer >= 1, or the threads were
            already set to another value in this process (backends already built use them).
    """
    global _threads, _shared
    if shared is not None:
        _shared = bool(shared)
    if n is None:
        env = os.environ.get(THREADS_ENV, "").strip()
        if env:
            try:
                n = int(env)
            except ValueError:
                raise InputError(f"{THREADS_ENV} must be an integer >= 1, got {env!r}") from None
        else:
            n = os.cpu_count() or 1
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"inference threads must be an integer >= 1, got {n!r}")
    with _threads_lock:
        if _threads is not None and _threads != n:
            raise InputError(f"inference threads are already set to {_threads} in this process "
                             f"(asked for {n})")
        _threads = n
    return n


def inference_threads() -> int:
    """This process's inference threads (configured once on first use, see
    :func:`configure_threads`)."""
    return _threads if _threads is not None else configure_threads()


def _reset_threads_for_tests() -> None:
    global _threads, _shared
    with _threads_lock:
        _threads, _shared = None, None


def _machine_shared() -> bool:
    """True when this process has fewer threads than the machine has cores: other processes
    (tables) share the cores, so idle inference threads must sleep, not spin."""
    if _shared is not None:
        return _shared
    return inference_threads() < (os.cpu_count() or 1)


def _streams(streams: Any) -> int:
    """``streams`` checked: an integer >= 1 (InputError otherwise)."""
    if isinstance(streams, bool) or not isinstance(streams, int) or streams < 1:
        raise InputError(f"streams must be an integer >= 1, got {streams!r}")
    return streams


# ----------------------------------------------------------------------------- onnxruntime

class OnnxRuntimeBackend:
    """ONNX Runtime on the CPU (backend ``onnx``).

    Args:
        path: the ``.onnx`` file (checksum already verified by the caller).
        providers: execution providers (default ``["CPUExecutionProvider"]``).
        streams: calls answered at once (module docstring); each gets
            ``inference_threads() // streams`` threads (at least 1).
        split_nms: run a tile model's embedded NMS outside the graph, as
            :class:`OpenVINOBackend` does (the same output array); False: the whole graph.

    ``intra_op_num_threads`` = :func:`inference_threads` (divided by ``streams``); spinning idle threads are switched off
    when the process shares the machine (:func:`_machine_shared`).

    Raises:
        InputError: not a readable ONNX model (names the file).
    """

    name = "onnx"
    #: the arithmetic of the graph's run (recorded with the model version: ``@bf16``)
    precision = "f32"

    def __init__(self, path: Path, providers: Sequence[str] | None = None,
                 streams: int = 1, split_nms: bool = True) -> None:
        import onnxruntime as ort

        self.path = Path(path)
        self.streams = _streams(streams)
        so = ort.SessionOptions()
        so.intra_op_num_threads = max(1, inference_threads() // self.streams)
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        if _machine_shared() or self.streams > 1:
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        #: the embedded NMS run outside the graph (vision.recognition.obb_nms), or None
        self.nms = None
        graph: str | bytes = str(self.path)
        if split_nms:
            graph = self._head_graph(graph)
        try:
            self.session = ort.InferenceSession(graph, sess_options=so,
                                                providers=list(providers or
                                                               ["CPUExecutionProvider"]))
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
            raise InputError(f"not a readable ONNX model: {self.path} ({exc})") from exc
        inp = self.session.get_inputs()[0]
        self._input = inp.name
        self._outputs = [o.name for o in self.session.get_outputs()]
        self.input_shape = tuple(d if isinstance(d, int) and d > 0 else None for d in inp.shape)
        self.metadata = dict(self.session.get_modelmeta().custom_metadata_map or {})

    def _head_graph(self, whole: str) -> str | bytes:
        """The file's network without its embedded OBB NMS, serialised, with the file's
        metadata (:func:`vision.recognition.obb_nms.onnx_head`; sets :attr:`nms`), or
        ``whole`` where the graph is anything else or the ``onnx`` package is missing."""
        try:
            import onnx
            import onnx.utils
        except ImportError:
            return whole
        try:
            model = onnx.load(whole)
            settings = nms_settings(self.path, {p.key: p.value for p in model.metadata_props})
            head = onnx_head(model) if settings is not None else None
            if head is None:
                return whole
            sub = onnx.utils.Extractor(model).extract_model([model.graph.input[0].name], [head])
            sub.metadata_props.extend(model.metadata_props)
            self.nms = settings
            return sub.SerializeToString()
        except Exception:  # noqa: BLE001 - an unreadable file: the session says why
            return whole

    def infer(self, blob: np.ndarray) -> list[np.ndarray]:
        """The graph's outputs for ``blob`` (see :class:`DetectorBackend`)."""
        outs = self.session.run(self._outputs, {self._input: blob})
        if self.nms is not None:
            return [embedded_nms(outs[0], blob.shape[2:], self.nms)]
        return outs


# ----------------------------------------------------------------------------- OpenVINO

#: The OpenVINO property the CPU plugin's inference precision is set by (always "f32" here).
INFERENCE_PRECISION: str = "INFERENCE_PRECISION_HINT"

_ov_core = None
_ov_lock = threading.Lock()


def _openvino_core():
    """The process's one ``openvino.Core``, its CPU threads set once (:func:`inference_threads`)."""
    global _ov_core
    with _ov_lock:
        if _ov_core is None:
            try:
                import openvino as ov
            except ImportError:
                raise InputError("backend 'openvino' needs the openvino package "
                                 "(pip install 'paigow-vision[openvino]')") from None
            core = ov.Core()
            core.set_property("CPU", {"INFERENCE_NUM_THREADS": inference_threads()})
            _numpy_bridge_ready(ov)
            _ov_core = core
        return _ov_core


def _numpy_bridge_ready(ov) -> None:
    """Make OpenVINO's Python binding set up its numpy bridge now, on one thread.

    The binding (pybind11) sets up its numpy API lazily, on the first ``Tensor.data`` of the
    process, inside a one-time initialisation that gives the GIL away and takes it back. Two
    threads making that first access at once deadlock: one waits for the GIL inside the
    initialisation, the other holds the GIL and waits for the initialisation (seen with gdb,
    OpenVINO 2026.4: the detector service's two stream threads answering their first two
    requests, after which every table waits for an answer that never comes). One access
    here, under :data:`_ov_lock`, before any model runs, leaves nothing to race
    (tests/test_backends.py: the first calls on four threads at once).
    """
    import numpy as np

    _ = ov.Tensor(np.zeros((1,), np.float32)).data


class OpenVINOBackend:
    """OpenVINO on the CPU running the project's ONNX file (backend ``openvino``).

    The ONNX graph itself (embedded NMS included) is read by OpenVINO's ONNX front end and
    compiled for the CPU with the LATENCY hint (one request at a time, all of this process's
    threads on it); the model file's metadata comes from the same read (``rt_info``). The
    compiled model comes from the verified model cache when an earlier start left it there
    (:mod:`vision.recognition.ov_cache`: checksummed, never a damaged blob).

    A tile model's embedded NMS (an ultralytics OBB export) is not run in the graph: the
    network is compiled without it and :func:`vision.recognition.obb_nms.embedded_nms` gives
    the same output array from the anchors above the export's threshold, without the graph's
    fixed 1500 x 1500 box matrix (:mod:`vision.recognition.obb_nms`; ``split_nms=False`` runs
    the whole graph).

    Args:
        path: the ``.onnx`` file (checksum already verified by the caller).
        streams: calls answered at once (module docstring): 1, the LATENCY hint; more, the
            THROUGHPUT hint with ``NUM_STREAMS = streams`` and one infer request per stream,
            the process's inference threads split between the streams.
        split_nms: run an embedded OBB NMS outside the graph (above); False: the whole graph.

    Raises:
        InputError: the ``openvino`` package is missing, or it cannot read/compile the model.
    """

    name = "openvino"
    #: the arithmetic asked of OpenVINO (``INFERENCE_PRECISION_HINT``)
    precision = "f32"

    def __init__(self, path: Path, streams: int = 1, split_nms: bool = True) -> None:
        self.path = Path(path)
        self.streams = _streams(streams)
        core = _openvino_core()
        config = ({"PERFORMANCE_HINT": "LATENCY"} if self.streams == 1 else
                  {"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": self.streams})
        # 32-bit floats, as the models were trained, exported and measured: on a CPU with
        # bfloat16 units (AVX-512 BF16, AMX) OpenVINO's default precision is bfloat16, whose
        # 8-bit mantissa moves outlines and confidences enough to turn borderline reads
        # (models/MODEL_CARD.md, session 24); OpenVINOBF16Backend asks for bfloat16
        config[INFERENCE_PRECISION] = self.precision
        try:
            model = core.read_model(str(self.path))
            self.metadata = _openvino_metadata(model)
            #: the embedded NMS run outside the graph (vision.recognition.obb_nms), or None
            self.nms = nms_settings(self.path, self.metadata) if split_nms else None
            graph = model
            if self.nms is not None:
                names = _literal_dict(self.metadata.get("names"))
                graph = head_graph(model, 4 + len(names) + 1) if names else None
                if graph is None:
                    graph, self.nms = model, None
            # compiled once per machine, then imported from the verified cache (ov_cache)
            self.compiled = compile_cached(core, graph, self.path, config, inference_threads(),
                                           variant="head" if self.nms else "")
        except Exception as exc:  # noqa: BLE001 - OpenVINO raises its own RuntimeError types
            raise InputError(f"OpenVINO cannot compile {self.path}: {exc}") from None
        #: the arithmetic OpenVINO chose, which the model version records: bfloat16 asked of a
        #: CPU without bfloat16 units runs in f32, and a round read so must not say ``@bf16``
        self.precision = compiled_precision(self.compiled, self.precision)
        #: idle infer requests, one per stream: a caller takes one for its call
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(self.streams):
            self._requests.put(self.compiled.create_infer_request())
        ps = model.input(0).get_partial_shape()
        self.input_shape = tuple(d.get_length() if d.is_static else None for d in ps)
        self._n_out = len(graph.outputs)

    def infer(self, blob: np.ndarray) -> list[np.ndarray]:
        """The graph's outputs for ``blob`` (see :class:`DetectorBackend`)."""
        request = self._requests.get()  # waits while every stream is busy
        try:
            request.infer({0: blob})
            outs = [np.array(request.get_output_tensor(i).data, copy=True)
                    for i in range(self._n_out)]
        finally:
            self._requests.put(request)
        if self.nms is not None:
            return [embedded_nms(outs[0], blob.shape[2:], self.nms)]
        return outs


#: OpenVINO's element types (as ``str(Type)`` or the hint's text) -> the model version's names
_PRECISIONS = {"bfloat16": "bf16", "bf16": "bf16", "float16": "f16", "f16": "f16",
               "float32": "f32", "f32": "f32"}


def compiled_precision(compiled, asked: str) -> str:
    """The arithmetic a compiled OpenVINO model runs in: its ``INFERENCE_PRECISION_HINT`` as
    OpenVINO resolved it for this CPU (``"bf16"``, ``"f16"`` or ``"f32"``), which may differ
    from the one ``asked``: bfloat16 needs bfloat16 units (AVX-512 BF16, AMX), and elsewhere
    OpenVINO runs f32 (session 42 measured both on this project's machines: docs/pit.md).
    ``asked`` is returned where the property cannot be read or names another type."""
    try:
        got = str(compiled.get_property(INFERENCE_PRECISION))
    except Exception:  # noqa: BLE001 - a compiled model without the property
        return asked
    got = got.removeprefix("<Type: '").removesuffix("'>")
    return _PRECISIONS.get(got, asked)


def _literal_dict(v: Any) -> dict:
    """A metadata value that is a dict's repr (ultralytics ``names``) as a dict; {} else."""
    import ast

    try:
        d = ast.literal_eval(v) if isinstance(v, str) else v
    except (ValueError, SyntaxError):
        return {}
    return d if isinstance(d, dict) else {}


def _openvino_metadata(model) -> dict[str, str]:
    """The ONNX ``metadata_props`` OpenVINO keeps under ``rt_info['framework']``."""
    try:
        keys = list(model.get_rt_info()["framework"].keys())
    except Exception:  # noqa: BLE001 - a model without framework metadata
        return {}
    out = {}
    for k in keys:
        try:
            out[str(k)] = model.get_rt_info(["framework", k]).astype(str)
        except Exception:  # noqa: BLE001 - a value OpenVINO cannot show as text
            continue
    return out


# ----------------------------------------------------------------------------- registry

BackendFactory = Callable[..., DetectorBackend]


class OpenVINOBF16Backend(OpenVINOBackend):
    """:class:`OpenVINOBackend` in bfloat16 (``INFERENCE_PRECISION_HINT`` bf16) where the CPU
    has bfloat16 units (AVX-512 BF16, AMX; elsewhere OpenVINO runs f32): about 1.7x faster
    on this project's 2-core AMD EPYC (docs/pit.md), at the cost of outlines moved by a pixel
    (models/MODEL_CARD.md, session 24 and session 34)."""

    name = "openvino-bf16"
    precision = "bf16"


_registry: dict[str, BackendFactory] = {
    "onnx": OnnxRuntimeBackend,
    "openvino": OpenVINOBackend,
    "openvino-bf16": OpenVINOBF16Backend,
}
#: The built-in graph backends: never unregistered; each takes ``streams``.
BUILTIN_BACKENDS: tuple[str, ...] = tuple(_registry)


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``factory(path, **options) -> DetectorBackend`` selectable as ``name``
    (``--backend name``); replaces an earlier one of that name."""
    if not name or name == "ultralytics":
        raise InputError(f"backend name {name!r} is taken or empty")
    _registry[str(name)] = factory


def unregister_backend(name: str) -> None:
    """Remove a backend added by :func:`register_backend` (the built-in three stay)."""
    if name not in BUILTIN_BACKENDS:
        _registry.pop(name, None)


def backend_names() -> tuple[str, ...]:
    """The graph backends selectable now (``ultralytics``, which runs its own pipeline in
    :class:`vision.recognition.detect.Detector`, is not one of them)."""
    return tuple(_registry)


def open_backend(name: str, path: str | os.PathLike, **options: Any) -> DetectorBackend:
    """Build the backend ``name`` for the model file ``path``.

    Raises:
        InputError: unknown name (lists the known ones), or the backend's own refusal.
    """
    try:
        factory = _registry[name]
    except KeyError:
        raise InputError(f"unknown backend {name!r}: choose "
                         f"{', '.join(backend_names() + ('ultralytics',))}") from None
    return factory(Path(path), **options)


def _openvino_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("openvino") is not None


def default_backend() -> str:
    """The backend used when none is named: :data:`DEFAULT_BACKEND`, or ``onnx`` when the
    openvino package is not installed."""
    if DEFAULT_BACKEND == "openvino" and not _openvino_installed():
        return "onnx"
    return DEFAULT_BACKEND


#: The default backend (where installed, see :func:`default_backend`); ``onnx`` stays
#: selectable (``--backend onnx``).
DEFAULT_BACKEND = "openvino"

#: The backend of a live session (``paigow serve``, the pit's tables) where neither the
#: command line, the tables file nor the config file names one (see :func:`live_backend`):
#: OpenVINO in bfloat16, about 1.7x faster where the CPU has bfloat16 units and read as well
#: on the four shared folders (docs/pit.md, "bfloat16 for live tables"; models/MODEL_CARD.md,
#: session 34). Offline commands keep :data:`DEFAULT_BACKEND` (f32, the figures' arithmetic).
LIVE_BACKEND = "openvino-bf16"


def backend_precision(name: str) -> str:
    """The arithmetic backend ``name`` runs the graphs in: ``"bf16"`` for ``openvino-bf16``,
    else ``"f32"`` (a registered backend may say otherwise with a ``precision`` attribute)."""
    return str(getattr(_registry.get(name), "precision", "f32"))


def live_backend() -> str:
    """The backend a live session uses by default: :data:`LIVE_BACKEND`, or
    :func:`default_backend` when the openvino package is not installed."""
    return LIVE_BACKEND if _openvino_installed() else default_backend()
