"""The results layout: ``results/<scenario name>/<run hash>/``.

A run directory holds ``scenario.json`` (the normalized scenario, the ccarena
version, the backend and the simulator's run statistics) and one Parquet file
per table (summary, flows, samples, queue, transitions, links), plus any figures
and, for a scenario with ``[capture]``, ``capture/<point>.pcapng``.

Writes are atomic at the directory level: everything is written into a
temporary sibling directory, which is renamed to the run directory only when
complete. A run directory that already exists is replaced atomically (an
exchange of the two directories), so readers see the old run or the new one,
never a mixture. Files carry no wall-clock time: the same scenario and seed
give byte-identical files.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import StoreError

__all__ = [
    "CAPTURE_DIR",
    "REQUIRED_TABLES",
    "SCENARIO_FILE",
    "TABLES",
    "StoreError",
    "capture_files",
    "capture_meta",
    "clean_stale_tmp",
    "default_run_dir",
    "is_complete",
    "write_bytes_atomic",
    "write_run",
]

TABLES = ("summary", "flows", "samples", "queue", "transitions", "links")
#: Tables every run directory holds; runs written before networks existed
#: lack ``links`` (``Results`` derives it from their summary).
REQUIRED_TABLES = tuple(t for t in TABLES if t != "links")
SCENARIO_FILE = "scenario.json"
#: Packet captures of a run with ``[capture]``: ``capture/<point>.pcapng``.
CAPTURE_DIR = "capture"
DEFAULT_ROOT = Path("results")


def default_run_dir(name: str, run_hash: str, root: str | Path = DEFAULT_ROOT) -> Path:
    """``<root>/<scenario name>/<run hash>``; the name is made safe as a directory name."""
    safe = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in name).strip(".") or "scenario"
    return Path(root) / safe / run_hash


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths with renameat2(RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


#: What ccarena itself writes into a run directory (plus ``report/`` from
#: ``ccarena report`` and figures, ``*.png``/``*.svg``); a directory holding
#: anything else is the user's.
_RUN_ENTRIES = frozenset(
    {SCENARIO_FILE, "timeseries.png", "report", CAPTURE_DIR, *(f"{t}.parquet" for t in TABLES)}
)


def _is_replaceable(target: Path) -> bool:
    """Only an empty directory or a complete ccarena run directory with
    nothing foreign in it may be replaced: its scenario.json is ccarena's
    (names a hash) and every table is there."""
    if target.is_symlink() or not target.is_dir():
        return False
    names = {p.name for p in target.iterdir()}
    if not names:
        return True
    ours = all(n in _RUN_ENTRIES or n.endswith((".png", ".svg")) for n in names)
    captures = target / CAPTURE_DIR
    if CAPTURE_DIR in names and (
        captures.is_symlink()
        or not captures.is_dir()
        or not all(p.name.endswith(".pcapng") and p.is_file() for p in captures.iterdir())
    ):
        return False
    return ours and is_complete(target)


def _publish(tmp: Path, target: Path) -> None:
    """Move the complete ``tmp`` directory to ``target``, replacing an earlier run."""
    if not os.path.lexists(target):
        try:
            os.rename(tmp, target)
            return
        except OSError as e:  # created meanwhile: fall through to replacing it
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
    if not _is_replaceable(target):
        raise StoreError(
            f"{target}: exists and is not a ccarena run directory (incomplete, or holding other files); "
            "refusing to replace it: give --out an empty or new directory"
        )
    if _exchange(tmp, target):
        shutil.rmtree(tmp)  # now holds the earlier run
        return
    # No RENAME_EXCHANGE (old kernel or filesystem): two renames. There is a
    # moment without `target`, but never a half-written one.
    old = tmp.with_name(tmp.name + ".old")
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old)


def _json_bytes(doc: Any) -> bytes:
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode()


def capture_meta(captures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What ``scenario.json`` says of each capture file: its point, path in
    the run directory, frames written and frames past ``max_packets``."""
    return [
        {
            "point": c["name"],
            "file": f"{CAPTURE_DIR}/{c['name']}.pcapng",
            "frames": int(c["frames"]),
            "skipped": int(c["skipped"]),
        }
        for c in captures
    ]


def capture_files(captures: list[dict[str, Any]]) -> dict[str, bytes]:
    """Point name: pcapng bytes, for ``write_run``."""
    return {c["name"]: c["pcapng"] for c in captures}


def write_table(table: pa.Table, path: Path) -> None:
    """One table as Parquet (zstd); deterministic for the same table and pyarrow."""
    pq.write_table(table, path, compression="zstd")


def write_run(
    target: str | Path,
    meta: Mapping[str, Any],
    tables: Mapping[str, pa.Table],
    extra: Callable[[Path], None] | None = None,
    captures: Mapping[str, bytes] | None = None,
) -> Path:
    """Write one run directory at ``target`` and return its path.

    ``meta`` becomes ``scenario.json``; each of ``tables`` becomes
    ``<name>.parquet``; each of ``captures`` (point name: pcapng bytes)
    ``capture/<name>.pcapng``; ``extra(tmpdir)`` may add files (figures) before the
    directory is published. On any failure nothing is left behind: neither
    the run directory (an earlier one at ``target`` stays as it was), nor the
    temporary directory, nor parent directories this call created.
    """
    target = Path(target)
    if os.path.lexists(target) and not _is_replaceable(target):
        raise StoreError(
            f"{target}: exists and is not a ccarena run directory (incomplete, or holding other files); "
            "refusing to replace it: give --out an empty or new directory"
        )
    parent = target.parent
    created: list[Path] = []
    p = parent.absolute()
    while not p.exists():
        created.append(p)
        p = p.parent
    tmp = parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        (tmp / SCENARIO_FILE).write_bytes(_json_bytes(dict(meta)))
        for name, table in tables.items():
            write_table(table, tmp / f"{name}.parquet")
        if captures:
            (tmp / CAPTURE_DIR).mkdir()
            for name, data in captures.items():
                (tmp / CAPTURE_DIR / f"{name}.pcapng").write_bytes(data)
        if extra is not None:
            extra(tmp)
        _publish(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in created:  # innermost first
            try:
                d.rmdir()
            except OSError:
                break
        raise
    return target


def is_complete(run_dir: str | Path, run_hash: str | None = None) -> bool:
    """A finished run directory: its ``scenario.json`` (naming ``run_hash``
    when given) and every table are there. Directories appear only complete
    (``write_run``), so this guards against foreign or older layouts, not
    half-written runs."""
    d = Path(run_dir)
    try:
        meta = json.loads((d / SCENARIO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict) or not isinstance(meta.get("hash"), str):
        return False  # not a scenario.json ccarena wrote
    if run_hash is not None and meta.get("hash") != run_hash:
        return False
    return all((d / f"{t}.parquet").is_file() for t in REQUIRED_TABLES)


_TMP_NAME = re.compile(r"^\..+\.tmp-(?P<pid>\d+)-[0-9a-f]+(\.old)?$")


def _pid_alive(pid: int) -> bool:
    """Is process ``pid`` still running? A zombie is not: a killed sweep's
    worker that exited mid-write (its parent gone, ``executors._watch_parent``)
    stays a zombie until an init that may never reap it does, and its
    temporary directory must not outlive it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc here: trust kill(0)
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def clean_stale_tmp(directory: str | Path) -> list[Path]:
    """Remove temporary run directories (and files) that a killed writer left
    in ``directory``: those whose writing process no longer exists. Returns
    what was removed."""
    d = Path(directory)
    removed: list[Path] = []
    if not d.is_dir():
        return removed
    for p in d.iterdir():
        m = _TMP_NAME.match(p.name)
        if m is None or _pid_alive(int(m["pid"])):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        removed.append(p)
    return removed


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write a file under a temporary name in the same directory, then rename
    it over ``path``: readers see the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
