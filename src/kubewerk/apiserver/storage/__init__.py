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
    StoreStats,
    Subscriber,
    UnstorableObject,
)
from .boundary import MAX_STORED_DEPTH
from .encryption import (
    EncryptionConfig,
    EncryptionConfigError,
    UndecryptableValue,
    load_encryption_config,
)
from .memory import DEFAULT_RETAIN_BYTES, MemoryStore
from .sqlite import SQLiteStore

__all__ = [
    "DEFAULT_RETAIN_BYTES",
    "JSON",
    "MAX_STORED_DEPTH",
    "Compacted",
    "EncryptionConfig",
    "EncryptionConfigError",
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
    "StoreStats",
    "Subscriber",
    "UndecryptableValue",
    "UnstorableObject",
    "load_encryption_config",
    "open_store",
]

_SPEC_HELP = 'expected "memory" or "sqlite:PATH" (e.g. "sqlite:./kubewerk.db")'


def open_store(spec: str, **policy: Any) -> Store:
    """Open the store named by ``spec``: ``"memory"`` or ``"sqlite:PATH"``.

    ``policy`` goes to the store's constructor: ``retain_events`` (int | None, default
    100,000), ``retain_seconds`` (float | None, default 3600), ``retain_bytes`` (int |
    None, default 64 MiB: the history's encoded size, bounded at every commit),
    ``clock``, and for SQLite only ``durable`` (bool, default False: fsync every commit
    when True). ``encryption_config`` (a path to a kube-apiserver EncryptionConfiguration
    file, or an ``EncryptionConfig``; kube's ``--encryption-provider-config``) encrypts the
    resources it names at rest (see ``encryption``); the file is read and validated before
    the store is opened (``EncryptionConfigError``, a ``ValueError``, says what is wrong).
    For SQLite, ``~`` is expanded, missing parent directories are created
    with mode 0700 and a new database file with mode 0600 (see ``sqlite``);
    ``sqlite::memory:`` opens a private in-memory SQLite database.

    Raises ``ValueError`` for an unknown spec or an option the backend does not take,
    ``StoreOpenError`` if the SQLite file cannot be opened, is corrupt, is not a kubewerk
    store, or is held by another process.
    """
    config = policy.pop("encryption_config", None)
    if config is not None:
        if not isinstance(config, EncryptionConfig):
            config = load_encryption_config(config)
        policy["encryption"] = config
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
            _make_private_dirs(path.parent)
        except OSError as e:
            raise StoreOpenError(
                f"cannot open SQLite store {path}: cannot create its directory: {e}"
            ) from e
        return _construct(SQLiteStore, spec, policy, path)
    raise ValueError(f"unknown store spec {spec!r}: {_SPEC_HELP}")


def _make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each with mode 0700 (under the umask).

    Unlike ``Path.mkdir(parents=True)``, which gives the parents the default mode, every
    level created here is private; directories that exist are left as they are.
    """
    missing: list[Path] = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for d in reversed(missing):
        d.mkdir(mode=0o700, exist_ok=True)


def _construct(cls: Any, spec: str, policy: dict[str, Any], *args: Any) -> Store:
    try:
        store: Store = cls(*args, **policy)
    except TypeError as e:
        raise ValueError(f"bad option for store {spec!r}: {e}") from e
    return store
