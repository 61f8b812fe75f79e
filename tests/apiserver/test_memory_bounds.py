"""Memory bounds: the stores' history in bytes, and the SQLite files' modes.

(The per-watcher backlog bound is in test_watch_backlog.py.)
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.storage import (
    DEFAULT_RETAIN_BYTES,
    Compacted,
    MemoryStore,
    SQLiteStore,
    Store,
    open_store,
)

MiB = 1024 * 1024
KEY = "/core/configmaps/default/big"
StoreFactory = Callable[..., Store]


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    made: list[Store] = []

    def make(**kw: Any) -> Store:
        s: Store = (
            MemoryStore(**kw)
            if request.param == "memory"
            else SQLiteStore(tmp_path / f"s{len(made)}.db", **kw)
        )
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def big_cm(i: int, size: int = MiB, name: str = "big") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"k": str(i % 10) * size},
    }


# -- history bounded in bytes ----------------------------------------------------------


def test_history_stays_under_retain_bytes_at_every_commit(make_store: StoreFactory) -> None:
    limit = 16 * MiB
    store = make_store(retain_bytes=limit)
    store.create(KEY, big_cm(0))
    for i in range(1, 60):
        store.update(KEY, big_cm(i))
        s = store.stats()
        assert s.history_bytes <= limit, (i, s)
        assert s.history_events == store.revision - store.compacted_revision
    s = store.stats()
    # compacted in batches down to 15/16 of the bound: it keeps most of what it may
    assert s.history_bytes >= limit - limit // 16 - 2 * MiB, s
    assert s.compactions >= 1 and s.compacted_events == store.compacted_revision
    assert s.compacted_events + s.history_events == 60
    assert s.objects == 1 and MiB < s.object_bytes < MiB + 200
    # what is kept is readable; what was compacted answers Compacted
    events = store.events_since("", store.compacted_revision)
    assert [e.revision for e in events] == list(range(store.compacted_revision + 1, 61))
    with pytest.raises(Compacted):
        store.events_since("", store.compacted_revision - 1)
    assert store.get(KEY) is not None and store.get(KEY)["data"]["k"][0] == "9"  # type: ignore[index]


def test_deletes_and_many_keys_count_towards_the_bound(make_store: StoreFactory) -> None:
    limit = 4 * MiB
    store = make_store(retain_bytes=limit)
    for i in range(12):
        store.create(f"/core/configmaps/default/c{i}", big_cm(i, 512 * 1024, f"c{i}"))
        assert store.stats().history_bytes <= limit
    for i in range(12):
        store.delete(f"/core/configmaps/default/c{i}")
        assert store.stats().history_bytes <= limit
    s = store.stats()
    assert (s.objects, s.object_bytes) == (0, 0)
    assert s.compactions >= 2


def test_no_byte_bound_when_none(make_store: StoreFactory) -> None:
    store = make_store(retain_bytes=None)
    store.create(KEY, big_cm(0, 256 * 1024))
    for i in range(1, 40):
        store.update(KEY, big_cm(i, 256 * 1024))
    s = store.stats()
    assert (s.compacted_revision, s.history_events, s.compactions) == (0, 40, 0)
    assert s.history_bytes > 40 * 256 * 1024


def test_an_event_larger_than_the_bound_compacts_everything(make_store: StoreFactory) -> None:
    store = make_store(retain_bytes=MiB // 2)
    store.create(KEY, big_cm(0, 1000))
    store.update(KEY, big_cm(1))
    s = store.stats()
    assert (s.compacted_revision, s.history_events, s.history_bytes) == (2, 0, 0)
    assert store.events_since("", 2) == []
    assert store.get(KEY) is not None


def test_retain_bytes_policy_and_defaults(tmp_path: Path) -> None:
    assert 64 * MiB == DEFAULT_RETAIN_BYTES
    assert MemoryStore().retain_bytes == DEFAULT_RETAIN_BYTES
    s = SQLiteStore(":memory:")
    assert s.retain_bytes == DEFAULT_RETAIN_BYTES
    s.close()
    m = open_store("memory", retain_bytes=MiB)
    assert isinstance(m, MemoryStore) and m.retain_bytes == MiB
    q = open_store(f"sqlite:{tmp_path / 'x.db'}", retain_bytes=None)
    assert isinstance(q, SQLiteStore) and q.retain_bytes is None
    q.close()
    with pytest.raises(ValueError, match="retain_bytes"):
        MemoryStore(retain_bytes=-1)
    with pytest.raises(ValueError, match="retain_bytes"):
        SQLiteStore(":memory:", retain_bytes=-1)


def test_the_periodic_policy_still_applies(make_store: StoreFactory) -> None:
    store = make_store(retain_events=3)
    for i in range(10):
        store.create(f"/core/configmaps/default/c{i}", big_cm(i, 10, f"c{i}"))
    assert store.compact_by_policy() == 7
    s = store.stats()
    assert (s.history_events, s.compactions, s.compacted_events) == (3, 1, 7)


RSS_SCRIPT = textwrap.dedent("""
    from kubewerk.apiserver.storage import MemoryStore

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2 ** 20

    store = MemoryStore()
    key = "/core/configmaps/default/big"
    meta = {"name": "big", "namespace": "default"}
    before = rss_mib()
    store.create(key, {"metadata": meta, "data": {"k": "0" * 2 ** 20}})
    for i in range(400):
        store.update(key, {"metadata": meta, "data": {"k": str(i % 10) * 2 ** 20}})
    print(rss_mib() - before)
""")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc (Linux)")
def test_memory_store_rss_is_bounded_by_the_default_history_bound() -> None:
    """400 updates of a 1 MiB ConfigMap added 401 MiB before; now about the 64 MiB bound."""
    out = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    grew = float(out.stdout.strip())
    assert grew < DEFAULT_RETAIN_BYTES / MiB + 48, f"RSS grew {grew:.0f} MiB"


# -- the SQLite files are private -------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.usefixtures("open_umask")
def test_sqlite_files_and_directories_are_created_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "kubewerk.db"
    store = open_store(f"sqlite:{path}")
    try:
        for i in range(5):
            store.create(
                f"/core/secrets/default/s{i}",
                {"metadata": {"name": f"s{i}"}, "data": {"password": "c2VjcmV0"}},
            )
        files = sorted(p.name for p in path.parent.iterdir())
        assert "kubewerk.db" in files and "kubewerk.db-wal" in files, files
        for name in files:
            assert mode(path.parent / name) == 0o600, (name, oct(mode(path.parent / name)))
    finally:
        store.close()
    assert mode(tmp_path / "new") == 0o700
    assert mode(tmp_path / "new" / "deeper") == 0o700


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.usefixtures("open_umask")
def test_sqlite_store_opened_directly_creates_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "direct.db"
    store = SQLiteStore(path)
    store.create("/core/secrets/default/s", {"metadata": {"name": "s"}})
    store.close()
    assert mode(path) == 0o600


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.usefixtures("open_umask")
def test_an_existing_shared_file_keeps_its_mode_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "shared.db"
    SQLiteStore(path).close()
    path.chmod(0o640)
    with caplog.at_level(logging.WARNING, logger="kubewerk.apiserver.storage"):
        store = SQLiteStore(path)
        store.close()
    assert mode(path) == 0o640
    assert any(
        "shared.db has mode 0640" in r.getMessage() and "chmod 600" in r.getMessage()
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records]
    caplog.clear()
    path.chmod(0o600)
    with caplog.at_level(logging.WARNING, logger="kubewerk.apiserver.storage"):
        SQLiteStore(path).close()
    assert not caplog.records
