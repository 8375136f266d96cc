"""A real PostgreSQL on 127.0.0.1 for DuckLake catalogs shared by several machines.

It is the distribution's own server (Debian's ``postgresql`` package: ``initdb`` and ``pg_ctl``
under ``/usr/lib/postgresql/<version>/bin``), initialised on a temporary directory and listening
on a free loopback port with trust authentication, as user ``postgres``. PostgreSQL refuses to
run as root: as root it runs as ``nobody`` (through ``runuser``), otherwise as the current user.
:func:`stop` shuts it down and deletes the directory; :func:`start` registers that with
``atexit`` too, so an interpreter that ends without a fixture's teardown leaves no server running.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from s3_server import free_port

SUPERUSER = "postgres"
# The unprivileged account a root process runs the server as.
_SERVER_ACCOUNT = "nobody"
INSTALL_HINT = "PostgreSQL's server is not installed: apt-get install postgresql (make test does it)"


def server_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: the newest of the distribution's, else on PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: [int(n) for n in re.findall(r"\d+", p.parts[-3])])
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class PostgresServer:
    """The running server: its port and folder, and how to reach a database on it."""

    port: int
    root: Path
    bin: Path

    def dsn(self, dbname: str = "postgres") -> str:
        """The libpq connection string of database ``dbname`` (what ``postgres:`` catalogs take)."""
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={SUPERUSER}"

    def create_database(self, name: str) -> str:
        """Create database ``name`` (an empty catalog) and return its connection string."""
        _run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, name],
             as_server=False)
        return self.dsn(name)


def _run(args: list[str], as_server: bool = True) -> None:
    """Run a PostgreSQL program, as the server's account when ``as_server``; fail with its output."""
    if as_server and os.geteuid() == 0:
        args = ["runuser", "-u", _SERVER_ACCOUNT, "--", *args]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stdout}{done.stderr}")


def start() -> PostgresServer:
    """Initialise a cluster in a new temporary folder and start it on a free port; returns when
    it accepts connections. Raises RuntimeError (with :data:`INSTALL_HINT`) when not installed."""
    bin_dir = server_bin()
    if bin_dir is None:
        raise RuntimeError(INSTALL_HINT)
    # Not under pytest's tmp_path: its parents are private to root, and the server runs as nobody.
    root = Path(tempfile.mkdtemp(prefix="invarbench-postgres-"))
    if os.geteuid() == 0:
        account = pwd.getpwnam(_SERVER_ACCOUNT)
        os.chown(root, account.pw_uid, account.pw_gid)
    server = PostgresServer(free_port(), root, bin_dir)
    atexit.register(stop, server)
    try:
        # fsync off: a test's catalog need not survive a power cut, and commits wait for no disk.
        _run([str(bin_dir / "initdb"), "-D", str(root / "data"), "-A", "trust", "-U", SUPERUSER,
              "-E", "UTF8", "--no-locale", "--no-sync"])
        _run([str(bin_dir / "pg_ctl"), "-D", str(root / "data"), "-l", str(root / "server.log"), "-w", "-t", "120",
              "-o", f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off", "start"])
    except BaseException:
        stop(server)
        raise
    return server


def running(pid: int) -> bool:
    """Whether process ``pid`` still runs: neither gone nor a zombie (pg_ctl leaves the server to
    init, which reaps it in its own time)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop(server: PostgresServer) -> None:
    """Stop the server (immediately: nothing in it is kept), kill it if it has not ended within
    30 s, and delete its folder. Safe to call twice."""
    pid_file = server.root / "data" / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        pid = None  # never started, or stopped already
    if pid is not None:
        with contextlib.suppress(RuntimeError, OSError, subprocess.TimeoutExpired):
            _run([str(server.bin / "pg_ctl"), "-D", str(server.root / "data"), "-m", "immediate", "-w", "stop"])
        deadline = time.monotonic() + 30
        while running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            if running(pid):
                os.kill(pid, signal.SIGKILL)
    shutil.rmtree(server.root, ignore_errors=True)
