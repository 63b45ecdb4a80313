"""The desktop window's own HTTP server: the API under uvicorn in a background thread.

The port is picked by binding a socket to port 0 on 127.0.0.1 and handing that socket to
uvicorn, so no other program can take it between choosing and listening. The server is bound to
the loopback address only; the admin endpoints (upload, approvals) need the admin key, which
is ``CITEWISE_API_KEY`` when the settings have one and otherwise 32 random bytes made for this
run (``secrets.token_urlsafe``), known only to this process and the window it opens: another
program or user on the machine can still read (as with ``citewise serve`` on localhost) but
not upload, delete or approve.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

from pydantic import SecretStr

from citewise.config import Settings
from citewise.errors import DesktopError

LOOPBACK = "127.0.0.1"


class LocalServer:
    """The citewise API on a free port of 127.0.0.1, served from a daemon thread.

    ``settings``: the settings to serve (their ``host`` and ``port`` are replaced; their
    ``api_key`` kept when set, else a random one is made); :meth:`start` builds
    ``create_app`` over them.

    Use as a context manager, or :meth:`start` then :meth:`stop`. :attr:`url` is
    ``http://127.0.0.1:PORT`` and :attr:`api_key` the admin key (a str) once started.
    """

    def __init__(self, settings: Settings) -> None:
        self._given = settings
        self.settings: Settings | None = None
        self.url = ""
        self.api_key = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def port(self) -> int:
        """The port listened on (0 before :meth:`start`)."""
        return int(self.url.rsplit(":", 1)[1]) if self.url else 0

    def start(self, timeout: float = 60.0) -> Self:
        """Bind a free port, start uvicorn and wait until it accepts connections.

        Raises DesktopError when the server does not start within ``timeout`` seconds (the
        message carries what uvicorn reported) and what building the app raises (ConfigError,
        a settings ValidationError)."""
        import uvicorn

        from citewise.api.app import create_app

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, 0))
        port = int(sock.getsockname()[1])
        key = self._given.api_key.get_secret_value() if self._given.api_key is not None else ""
        key = key or secrets.token_urlsafe(32)
        self.settings = self._given.model_copy(
            update={"host": LOOPBACK, "port": port, "api_key": SecretStr(key)})
        app = create_app(self.settings)
        self._socket = sock
        self._server = uvicorn.Server(uvicorn.Config(app, host=LOOPBACK, port=port,
                                                     log_level="warning", lifespan="on"))
        failure: list[BaseException] = []

        def serve() -> None:
            try:
                self._server.run(sockets=[sock])
            except BaseException as err:  # noqa: BLE001 - reported by start(), not lost
                failure.append(err)

        self._thread = threading.Thread(target=serve, name="citewise-desktop-server",
                                        daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if failure or not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                why = repr(failure[0]) if failure else "it did not start in time"
                raise DesktopError(f"the local citewise server on {LOOPBACK}:{port} could not "
                                   f"start: {why}")
            time.sleep(0.02)
        self.url = f"http://{LOOPBACK}:{port}"
        self.api_key = key
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to finish (open streams are closed) and wait up to ``timeout`` s for its
        thread; the port is closed afterwards. Safe to call twice."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
