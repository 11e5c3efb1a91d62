"""Options shared by the vision commands, and the one place a :class:`vision.config.RunConfig`
is built from them (``paigow run``, ``serve`` and ``demo`` take the same session options)."""

from __future__ import annotations

from scoring.errors import InputError


def add_model_options(p) -> None:
    """``--backend`` and ``--models`` (docs/configuration.md: models)."""
    p.add_argument("--backend", choices=("onnx", "ultralytics"), default="onnx",
                   help="inference backend (default onnx: onnxruntime on CPU)")
    p.add_argument("--models", "--models-dir", dest="models", default=None, metavar="DIR",
                   help="folder with tiles.onnx and pips.onnx (default: $PAIGOW_MODELS, else "
                        "the repository's models/)")


def add_session_options(p) -> None:
    """The options of one session (source, layout, table, outputs, audit store)."""
    p.add_argument("source", metavar="SOURCE",
                   help="camera index (0), video file, rtsp/http URL, image, folder or glob")
    p.add_argument("--layout", default=None, metavar="FILE",
                   help="layout YAML (positions, rules, commission, table_id; docs/layout.md); "
                        "default: automatic grouping, dealer = group nearest the top centre")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="config file (YAML; docs/configuration.md) with sections recognition, "
                        "gate, cache, table, output")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder for the annotated video/images and events.jsonl")
    p.add_argument("--json", action="store_true",
                   help="print one JSON line per round on stdout (docs/round-event.md)")
    p.add_argument("--stable", type=int, default=None, metavar="N",
                   help="frames a position must stay identical to be final (default 10 for "
                        "video; images are independent tables)")
    p.add_argument("--banker", default=None, metavar="POS",
                   help="banking position: dealer (default) or a seat id 1..7")
    p.add_argument("--table-id", default=None, metavar="ID", help="table id written in events")
    p.add_argument("--audit", default=None, metavar="DB",
                   help="append every round to this audit store (SQLite file, created when "
                        "missing; key frames in DB.frames/) before it is reported; check it "
                        "with 'paigow audit verify DB'")
    p.add_argument("--min-confidence", type=float, default=None,
                   help="faces below this confidence are unknown (default 0.5)")
    add_model_options(p)


def run_config(args, *, progress: bool = False, show: bool = False,
               max_frames: int | None = None):
    """The :class:`vision.config.RunConfig` of parsed session options (validated once).

    Precedence: an option given on the command line, the config file, the layout file, the
    defaults.

    Raises:
        InputError: a bad value (named).
    """
    from vision.config import OutputConfig, PipelineConfig, RunConfig, load_config_file

    file = load_config_file(args.config)
    if args.stable is not None and args.stable < 1:
        raise InputError(f"--stable must be >= 1, got {args.stable}")
    if args.min_confidence is not None and not 0.0 <= args.min_confidence <= 1.0:
        raise InputError(f"--min-confidence must be in [0, 1], got {args.min_confidence}")
    options: dict = {}
    for sec in ("recognition", "gate", "cache", "table"):
        options.update(file.get(sec, {}))
    given = {"n_stable": args.stable, "banker": args.banker, "table_id": args.table_id,
             "min_confidence": args.min_confidence,
             "models_dir": args.models, "backend": args.backend}
    options.update({k: v for k, v in given.items() if v is not None})
    pcfg = PipelineConfig.build(layout=args.layout, source=str(args.source), **options)
    out = dict(file.get("output", {}))
    out.update({k: v for k, v in {"out_dir": args.out, "audit": args.audit}.items()
                if v is not None})
    out["json_events"] = bool(args.json) or bool(out.get("json_events", False))
    out["show"] = show or bool(out.get("show", False))
    out.setdefault("progress", progress)
    if max_frames is not None:
        out["max_frames"] = max_frames
    return RunConfig(str(args.source), pcfg, OutputConfig(**out))
