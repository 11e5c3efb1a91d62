"""Who may read the display, which Host names it answers, how long a request may take to
arrive (docs/web-api.md, "Access"; issue 42 item 7).

- **Viewer token** (:class:`ViewGuard`): with a viewer token configured, the picture
  (``/snapshot.jpg``, ``/video.mjpeg``), the state (``/api/state``), the round events
  (``/api/events``) and the figures (``/api/stats``; the pit's ``/api/pit`` and ``/api/stats``)
  need it -- or the control token, which opens everything the viewer token opens. It is given as
  ``Authorization: Bearer``, ``X-Token``, a ``?token=`` query or the ``paigow_view`` cookie; a
  page opened with a valid ``?token=`` sets that cookie (:class:`ViewCookie`), so the page's
  ``<img>``, ``EventSource`` and ``fetch`` calls carry it without script. The cookie holds an
  HMAC of the token, not the token. No viewer token: those routes are open (local use).
- **Host check** (:class:`HostCheck`, :func:`host_policy`): a request whose ``Host`` header
  names no host the server was bound for is answered 400 (DNS rebinding: a page of
  ``evil.example`` re-pointed at 127.0.0.1 sends ``Host: evil.example``).
- **Header and body timeouts** (:func:`guarded_h11`): a connection that has not sent a whole
  request head within :data:`HEADER_TIMEOUT_S` (from its opening, or from the end of the
  previous response) is answered 408 and closed; a request body not complete
  :data:`BODY_TIMEOUT_S` after its head is cut off. Slow-loris connections no longer hold
  the server's file descriptors forever.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import re
import socket
from dataclasses import dataclass, field
from typing import Iterable
from urllib.parse import parse_qs

from starlette.requests import Request

__all__ = ["ViewGuard", "ViewCookie", "HostCheck", "HostPolicy", "host_policy",
           "check_host_names", "guarded_h11", "client_gone", "HEADER_TIMEOUT_S", "BODY_TIMEOUT_S",
           "VIEW_COOKIE"]

log = logging.getLogger("vision.web")

#: Seconds a connection may take to send a whole request head (request line and headers).
HEADER_TIMEOUT_S = 10.0
#: Seconds a request body may take to arrive after its head (bodies are at most 16 KiB).
BODY_TIMEOUT_S = 20.0
#: Name of the viewer cookie (an HMAC of the token; HttpOnly, SameSite=Strict, Path=/).
VIEW_COOKIE = "paigow_view"

_LOCAL_NAMES = ("localhost",)


def _cookie_value(token: str) -> str:
    return hmac.new(token.encode(), b"paigow viewer cookie v1", hashlib.sha256).hexdigest()


def _eq(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


class ViewGuard:
    """The viewer check of one app (module docstring).

    Args:
        view_token: the viewer token (None or empty: viewing is open).
        control_token: the control token; it opens the viewer routes too (None: not).
    """

    def __init__(self, view_token: str | None, control_token: str | None = None) -> None:
        self.view_token = view_token or None
        self.tokens = [t for t in (self.view_token, control_token or None) if t]
        self.cookies = [_cookie_value(t) for t in self.tokens]

    @property
    def enabled(self) -> bool:
        """True when the viewer routes need a token."""
        return self.view_token is not None

    def valid(self, given: str | None) -> bool:
        """True when ``given`` is the viewer or the control token (constant-time compare)."""
        ok = False
        for t in self.tokens:
            ok |= bool(given) and _eq(given, t)
        return ok

    def query_token(self, query_string: bytes) -> str | None:
        """The ``token`` of a raw query string (None when absent)."""
        if b"token=" not in query_string:
            return None
        vals = parse_qs(query_string.decode("latin-1")).get("token")
        return vals[0] if vals else None

    def cookie_for(self, token: str) -> str:
        """The ``Set-Cookie`` value that admits the holder of ``token``."""
        return (f"{VIEW_COOKIE}={_cookie_value(token)}; Path=/; HttpOnly; SameSite=Strict")

    def require(self, request: Request) -> None:
        """FastAPI dependency: returns when viewing is open or a valid token comes with the
        request.

        Raises:
            fastapi.HTTPException: 401 without a token, 403 with a wrong one.
        """
        if not self.enabled:
            return
        from fastapi import HTTPException

        given = None
        auth = request.headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        given = given or request.headers.get("x-token") or request.query_params.get("token")
        if given:
            if self.valid(given):
                return
            raise HTTPException(403, "wrong token")
        cookie = request.cookies.get(VIEW_COOKIE)
        if cookie:
            ok = False
            for c in self.cookies:
                ok |= _eq(cookie, c)
            if ok:
                return
            raise HTTPException(403, "wrong token (cookie): open the page with ?token=")
        raise HTTPException(401, "the picture and state need the viewer token: open the page "
                                 "with ?token=, or send Authorization: Bearer / X-Token",
                            headers={"WWW-Authenticate": "Bearer"})


class ViewCookie:
    """ASGI middleware: a GET whose ``?token=`` is a valid token (:class:`ViewGuard`) gets the
    viewer cookie on its response (unless an inner app set it already), so a page opened as
    ``/?token=T`` loads its picture, state and events."""

    def __init__(self, app, guard: ViewGuard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not self.guard.enabled or scope.get("method") != "GET":
            return await self.app(scope, receive, send)
        given = self.guard.query_token(scope.get("query_string") or b"")
        if not given or not self.guard.valid(given):
            return await self.app(scope, receive, send)
        cookie = self.guard.cookie_for(given).encode()

        async def with_cookie(msg):
            if msg["type"] == "http.response.start":
                headers = list(msg.get("headers") or [])
                if not any(k.lower() == b"set-cookie" and v.startswith(VIEW_COOKIE.encode() + b"=")
                           for k, v in headers):
                    headers.append((b"set-cookie", cookie))
                msg = {**msg, "headers": headers}
            await send(msg)

        await self.app(scope, receive, with_cookie)


@dataclass(frozen=True)
class HostPolicy:
    """The ``Host`` names one server answers (:func:`host_policy`).

    Attributes:
        names: exact host names and IP addresses (lower case, IPv6 without brackets).
        suffixes: ``.example.com`` for an allowed ``*.example.com``.
        any_ip: any IP literal is allowed (bound to every interface: a browser page can only
            send an IP literal as Host from that IP's own origin, so no rebinding).
        any_host: ``*`` was given: no check.
    """

    names: frozenset = field(default_factory=frozenset)
    suffixes: tuple = ()
    any_ip: bool = False
    any_host: bool = False

    def allows(self, host_header: str | None) -> bool:
        """True when the ``Host`` header value (``name[:port]``, ``[v6][:port]``) is allowed;
        a missing or malformed header is not."""
        if self.any_host:
            return True
        host = _host_only(host_header)
        if host is None:
            return False
        if host in self.names:
            return True
        try:
            ipaddress.ip_address(host)
            return self.any_ip
        except ValueError:
            pass
        return any(host.endswith(s) for s in self.suffixes)


def _host_only(value: str | None) -> str | None:
    if not value:
        return None
    v = value.strip().lower()
    if v.startswith("["):
        end = v.find("]")
        if end < 0 or (v[end + 1:] and not re.fullmatch(r":[0-9]{1,5}", v[end + 1:])):
            return None
        return v[1:end]
    if v.count(":") == 1:
        v, port = v.split(":")
        if not re.fullmatch(r"[0-9]{1,5}", port):
            return None
    elif ":" in v:
        return None  # an IPv6 literal must be bracketed in Host
    v = v.rstrip(".")
    return v if re.fullmatch(r"[a-z0-9._-]+", v) else None


_NAME = re.compile(r"(\*\.)?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?")


def check_host_names(names: Iterable[str]) -> list[str]:
    """The ``--allowed-host`` values, checked: ``*``, a host name, ``*.domain`` or an IP
    address.

    Raises:
        scoring.errors.InputError: any other value (named).
    """
    from scoring.errors import InputError

    out = []
    for n in names or ():
        v = n.strip()
        if v == "*":
            out.append(v)
            continue
        try:
            out.append(str(ipaddress.ip_address(v.strip("[]"))))
            continue
        except ValueError:
            pass
        if not _NAME.fullmatch(v) or len(v) > 253:
            raise InputError(f"--allowed-host {n!r} is not a host name, *.domain, an IP "
                             "address or *")
        out.append(v.lower().rstrip("."))
    return out


def host_policy(bind_host: str, bound_ip: str, extra: Iterable[str] = ()) -> HostPolicy:
    """The ``Host`` names a server bound at ``bind_host`` (as given: a name or address;
    resolved to ``bound_ip``) answers: the bound name and address; ``localhost`` and the
    loopback addresses when bound to loopback; any IP address, ``localhost`` and this machine's
    name when bound to every interface (``0.0.0.0``, ``::``); and ``extra`` (checked
    ``--allowed-host`` values: names, ``*.domain``, ``*``).

    Returns:
        The :class:`HostPolicy`.
    """
    names: set[str] = set()
    suffixes: list[str] = []
    any_ip = any_host = False
    host = (bind_host or "").strip().strip("[]").lower()
    ip = ipaddress.ip_address(bound_ip.split("%")[0])
    if ip.is_unspecified:
        any_ip = True
        names.update(_LOCAL_NAMES)
        for n in (socket.gethostname(), socket.getfqdn()):
            if n:
                names.add(n.lower().rstrip("."))
    else:
        names.add(str(ip))
        if ip.is_loopback or (getattr(ip, "ipv4_mapped", None) or ip).is_loopback:
            names.update(_LOCAL_NAMES)
            names.update({"127.0.0.1", "::1"})
    if host:
        try:
            names.add(str(ipaddress.ip_address(host)))
        except ValueError:
            names.add(host.rstrip("."))
    for e in extra or ():
        if e == "*":
            any_host = True
        elif e.startswith("*."):
            suffixes.append(e[1:])
        else:
            names.add(e)
    return HostPolicy(frozenset(names), tuple(suffixes), any_ip, any_host)


class HostCheck:
    """ASGI middleware: a request whose ``Host`` header :class:`HostPolicy` does not allow is
    answered 400 (JSON ``detail``) before it reaches the app."""

    def __init__(self, app, policy: HostPolicy) -> None:
        self.app, self.policy = app, policy

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        host = None
        for k, v in scope.get("headers") or ():
            if k == b"host":
                host = v.decode("latin-1")
                break
        if self.policy.allows(host):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        body = json.dumps({"detail": "the Host header names no host this server answers for "
                                     "(paigow serve --allowed-host)"}).encode()
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


async def client_gone(request, exc):
    """Exception handler for ``starlette.requests.ClientDisconnect``: a client that went away
    while its body was read (closed by the body timeout, or by itself) is answered 400 into
    the void, not logged as a server error."""
    from starlette.responses import Response

    return Response(status_code=400)


_REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8"
                    b"\r\ncontent-length: 24\r\nconnection: close\r\n\r\nrequest head too slow.\r\n")


def guarded_h11(header_timeout_s: float = HEADER_TIMEOUT_S,
                body_timeout_s: float = BODY_TIMEOUT_S):
    """uvicorn's h11 protocol class with a header and a body timeout (module docstring); give
    it as ``uvicorn.Config(http=...)``.

    Args:
        header_timeout_s: seconds from a connection's opening (or the end of its previous
            response) to the end of the next request head; past it the connection is answered
            408 when it sent part of a request, and closed.
        body_timeout_s: seconds from the end of a request head to the end of its body; past it
            the connection is closed (the app sees a disconnect).

    Returns:
        A subclass of ``uvicorn.protocols.http.h11_impl.H11Protocol``.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _guard = None
        _phase = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._arm("head")

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow()

        def _follow(self) -> None:
            state = self.conn.their_state
            if state is h11.IDLE:
                if self._phase != "head":
                    self._arm("head")
            elif state is h11.SEND_BODY:
                if self._phase != "body":
                    self._arm("body")
            else:
                self._disarm()

        def _arm(self, phase: str) -> None:
            self._disarm()
            seconds = header_timeout_s if phase == "head" else body_timeout_s
            self._phase = phase
            self._guard = self.loop.call_later(seconds, self._expired, phase)

        def _disarm(self) -> None:
            if self._guard is not None:
                self._guard.cancel()
            self._guard, self._phase = None, None

        def _expired(self, phase: str) -> None:
            self._guard, self._phase = None, None
            if self.transport is None or self.transport.is_closing():
                return
            state = self.conn.their_state
            if phase == "head" and state is h11.IDLE:
                if self.conn.trailing_data[0] and (self.cycle is None
                                                   or self.cycle.response_complete):
                    self.transport.write(_REQUEST_TIMEOUT)  # part of a head came: say why
                log.debug("closing a connection from %s: no request head in %.0f s",
                          self.client, header_timeout_s)
                self.transport.close()
            elif phase == "body" and state is h11.SEND_BODY:
                log.debug("closing a connection from %s: request body not complete in %.0f s",
                          self.client, body_timeout_s)
                self.transport.close()

    return GuardedH11Protocol
