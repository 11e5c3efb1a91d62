"""One configuration object, validated once (docs/configuration.md).

Everything a run of the table pipeline needs is a frozen pydantic dataclass here, built once
by :func:`build_run_config` from the session's options (:class:`SessionOptions`: the command
line, a pit table's entry in the tables file, or a re-audited recording), the layout file and
an optional config file (YAML, ``--config FILE``), and then handed down whole:
:class:`PipelineConfig` to :class:`vision.pipeline.Pipeline`, :class:`RunConfig` to
:class:`vision.session.Session` (``paigow run``, ``serve``, ``demo``, the pit's workers and
``reaudit``). pydantic checks each field's type (:func:`config_model`); each class then checks
its own values in ``__post_init__``; either failure is a :class:`scoring.errors.InputError`
naming the offending value, so a bad setting stops the command before any model is loaded and
no stage checks a setting again.

Precedence, highest first: an explicit command-line option, the config file, the layout file
(table settings), the defaults below.

Models are found through one documented setting (:func:`default_models_dir`): the ``--models``
option, else the environment variable ``PAIGOW_MODELS``, else the repository's ``models/``.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import field, fields, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, ValidationError

from scoring.errors import InputError

from vision.recognition.backends import backend_names, default_backend
from vision.table.layout import TableConfig, load_layout
from vision.validated import (StrictBool, StrictInt, at_least_one, check, config_model, fraction,
                              input_error)

__all__ = ["config_model", "SessionOptions", "build_run_config", "MODELS_ENV", "default_models_dir", "RecognitionConfig", "GateConfig",
           "CacheConfig", "TableConfig", "PipelineConfig", "OutputConfig", "RunConfig",
           "CaptureConfig", "ServeConfig", "load_config_file", "BACKENDS", "backend_choices",
           "is_backend", "recognition_config", "check_min_confidence"]

#: Environment variable naming the models folder (docs/configuration.md).
MODELS_ENV = "PAIGOW_MODELS"
#: Built-in inference backends of :mod:`vision.recognition.detect` (more can be registered:
#: :func:`vision.recognition.backends.register_backend`; :func:`backend_choices` lists all).
BACKENDS = ("onnx", "openvino", "ultralytics")


def backend_choices() -> tuple[str, ...]:
    """Every backend name selectable now: the registered graph backends and ``ultralytics``."""
    return backend_names() + ("ultralytics",)


def is_backend(name: object) -> bool:
    """True when ``name`` names a selectable backend (:func:`backend_choices`)."""
    return isinstance(name, str) and name in backend_choices()


def default_models_dir() -> Path:
    """The models folder: ``$PAIGOW_MODELS`` when set and not empty, else the repository's
    ``models/`` (``vision.MODELS_DIR``)."""
    env = os.environ.get(MODELS_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    from vision import MODELS_DIR

    return MODELS_DIR


_check, _fraction, _at_least_one = check, fraction, at_least_one


@config_model
class RecognitionConfig:
    """Detectors and reads.

    Attributes:
        models_dir: folder with ``tiles.onnx`` / ``pips.onnx`` (``.pt`` for ultralytics);
            None: :func:`default_models_dir`.
        backend: ``"onnx"`` (onnxruntime), ``"openvino"`` (the same ONNX files run by
            OpenVINO), a name registered with :func:`vision.recognition.backends.register_backend`,
            or ``"ultralytics"``; None: :func:`vision.recognition.backends.default_backend`.
        min_confidence: faces read below this confidence (0..1) are unknown.
        tile_conf, pip_conf: detector confidence thresholds (None: the detector's default).
        allow_diagonal_two: accept diagonal 2s (:func:`vision.recognition.decode.half_shape_ok`).
        scales: tile-model input sizes (px, multiples of 32) at which a *still image* is read
            and fused (:mod:`vision.recognition.scales`); None:
            :data:`vision.recognition.scales.STILL_SCALES`; ``()`` or one size: a single pass
            (and no video vet). Video frames use the model's own size.
        zoom: give a still image's unknown tiles a second look, magnified
            (:mod:`vision.recognition.zoom`; default True).
        second_model: read a still image once more with the second tile model
            (``tiles_touch.*`` in the models folder, when there, or the one handed in) for the
            tiles the first leaves unread (:mod:`vision.recognition.fill`; default True).
        refine: refit a still image's unknown outlines from the picture's face regions
            (:mod:`vision.recognition.refine`; default True).
        turn: where a still image's reading leaves a tile unknown, read the picture turned by
            45 degrees too and add the tiles both readings agree on
            (:mod:`vision.recognition.turned`; default True).
        symmetry: where a flush-block guard asks whether the picture shows two flush tiles
            as laid, take the spots' symmetry as evidence too
            (:mod:`vision.recognition.symmetry`; default True).
        rules_off: the rules of the still reading left out, by name
            (:data:`vision.recognition.still.STILL_RULES`: ``scales``, ``second_look``,
            ``second_model``, ``long_as_peers``, ``refit``, ``guards``, ``missed_beside``,
            ``turned``, ``dealt_blocks``, ``own_spots``, ``crop_check``); default none. A rule left out reads fewer tiles,
            never a wrong face (docs/architecture.md, the still reading).
        live_rules_off: the rules left out, besides ``rules_off``, of the still reading a
            live feed makes beside its frame loop (a camera, a stream, a file played in real
            time); default ``("turned",)``: the picture turned by 45 degrees costs a live
            table seconds of delay on every deal with an unread outline (felt lettering
            beside a hand) for a tile now and then (docs/pit.md, the live profile); ``[]``:
            the offline reading live too. Pictures and files read as fast as possible
            (``identify``, ``run`` on images or a file) are read with every rule.
        busy_scales: the input sizes (px, multiples of 32) of a live table's still reading
            that finds every permit of the pit's gate taken -- the machine busy with other
            tables' readings -- or every core held by other work, e.g. another program's
            CPU-bound processes (:class:`vision.recognition.background.StillReader`,
            :func:`vision.recognition.background.cpu_contended`); default ``(1216,)``: one
            size reads a deal in about 60 % of the CPU of three, so the readings of tables
            dealt at once land before their tables clear, for a tile now and then
            (docs/pit.md, "a busy machine reads with one size"); ``()``: the full reading
            whatever the load. A light reading that leaves a tile unread that could change
            a settlement is followed by the full one once a permit is free
            (:class:`vision.recognition.background.StillReader` ``again``). Pictures and
            files read as fast as possible never read lighter.

    These strategies are the same whatever detectors the engine runs on
    (:class:`vision.recognition.engine.RecognitionEngine`).
    """

    models_dir: Path | None = None
    backend: str | None = None
    min_confidence: float = 0.5
    tile_conf: float | None = None
    pip_conf: float | None = None
    allow_diagonal_two: StrictBool = False
    scales: tuple[int, ...] | None = None
    zoom: StrictBool = True
    second_model: StrictBool = True
    refine: StrictBool = True
    turn: StrictBool = True
    symmetry: StrictBool = True
    rules_off: tuple[str, ...] = ()
    live_rules_off: tuple[str, ...] = ("turned",)
    busy_scales: tuple[int, ...] = (1216,)

    def __post_init__(self) -> None:
        for key in ("rules_off", "live_rules_off"):
            off = tuple(getattr(self, key))
            if off:
                from vision.recognition.still import STILL_RULES

                names = [r.name for r in STILL_RULES]
                bad = [n for n in off if n not in names]
                if bad:
                    _check(False, f"{key}: unknown rule {bad[0]!r} (rules: {', '.join(names)})")
            object.__setattr__(self, key, off)
        _check(isinstance(self.zoom, bool), f"zoom must be true or false, got {self.zoom!r}")
        _check(isinstance(self.second_model, bool),
               f"second_model must be true or false, got {self.second_model!r}")
        _check(isinstance(self.refine, bool),
               f"refine must be true or false, got {self.refine!r}")
        _check(isinstance(self.turn, bool), f"turn must be true or false, got {self.turn!r}")
        _check(isinstance(self.symmetry, bool),
               f"symmetry must be true or false, got {self.symmetry!r}")
        if self.scales is not None:
            sizes = tuple(int(v) for v in self.scales)
            _check(all(v >= 32 and v % 32 == 0 for v in sizes),
                   f"scales must be multiples of 32 px, got {list(sizes)!r}")
            object.__setattr__(self, "scales", sizes)
        busy = tuple(int(v) for v in self.busy_scales)
        _check(all(v >= 32 and v % 32 == 0 for v in busy),
               f"busy_scales must be multiples of 32 px, got {list(busy)!r}")
        object.__setattr__(self, "busy_scales", busy)
        if self.backend is None:
            object.__setattr__(self, "backend", default_backend())
        _check(is_backend(self.backend),
               f"unknown backend {self.backend!r}: choose {', '.join(backend_choices())}")
        _fraction("min confidence", self.min_confidence)
        for name in ("tile_conf", "pip_conf"):
            if getattr(self, name) is not None:
                _fraction(name, getattr(self, name))
        if self.models_dir is not None and not isinstance(self.models_dir, Path):
            object.__setattr__(self, "models_dir", Path(self.models_dir))

    @property
    def models(self) -> Path:
        """The models folder in effect."""
        return self.models_dir if self.models_dir is not None else default_models_dir()


@config_model
class GateConfig:
    """The motion gate in front of the tile detector (:class:`vision.recognition.gate.MotionGate`).

    Attributes:
        motion_threshold: grey levels (0-255) of mean block difference that count as motion;
            0 disables the gate (the detector runs on every frame).
        redetect_every: run the detector at least every this many frames.
        motion_detect_every: while the picture changes, run it on every this many frames;
            frames in between are drawn with the previous detections and not counted.
        thumb_size: (w, h) of the grey thumbnail compared, px; blocks: (columns, rows) of
            blocks it is cut into (each block must divide the thumbnail evenly).
        region_detect: while the picture changes, re-detect only the part of the frame whose
            blocks moved (grown by a tile length), at the full-frame pass's scale, and keep the
            previous detections elsewhere (:mod:`vision.recognition.region`); False: every
            detection is of the whole frame.
        region_max_area: the largest crop (a share of the frame's area, (0, 1]) run as a
            region; a larger change runs the whole frame.
    """

    motion_threshold: float = 8.0
    redetect_every: StrictInt = 10
    motion_detect_every: StrictInt = 2
    thumb_size: tuple[int, int] = (192, 108)
    blocks: tuple[int, int] = (32, 18)
    # Issue 21: while a round is dealt only one position and the dealer's hand change, yet the
    # tile model (about half of a frame's CPU on a 2-core box) ran on the whole frame every
    # motion_detect_every frames; a crop at the same scale costs in proportion to its area.
    # Outside the crop the gate saw no change against the picture the kept detections were
    # made of, so the merged detections are those of a whole-frame pass (tests/test_region.py).
    region_detect: StrictBool = True
    # The tile model's time is a fixed cost per call (about 0.4 of a whole 1080p pass, measured
    # with OpenVINO on 1 thread: a crop of 9-16% of the frame) plus a part growing with the
    # input's area (24%: 0.48, 43%: 0.59, 62-93%: 0.7-0.86): up to half the frame a region
    # still saves about 40% of a pass; beyond, little, and a whole pass renews the whole
    # reference (docs/configuration.md)
    region_max_area: float = 0.5

    def __post_init__(self) -> None:
        _check(float(self.motion_threshold) >= 0,
               f"motion_threshold must be >= 0, got {self.motion_threshold!r}")
        _at_least_one("redetect_every", self.redetect_every)
        _at_least_one("motion_detect_every", self.motion_detect_every)
        (w, h), (bx, by) = self.thumb_size, self.blocks
        _check(bx >= 1 and by >= 1 and w % bx == 0 and h % by == 0,
               f"gate blocks {self.blocks} must divide the thumbnail {self.thumb_size}")
        fraction("region_max_area", self.region_max_area, low_open=True)


@config_model
class CacheConfig:
    """The identity cache in front of the pip model (:class:`vision.recognition.identity.IdentityCache`).

    Attributes:
        cache_iou: IoU above which a tile counts as not moved (0, 1].
        reverify_every: frames after which a cached identity is decoded again.
        reverify_budget: most re-verifications per frame.
        look_threshold: mean grey-level difference (0-255) of a tile's box thumbnail from its
            look when decoded above which it is decoded again (0: off).
        decode_budget: most tiles decoded by the pip model per frame.
    """

    cache_iou: float = 0.9
    reverify_every: StrictInt = 150
    reverify_budget: StrictInt = 1
    look_threshold: float = 12.0
    decode_budget: StrictInt = 8

    def __post_init__(self) -> None:
        _fraction("cache IoU", self.cache_iou, low_open=True)
        _at_least_one("reverify_every", self.reverify_every)
        _at_least_one("reverify_budget", self.reverify_budget)
        _at_least_one("decode_budget", self.decode_budget)
        _check(float(self.look_threshold) >= 0,
               f"look_threshold must be >= 0, got {self.look_threshold!r}")


@config_model
class PipelineConfig:
    """Everything :class:`vision.pipeline.Pipeline` needs.

    Attributes:
        recognition, gate, cache, table: the parts above.
        layout: a :class:`vision.table.layout.Layout` (None: automatic grouping).
        draw: produce annotated frames.
        source: the source name written into events.
    """

    recognition: RecognitionConfig = field(default_factory=RecognitionConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    table: TableConfig = field(default_factory=TableConfig)
    layout: Any = None
    draw: bool = True
    source: str = ""

    def __post_init__(self) -> None:
        lay = self.layout
        if lay is not None:
            if isinstance(lay, (str, os.PathLike)):
                lay = load_layout(lay)
                object.__setattr__(self, "layout", lay)
            _check(self.table.banker in lay.positions,
                   f"banker {self.table.banker!r} is not a position of the layout "
                   f"({', '.join(lay.positions)})")

    @classmethod
    def build(cls, layout=None, **options: Any) -> "PipelineConfig":
        """Build from flat option names (the fields of the parts, e.g. ``n_stable=3``,
        ``motion_threshold=0``, ``banker="2"``); table settings not given come from the
        layout. An unknown name is an InputError."""
        if isinstance(layout, (str, os.PathLike)):
            layout = load_layout(layout)
        parts: dict[str, dict] = {"recognition": {}, "gate": {}, "cache": {}, "table": {}}
        owner = {f.name: part for part, kind in (("recognition", RecognitionConfig),
                                                 ("gate", GateConfig), ("cache", CacheConfig),
                                                 ("table", TableConfig))
                 for f in fields(kind)}
        top: dict[str, Any] = {}
        for k, v in options.items():
            if k in ("draw", "source"):
                top[k] = v
            elif k in owner:
                if v is not None or owner[k] == "recognition":
                    parts[owner[k]][k] = v
            else:
                raise InputError(f"unknown pipeline setting {k!r}")
        if layout is not None:
            for k in ("table_id", "rules", "commission", "house_way", "banker", "bets",
                      "co_bank"):
                parts["table"].setdefault(k, getattr(layout.table, k))
        return cls(RecognitionConfig(**parts["recognition"]), GateConfig(**parts["gate"]),
                   CacheConfig(**parts["cache"]), TableConfig(**parts["table"]), layout,
                   **top)

    def with_table(self, **changes: Any) -> "PipelineConfig":
        """A copy with table settings changed (validated again)."""
        return replace(self, table=replace(self.table, **changes))


@config_model
class OutputConfig:
    """Where a session reports (the sinks of :mod:`vision.session`).

    Attributes:
        out_dir: folder for ``annotated.mp4`` (or ``annotated/*.jpg``) and ``events.jsonl``.
        json_events: print one JSON line per round on stdout.
        show: show the annotated frames in a window.
        audit: audit store path or ``postgresql://`` URL (every round stored before it is
            reported), or None.
        progress: a progress bar on stderr for files.
        max_frames: stop after this many frames (None: the whole source).
        audit_frames: folder of the audit store's key frames (default ``<db>.frames`` beside
            an SQLite file; required with a PostgreSQL URL: key frames are files).
        audit_key_file: file holding the audit store's secret key (None: the environment
            variable ``PAIGOW_AUDIT_KEY`` when set, else an unkeyed store; docs/audit.md).
        video: write the annotated video (or pictures) into ``out_dir``; False: only
            ``events.jsonl`` (a pit's table: drawing and encoding every 1080p frame costs
            CPU the other tables need).
    """

    out_dir: Path | None = None
    json_events: StrictBool = False
    show: StrictBool = False
    audit: Any = None
    progress: StrictBool = True
    max_frames: StrictInt | None = None
    audit_frames: Path | None = None
    audit_key_file: Path | None = None
    video: StrictBool = True

    def __post_init__(self) -> None:
        if self.max_frames is not None:
            _at_least_one("max frames", self.max_frames)
        if self.out_dir is not None and not isinstance(self.out_dir, Path):
            object.__setattr__(self, "out_dir", Path(self.out_dir))
        a = self.audit
        if a is not None and isinstance(a, (str, os.PathLike)):
            _check(bool(str(a).strip()), f"audit store must be a path, got {a!r}")
            _check(self.audit_frames is not None
                   or not re.match(r"^postgres(ql)?://", str(a)),
                   "a PostgreSQL audit store needs a folder for its key frames "
                   "(--audit-frames DIR, output.audit_frames)")
        if self.audit_frames is not None and not isinstance(self.audit_frames, Path):
            object.__setattr__(self, "audit_frames", Path(self.audit_frames))


@config_model
class CaptureConfig:
    """Cameras and streams (:mod:`vision.io.live`).

    Attributes:
        reconnect_max_s: the most seconds between two attempts to reopen a lost camera or
            stream (the backoff's cap, :class:`vision.io.live.ReconnectPolicy` ``max_delay_s``):
            the picture comes back at most about this long after the camera does. None: the
            policy's default. Finite, > 0, at most an hour.
        wait_at_start: a camera or stream that is down when the session starts is waited for
            (retried forever with the same backoff, the feed ``reconnecting``) instead of
            being an error: ``paigow serve`` and the pit's workers (``ReconnectPolicy``).
    """

    reconnect_max_s: Any = None  # checked in __post_init__ (no bool, no text)
    wait_at_start: StrictBool = False

    def __post_init__(self) -> None:
        v = self.reconnect_max_s
        if v is None:
            return
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and \
            math.isfinite(v) and 0 < v <= 3600
        _check(ok, f"reconnect max must be a number of seconds > 0 and <= 3600, got {v!r}")
        object.__setattr__(self, "reconnect_max_s", float(v))

    def policy(self):
        """The :class:`vision.io.live.ReconnectPolicy` of these settings (None: the default)."""
        if self.reconnect_max_s is None and not self.wait_at_start:
            return None
        from vision.io.live import ReconnectPolicy

        kw = {} if self.reconnect_max_s is None else {"max_delay_s": self.reconnect_max_s}
        return ReconnectPolicy(wait_at_start=bool(self.wait_at_start), **kw)


@config_model
class RunConfig:
    """One session: a source, the pipeline, the outputs.

    Attributes:
        source: camera index, video file, stream URL, image, folder or glob.
        pipeline: :class:`PipelineConfig`.
        output: :class:`OutputConfig`.
        capture: :class:`CaptureConfig` (live sources).
    """

    source: str
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    capture: CaptureConfig = field(default_factory=CaptureConfig)


@config_model
class ServeConfig:
    """The dealer display's own settings (``paigow serve``; docs/web-api.md).

    Attributes:
        health_grace_s: seconds the camera may be lost (reconnecting, or no new frame from a
            live source) -- or the display's picture frozen while the feed runs -- before
            ``GET /healthz`` fails with 503 (default 10; finite, > 0, at most a day). Shorter
            outages are shown on the page but keep the server healthy, so a supervisor does
            not restart it for a blip the capture rides out by itself.
    """

    health_grace_s: Any = 10.0  # checked in __post_init__ (no bool, no text)

    def __post_init__(self) -> None:
        v = self.health_grace_s
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and \
            math.isfinite(v) and 0 < v <= 86400
        _check(ok, f"health grace must be a number of seconds > 0 and <= 86400, got {v!r}")
        object.__setattr__(self, "health_grace_s", float(v))


class SessionOptions(BaseModel):
    """The options of one session as its caller gives them -- the command line
    (:func:`vision.commands.common.run_config`), a table of the pit's tables file
    (:meth:`vision.pit.tables.TableSpec.run_config`) or a re-audited recording
    (:mod:`vision.reaudit`) -- before the config and layout files are merged in by
    :func:`build_run_config`. None: not given (the config file's value, else the default).

    Attributes:
        source: camera index, video file, stream URL, image, folder or glob.
        layout, config: layout file and config file paths.
        out: output folder; audit, audit_frames, audit_key_file: the audit store
            (:class:`OutputConfig`).
        json_events, show, progress, max_frames, video: :class:`OutputConfig` fields.
        stable: :attr:`TableConfig.n_stable`; banker, table_id: :class:`TableConfig` fields.
        min_confidence, models, backend, scales: :class:`RecognitionConfig` fields.
        default_backend: the backend where neither ``backend`` nor the config file names one
            (a live session's: :func:`vision.recognition.backends.live_backend`); None: the
            built-in default.
        reconnect_max_s, wait_at_start: :class:`CaptureConfig` fields.
        out_option: how the output folder is named in an error (``--out``).

    Raises:
        InputError: an option of the wrong type (named), or an unknown one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    source: str
    layout: Any = None
    config: Any = None
    out: Any = None
    json_events: bool = False
    show: bool = False
    progress: bool | None = None
    max_frames: int | None = None
    stable: int | None = None
    banker: Any = None
    table_id: Any = None
    audit: Any = None
    audit_frames: Any = None
    audit_key_file: Any = None
    min_confidence: float | None = None
    models: Any = None
    backend: str | None = None
    default_backend: str | None = None
    scales: tuple[int, ...] | None = None
    reconnect_max_s: float | None = None
    wait_at_start: bool = False
    video: bool | None = None
    out_option: str = "--out"

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise input_error(type(self), exc) from None


def build_run_config(opts: SessionOptions) -> RunConfig:
    """The :class:`RunConfig` of one session: the one place a run's configuration is built
    and validated.

    Precedence: an option given (not None in ``opts``), the config file, the layout file,
    ``opts.default_backend`` (the backend only), the defaults.

    Raises:
        InputError: a bad value (named); an output folder that is an existing file or cannot
            be written (:func:`vision.io.outputs.check_out_dir`).
    """
    file = load_config_file(opts.config)
    if opts.stable is not None and opts.stable < 1:
        raise InputError(f"--stable must be >= 1, got {opts.stable}")
    check_min_confidence(opts.min_confidence)
    options: dict = {}
    for sec in ("recognition", "gate", "cache", "table"):
        options.update(file.get(sec, {}))
    given = {"n_stable": opts.stable, "banker": opts.banker, "table_id": opts.table_id,
             "min_confidence": opts.min_confidence, "models_dir": opts.models,
             "backend": opts.backend, "scales": opts.scales}
    options.update({k: v for k, v in given.items() if v is not None})
    if options.get("backend") is None and opts.default_backend is not None:
        options["backend"] = opts.default_backend
    pcfg = PipelineConfig.build(layout=opts.layout, source=str(opts.source), **options)
    out = dict(file.get("output", {}))
    out.update({k: v for k, v in {"out_dir": opts.out, "audit": opts.audit,
                                  "audit_frames": opts.audit_frames,
                                  "audit_key_file": opts.audit_key_file}.items()
                if v is not None})
    if out.get("out_dir") is not None:  # a file or an unwritable place: one line, before work
        from vision.io.outputs import check_out_dir

        check_out_dir(out["out_dir"], opts.out_option if opts.out is not None
                      else "output.out_dir")
    out["json_events"] = opts.json_events or bool(out.get("json_events", False))
    out["show"] = opts.show or bool(out.get("show", False))
    if opts.progress is not None:
        out.setdefault("progress", opts.progress)
    if opts.max_frames is not None:
        out["max_frames"] = opts.max_frames
    if opts.video is not None:
        out["video"] = opts.video
    capture = dict(file.get("capture", {}))
    if opts.reconnect_max_s is not None:
        capture["reconnect_max_s"] = opts.reconnect_max_s
    if opts.wait_at_start:  # serve, a pit worker: a camera down is waited for
        capture["wait_at_start"] = True
    return RunConfig(str(opts.source), pcfg, OutputConfig(**out), CaptureConfig(**capture))


def check_min_confidence(value: float | None) -> None:
    """The ``--min-confidence`` option of every command, checked in this one place.

    Raises:
        InputError: not in [0, 1] (naming the option and the value).
    """
    if value is not None and not 0.0 <= float(value) <= 1.0:
        raise InputError(f"--min-confidence must be in [0, 1], got {value}")


def recognition_config(config: str | os.PathLike | None = None, *,
                       models_dir: str | os.PathLike | None = None, backend: str | None = None,
                       min_confidence: float | None = None,
                       scales: Sequence[int] | None = None) -> RecognitionConfig:
    """The :class:`RecognitionConfig` of a command that reads still pictures without a
    session (``paigow identify``, ``setcheck``, ``label-server``, ``export IMAGES``): the one
    place it is built, with :func:`build_run_config`'s precedence -- an option given (not
    None), then the config file's ``recognition`` section, then the defaults.

    Args:
        config: a config file (YAML, :func:`load_config_file`; only its ``recognition``
            section applies here), or None.
        models_dir, backend, min_confidence, scales: the command's options (None: not given).

    Raises:
        InputError: a bad value (named), a missing or bad config file.
    """
    check_min_confidence(min_confidence)
    values = dict(load_config_file(config).get("recognition", {}))
    given = {"models_dir": models_dir, "backend": backend, "min_confidence": min_confidence,
             "scales": None if scales is None else tuple(scales)}
    values.update({k: v for k, v in given.items() if v is not None})
    return RecognitionConfig(**values)


def load_config_file(path: str | os.PathLike | None) -> dict[str, dict]:
    """Read a config file (YAML): sections ``recognition``, ``gate``, ``cache``, ``table``,
    ``output``, ``capture`` and ``serve``, each mapping field names of the dataclass of that
    name to values.

    Returns:
        section -> {field: value} (empty without a path).

    Raises:
        InputError: missing file, bad YAML, an unknown section or field (named).
    """
    if path is None:
        return {}
    from vision.io.yamlsafe import load_yaml

    p = Path(path)
    if not p.is_file():
        raise InputError(f"config file not found: {p}")
    data = load_yaml(p, "config file") or {}  # size, aliases, depth capped
    kinds = {"recognition": RecognitionConfig, "gate": GateConfig, "cache": CacheConfig,
             "table": TableConfig, "output": OutputConfig, "capture": CaptureConfig,
             "serve": ServeConfig}
    _check(isinstance(data, Mapping), f"config file {p}: expected sections "
                                      f"{', '.join(kinds)}")
    out: dict[str, dict] = {}
    for sec, values in data.items():
        _check(sec in kinds, f"config file {p}: unknown section {sec!r} "
                             f"(allowed: {', '.join(kinds)})")
        _check(isinstance(values, Mapping), f"config file {p}: section {sec!r} must be a "
                                            f"mapping")
        names = {f.name for f in fields(kinds[sec])}
        for k in values:
            _check(k in names, f"config file {p}: unknown setting {sec}.{k} "
                               f"(allowed: {', '.join(sorted(names))})")
        out[sec] = dict(values)
    return out
