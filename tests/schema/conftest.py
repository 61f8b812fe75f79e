"""Fixtures for the schema tests: corpus CRDs loaded once per session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.schema import CompiledSchema, compile_crd_version

_CRDS: dict[str, dict[str, Any]] = {}


def load_crd(corpus_dir: Path, rel: str) -> dict[str, Any]:
    """One corpus CRD (``owner+repo/file.yaml``), parsed once."""
    if rel not in _CRDS:
        with open(corpus_dir / "crds" / rel, encoding="utf-8") as fh:
            _CRDS[rel] = yaml.load(fh, Loader=yaml.CSafeLoader)
    return _CRDS[rel]


@pytest.fixture(scope="session")
def crd_schema(corpus_dir: Path) -> Any:
    """``crd_schema(rel, version)`` → the compiled schema of a corpus CRD version."""

    def get(rel: str, version: str) -> CompiledSchema:
        return compile_crd_version(load_crd(corpus_dir, rel), version)

    return get


def messages(errors: list[Any]) -> list[str]:
    return [e.message() for e in errors]
