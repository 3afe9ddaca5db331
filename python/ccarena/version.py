"""The installed package's version: a module of its own, so that the
modules the package's ``__init__`` loads can import it at their top."""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("ccarena")
except metadata.PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"
