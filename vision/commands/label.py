"""``paigow label-server``: a Label Studio ML backend (vision/labelling/ml_backend.py,
docs/labelling.md).

Examples::

    LABEL_STUDIO_API_KEY=... paigow label-server --port 9090 --store labels/ \\
        --label-studio-url http://localhost:8080

Bad input (a port in use, a missing models folder, a store that is a file, half the basic-auth
pair) is one line naming the value and exit code 2 (JSON under ``--json``).
"""

from __future__ import annotations

import json
import os
import sys

from scoring.errors import InputError

from vision.commands.common import add_reading_options, reading_config

API_KEY_ENV = "LABEL_STUDIO_API_KEY"
URL_ENV = "LABEL_STUDIO_URL"
DOC_ROOT_ENV = "LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT"
AUTH_ENV = ("BASIC_AUTH_USER", "BASIC_AUTH_PASS")


def register(sub) -> None:
    """Add ``label-server`` to the argparse sub-parser collection."""
    p = sub.add_parser(
        "label-server", help="a Label Studio ML backend: tile predictions for labelling, "
                             "annotations stored for training",
        description="Serve the Label Studio ML backend API (POST /predict, /setup, /webhook; "
                    "GET /health): each task's picture is read like `paigow identify` and "
                    "every tile returned as a region (the face as label, 'unknown' when not "
                    "read, 'tile_back' face down) with its confidence as score; annotations "
                    "Label Studio sends to /webhook are stored under --store in Label Studio's "
                    "JSON export format (docs/labelling.md). Credentials come from the "
                    f"environment: {API_KEY_ENV} (to download task images), "
                    f"{AUTH_ENV[0]} / {AUTH_ENV[1]} (basic auth on every request).")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9090, help="TCP port (default 9090)")
    p.add_argument("--store", default="label_store", metavar="DIR",
                   help="folder the annotations are stored under (default ./label_store)")
    p.add_argument("--label-studio-url", default=None, metavar="URL",
                   help=f"Label Studio's address, to download task images (default ${URL_ENV}, "
                        "else the hostname Label Studio sends when it connects)")
    p.add_argument("--document-root", default=None, metavar="DIR",
                   help="Label Studio's local-files document root when this machine sees it: "
                        f"/data/local-files/ images are read from there (default ${DOC_ROOT_ENV})")
    p.add_argument("--shape", choices=("polygon", "rectangle"), default=None,
                   help="region shape (default: the project's label config: PolygonLabels or "
                        "RectangleLabels)")
    p.add_argument("--log-level", default="warning",
                   choices=("critical", "error", "warning", "info", "debug"),
                   help="web server log level (default warning; info logs each request)")
    p.add_argument("--json", action="store_true",
                   help="print the address (or the error) as JSON")
    add_reading_options(p)
    p.set_defaults(func=_run)


def _run(args) -> int:
    from vision.commands.serve import bind_socket

    rec = reading_config(args)
    if os.path.exists(args.store) and not os.path.isdir(args.store):
        raise InputError(f"--store {args.store!r} is not a folder")
    doc_root = args.document_root or os.environ.get(DOC_ROOT_ENV) or None
    if doc_root is not None and not os.path.isdir(doc_root):
        raise InputError(f"--document-root {doc_root!r} is not an existing folder")
    url = args.label_studio_url or os.environ.get(URL_ENV) or None
    if url is not None and not url.startswith(("http://", "https://")):
        raise InputError(f"--label-studio-url {url!r} is not an http(s) URL")
    user, password = (os.environ.get(k) or None for k in AUTH_ENV)
    if (user is None) != (password is None):
        raise InputError(f"basic auth needs both {AUTH_ENV[0]} and {AUTH_ENV[1]}")
    from vision.recognition.models import load_detectors

    load_detectors(rec.models, rec.backend)  # missing or corrupt models: refused now
    os.makedirs(args.store, exist_ok=True)
    sock = bind_socket(args.host, args.port)
    try:
        import logging

        import uvicorn

        from vision.labelling.ml_backend import BackendConfig, create_app

        cfg = BackendConfig(store=args.store, models=args.models, backend=rec.backend,
                            min_confidence=rec.min_confidence, scales=rec.scales,
                            recognition=rec, shape=args.shape,
                            label_studio_url=url, api_key=os.environ.get(API_KEY_ENV) or None,
                            document_root=doc_root,
                            basic_auth=(user, password) if user is not None else None)
        app = create_app(cfg)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("vision.labelling").setLevel(args.log_level.upper())
        if args.json:
            print(json.dumps({"url": f"http://{shown}:{port}", "store": os.path.abspath(args.store),
                              "model_version": app.state.model_version}), flush=True)
        else:
            print(f"paigow label-server: Label Studio ML backend on http://{shown}:{port} "
                  f"(model {app.state.model_version}); annotations stored under "
                  f"{os.path.abspath(args.store)}; Ctrl-C to stop", flush=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level=args.log_level,
                                               access_log=args.log_level in ("info", "debug")))
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass
    finally:
        sock.close()
    print("paigow label-server: stopped", file=sys.stderr)
    return 0
