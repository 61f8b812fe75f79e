"""The audit log backend: JSON lines to a file, never blocking the event loop.

``LogWriter.write(event)`` only puts the event on a bounded queue (``max_backlog``
events, default 10,000) and returns; one writer thread encodes and appends them to the
file, flushing whenever the queue runs empty. When the backlog is full the event is
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
import queue
import threading
from pathlib import Path
from typing import Any, Final

import orjson

__all__ = ["DEFAULT_MAX_BACKLOG", "LogWriter"]

DEFAULT_MAX_BACKLOG: Final = 10_000
log = logging.getLogger("kubewerk.apiserver.audit")
_STOP: Final = object()


class LogWriter:
    """Appends audit events to ``path`` as JSON lines from a thread (see the module doc)."""

    def __init__(self, path: str | Path, *, max_backlog: int = DEFAULT_MAX_BACKLOG) -> None:
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
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_backlog)
        self.written = 0
        self.dropped = 0
        self.failed = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="kubewerk-audit-log", daemon=True)
        self._thread.start()

    def write(self, event: dict[str, Any]) -> bool:
        """Queue ``event`` (never blocks); False when it was dropped (backlog full, closed)."""
        if self._closed:
            self.dropped += 1
            return False
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1
            return False
        return True

    @property
    def backlog(self) -> int:
        """Events queued and not yet written."""
        return self._queue.qsize()

    def flush(self) -> None:
        """Wait until every event queued so far is written."""
        self._queue.join()

    def close(self) -> None:
        """Write what is queued, stop the thread, close the file (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()
        os.close(self._fd)

    def _run(self) -> None:
        q = self._queue
        pending: list[bytes] = []
        while True:
            item = q.get()
            try:
                if item is _STOP:
                    self._write_out(pending)
                    return
                try:
                    pending.append(orjson.dumps(item) + b"\n")
                except (TypeError, orjson.JSONEncodeError):
                    self.failed += 1
                    log.exception("audit event could not be encoded")
                if q.empty() or len(pending) >= 256:
                    self._write_out(pending)
            finally:
                q.task_done()

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
