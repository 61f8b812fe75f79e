"""SQLite store: every acknowledged write survives SIGKILL of the writing process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.storage import SQLiteStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")

# The child writes as fast as it can (creates, updates, deletes over 40 keys) and prints
# one line per write *after* the store call returned, i.e. after the write was
# acknowledged: "<revision> <type> <key> <value>".
CHILD = r"""
import sys
from kubewerk.apiserver.storage import SQLiteStore, KeyNotFound

store = SQLiteStore(sys.argv[1], durable=sys.argv[2] == "durable")
out = sys.stdout
out.write("ready\n")
out.flush()
i = 0
while True:
    key = f"/core/configmaps/ns{i % 3}/o{i % 40}"
    cur = store.get(key)
    if cur is None:
        obj = store.create(key, {"metadata": {"name": f"o{i % 40}"}, "v": i})
        kind = "ADDED"
    elif i % 7 == 0:
        obj = store.delete(key, int(cur["metadata"]["resourceVersion"]))
        kind = "DELETED"
    else:
        obj = store.update(key, {"metadata": {"name": f"o{i % 40}"}, "v": i},
                           int(cur["metadata"]["resourceVersion"]))
        kind = "MODIFIED"
    out.write(f"{obj['metadata']['resourceVersion']} {kind} {key} {obj['v']}\n")
    out.flush()
    i += 1
"""


def _run_and_kill(
    path: Path, mode: str, min_acks: int, max_seconds: float
) -> list[tuple[int, str, str, int]]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), mode], stdout=subprocess.PIPE, env=env, text=True
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline() == "ready\n"
        acks: list[tuple[int, str, str, int]] = []
        deadline = time.monotonic() + max_seconds
        while len(acks) < min_acks and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            rev, kind, key, value = line.split()
            acks.append((int(rev), kind, key, int(value)))
        os.kill(proc.pid, signal.SIGKILL)  # mid-load: the child is writing right now
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        # lines the child flushed before dying were acknowledged too
        for line in proc.stdout:
            if line.endswith("\n"):
                rev, kind, key, value = line.split()
                acks.append((int(rev), kind, key, int(value)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return acks


@pytest.mark.parametrize("mode", ["normal", "durable"])
def test_acknowledged_writes_survive_sigkill(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "crash.db"
    acks = _run_and_kill(path, mode, min_acks=1500 if mode == "normal" else 300, max_seconds=5.0)
    assert len(acks) >= 50, "the child acknowledged too few writes to test anything"
    assert [a[0] for a in acks] == list(range(1, len(acks) + 1))

    store = SQLiteStore(path)  # opening recovers from the WAL; the lock died with the child
    try:
        assert store.revision >= acks[-1][0]
        events = {ev.revision: ev for ev in store.events_since("", 0)}
        for rev, kind, key, value in acks:
            ev = events[rev]
            assert (ev.type, ev.key) == (kind, key)
            assert ev.obj["v"] == value
        # the current state is exactly the replay of the log: nothing half-written
        state: dict[str, Any] = {}
        for rev in sorted(events):
            ev = events[rev]
            if ev.type == "DELETED":
                del state[ev.key]
            else:
                state[ev.key] = ev.obj
        assert dict(store.list("")[0]) == state
        # and the store keeps going from where the child stopped
        nxt = store.create("/core/configmaps/after/crash", {"metadata": {}})
        assert nxt["metadata"]["resourceVersion"] == str(store.revision)
        assert store.revision == max(events) + 1
    finally:
        store.close()
