"""``paigow serve SOURCE``: the dealer display (live picture, hands, results, alerts) over HTTP.

Takes the session options of ``paigow run`` (layout, config, out, json, stable, banker,
table id, audit, models) and runs the same frame loop (:class:`vision.session.Session`), so
``--audit DB`` stores every round before the page shows it. Binds to 127.0.0.1 unless
``--host`` says otherwise. The port is bound here, before uvicorn
starts, so a port in use is an :class:`scoring.errors.InputError` naming it (exit code 2); the
bound socket is handed to uvicorn. Control endpoints (``POST /api/control/reset``) need
``--token`` or the ``PAIGOW_TOKEN`` environment variable; without one they are disabled.

Access (docs/web-api.md, "Access"; :mod:`vision.web.guard`): with ``--view-token`` (or
``PAIGOW_VIEW_TOKEN``) the picture, state, events and figures need it (or the control token);
a non-loopback ``--host`` without a viewer token is refused (exit 2) unless ``--public-view``
says so. Every request's ``Host`` must name the bound host (or ``localhost`` on loopback, or an
``--allowed-host``): else 400. A connection has :data:`vision.web.guard.HEADER_TIMEOUT_S` to
send its request head and :data:`~vision.web.guard.BODY_TIMEOUT_S` its body.

``paigow serve --tables FILE`` watches many tables (docs/pit.md): one worker process per table
(:class:`vision.pit.Pit`), one web server with the pit view at ``/`` and each table's dealer
display at ``/tables/<id>/``.

``GET /healthz`` fails (503) once the camera has been lost for longer than ``--health-grace``
seconds (:mod:`vision.web.health`); every feed gap is logged on stderr with its length.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import socket
import sys
import threading

from scoring.errors import InputError

from vision.commands.common import add_display_options, add_session_options, run_config, serve_config

TOKEN_ENV = "PAIGOW_TOKEN"
VIEW_TOKEN_ENV = "PAIGOW_VIEW_TOKEN"


def register(sub) -> None:
    """Add ``serve`` to the sub-parser collection."""
    p = sub.add_parser("serve", help="dealer display: live picture, hands, results and alerts "
                                     "in a browser",
                       description="Run the recognition pipeline on SOURCE (the same frame "
                                   "loop and options as 'paigow run') and serve the dealer "
                                   "display (docs/web-api.md): GET / (page), /video.mjpeg, "
                                   "/api/state, /api/events (server-sent events). With --audit "
                                   "every round shown is stored first.")
    add_session_options(p, source_optional=True)
    add_display_options(p)
    p.add_argument("--tables", default=None, metavar="FILE",
                   help="tables file (YAML, docs/pit.md): watch many tables, one worker process "
                        "per camera, a pit view at / and each dealer display at /tables/<id>/ "
                        "(instead of SOURCE)")
    p.add_argument("--address", default=None, metavar="RAY",
                   help="with --tables: place the table workers as Ray actors on this Ray "
                        "cluster (ray://HEAD:10001, HOST:6379 or auto; docs/pit.md) instead of "
                        "local processes")
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to bind (default 127.0.0.1; 0.0.0.0 exposes it to the network)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    p.add_argument("--token", default=None,
                   help=f"control token (default: env {TOKEN_ENV}; none: control disabled)")
    p.add_argument("--view-token", default=None,
                   help=f"viewer token: the picture, state, events and figures need it or the "
                        f"control token (default: env {VIEW_TOKEN_ENV}; none: open -- refused "
                        "with a non-loopback --host unless --public-view); open the page as "
                        "/?token=T")
    p.add_argument("--public-view", action="store_true",
                   help="serve the picture and state without a viewer token on a non-loopback "
                        "--host (anyone who reaches the port sees the table)")
    p.add_argument("--allowed-host", action="append", default=None, metavar="NAME",
                   help="a Host name the server also answers (repeatable; *.domain for a "
                        "domain, * for any): the name of a reverse proxy or DNS entry; other "
                        "names than the bound host (and localhost on loopback) get 400")
    p.add_argument("--loop", action="store_true", help="replay a file source when it ends")
    p.add_argument("--no-realtime", action="store_true",
                   help="process file sources as fast as possible instead of at their frame rate")
    p.add_argument("--log-level", default="warning",
                   choices=("critical", "error", "warning", "info", "debug"),
                   help="web server log level (default warning; info also logs each request)")
    p.set_defaults(func=_serve)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (SO_REUSEADDR, like uvicorn).

    Raises:
        InputError: bad port number, unknown host, port in use or not permitted (the message
            names ``host:port``).
    """
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise InputError(f"port {port!r} is not a TCP port number (0..65535)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(f"cannot resolve host {host!r}: {exc}") from None
    family, stype, proto, _, addr = infos[0]
    sock = socket.socket(family, stype, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} on {host} is already in use") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise InputError(f"port {port} on {host}: permission denied") from None
        raise InputError(f"cannot bind {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def make_server(app, feed, log_level: str = "warning", *,
                header_timeout_s: float | None = None, body_timeout_s: float | None = None):
    """A ``uvicorn.Server`` for ``app`` whose shutdown (Ctrl-C, SIGTERM, or :meth:`stop`)
    stops ``feed`` first, which ends the open picture and event streams so the server can
    close its connections gracefully. Its connections have ``header_timeout_s`` to send a
    request head and ``body_timeout_s`` a body (None: :data:`vision.web.guard.HEADER_TIMEOUT_S`,
    :data:`~vision.web.guard.BODY_TIMEOUT_S`; :func:`vision.web.guard.guarded_h11`)."""
    import uvicorn

    from vision.web.guard import BODY_TIMEOUT_S, HEADER_TIMEOUT_S, guarded_h11

    class DisplayServer(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:  # signal handler: must not block
            super().handle_exit(sig, frame)
            threading.Thread(target=feed.stop, daemon=True).start()

        def stop(self) -> None:
            """Shut down from another thread."""
            feed.stop()
            self.should_exit = True

    http = guarded_h11(HEADER_TIMEOUT_S if header_timeout_s is None else header_timeout_s,
                       BODY_TIMEOUT_S if body_timeout_s is None else body_timeout_s)
    config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=2,
                            access_log=log_level in ("info", "debug"), http=http)
    return DisplayServer(config)


@contextlib.contextmanager
def _sigterm_exits():
    """SIGTERM (systemd, docker) ends ``serve`` like Ctrl-C: the server shuts down, then the
    ``finally`` blocks stop the feed or the pit (the open round stored, the annotated video
    closed, every worker and the detector process stopped) and the process exits with 143.
    uvicorn captures SIGTERM while it runs and raises it again once it has shut down, to the
    handler that was there before it: this one (the default handler would kill the process
    before any ``finally`` runs). Only in the main thread (where signals are handled)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_143(signum, frame):
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, exit_143)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _view_token(args) -> str | None:
    """The viewer token: ``--view-token``, else ``PAIGOW_VIEW_TOKEN`` (None: none)."""
    given = getattr(args, "view_token", None)
    return (given if given is not None else os.environ.get(VIEW_TOKEN_ENV)) or None


def access_policy(args, sock: socket.socket, view_token: str | None):
    """The :class:`vision.web.guard.HostPolicy` of a server bound at ``sock`` for ``--host``,
    after the exposure check.

    Raises:
        InputError: a non-loopback address without a viewer token and without
            ``--public-view`` (the picture and state would be open to the network), or a bad
            ``--allowed-host``.
    """
    import ipaddress

    from vision.web.guard import check_host_names, host_policy

    extra = check_host_names(getattr(args, "allowed_host", None) or ())
    bound = sock.getsockname()[0]
    ip = ipaddress.ip_address(bound.split("%")[0])
    loopback = (getattr(ip, "ipv4_mapped", None) or ip).is_loopback
    if not loopback and view_token is None and not getattr(args, "public_view", False):
        raise InputError(f"--host {args.host} exposes the table's picture and state to the "
                         f"network: give --view-token T (or {VIEW_TOKEN_ENV}), or "
                         "--public-view to serve them without one")
    if not loopback and view_token is None:
        print(f"paigow serve: WARNING: the picture and state on {args.host} are open to "
              "anyone who reaches the port (--public-view)", file=sys.stderr, flush=True)
    return host_policy(args.host, bound, extra)


def raise_open_files_limit(want: int = 65536) -> None:
    """Raise this process's soft limit of open files towards its hard limit (at most
    ``want``): every connection is a file descriptor, and at the common 1024 a thousand idle
    connections stopped the server accepting (issue 42 item 7)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = want if hard == resource.RLIM_INFINITY else min(want, hard)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ImportError, ValueError, OSError):
        pass


def _serve(args) -> int:
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    from vision.web.guard import check_host_names

    check_host_names(getattr(args, "allowed_host", None) or ())  # refused before anything
    if args.tables is not None:
        if args.source is not None:
            raise InputError("give SOURCE or --tables FILE, not both")
        return _serve_tables(args, token)
    if args.source is None:
        raise InputError("serve needs SOURCE (a camera, stream or file) or --tables FILE")
    if getattr(args, "address", None):
        raise InputError("--address places the workers of --tables FILE on Ray: give "
                         "--tables FILE")
    from vision.io.capture import open_source
    from vision.sources import expand_credentials, is_live

    # cheap checks first: the settings and the source, then the port; the models last.
    # A camera or stream that is down is waited for (the display says so, /healthz 503);
    # a file that does not exist is refused at once.
    args.wait_at_start = True
    # a live table reads in bfloat16 unless --backend or the config file says otherwise
    # (vision.recognition.backends.LIVE_BACKEND)
    from vision.recognition.backends import live_backend

    args.default_backend = live_backend()
    cfg = run_config(args)
    display = serve_config(args)
    if is_live(args.source):
        expand_credentials(args.source)  # a ${NAME} that is not set: refused now
    else:
        open_source(args.source).close()
    sock = bind_socket(args.host, args.port)
    try:
        from vision.web import feed as feed_mod
        from vision.web.app import create_app

        view_token = _view_token(args)
        hosts = access_policy(args, sock, view_token)
        raise_open_files_limit()
        feed = feed_mod.PipelineFeed(args.source, config=cfg, loop=args.loop,
                                     realtime=not args.no_realtime)
        app = create_app(feed, token=token, health_grace_s=display.health_grace_s,
                         layout_file=getattr(args, "layout", None), view_token=view_token,
                         allowed_hosts=hosts)
        server = make_server(app, feed, args.log_level)
        host = sock.getsockname()[0]
        shown = f"[{host}]" if ":" in host else host
        logging.getLogger("vision.web").setLevel(args.log_level.upper())
        # timestamped lines on stderr (feed gaps with their true length, errors), so a
        # supervisor's log can be read against /healthz
        logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        print(f"paigow serve: dealer display on http://{shown}:{sock.getsockname()[1]}/ "
              f"(control {'enabled' if token else 'disabled'}; viewer token "
              f"{'required' if view_token else 'not required'}); Ctrl-C to stop", flush=True,
              file=sys.stderr if args.json else sys.stdout)
        feed.start()
        try:
            with _sigterm_exits():
                server.run(sockets=[sock])
        finally:
            feed.stop(timeout=30.0)
        summary = getattr(feed, "summary", None)
        if summary:
            from vision.commands.run import report

            report(summary, args.json)
    finally:
        sock.close()
    return 0


# session options that belong in the tables file with --tables (named when given)
_PER_TABLE = ("layout", "config", "out", "stable", "banker", "table_id", "audit", "audit_frames",
              "min_confidence", "models", "scales")


def _serve_tables(args, token: str | None, pit_factory=None) -> int:
    """``paigow serve --tables FILE``: the pit (docs/pit.md)."""
    from vision.pit import Pit, load_tables

    given = [k for k in _PER_TABLE if getattr(args, k, None) is not None]
    if given or args.json:
        name = "--" + (given[0] if given else "json").replace("_", "-")
        raise InputError(f"{name} is a per-table setting with --tables: write it in the "
                         "tables file")
    specs = load_tables(args.tables)
    for spec in specs:  # every table's settings and file checked before any worker starts
        spec.check_source()
        spec.run_config()
    sock = bind_socket(args.host, args.port)
    try:
        from vision.web.pit import create_pit_app

        if pit_factory is None and getattr(args, "address", None):
            from vision.pit.ray_pit import RayPit

            def pit_factory(specs):
                return RayPit(specs, address=args.address)
        view_token = _view_token(args)
        hosts = access_policy(args, sock, view_token)
        raise_open_files_limit()
        pit = (pit_factory or Pit)(specs)
        app = create_pit_app(pit, token=token, view_token=view_token, allowed_hosts=hosts)
        server = make_server(app, pit, args.log_level)
        host = sock.getsockname()[0]
        shown = f"[{host}]" if ":" in host else host
        logging.getLogger("vision.pit").setLevel(args.log_level.upper())
        print(f"paigow serve: pit view of {len(specs)} table(s) on "
              f"http://{shown}:{sock.getsockname()[1]}/ (dealer displays at /tables/<id>/); "
              "Ctrl-C to stop", flush=True)
        try:
            with _sigterm_exits():
                pit.start()
                server.run(sockets=[sock])
        finally:
            pit.stop()
    finally:
        sock.close()
    return 0
