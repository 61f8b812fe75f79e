"""Revisioned object storage for the embedded API server (memory and SQLite backends).

``open_store("memory")`` or ``open_store("sqlite:PATH")`` gives a ``Store`` (see
``base``). Both backends keep the same contract and pass the same tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import (
    JSON,
    Compacted,
    Event,
    EventType,
    FutureRevision,
    KeyExists,
    KeyNotFound,
    RevisionConflict,
    StorageError,
    Store,
    StoreClosed,
    StoreOpenError,
    Subscriber,
)
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = [
    "JSON",
    "Compacted",
    "Event",
    "EventType",
    "FutureRevision",
    "KeyExists",
    "KeyNotFound",
    "MemoryStore",
    "RevisionConflict",
    "SQLiteStore",
    "StorageError",
    "Store",
    "StoreClosed",
    "StoreOpenError",
    "Subscriber",
    "open_store",
]

_SPEC_HELP = 'expected "memory" or "sqlite:PATH" (e.g. "sqlite:./kubewerk.db")'


def open_store(spec: str, **policy: Any) -> Store:
    """Open the store named by ``spec``: ``"memory"`` or ``"sqlite:PATH"``.

    ``policy`` goes to the store's constructor: ``retain_events`` (int | None, default
    100,000), ``retain_seconds`` (float | None, default 3600), ``clock``, and for SQLite
    only ``durable`` (bool, default False: fsync every commit when True). For SQLite,
    ``~`` is expanded and missing parent directories are created; ``sqlite::memory:``
    opens a private in-memory SQLite database.

    Raises ``ValueError`` for an unknown spec or an option the backend does not take,
    ``StoreOpenError`` if the SQLite file cannot be opened, is corrupt, is not a kubewerk
    store, or is held by another process.
    """
    kind, sep, rest = spec.partition(":")
    if kind == "memory" and not sep:
        if "durable" in policy:
            raise ValueError("the memory store takes no 'durable' option (it is never durable)")
        return _construct(MemoryStore, spec, policy)
    if kind == "sqlite" and sep:
        if not rest:
            raise ValueError(f"store spec {spec!r} names no file: {_SPEC_HELP}")
        if rest == ":memory:":
            return _construct(SQLiteStore, spec, policy, rest)
        path = Path(rest).expanduser()
        if path.is_dir():
            raise StoreOpenError(f"cannot open SQLite store {path}: it is a directory")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreOpenError(
                f"cannot open SQLite store {path}: cannot create its directory: {e}") from e
        return _construct(SQLiteStore, spec, policy, path)
    raise ValueError(f"unknown store spec {spec!r}: {_SPEC_HELP}")


def _construct(cls: Any, spec: str, policy: dict[str, Any], *args: Any) -> Store:
    try:
        store: Store = cls(*args, **policy)
    except TypeError as e:
        raise ValueError(f"bad option for store {spec!r}: {e}") from e
    return store
