"""Fixtures for the end-to-end suites: real kubectl, the official Python client and kopf
against the embedded API server (``tserver`` from ``tests/conftest.py``)."""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer

KubectlRun = Callable[..., subprocess.CompletedProcess[str]]

CRD_NAME = "databases.demo.kubewerk.dev"
GROUP = "demo.kubewerk.dev"
VERSION = "v1"
PLURAL = "databases"


def wait_until(predicate: Callable[[], Any], timeout: float = 5.0, interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


@pytest.fixture
def kc(kubectl: KubectlRun) -> KubectlRun:
    """``kubectl`` with a 20 s default timeout (its discovery cache is the test's own)."""

    def run(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        kwargs.setdefault("timeout", 20)
        return kubectl(*args, **kwargs)

    return run


@pytest.fixture
def demo(kc: KubectlRun, demo_dir: Path, tserver: EmbeddedServer) -> Path:
    """The demo CRD applied with kubectl and Established; returns the demo data directory."""
    out = kc("apply", "-f", str(demo_dir / "crd.yaml")).stdout
    assert f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} created" in out
    kc("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=10s")
    return demo_dir


class LineReader:
    """Reads a subprocess's stdout lines on a thread, so tests can wait with a timeout."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert proc.stdout is not None
        stdout = proc.stdout

        def pump() -> None:
            for line in stdout:
                self.lines.put(line.rstrip("\n"))

        self._thread = threading.Thread(target=pump, daemon=True)
        self._thread.start()
        self.stderr: list[str] = []
        self._stderr_changed = threading.Condition()
        assert proc.stderr is not None
        stderr = proc.stderr

        def pump_stderr() -> None:
            for line in stderr:
                with self._stderr_changed:
                    self.stderr.append(line)
                    self._stderr_changed.notify_all()

        self._err_thread = threading.Thread(target=pump_stderr, daemon=True)
        self._err_thread.start()

    def watching(self, timeout: float = 10.0) -> None:
        """Block until kubectl (started with ``-v=6``) has its watch open on the server."""
        with self._stderr_changed:
            ok = self._stderr_changed.wait_for(
                lambda: any("watch=true" in line and "200 OK" in line for line in self.stderr),
                timeout=timeout,
            )
        if not ok:
            pytest.fail(
                f"kubectl did not start watching within {timeout}s: {''.join(self.stderr)[-2000:]}"
            )

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 10.0) -> str:
        """The next line satisfying ``predicate`` (earlier lines are kept in ``seen``)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"no matching line within {timeout}s; lines so far: {self.seen}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            self.seen.append(line)
            if predicate(line):
                return line

    def stop(self) -> str:
        """Kill the process; returns its stderr."""
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._err_thread.join(timeout=5)
        return "".join(self.stderr)


@pytest.fixture
def kubectl_popen(kubeconfig: Path, tmp_path: Path) -> Iterator[Callable[..., LineReader]]:
    """Start a long-running kubectl (``get -w``, ``wait``); every one is killed at teardown."""
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")
    started: list[LineReader] = []

    def start(*args: str) -> LineReader:
        import os

        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        proc = subprocess.Popen(
            [binary, f"--cache-dir={tmp_path / 'kube-cache'}", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        reader = LineReader(proc)
        started.append(reader)
        return reader

    yield start
    for reader in started:
        if reader.proc.poll() is None:
            reader.stop()
