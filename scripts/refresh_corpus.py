#!/usr/bin/env python3
"""Repack the in-repository CRD corpus (``tests/data/corpus``) from a corpus checkout, or
only check that the archives hold exactly that corpus (exit 1 and the differences if not).

The default source is ``../shared/corpus`` beside the repository (the project's own
machines; the benchmarks read it too). The test suite never reads it: it unpacks the
archives (``tests/data/corpus_archives.py``).

Usage::

    .venv/bin/python scripts/refresh_corpus.py [--from DIR] [--check]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_CORPUS = ROOT.parent / "shared" / "corpus"

sys.path.insert(0, str(ROOT))
from tests.data.corpus_archives import (  # noqa: E402
    ARCHIVE_DIR,
    SUFFIX,
    CorpusArchiveError,
    differences,
    pack,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: repack the archives from a corpus directory and print their sizes."""
    ap = argparse.ArgumentParser(
        prog="scripts/refresh_corpus.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--from",
        dest="corpus",
        type=Path,
        default=SHARED_CORPUS,
        help="corpus directory holding crds/ and crd-history/ (default: %(default)s)",
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and list the differences unless the archives hold "
        "exactly the corpus",
    )
    args = ap.parse_args(argv)
    if not (args.corpus / "crds").is_dir() or not (args.corpus / "crd-history").is_dir():
        print(f"error: {args.corpus} has no crds/ and crd-history/ folders", file=sys.stderr)
        return 2
    if args.check:
        try:
            found = differences(args.corpus)
        except (CorpusArchiveError, FileNotFoundError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for line in found:
            print(line)
        return 1 if found else 0
    try:
        sizes = pack(args.corpus)
    except (CorpusArchiveError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for project, size in sizes.items():
        print(f"{size:>9,}  {project}{SUFFIX}")
    print(f"{sum(sizes.values()):>9,}  total in {ARCHIVE_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
