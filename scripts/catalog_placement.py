"""Where every catalog id puts its delay, loss and jitter, and its senders'
pacing, receive window, queue and host model, as the Markdown table of
docs/experiments.md ("Where the conditions sit"), read from each id's
full-form scenario (python/ccarena/catalog/placement.py). Nothing is run.

    python3 scripts/catalog_placement.py                              # prints the section
    python3 scripts/catalog_placement.py --write docs/experiments.md  # replaces it there
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ccarena.catalog import docsection, placement


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", metavar="MD", help="replace the generated section of this Markdown file")
    args = p.parse_args()
    text = docsection.wrap(placement.BEGIN, placement.END, placement.table())
    if not args.write:
        print(text, end="")
        return
    docsection.replace(Path(args.write), placement.BEGIN, placement.END, text)
    print(f"{args.write}: condition placements rewritten")


if __name__ == "__main__":
    main()
