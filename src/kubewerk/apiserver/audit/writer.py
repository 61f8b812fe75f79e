"""The audit log backend: JSON lines to a file, never blocking the event loop.

``LogWriter.write(event)`` only appends the event to a bounded queue (``max_backlog``
events, default 10,000) and returns; one writer thread wakes every ``interval`` (20 ms),
or sooner when half the backlog is used, and encodes and appends everything queued in
one write. Waking per interval rather than per event keeps the thread from taking the
interpreter lock once per request (measured: that hand-off cost more than building the
event). When the backlog is full the event is
dropped and counted (``dropped``, exported on ``/metrics`` as
``apiserver_audit_error_total{plugin="log"}``, kube's name for events a backend failed to
record), so a slow disk costs audit lines, never request latency. ``close()`` writes what
is queued and stops the thread; ``flush()`` waits until every queued event is on disk.

The file is created readable by its owner only (0600, whatever the umask), opened for
appending (an existing log is continued), its missing directory created 0700.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Final

import orjson

__all__ = ["DEFAULT_MAX_BACKLOG", "LogWriter"]

DEFAULT_MAX_BACKLOG: Final = 10_000
log = logging.getLogger("kubewerk.apiserver.audit")


class LogWriter:
    """Appends audit events to ``path`` as JSON lines from a thread (see the module doc)."""

    def __init__(
        self, path: str | Path, *, max_backlog: int = DEFAULT_MAX_BACKLOG, interval: float = 0.02
    ) -> None:
        if max_backlog < 1:
            raise ValueError(f"max_backlog must be positive, got {max_backlog}")
        self.path = Path(path).expanduser()
        missing = []
        d = self.path.parent
        while not d.exists() and d != d.parent:
            missing.append(d)
            d = d.parent
        for m in reversed(missing):
            m.mkdir(mode=0o700, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(self.path, flags, 0o600)
        self.max_backlog = max_backlog
        self.interval = interval
        self._items: deque[dict[str, Any]] = deque()
        self._wake = threading.Event()
        self._progress = threading.Condition()
        self.queued = 0
        self.written = 0
        self.dropped = 0
        self.failed = 0
        self._handled = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="kubewerk-audit-log", daemon=True)
        self._thread.start()

    def write(self, event: dict[str, Any]) -> bool:
        """Queue ``event`` (never blocks); False when it was dropped (backlog full, closed)."""
        items = self._items
        if self._closed or len(items) >= self.max_backlog:
            self.dropped += 1
            return False
        items.append(event)
        self.queued += 1
        if len(items) * 2 >= self.max_backlog:
            self._wake.set()
        return True

    @property
    def backlog(self) -> int:
        """Events queued and not yet written."""
        return len(self._items)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait (at most ``timeout`` seconds) until every event queued so far is handled."""
        target = self.queued
        deadline = time.monotonic() + timeout
        with self._progress:
            while self._handled < target and self._thread.is_alive():
                self._wake.set()
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._progress.wait(min(left, 0.05))

    def close(self) -> None:
        """Write what is queued, stop the thread, close the file (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        self._thread.join()
        os.close(self._fd)

    def _run(self) -> None:
        items = self._items
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            closing = self._closed
            pending: list[bytes] = []
            popped = 0
            while items:
                event = items.popleft()
                popped += 1
                try:
                    pending.append(orjson.dumps(event) + b"\n")
                except (TypeError, orjson.JSONEncodeError):
                    self.failed += 1
                    log.exception("audit event could not be encoded")
            self._write_out(pending)
            with self._progress:
                self._handled += popped
                self._progress.notify_all()
            if closing and not items:
                return

    def _write_out(self, pending: list[bytes]) -> None:
        if not pending:
            return
        data = b"".join(pending)
        n = len(pending)
        pending.clear()
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self.written += n
        except OSError:
            self.failed += n
            log.exception("audit log %s: %d events could not be written", self.path, n)
