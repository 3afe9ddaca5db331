"""The docs say what is true now: every command, flag, make target, port
and file of the repository that README.md and docs/*.md name exists (the
journal, docs/journal/, is history and is not checked)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ccarena.cli import _parser

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Top-level folders whose files the docs name.
TREES = ("crates", "python", "scripts", "benches", "conformance", "docs", "tests", "scenarios", "examples")


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {o for a in p._actions for o in a.option_strings}


def _commands() -> list[tuple[Path, str]]:
    """Every ``ccarena ...`` command line in the pages' code (fenced and inline)."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        code = re.findall(r"`([^`\n]+)`", text)
        fence: list[str] | None = None
        for line in text.splitlines():
            if line.startswith("```"):
                if fence is None:
                    fence = [] if line[3:].strip() in ("", "sh", "bash", "console") else None
                    if fence is None:
                        fence = ["<not shell>"]
                else:
                    if fence[:1] != ["<not shell>"]:
                        code.append("\n".join(fence))
                    fence = None
            elif fence is not None:
                fence.append(line)
        for block in code:
            for line in block.splitlines():
                line = line.strip().removeprefix("$ ").replace('sudo "$(command -v ccarena)"', "ccarena")
                line = line.removeprefix("sudo ")
                m = re.match(r"ccarena\s+([a-z][a-z-]*)((?:\s+[^#]*)?)", line)
                if m:
                    out.append((page, f"{m.group(1)}{m.group(2)}"))
    return out


def test_every_documented_command_and_flag_exists():
    top = _parser()
    subs = _subparsers(top)
    bad = []
    for page, cmd in _commands():
        words = cmd.split()
        name = words[0]
        if name not in subs:
            bad.append((page.name, cmd, name))
            continue
        p = subs[name]
        nested = _subparsers(p)
        if nested and len(words) > 1 and not words[1].startswith("-"):
            if words[1] not in nested:
                bad.append((page.name, cmd, words[1]))
                continue
            p = nested[words[1]]
        known = _options(p) | _options(top)
        for w in words[1:]:
            flag = w.split("=", 1)[0].rstrip(",;)")
            if re.fullmatch(r"--[a-z][a-z-]*", flag) and flag not in known:
                bad.append((page.name, cmd, flag))
    assert not bad, bad


def test_every_documented_make_target_exists():
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", (ROOT / "Makefile").read_text(), re.M))
    bad = []
    for page in PAGES:
        for t in re.findall(r"`make ([a-z][a-z0-9-]*)", page.read_text(encoding="utf-8")):
            if t not in targets:
                bad.append((page.name, t))
    assert not bad, bad


def test_every_documented_file_exists():
    pattern = re.compile(r"(?<![\w/.-])((?:" + "|".join(TREES) + r")/[\w./*<>-]*[\w*>])")
    bad = []
    for page in PAGES:
        base = page.parent
        text = page.read_text(encoding="utf-8")
        for m in pattern.finditer(text):
            path = m.group(1).rstrip(".")
            if "<" in path or "*" in path:  # a pattern: its folder must exist
                folder = path.split("<")[0].split("*")[0].rsplit("/", 1)[0]
                if not (ROOT / folder).exists():
                    bad.append((page.name, path))
                continue
            if not ((ROOT / path).exists() or (base / path).exists()):
                bad.append((page.name, path))
        for link in re.findall(r"\]\(([^)#\s]+)", text):
            if "://" in link:
                continue
            if not (base / link).exists():
                bad.append((page.name, link))
    assert not bad, bad


def test_the_documented_port_is_the_backends():
    from ccarena.linux.backend import PORT_BASE

    for page in PAGES:
        for port in re.findall(r"port (\d{4,5}) \+", page.read_text(encoding="utf-8")):
            assert int(port) == PORT_BASE, (page.name, port)


@pytest.mark.parametrize("page", ["README.md"])
def test_the_readme_is_a_guide_of_about_300_lines(page):
    assert len((ROOT / page).read_text(encoding="utf-8").splitlines()) <= 320
