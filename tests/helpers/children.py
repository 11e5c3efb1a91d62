"""Child processes and servers of the tests: a free loopback port, waiting for a condition,
and the script of a ``paigow`` child whose models are the pickled ground-truth detectors."""

from __future__ import annotations

import socket
import textwrap
import time
from pathlib import Path

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


def wait_for(cond, what: str, timeout: float, proc=None, log=None):
    """``cond()``'s first truthy value, polled every 0.2 s; AssertionError naming ``what``
    after ``timeout`` s (an upper bound for a loaded machine, not a speed assertion).

    ``proc`` (a ``subprocess.Popen``): the child that should bring ``cond`` about; its exit
    ends the wait at once. ``log`` (a path): that child's output, whose last lines the
    AssertionError carries, so a failure on a machine nobody can look at says what happened."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        got = cond()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the child exited with {proc.returncode}"
                                 f"{log_tail(log)}")
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} ({timeout:g} s){log_tail(log)}")


def log_tail(log, lines: int = 40) -> str:
    """The last ``lines`` lines of the file ``log`` (None: nothing), as text to append to an
    assertion message."""
    if log is None:
        return ""
    try:
        text = Path(log).read_bytes().decode("utf-8", "replace").splitlines()
    except OSError as e:
        return f"\n(no log: {e})"
    return f"\n--- last {min(lines, len(text))} lines of {log} ---\n" + "\n".join(text[-lines:])
