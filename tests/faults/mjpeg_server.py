"""A local MJPEG server for fault tests: ``multipart/x-mixed-replace`` JPEG frames over HTTP on
127.0.0.1 (what IP cameras serve), which can go down (connection refused), stall (connections
stay open, nothing is sent) and come back on the same port.

Each frame is a flat grey image whose level encodes the server's frame counter (``level =
counter % 200 + 20``), so a test can tell fresh frames from repeated ones; or, given
``frames``, frame ``counter % len(frames)`` of that list (a scripted table: deals and empty
tables, so rounds settle). :attr:`sent_at` records when each frame was sent (monotonic).
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cv2
import numpy as np

__all__ = ["MjpegServer"]


class MjpegServer:
    """An MJPEG stream at :attr:`url`; use as a context manager.

    Args:
        fps: frames per second sent to each client.
        size: (width, height) of the grey frames, pixels.
        frames: uint8 (H, W, 3) BGR pictures sent in turn instead of the grey frames (JPEG
            quality 95, each encoded once).
    """

    def __init__(self, fps: float = 20.0, size: tuple[int, int] = (64, 48),
                 frames=None) -> None:
        self.fps = fps
        self.size = size
        self._jpegs = None if frames is None else \
            [cv2.imencode(".jpg", f, [int(cv2.IMWRITE_JPEG_QUALITY), 95])[1].tobytes()
             for f in frames]
        #: (monotonic time, counter) of every frame sent, in order
        self.sent_at: list[tuple[float, int]] = []
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/stream.mjpg"
        self._down = threading.Event()       # handlers stop and close their connection
        self._stalled = threading.Event()    # handlers keep the connection and send nothing
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.sent = 0
        self.connections = 0
        self._lock = threading.Lock()

    # -- control
    def up(self) -> "MjpegServer":
        """Listen (again) on :attr:`port`."""
        self._down.clear()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802
                with server._lock:
                    server.connections += 1
                while server._stalled.is_set() and not server._down.is_set():
                    time.sleep(0.02)   # a stalled camera: accepts, says nothing
                if server._down.is_set():
                    return
                self.send_response(200)
                self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                period = 1.0 / server.fps
                while not server._down.is_set():
                    if server._stalled.is_set():
                        time.sleep(0.02)
                        continue
                    with server._lock:
                        n = server.sent
                        server.sent += 1
                    if server._jpegs is not None:
                        data = server._jpegs[n % len(server._jpegs)]
                    else:
                        w, h = server.size
                        ok, buf = cv2.imencode(".jpg", np.full((h, w, 3), n % 200 + 20,
                                                               np.uint8))
                        data = buf.tobytes()
                    try:
                        self.wfile.write(b"--frame\r\nContent-Type: image/jpeg\r\n"
                                         b"Content-Length: %d\r\n\r\n" % len(data) + data + b"\r\n")
                        self.wfile.flush()
                    except OSError:
                        return
                    with server._lock:
                        server.sent_at.append((time.monotonic(), n))
                    time.sleep(period)

        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def down(self) -> None:
        """Stop listening and close every open stream (clients see the end of the stream, new
        connections are refused)."""
        self._down.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def stall(self) -> None:
        """Keep every connection open but send nothing (new connections hang the same way)."""
        self._stalled.set()

    def resume(self) -> None:
        """Send frames again after :meth:`stall`."""
        self._stalled.clear()

    def close(self) -> None:
        """Stop everything (idempotent)."""
        self._stalled.clear()
        self.down()

    def __enter__(self) -> "MjpegServer":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
