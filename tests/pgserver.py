"""A throwaway PostgreSQL cluster for the tests: ``initdb`` and ``pg_ctl`` from Debian's
``postgresql`` package in a temporary folder, listening on a Unix socket only (no TCP port, so
parallel runs never collide), run as an unprivileged user (PostgreSQL refuses to run as root:
under root the cluster belongs to the ``postgres`` system user the package creates, or to a
``paigow-pg`` user made with ``useradd``).

When the binaries or the driver are missing the tests using it are skipped -- unless
``PAIGOW_REQUIRE_POSTGRES=1`` (set by ``.ci/run``), where they fail naming what is missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

REQUIRED = os.environ.get("PAIGOW_REQUIRE_POSTGRES") == "1"


def _unavailable(why: str):
    if REQUIRED:
        pytest.fail(f"PostgreSQL tests required (PAIGOW_REQUIRE_POSTGRES=1) but {why}",
                    pytrace=False)
    pytest.skip(why)


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (newest Debian version first)."""
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                       key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit()
                       else 0, reverse=True):
        if (Path(cand) / "initdb").is_file() and (Path(cand) / "pg_ctl").is_file():
            return Path(cand)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _run_as(user: str | None, cmd: list[str], **kw) -> subprocess.CompletedProcess:
    if user is not None:
        cmd = ["runuser", "-u", user, "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def _server_user() -> str | None:
    """None when not root (run as ourselves); else an unprivileged system user."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "paigow-pg"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            pass
    r = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        "paigow-pg"], capture_output=True, text=True)
    if r.returncode != 0:
        _unavailable(f"cannot create a user for PostgreSQL: {r.stderr.strip()}")
    return "paigow-pg"


class PgCluster:
    """A running throwaway cluster; :meth:`new_database` gives each test its own database."""

    def __init__(self):
        bindir = find_bindir()
        if bindir is None:
            _unavailable("PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install "
                         "postgresql")
        try:
            import psycopg  # noqa: F401
        except ImportError:
            _unavailable("psycopg not installed: pip install 'psycopg[binary]'")
        self.bindir = bindir
        self.user = _server_user()
        # not under pytest's tmp folder: that one is private to root (0700)
        self.root = Path(tempfile.mkdtemp(prefix="paigow-pg-"))
        os.chmod(self.root, 0o755)
        if self.user is not None:
            shutil.chown(self.root, self.user)
        self.data = self.root / "data"
        self.socket_dir = self.root
        self.port = 5432
        self._n = 0
        r = _run_as(self.user, [str(bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                                "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
                    timeout=300)
        if r.returncode != 0:
            self._cleanup()
            _unavailable(f"initdb failed: {r.stderr.strip()[-500:]}")
        opts = (f"-c listen_addresses='' -k {self.socket_dir} -p {self.port} "
                "-c max_connections=60 -c shared_buffers=16MB -c fsync=on")
        self._opts = opts
        r = _run_as(self.user, [str(bindir / "pg_ctl"), "-D", str(self.data), "-l",
                                str(self.root / "server.log"), "-o", opts, "-w", "-t", "120",
                                "start"], timeout=180)
        if r.returncode != 0:
            log = (self.root / "server.log")
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            self._cleanup()
            _unavailable(f"pg_ctl start failed: {r.stderr.strip()[-300:]} {tail}")
        import psycopg

        self.admin = psycopg.connect(self.url("postgres"), autocommit=True)

    def url(self, dbname: str) -> str:
        """libpq URL of ``dbname`` on this cluster (Unix socket)."""
        return f"postgresql://postgres@/{dbname}?host={self.socket_dir}&port={self.port}"

    def new_database(self) -> str:
        """Create an empty database; returns its URL."""
        self._n += 1
        name = f"audit_{os.getpid()}_{self._n}"
        self.admin.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def pause(self) -> None:
        """Stop the server (``pg_ctl -m fast stop``: sessions get ``AdminShutdown``), keeping
        the cluster for :meth:`resume` (the outage tests)."""
        r = _run_as(self.user, [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m",
                                "fast", "-w", "stop"], timeout=120)
        assert r.returncode == 0, r.stderr

    def resume(self) -> None:
        """Start the server stopped by :meth:`pause` again."""
        r = _run_as(self.user, [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l",
                                str(self.root / "server.log"), "-o", self._opts, "-w", "-t",
                                "120", "start"], timeout=180)
        assert r.returncode == 0, r.stderr

    def stop(self) -> None:
        try:
            self.admin.close()
        except Exception:
            pass
        _run_as(self.user, [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                            "-w", "stop"], timeout=120)
        self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
