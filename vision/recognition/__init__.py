"""Recognition runtime: the inference backends that run the detector graphs
(:mod:`~vision.recognition.backends`) and the pit's shared detector service
(:mod:`~vision.recognition.service`). Letterbox, parsing and NMS stay in :mod:`vision.recognition.detect`."""

from vision.recognition.backends import (DEFAULT_BACKEND, THREADS_ENV, DetectorBackend, OnnxRuntimeBackend,
                       OpenVINOBackend, backend_names, configure_threads, default_backend,
                       inference_threads, open_backend, register_backend, unregister_backend)

__all__ = ["DetectorBackend", "OnnxRuntimeBackend", "OpenVINOBackend", "register_backend",
           "unregister_backend", "backend_names", "open_backend", "configure_threads",
           "inference_threads", "THREADS_ENV", "DEFAULT_BACKEND", "default_backend"]
