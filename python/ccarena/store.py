"""The results layout: ``results/<scenario name>/<run hash>/``.

A run directory holds ``scenario.json`` (the normalized scenario, the ccarena
version, the backend and the simulator's run statistics) and one Parquet file
per table (summary, flows, samples, queue, transitions, links), plus any figures
and, for a scenario with ``[capture]``, ``capture/<point>.pcapng``; and
``manifest.json``, the list of every file ccarena wrote there (size and
sha256).

Writes are atomic at the directory level: everything is written into a
temporary sibling directory, which is renamed to the run directory only when
complete. A run directory that already exists is replaced atomically (an
exchange of the two directories), so readers see the old run or the new one,
never a mixture; and only when everything in it is ccarena's by its
manifest and it is a simulator run (``refusal``): a file of the user's, or
a kernel run, is never deleted. Files carry no wall-clock time: the same
scenario and seed give byte-identical files (a kernel run's record its
time and host, which it cannot repeat).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import StoreError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CAPTURE_DIR",
    "MANIFEST_FILE",
    "REQUIRED_TABLES",
    "SCENARIO_FILE",
    "TABLES",
    "ArrowTables",
    "ParquetFiles",
    "StoreError",
    "Tables",
    "capture_files",
    "capture_meta",
    "check_target",
    "clean_stale_tmp",
    "default_run_dir",
    "foreign_entry",
    "is_complete",
    "new_kernel_run_dir",
    "refusal",
    "report_refusal",
    "runs_of",
    "write_bytes_atomic",
    "write_dir",
    "write_manifest",
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


def new_kernel_run_dir(name: str, short_hash: str, root: str | Path = DEFAULT_ROOT) -> Path:
    """A new directory for a kernel run of this scenario, beside its
    earlier ones: ``<root>/<name>/<hash>-linux-<UTC time>`` (``-2``, ``-3``
    ... within one second). Kernel runs of one scenario all stay: each is a
    measurement that cannot be made again."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    first = default_run_dir(name, f"{short_hash}-linux-{stamp}", root)
    path, n = first, 1
    while os.path.lexists(path):
        n += 1
        path = first.with_name(f"{first.name}-{n}")
    return path


def runs_of(run_hash: str, backend: str, *directories: str | Path) -> list[Path]:
    """The complete run directories of the scenario ``run_hash`` on
    ``backend`` found directly in ``directories``, oldest name first."""
    found: set[Path] = set()
    for d in directories:
        d = Path(d)
        if not d.is_dir():
            continue
        for p in d.iterdir():
            if p.is_dir() and not p.is_symlink() and _backend_of(p) == backend and is_complete(p, run_hash):
                found.add(p)
    return sorted(found)


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


#: The list of what ccarena wrote into a directory (a run directory, a
#: report): every file with its size and sha256. A directory is ccarena's
#: to replace only when everything in it is listed there, unchanged, or is
#: a subdirectory with a manifest of its own that holds (a run's
#: ``report/``); whatever else is in it is the user's.
MANIFEST_FILE = "manifest.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _owned_subdirs(directory: Path) -> set[str]:
    """Subdirectories (by name) that carry a manifest of their own."""
    return {
        p.name
        for p in directory.iterdir()
        if p.is_dir() and not p.is_symlink() and (p / MANIFEST_FILE).is_file()
    }


def write_manifest(directory: str | Path, written_by: str) -> Path:
    """List every file under ``directory`` (but those of subdirectories
    that have a manifest of their own) in ``directory/manifest.json``."""
    d = Path(directory)
    skip = _owned_subdirs(d)
    files: dict[str, dict[str, Any]] = {}
    for p in sorted(d.rglob("*")):
        rel = p.relative_to(d)
        if rel.parts[0] in skip or rel.as_posix() == MANIFEST_FILE or not p.is_file() or p.is_symlink():
            continue
        files[rel.as_posix()] = {"bytes": p.stat().st_size, "sha256": _sha256(p)}
    path = d / MANIFEST_FILE
    path.write_bytes(_json_bytes({"written_by": written_by, "files": files}))
    return path


def foreign_entry(directory: str | Path) -> str | None:
    """The first thing in ``directory`` that ccarena did not write (its path
    relative to ``directory``), or None when all of it is ccarena's by its
    manifest. A file listed there but since changed counts as the user's."""
    d = Path(directory)
    try:
        manifest = json.loads((d / MANIFEST_FILE).read_text(encoding="utf-8"))
        files = manifest["files"]
        if not isinstance(files, dict):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError):
        return _foreign_in_legacy(d)
    dirs = {parent.as_posix() for rel in files for parent in Path(rel).parents if parent != Path(".")}
    for p in sorted(d.rglob("*")):
        rel = p.relative_to(d)
        key = rel.as_posix()
        if key == MANIFEST_FILE:
            continue
        top = d / rel.parts[0]
        if len(rel.parts) > 1 and top.is_dir() and not top.is_symlink() and (top / MANIFEST_FILE).is_file():
            continue  # judged below, as a directory of its own
        if p.is_symlink():
            return key
        if p.is_dir():
            if (p / MANIFEST_FILE).is_file() and len(rel.parts) == 1:
                inner = foreign_entry(p)
                if inner is not None:
                    return f"{key}/{inner}"
            elif key not in dirs:
                return key
            continue
        want = files.get(key)
        if (
            not isinstance(want, dict)
            or p.stat().st_size != want.get("bytes")
            or _sha256(p) != want.get("sha256")
        ):
            return key
    return None


#: What a run directory held before manifests (ccarena 0.1 before issue
#: 39): exactly these names, the captures only ``*.pcapng`` files.
_LEGACY_ENTRIES = frozenset({SCENARIO_FILE, "timeseries.png", CAPTURE_DIR, *(f"{t}.parquet" for t in TABLES)})


def _foreign_in_legacy(d: Path) -> str | None:
    """A run directory without a manifest (an older ccarena's) is ccarena's
    only when it holds nothing but what such a run wrote, and is complete."""
    for p in sorted(d.iterdir()):
        if p.name not in _LEGACY_ENTRIES or p.is_symlink():
            return f"{p.name}; it has no {MANIFEST_FILE}"
        if p.name == CAPTURE_DIR:
            if not p.is_dir():
                return p.name
            for c in sorted(p.iterdir()):
                if c.is_symlink() or not c.is_file() or not c.name.endswith(".pcapng"):
                    return f"{CAPTURE_DIR}/{c.name}"
        elif not p.is_file():
            return p.name
    if any(d.iterdir()) and not is_complete(d):
        return f"{sorted(p.name for p in d.iterdir())[0]}; it has no {MANIFEST_FILE}"
    return None


def _backend_of(target: Path) -> str | None:
    try:
        meta = json.loads((target / SCENARIO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta.get("backend") if isinstance(meta, dict) else None


def refusal(target: str | Path) -> str | None:
    """Why ``target`` may not be replaced by a new run, or None when it may:
    it is missing, an empty directory, or an earlier simulator run whose
    every file ccarena wrote (``foreign_entry``). A kernel run is never
    replaced: it cannot be made again bit for bit."""
    target = Path(target)
    if not os.path.lexists(target):
        return None
    if target.is_symlink() or not target.is_dir():
        return f"{target}: exists and is not a directory; give --out a new or empty directory"
    if not any(target.iterdir()):
        return None
    if _backend_of(target) == "linux":
        return (
            f"{target}: holds a kernel run, which is never replaced (it cannot be made again); "
            "give --out a new directory"
        )
    bad = foreign_entry(target)
    if bad is not None:
        return (
            f"{target}: holds files ccarena did not write ({bad}); refusing to touch it: "
            "give --out a new or empty directory"
        )
    if not is_complete(target):
        return f"{target}: holds an incomplete run; give --out a new or empty directory"
    return None


def _carry_report(target: Path, tmp: Path, meta: Mapping[str, Any]) -> None:
    """An earlier run's ``report/`` (ccarena's own) stays when the new run
    is the same scenario, same ccarena: the report still describes it."""
    report = target / "report"
    if not report.is_dir() or report.is_symlink() or (tmp / "report").exists():
        return
    try:
        old = json.loads((target / SCENARIO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    same = all(old.get(k) == meta.get(k) for k in ("hash", "backend", "ccarena_version"))
    if same and (report / MANIFEST_FILE).is_file() and foreign_entry(report) is None:
        shutil.copytree(report, tmp / "report", symlinks=True)


def _publish(tmp: Path, target: Path, refuse: Callable[[Path], str | None] | None = None) -> None:
    """Move the complete ``tmp`` directory to ``target``, replacing an
    earlier one that ``refuse`` (default: ``refusal``, a run's rule) allows."""
    if not os.path.lexists(target):
        try:
            os.rename(tmp, target)
            return
        except OSError as e:  # created meanwhile: fall through to replacing it
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
    why = (refuse or refusal)(target)
    if why is not None:
        raise StoreError(why)
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
    import pyarrow.parquet as pq  # loaded only by the backends that build tables in Python

    pq.write_table(table, path, compression="zstd")


class Tables(Protocol):
    """A run's tables, able to write themselves as ``<directory>/<name>.parquet``:
    the simulator's ``_core.Run`` (written by the core), ``ArrowTables``
    (built in Python: the Linux backend) or ``ParquetFiles`` (a Ray
    worker's, as bytes)."""

    def write(self, directory: Path) -> None: ...


@dataclass(frozen=True)
class ArrowTables:
    """Tables built in Python, as pyarrow tables."""

    tables: Mapping[str, pa.Table]

    def write(self, directory: Path) -> None:
        for name, table in self.tables.items():
            write_table(table, directory / f"{name}.parquet")


@dataclass(frozen=True)
class ParquetFiles:
    """Tables already encoded as Parquet files' bytes."""

    files: Mapping[str, bytes]

    def write(self, directory: Path) -> None:
        for name, data in self.files.items():
            (directory / f"{name}.parquet").write_bytes(data)


def write_run(
    target: str | Path,
    meta: Mapping[str, Any],
    tables: Tables | Mapping[str, pa.Table],
    extra: Callable[[Path], None] | None = None,
    captures: Mapping[str, bytes] | None = None,
) -> Path:
    """Write one run directory at ``target`` and return its path.

    ``meta`` becomes ``scenario.json``; each of ``tables`` (``Tables``, or
    a mapping of pyarrow tables) becomes ``<name>.parquet``; each of ``captures`` (point name: pcapng bytes)
    ``capture/<name>.pcapng``; ``extra(tmpdir)`` may add files (figures) before the
    directory is published. On any failure nothing is left behind: neither
    the run directory (an earlier one at ``target`` stays as it was), nor the
    temporary directory, nor parent directories this call created.
    """
    target = Path(target)
    check_target(target)
    parent = target.parent
    if parent.is_dir():
        clean_stale_tmp(parent)
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
        (ArrowTables(tables) if isinstance(tables, Mapping) else tables).write(tmp)
        if captures:
            (tmp / CAPTURE_DIR).mkdir()
            for name, data in captures.items():
                (tmp / CAPTURE_DIR / f"{name}.pcapng").write_bytes(data)
        if extra is not None:
            extra(tmp)
        if os.path.lexists(target):
            _carry_report(target, tmp, meta)
        write_manifest(tmp, f"ccarena {meta.get('ccarena_version', '?')}")
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


def check_target(target: str | Path) -> None:
    """Raise ``StoreError`` (one line) when a run may not be written at
    ``target`` (``refusal``): called before a run starts, so that a refused
    directory costs nothing and nothing is written."""
    why = refusal(target)
    if why is not None:
        raise StoreError(why)


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


_TMP_NAME = re.compile(r"^\..+\.tmp-(?P<pid>\d+)-[0-9a-f]+(\.old|\.spill)?$")
#: A batch of a growing table in a run's spill directory (``spill_dir``).
_SPILL_PART = re.compile(r"^[a-z_]+\.\d{6}\.arrow$")


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


#: What a run's temporary directory can hold while it is written.
_TMP_ENTRIES = frozenset(
    {SCENARIO_FILE, MANIFEST_FILE, "timeseries.png", "report", CAPTURE_DIR, *(f"{t}.parquet" for t in TABLES)}
)


def _tmp_is_ours(p: Path) -> bool:
    """A temporary file, or a temporary directory holding only what a run
    writes (a killed writer's): never a directory of anything else that
    happens to have such a name."""
    if p.is_symlink() or not p.is_dir():
        return True
    return all(c.name in _TMP_ENTRIES or _SPILL_PART.match(c.name) for c in p.iterdir())


def spill_dir(target: str | Path) -> Path:
    """Where a run bound for ``target`` keeps the tables that grow with
    simulated time while it runs (``_core.run``'s ``spill``): beside the
    target (in its nearest existing directory), named as this process's
    temporary directory, so one that a killed run left is removed like its
    other temporary files. The core removes it when the run is closed."""
    t = Path(target).absolute()
    d = t.parent
    while not d.is_dir():
        d = d.parent
    return d / f".{t.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}.spill"


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
        if m is None or _pid_alive(int(m["pid"])) or not _tmp_is_ours(p):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        removed.append(p)
    return removed


def report_refusal(target: str | Path) -> str | None:
    """Why a report may not be written at ``target`` (None when it may):
    it must be new, empty, or an earlier report whose every file ccarena
    wrote (its manifest)."""
    target = Path(target)
    if not os.path.lexists(target):
        return None
    if target.is_symlink() or not target.is_dir():
        return f"{target}: exists and is not a directory; give --out a new or empty directory"
    bad = foreign_entry(target) if any(target.iterdir()) else None
    if bad is not None:
        return (
            f"{target}: holds files ccarena did not write ({bad}); refusing to touch it: "
            "give --out a new or empty directory"
        )
    return None


def write_dir(target: str | Path, fill: Callable[[Path], None], written_by: str) -> Path:
    """Write a directory of ccarena's (a report) at ``target`` as a run is
    written: ``fill(tmpdir)`` writes its files into a temporary sibling,
    which gets a manifest and replaces ``target`` only when
    ``report_refusal`` allows; on failure nothing is left."""
    target = Path(target)
    why = report_refusal(target)
    if why is not None:
        raise StoreError(why)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.mkdir()
        fill(tmp)
        write_manifest(tmp, written_by)
        _publish(tmp, target, report_refusal)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


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
