"""Options shared by the vision commands, and the one place a :class:`vision.config.RunConfig`
is built from them (``paigow run``, ``serve`` and ``demo`` take the same session options)."""

from __future__ import annotations

from scoring.errors import InputError

from vision.config import backend_choices


def add_model_options(p, scales: bool = True) -> None:
    """``--backend``, ``--models`` (docs/configuration.md: models) and, for commands that read
    still images, ``--scales``."""
    p.add_argument("--backend", choices=backend_choices(), default=None,
                   help="inference backend (default openvino where installed, else onnx; "
                        "paigow serve: openvino-bf16; openvino: the ONNX files run by "
                        "OpenVINO in f32; openvino-bf16: in bfloat16; onnx: onnxruntime on "
                        "CPU; docs/architecture.md, inference backends)")
    p.add_argument("--models", dest="models", default=None, metavar="DIR",
                   help="folder with tiles.onnx and pips.onnx (default: $PAIGOW_MODELS, else "
                        "the repository's models/)")
    add_hidden_alias(p, "--models-dir", "models")
    if not scales:
        return
    p.add_argument("--scales", default=None, metavar="PX,PX,...",
                   help="tile-model input sizes a still image is read at and fused (multiples "
                        "of 32; default 832,960,1216; 640 = one pass at the model's size)")


def add_reading_options(p, what: str = "unknown", scales: bool = True) -> None:
    """The options of a command that reads still pictures without a session (``identify``,
    ``setcheck``, ``label-server``): ``--config`` (its ``recognition`` section),
    ``--min-confidence`` and :func:`add_model_options`; built by :func:`reading_config`."""
    p.add_argument("--config", default=None, metavar="FILE",
                   help="config file (YAML; docs/configuration.md): its recognition section "
                        "applies; options given here win")
    p.add_argument("--min-confidence", type=float, default=None,
                   help=f"faces below this confidence are {what} (default 0.5)")
    add_model_options(p, scales=scales)


def reading_config(args):
    """The :class:`vision.config.RecognitionConfig` of parsed :func:`add_reading_options`:
    :func:`vision.config.recognition_config`, the one place it is built.

    Raises:
        InputError: a bad value (named), a missing or bad config file.
    """
    from vision.config import recognition_config

    return recognition_config(args.config, models_dir=args.models, backend=args.backend,
                              min_confidence=args.min_confidence,
                              scales=parse_scales(getattr(args, "scales", None)))


def add_hidden_alias(p, option: str, dest: str) -> None:
    """An old spelling of an option, kept working but not shown in ``--help`` (one name per
    option across commands: the shown name is the current one)."""
    import argparse

    p.add_argument(option, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def parse_scales(text: str | None) -> tuple[int, ...] | None:
    """The --scales option as a tuple of ints (None: the default).

    Raises:
        InputError: not comma-separated multiples of 32 up to 4096 (naming the value).
    """
    if text is None:
        return None
    try:
        sizes = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        sizes = ()
    if not sizes or any(v < 32 or v % 32 or v > 4096 for v in sizes):
        raise InputError(f"--scales must be multiples of 32 px up to 4096, comma-separated, "
                         f"got {text!r}")
    return sizes


def add_session_options(p, source_optional: bool = False) -> None:
    """The options of one session (source, layout, table, outputs, audit store);
    ``source_optional``: SOURCE may be left out (``serve --tables``)."""
    p.add_argument("source", metavar="SOURCE", nargs="?" if source_optional else None,
                   help="camera index (0), video file, rtsp/http URL, image, folder or glob")
    p.add_argument("--layout", default=None, metavar="FILE",
                   help="layout YAML (positions, rules, commission, table_id; docs/layout.md); "
                        "default: automatic grouping, dealer = group nearest the top centre")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="config file (YAML; docs/configuration.md) with sections recognition, "
                        "gate, cache, table, output")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder for the annotated video/images and events.jsonl")
    p.add_argument("--no-video", dest="video", action="store_false", default=None,
                   help="with --out: write events.jsonl only, no annotated video or pictures")
    p.add_argument("--json", action="store_true",
                   help="print one JSON line per round on stdout (docs/round-event.md)")
    p.add_argument("--stable", type=int, default=None, metavar="N",
                   help="frames a position must stay identical to be final (default 10 for "
                        "video; images are independent tables)")
    p.add_argument("--banking-seat", dest="banker", default=None, metavar="POS",
                   help="banking position: dealer (default) or a seat id 1..7 (the name "
                        "'paigow settle' uses too)")
    add_hidden_alias(p, "--banker", "banker")
    p.add_argument("--table-id", default=None, metavar="ID", help="table id written in events")
    p.add_argument("--audit", default=None, metavar="DB",
                   help="append every round to this audit store (SQLite file, created when "
                        "missing; key frames in DB.frames/) before it is reported; check it "
                        "with 'paigow audit verify DB'")
    p.add_argument("--audit-frames", default=None, metavar="DIR",
                   help="folder of the audit store's key frames (default DB.frames beside an "
                        "SQLite file; required with a postgresql:// URL)")
    p.add_argument("--audit-key-file", default=None, metavar="FILE",
                   help="secret key of the audit store (HMAC over every record; default "
                        "$PAIGOW_AUDIT_KEY; never stored in the store; docs/audit.md)")
    p.add_argument("--min-confidence", type=float, default=None,
                   help="faces below this confidence are unknown (default 0.5)")
    p.add_argument("--reconnect-max", default=None, metavar="SECONDS",
                   help="a lost camera or stream is retried for as long as the process runs, "
                        "at most this many seconds apart (default 2, ReconnectPolicy.max_delay_s):"
                        " the picture comes back at most about this long after the camera does")
    add_model_options(p)


def run_config(args, *, progress: bool = False, show: bool = False,
               max_frames: int | None = None):
    """The :class:`vision.config.RunConfig` of parsed session options: the command line's
    :class:`vision.config.SessionOptions`, built by :func:`vision.config.build_run_config`.

    Raises:
        InputError: a bad value (named), as :func:`vision.config.build_run_config`.
    """
    from vision.config import SessionOptions, build_run_config

    reconnect = parse_seconds(getattr(args, "reconnect_max", None), "--reconnect-max", 3600)
    return build_run_config(SessionOptions(
        source=str(args.source), layout=args.layout, config=args.config, out=args.out,
        json_events=bool(args.json), show=show, progress=progress, max_frames=max_frames,
        stable=args.stable, banker=args.banker, table_id=args.table_id, audit=args.audit,
        audit_frames=getattr(args, "audit_frames", None),
        audit_key_file=getattr(args, "audit_key_file", None),
        min_confidence=args.min_confidence, models=args.models, backend=args.backend,
        default_backend=getattr(args, "default_backend", None),
        scales=parse_scales(args.scales), reconnect_max_s=reconnect,
        wait_at_start=bool(getattr(args, "wait_at_start", False)),
        video=getattr(args, "video", None)))


def add_display_options(p) -> None:
    """The dealer display's own options (``paigow serve``; :class:`vision.config.ServeConfig`)."""
    p.add_argument("--health-grace", default=None, metavar="SECONDS",
                   help="GET /healthz fails (503) once the camera has been lost, or the "
                        "picture frozen, for longer than this (default 10)")


def parse_seconds(text: str | None, option: str, upper: float) -> float | None:
    """A number of seconds given as an option: plain ASCII decimal digits with an optional
    fraction, in ``(0, upper]`` (None: not given).

    Raises:
        InputError: anything else (a sign, an exponent, ``nan``, ``inf``, too many digits, out
            of range), naming the option and the value.
    """
    if text is None:
        return None
    import math
    import re

    t = text.strip()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?|\.[0-9]+", t):
        raise InputError(f"{option} must be a number of seconds, got {text!r}")
    v = float(t)
    if not math.isfinite(v):  # hundreds of digits
        raise InputError(f"{option} must be a number of seconds, got {text!r}")
    if not 0 < v <= upper:
        raise InputError(f"{option} must be > 0 and <= {upper:g} seconds, got {text!r}")
    return v


def serve_config(args):
    """The :class:`vision.config.ServeConfig` of parsed ``serve`` options: the option, else the
    config file's ``serve`` section, else the defaults.

    Raises:
        InputError: a bad value (named).
    """
    from vision.config import ServeConfig, load_config_file

    values = dict(load_config_file(args.config).get("serve", {}))
    grace = parse_seconds(getattr(args, "health_grace", None), "--health-grace", 86400)
    if grace is not None:
        values["health_grace_s"] = grace
    return ServeConfig(**values)
