"""Child processes and servers of the tests: a free loopback port, waiting for a condition,
and the script of a ``paigow`` child whose models are the pickled ground-truth detectors."""

from __future__ import annotations

import socket
import textwrap
import time

#: ``CLI_WITH_FAKE_MODELS.format(tests=TESTS_DIR, fake=PICKLE)`` then ``python -c`` it with
#: the CLI's arguments: the real ``paigow`` with only the model loader replaced.
CLI_WITH_FAKE_MODELS = textwrap.dedent("""
    import pickle, sys
    sys.path.insert(0, {tests!r})
    import fakes  # noqa: F401  (the pickled GroundTruthDetectors)
    import vision.recognition.engine as pipeline
    with open({fake!r}, "rb") as f:
        fake = pickle.load(f)
    # the trained models replaced by the renderer's ground truth; everything else is the CLI
    pipeline.load_detectors = lambda *a, **k: (fake, fake)
    pipeline.model_version = lambda *a, **k: fake.version
    from vision.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(cond, what: str, timeout: float):
    """``cond()``'s first truthy value, polled every 0.2 s; AssertionError naming ``what``
    after ``timeout`` s (an upper bound for a loaded machine, not a speed assertion)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        got = cond()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
