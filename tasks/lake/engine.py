"""One DuckDB version for the library, the shell and the extensions.

DuckDB loads an extension only into the exact version it was built for, and a shell refuses a
database file written in a newer storage format than its own. So the project pins ``duckdb``,
``duckdb-cli`` (the shell, ``.venv/bin/duckdb``) and the ``duckdb-extension-*`` wheels to one
version (``constraints.txt``), loads extensions by path from their wheels (never ``INSTALL``:
nothing is downloaded at run time), and :func:`check_versions` says at start-up which part
disagrees with the library.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from tasks.errors import ConfigError
from tasks.environment import thread_count
from tasks.lake.config import DEFAULT_MEMORY_LIMIT, DUCKDB_THREADS_ENV, WarehouseConfig

# The extensions the product uses, by their file names (each wheel is duckdb-extension-<name with dashes>).
EXTENSIONS = ("ducklake", "sqlite_scanner", "httpfs", "postgres_scanner")

# An extension file ends with 8 metadata fields of 32 bytes, then a 256-byte signature; the
# DuckDB version the file was built for is the sixth field (the fields are stored last first).
_FOOTER = 512
_FIELD = 32
_VERSION_FIELD = 5

# DuckDB never fetches an extension: they are loaded by path (load_sql).
_NO_DOWNLOADS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}

_FIX = "run `make install` (it installs duckdb, duckdb-cli and the extension wheels of one version)"


@dataclass(frozen=True)
class Limits:
    """What each DuckDB the product opens may use: ``memory_limit`` (DuckDB's size syntax) and
    ``spill_dir``, the local folder it spills to beyond that ('' for the system temp dir), from
    the ``[warehouse]`` configuration (:meth:`of`)."""

    memory_limit: str = DEFAULT_MEMORY_LIMIT
    spill_dir: str = ""

    @classmethod
    def of(cls, warehouse: WarehouseConfig) -> Limits:
        """The limits a ``[warehouse]`` section configures."""
        return cls(warehouse.memory_limit, warehouse.spill_dir)

    def settings(self) -> dict[str, str]:
        """DuckDB's settings for one new database: its memory limit and a spill folder of its own.

        DuckDB names its spill files by block size only, so two databases spilling to one folder
        would overwrite each other's: each gets a subfolder, which DuckDB creates on its first
        spill and removes when it closes (a killed process leaves it behind, in a temp folder).
        """
        base = Path(self.spill_dir).expanduser() if self.spill_dir else Path(tempfile.gettempdir()) / "invarbench-spill"
        base.mkdir(parents=True, exist_ok=True)
        folder = base.resolve() / f"duckdb-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        return {"memory_limit": _size(self.memory_limit), "temp_directory": str(folder)}


def _size(memory_limit: str) -> str:
    """``memory_limit`` in DuckDB's size syntax: a share (``50%``) of the memory DuckDB sees."""
    if not memory_limit.endswith("%"):
        return memory_limit
    return f"{int(_memory_seen() * float(memory_limit[:-1]) / 100) >> 20}MiB"


@functools.cache
def _memory_seen() -> int:
    """The memory DuckDB sees (the machine's, or a container's limit), in bytes: its default
    limit is 80% of it, and DuckDB alone reads the container limits of every platform."""
    with duckdb.connect() as con:
        limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    number, unit = limit.split()
    units = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
    return int(float(number) * units[unit] / 0.8)


def connect(database: str = ":memory:", limits: Limits | None = None, read_only: bool = False,
            **config: Any) -> duckdb.DuckDBPyConnection:
    """A new DuckDB database (``database``: a file, or ``:memory:``) within ``limits`` (the default
    ones when None): the one way the product opens DuckDB, so that every connection is bounded and
    never downloads an extension (they are loaded by path, :func:`load_extension`). ``config``
    adds DuckDB settings; ``INVARBENCH_DUCKDB_THREADS`` sets its threads (unset: DuckDB's default,
    one per core)."""
    # Unsigned extensions allowed: the product loads only its wheels' files (load_sql), and has
    # DuckDB check each file's signature once per process (_signature_checked); DuckDB would check
    # it again in every database, 0.15-0.3 s of CPU each, and a sweep opens several.
    config = {**_NO_DOWNLOADS, "allow_unsigned_extensions": True, **config}
    threads = thread_count(DUCKDB_THREADS_ENV)
    if threads:
        config.setdefault("threads", threads)
    return duckdb.connect(database, read_only=read_only, config={**config, **(limits or Limits()).settings()})


def library_version() -> str:
    """The DuckDB version of the Python library, without a leading ``v`` (``1.5.5``)."""
    return duckdb.__version__


def _package_dir(module: str) -> Path | None:
    # find_spec, not import: an extension wheel's package is data only, and the check must be cheap
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def extension_file(name: str) -> Path | None:
    """The file of extension ``name`` in its wheel (``duckdb_extension_<name>/extensions/v<x>/``),
    preferring the library's version folder; None when the wheel is not installed."""
    root = _package_dir(f"duckdb_extension_{name}")
    if root is None:
        return None
    preferred = root / "extensions" / f"v{library_version()}" / f"{name}.duckdb_extension"
    if preferred.is_file():
        return preferred
    return next(iter(sorted((root / "extensions").glob(f"v*/{name}.duckdb_extension"))), None)


def built_for(path: Path) -> str:
    """The DuckDB version an extension file was built for, read from its metadata footer."""
    with open(path, "rb") as f:
        f.seek(-_FOOTER, 2)
        field = f.read(_FOOTER)[_VERSION_FIELD * _FIELD:(_VERSION_FIELD + 1) * _FIELD]
    return field.rstrip(b"\0").decode("ascii", "replace").lstrip("v")


def shell_binary() -> Path | None:
    """The DuckDB shell that the ``duckdb-cli`` wheel ships (``.venv/bin/duckdb`` runs it); None without it."""
    root = _package_dir("duckdb_cli")
    binary = root / "duckdb" if root else None
    return binary if binary and binary.is_file() else None


def shell_version(binary: Path) -> str:
    """The version ``binary --version`` reports (``1.5.5``)."""
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"v?(\d+\.\d+\.\d+)", out)
    return found.group(1) if found else out.strip()


def _installed_shell_version() -> str | None:
    # the wheel's version is the binary's; reading it costs no process (this runs at every start-up)
    try:
        return importlib.metadata.version("duckdb-cli")
    except importlib.metadata.PackageNotFoundError:
        return None


def version_problems() -> list[str]:
    """Each way the shell or an extension disagrees with the library's DuckDB version (none: all agree)."""
    want = library_version()
    problems = []
    shell = _installed_shell_version()
    if shell is None or shell_binary() is None:
        problems.append("the DuckDB shell (duckdb-cli) is not installed")
    elif shell != want:
        problems.append(f"the DuckDB shell (duckdb-cli) is {shell}")
    for name in EXTENSIONS:
        path = extension_file(name)
        if path is None:
            problems.append(f"the {name} extension (duckdb-extension-{name.replace('_', '-')}) is not installed")
        elif (got := built_for(path)) != want:
            problems.append(f"the {name} extension at {path} is built for DuckDB {got}")
    return problems


@functools.cache
def check_versions() -> None:
    """Raise :class:`ConfigError` naming every part whose DuckDB version is not the library's.

    Cached: the installed packages do not change while a process runs.
    """
    problems = version_problems()
    if problems:
        raise ConfigError(f"DuckDB versions disagree: the library is {library_version()}, but "
                          f"{'; '.join(problems)}: {_FIX}")


def load_sql(name: str) -> str:
    """The ``LOAD`` statement of extension ``name`` by path from its wheel (raises ConfigError when
    the wheel is missing or built for another DuckDB)."""
    path = extension_file(name)
    if path is None:
        raise ConfigError(f"the {name} extension is not installed: {_FIX}")
    if built_for(path) != library_version():
        raise ConfigError(f"the {name} extension at {path} is built for DuckDB {built_for(path)}, "
                          f"the library is {library_version()}: {_FIX}")
    _signature_checked(path, path.stat().st_mtime_ns)
    return f"LOAD {sql_literal(str(path))};"


@functools.cache
def _signature_checked(path: Path, mtime_ns: int) -> None:
    """Load the extension at ``path`` once into a database that takes signed extensions only, so
    that DuckDB checks its signature (an invalid one raises); once per process and file version."""
    with duckdb.connect(config=_NO_DOWNLOADS) as con:
        con.execute(f"LOAD {sql_literal(str(path))};")


def load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Load extension ``name`` into ``con`` by path from its wheel (see :func:`load_sql`)."""
    con.execute(load_sql(name))


def sql_literal(value: str) -> str:
    """``value`` as an SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def shell_command(catalog: Path, limits: Limits, init: Path | None = None) -> list[str]:
    """The command that opens ``catalog`` read-only in this installation's DuckDB shell, within
    ``limits`` like the product's own connections, reading the SQL file ``init`` first when given
    (``-cmd ".read …"``: ``-init`` would also print a notice on standard error).

    Raises ConfigError when the shell is missing or its binary reports another version than the
    library that wrote the catalog (the start-up check reads only the wheel's version).
    """
    binary = shell_binary()
    if binary is None:
        raise ConfigError(f"the DuckDB shell (duckdb-cli) is not installed: {_FIX}")
    if (got := shell_version(binary)) != library_version():
        raise ConfigError(f"the DuckDB shell {binary} is {got}, the library is {library_version()}: {_FIX}")
    limit = " ".join(f"SET {name} = {sql_literal(value)};" for name, value in limits.settings().items())
    read = ["-cmd", f".read {sql_literal(str(init))}"] if init else []
    return [str(binary), "-readonly", "-cmd", limit, *read, str(catalog)]
