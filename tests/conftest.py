"""Project-wide test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The real-world CRD corpus shipped beside the repository (read-only)."""
    if not CORPUS_DIR.is_dir():
        pytest.fail(f"CRD corpus not found at {CORPUS_DIR}")
    return CORPUS_DIR
