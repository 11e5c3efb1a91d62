"""The frame loop: source -> pipeline -> sinks, one loop for ``paigow run``, ``serve`` and
``demo`` (docs/architecture.md).

:class:`Session` opens the source, the audit store and the pipeline (in that order: cheap and
decisive checks before the models are loaded), then, frame by frame, runs
:meth:`vision.pipeline.Pipeline.process` and hands the annotated picture to every sink and each
round to the audit store and then to every sink. **Stored before reported** (:meth:`Session._emit`):
a round is appended to the audit store (one durable transaction, alerts merged in) *before* it
is written to ``events.jsonl``, stdout or the dealer display, so a crash loses at most the
round in progress and the store never holds fewer rounds than were reported; what the sinks
get is the stored event. Round ids continue from the store's last ``r<number>`` of the table.

Stopping: :meth:`Session.stop` (the dealer display), a closed window, and SIGTERM (what
systemd and docker send; handled when the session runs in the main thread) end the loop after
the current frame, like the end of the source: the open round is flushed, the annotated video
closed (playable) and the store left consistent; ``summary()["stopped"]`` then names the
signal. A full disk (``ENOSPC``, ``EDQUOT``, SQLite's "disk is full") ends the session the
same way and raises :class:`scoring.errors.InputError` naming the file: every round committed
before it is kept, the round being written is not half-stored.

Every round is accounted for: when the source ends (or the session is stopped) the round still
open is flushed (:meth:`vision.pipeline.Pipeline.flush`) and, if it showed tiles, emitted as an
unsettled round with its reasons; for still images (each its own table) that happens before
each next image.
"""

from __future__ import annotations

import contextlib
import errno
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from scoring.errors import InputError

from vision.config import OutputConfig, PipelineConfig, RunConfig
from vision.recognition.identify import progress_bar
from vision.pipeline import Pipeline
from vision.schema import RoundEvent
from vision.io.sinks import AnnotatedOutput, AuditSink, EventsFile, EventStream, Sink, Window
from vision.sources import redact_url

__all__ = ["Session", "run", "READING_FPS", "RESTING_FPS", "UNWATCHED_FPS"]

#: Live: frames a second the loop takes while a still reading runs beside it (the rest of the
#: CPU is the reading's; the display still moves every 0.2 s; issue 45).
READING_FPS = 5.0
#: Live: frames a second the loop takes from a still table whose reading stands (nothing
#: moved since it was read; the first frame that moves brings back every frame): a still
#: table costs little (issue 45; the camera's other frames are skipped by design, and the
#: figures say so: ``/api/stats`` ``resting``).
RESTING_FPS = 5.0
#: Live: frames a second the loop takes instead, in both cases, while no sink is watched
#: (:meth:`vision.io.sinks.Sink.watched`: a pit table whose display nobody looks at, events
#: only): those frames only watch for motion, and a move is still seen within 0.5 s. At 5 a
#: second, decoding them was 40 % of a pit table worker's CPU (py-spy, bench_live 8 tables,
#: session 32); at 2 a second the 8 tables took 1,070 frames instead of 2,276, and 33-37 s of
#: CPU instead of 46-47 s (docs/pit.md).
UNWATCHED_FPS = 2.0


class Session:
    """One source through one pipeline into sinks.

    Args:
        config: :class:`vision.config.RunConfig`.
        frames: iterate these :class:`vision.io.capture.Frame` s instead of opening the source
            (the demo and tests).
        pipeline: an already built object with ``process(frame) -> (image, result)`` (tests);
            no models are loaded then.
        sinks: more sinks (the dealer display's feed).
        tile_detector, pip_detector: inject detectors into the pipeline (tests).
        stdout: stream for ``json_events`` (default ``sys.stdout``).
        pace: play file sources at their own frame rate (the dealer display).
        loop: replay a file source from the start when it ends.
        keep_events: keep every round's event for :meth:`summary` (``events``); False for a
            session that runs for days (a ``paigow serve --tables`` worker): the list stays
            empty, ``rounds`` still counts.

    Raises:
        InputError: bad source, audit store, layout or models; ``show`` without a GUI.
    """

    def __init__(self, config: RunConfig, *, frames: Iterable | None = None, pipeline=None,
                 sinks: Sequence[Sink] = (), tile_detector=None, pip_detector=None,
                 stdout=None, pace: bool = False, loop: bool = False,
                 keep_events: bool = True) -> None:
        from vision.io.capture import open_source

        self.config = config
        out: OutputConfig = config.output
        self.pace, self.loop = bool(pace), bool(loop)
        self._stop = threading.Event()
        self._reset = threading.Event()
        self.src = None
        self.audit: AuditSink | None = None
        self.sinks: list[Sink] = []
        self.events: list[dict] = []
        self.keep_events = bool(keep_events)
        self._frames = frames
        kind, fps = "video", None
        try:
            if frames is None:
                self.src = open_source(config.source, policy=config.capture.policy())
                kind, fps = self.src.kind, self.src.fps
            pcfg: PipelineConfig = config.pipeline
            self.stills = kind in ("image", "images") and pcfg.table.n_stable is None
            if out.audit is not None:
                self.audit = AuditSink(out.audit, out.audit_frames, out.audit_key_file)
            if pipeline is None:
                pcfg = pcfg.with_table(n_stable=1 if self.stills else (pcfg.table.n_stable or 10))
                pipeline = Pipeline(pcfg, tile_detector=tile_detector, pip_detector=pip_detector)
                pipeline.still_images = self.stills
            self.pipeline = pipeline
            live = bool(getattr(self.src, "live", False)) or (self.pace and frames is None)
            self._live = live and callable(getattr(pipeline, "set_live", None))
            if self._live:
                pipeline.set_live(True)  # the fused reading beside the loop; seconds
            if self.audit is not None:
                pipeline.round_base = self.audit.attach(pipeline.table_id)
            self.output = None
            if out.out_dir is not None:
                if out.video:
                    self.output = AnnotatedOutput(out.out_dir, kind, fps)
                    self.sinks.append(self.output)
                self.sinks.append(EventsFile(out.out_dir / "events.jsonl"))
            if out.json_events:
                self.sinks.append(EventStream(stdout or sys.stdout))
            if out.show:
                self.sinks.append(Window())
            self.sinks += list(sinks)
        except BaseException:
            self.close()
            raise
        self.frames = 0
        self.capture_s = 0.0
        self.wall_s = 0.0
        self.stopped_by: str | None = None
        self._full: OSError | None = None
        #: a recording looped on purpose: each pass is new rounds for the audit store
        self._replay_id = f"{time.time_ns():x}-{id(self):x}"
        self._pass = 0

    # -- control (thread-safe) ----------------------------------------------------------------
    def stop(self) -> None:
        """End the loop after the current frame (a live source blocked on a camera is closed,
        which ends its iteration)."""
        self._stop.set()
        if self.src is not None and getattr(self.src, "live", False):
            self.src.close()

    def request_reset(self) -> None:
        """Forget the current round before the next frame (dealer display control)."""
        self._reset.set()

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> dict:
        """Process the source to its end (or ``max_frames``, a stop, a closed window) and
        return :meth:`summary`. Closes every sink and the source."""
        out = self.config.output
        total = self.src.frame_count if self.src is not None else None
        bar = progress_bar(total, out.progress and total is not None and total > 1, "run")
        t_start = time.perf_counter()
        try:
            with self._sigterm_stops():
                self._loop(bar)
        except OSError as exc:
            if not _disk_full(exc):
                raise
            self._full = exc
        finally:
            self.wall_s = time.perf_counter() - t_start
            if bar is not None:
                bar.close()
            try:
                self.close()
            except OSError as exc:  # the open round could not be stored either
                if not _disk_full(exc):
                    raise
                self._full = self._full or exc
        if self._full is not None:
            raise InputError(self._full_message())
        return self.summary()

    def _full_message(self) -> str:
        exc = self._full
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        kept = (f"; the {self.audit.appended} round(s) stored before it are kept"
                if self.audit is not None else "")
        return (f"disk full: {where}{exc.strerror or exc} (stopped after {self.frames} "
                f"frame(s){kept})")

    @contextlib.contextmanager
    def _sigterm_stops(self):
        """While the loop runs in the main thread, SIGTERM stops it like :meth:`stop` (a
        second SIGTERM interrupts at once, like Ctrl-C)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_sigterm(signum, frame):
            if self.stopped_by is not None:
                raise KeyboardInterrupt
            self.stopped_by = "SIGTERM"
            self._stop.set()
            # closing a live source joins its reader thread: not inside a signal handler
            threading.Thread(target=self.stop, name="sigterm-stop", daemon=True).start()

        old = signal.signal(signal.SIGTERM, on_sigterm)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, old)

    def _loop(self, bar) -> None:
        max_frames = self.config.output.max_frames
        while not self._stop.is_set():
            frames = self._frames if self._frames is not None else self.src
            live = bool(getattr(frames, "live", False))
            it = iter(frames)
            t0 = first_ts = None
            while not self._stop.is_set():
                tc = time.perf_counter()
                try:
                    fr = next(it)
                except StopIteration:
                    break
                self.capture_s += time.perf_counter() - tc
                if self.pace and not live:  # play a file at its own frame rate
                    if t0 is None:
                        t0, first_ts = time.monotonic(), float(fr.timestamp)
                    wait = (float(fr.timestamp) - first_ts) - (time.monotonic() - t0)
                    if wait > 0 and self._stop.wait(wait):
                        return
                if self._reset.is_set():
                    self._reset.clear()
                    self._restart()
                elif self.stills and self.frames:
                    self._restart()  # each image is its own table
                if not self._step(fr):
                    return
                if self._live and self.pipeline.reading:
                    # a still reading runs beside the loop: the loop takes at most
                    # READING_FPS frames a second meanwhile (UNWATCHED_FPS while nobody
                    # looks; the display moves on, the camera's other frames are skipped by
                    # design) and leaves the CPU to it (the wait ends as soon as the reading
                    # lands: it is taken at once)
                    fps = READING_FPS if self._watched() else UNWATCHED_FPS
                    rest = 1.0 / fps - (time.perf_counter() - tc)
                    if rest > 0:
                        self.pipeline.wait_reading(rest)
                        if self._stop.is_set():
                            return
                elif self._live and getattr(self.pipeline, "resting", False):
                    # a still table whose reading stands: RESTING_FPS frames a second
                    # (UNWATCHED_FPS while nobody looks)
                    fps = RESTING_FPS if self._watched() else UNWATCHED_FPS
                    rest = 1.0 / fps - (time.perf_counter() - tc)
                    if rest > 0 and self._stop.wait(rest):
                        return
                if bar is not None:
                    bar.update(1)
                if max_frames is not None and self.frames >= max_frames:
                    return
            if not self.loop or live or self._frames is not None:
                return
            self.src.close()
            from vision.io.capture import open_source

            self.src = open_source(self.config.source, policy=self.config.capture.policy())
            self._restart()
            self._pass += 1

    def _watched(self) -> bool:
        """A sink shows this session's pictures to someone (:meth:`vision.io.sinks.Sink.watched`);
        asked only where the live loop may rest."""
        return any(_sink_says(s, "watched") for s in self.sinks)

    def _restart(self) -> None:
        """Flush the open round (it is accounted for), then forget the table state."""
        self._flush()
        reset = getattr(self.pipeline, "reset", None)
        if callable(reset):
            reset()

    def _step(self, fr) -> bool:
        if self._frames is None and isinstance(self.pipeline, Pipeline) and \
                not any([_sink_says(s, "wants_picture") for s in self.sinks]):
            # no sink looks at this frame's picture: drawn only if a round keeps it
            # (Pipeline.process, draw=False; a capture's frames are new arrays)
            annotated, res = self.pipeline.process(fr, draw=False)
        else:
            annotated, res = self.pipeline.process(fr)
        self.frames += 1
        event = res.round
        if event is not None:
            self._emit(event, getattr(res, "key_frame", None)
                       if getattr(res, "key_frame", None) is not None else annotated)
        keep = True
        for s in self.sinks:
            keep = s.frame(annotated, fr, res) is not False and keep
        return keep

    def _flush(self) -> None:
        flush = getattr(self.pipeline, "flush", None)
        res = flush() if callable(flush) else None
        if res is not None and res.round is not None:
            self._emit(res.round, res.key_frame)

    def _emit(self, event: RoundEvent, key_frame) -> None:
        """Stored before reported: the audit store first, then every sink the stored event.
        A round the store already holds (exactly once) is not reported again."""
        if self.audit is not None:
            looped = self.loop and not getattr(self.src, "live", False)
            replay = f"{self._replay_id}:{self._pass}" if looped else None
            event = self.audit.store_round(event, key_frame, replay)
            if hasattr(self.pipeline, "round_base"):  # the overlay's next id = the store's
                self.pipeline.round_base = self.audit.last_number - self.pipeline.round_no
            if event is None:
                return
        if self.keep_events:
            self.events.append(event.to_dict())
        for s in self.sinks:
            s.round(event)

    def close(self) -> None:
        """Flush the open round, close sinks, the store and the source (idempotent). On a
        full disk the open round is not stored (nothing committed is touched)."""
        if getattr(self, "pipeline", None) is not None and not getattr(self, "_closed", False):
            try:
                if getattr(self, "_full", None) is None:
                    self._flush()
            finally:
                self._closed = True
                self._close_all()
        else:
            self._closed = True
            self._close_all()

    def _close_all(self) -> None:
        full = None
        for s in self.sinks:  # every sink is closed (the video stays playable) whatever fails
            try:
                s.close()
            except OSError as exc:
                if not _disk_full(exc):
                    raise
                full = full or exc
        self.sinks = []
        close = getattr(getattr(self, "pipeline", None), "close", None)
        if callable(close):
            close()
        if self.audit is not None:
            self.audit.close()
        if self.src is not None:
            self.src.close()
        if full is not None:
            raise full

    def summary(self) -> dict:
        """``{"source", "frames", "rounds", "ms_per_frame": {stage: ms}, "fps_pipeline",
        "fps_wall", "events": [event dicts], "output", "events_path", "capture_stats",
        "model_version", "stopped"}`` (``stopped``: the signal that stopped the session, e.g.
        ``"SIGTERM"``, else None) plus, with an audit store, ``"audit": {"store", "appended",
        "already_recorded", "head_hash"}``."""
        pipe = self.pipeline
        s = pipe.summary(self.capture_s, self.wall_s) if hasattr(pipe, "summary") else {}
        out_dir = self.config.output.out_dir
        s.update({
            "source": redact_url(self.config.source),
            "events": self.events,
            "output": self.output.output if self.output is not None else None,
            "events_path": str(out_dir / "events.jsonl") if out_dir is not None else None,
            "capture_stats": self.src.stats().to_dict() if self.src is not None else None,
            "model_version": getattr(pipe, "model_version", None),
            "stopped": self.stopped_by,
        })
        if self.audit is not None:
            s["audit"] = self.audit.summary()
        return s


def _disk_full(exc: BaseException) -> bool:
    """True for "no space left" / "quota exceeded" errors (the audit store turns SQLite's
    "disk is full" into ``ENOSPC``)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def _sink_says(sink, question: str) -> bool:
    """``sink.<question>()`` -- ``wants_picture`` or ``watched`` (:class:`vision.io.sinks.Sink`);
    True for a sink without the method."""
    ask = getattr(sink, question, None)
    return True if ask is None else bool(ask())


def run(source: str, layout=None, out_dir: str | Path | None = None, show: bool = False,
        json_events: bool = False, models_dir: str | Path | None = None,
        backend: str | None = None, n_stable: int | None = None, banker: str | None = None,
        table_id: str | None = None, progress: bool = True, tile_detector=None,
        pip_detector=None, frames: Iterable | None = None, stdout=None,
        max_frames: int | None = None, audit=None, config: RunConfig | None = None,
        audit_frames: str | Path | None = None, **pipeline_kw: Any) -> dict:
    """Run the whole pipeline on a source (``paigow run``): a :class:`Session` over a
    :class:`vision.config.RunConfig` built once from these settings (or given as ``config``).

    Args:
        source: camera index, video file, stream URL, image file, folder or glob.
        layout: layout YAML path or :class:`vision.table.rounds.Layout` (None: automatic grouping).
        out_dir: folder for ``annotated.mp4`` (or ``annotated/*.jpg``) and ``events.jsonl``.
        show: display frames in a window; json_events: one JSON line per round on stdout.
        n_stable: frames for a position to be final (None: 10 for video and live sources;
            image files are each their own table, N = 1).
        banker, table_id, models_dir, backend: override the layout's / the defaults.
        frames: iterate these frames instead of opening ``source``.
        max_frames: stop after this many frames.
        audit: audit store path / URL / open :class:`vision.audit.AuditStore` (see
            :mod:`vision.session`: stored before reported).
        audit_frames: the store's key-frame folder (required for a PostgreSQL URL).
        pipeline_kw: more :meth:`vision.config.PipelineConfig.build` settings.

    Returns:
        :meth:`Session.summary`.

    Raises:
        InputError: bad source, layout, models, settings or audit store (before any frame is
            processed); ``show`` without a GUI.
    """
    if config is None:
        pcfg = PipelineConfig.build(layout=layout, models_dir=models_dir, backend=backend,
                                    n_stable=n_stable, banker=banker, table_id=table_id,
                                    source=str(source), **pipeline_kw)
        config = RunConfig(str(source), pcfg,
                           OutputConfig(out_dir, json_events, show, audit, progress, max_frames,
                                        audit_frames))
    return Session(config, frames=frames, tile_detector=tile_detector,
                   pip_detector=pip_detector, stdout=stdout).run()
