"""Generated sections of the docs: a block between two HTML comments that a
script writes (docs/experiments.md's catalog costs and condition
placements), and the check that the file holds what the script would write.
"""

from __future__ import annotations

import re
from pathlib import Path


def wrap(begin: str, end: str, body: str) -> str:
    """The section as the file holds it: the markers on their own lines around ``body``."""
    return f"{begin}\n\n{body.rstrip()}\n\n{end}\n"


def current(path: Path, begin: str, end: str) -> str | None:
    """The section now in ``path`` (markers included), or None if it has none."""
    m = re.search(re.escape(begin) + ".*?" + re.escape(end) + "\n", path.read_text(encoding="utf-8"), re.S)
    return m.group(0) if m else None


def replace(path: Path, begin: str, end: str, text: str) -> None:
    """Replace the section of ``path`` with ``text`` (a ``wrap`` result); a
    file without the section is an error naming the markers."""
    doc = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end) + "\n", re.S)
    if not pattern.search(doc):
        raise SystemExit(f"{path}: no generated section ({begin} ... {end}) to replace")
    path.write_text(pattern.sub(lambda _: text, doc), encoding="utf-8")
