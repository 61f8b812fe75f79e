"""Project-wide test fixtures."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from kubewerk.apiserver.server import EmbeddedServer

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus"
DEMO_DIR = REPO_ROOT / "src" / "kubewerk" / "cli" / "demo_data"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The real-world CRD corpus shipped beside the repository (read-only)."""
    if not CORPUS_DIR.is_dir():
        pytest.fail(f"CRD corpus not found at {CORPUS_DIR}")
    return CORPUS_DIR


@pytest.fixture(scope="session")
def demo_dir() -> Path:
    """The demo CRD (databases.demo.kubewerk.dev) and sample objects."""
    return DEMO_DIR


@pytest.fixture
async def aserver() -> AsyncIterator[EmbeddedServer]:
    """A fresh in-memory API server on the test's own event loop (real HTTP on loopback)."""
    async with EmbeddedServer("memory", bookmark_interval=0.5) as srv:
        yield srv


@pytest.fixture
def tserver() -> Iterator[EmbeddedServer]:
    """A fresh in-memory API server in a background thread, for synchronous clients."""
    srv = EmbeddedServer("memory", bookmark_interval=0.5).start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


@pytest.fixture
def kubeconfig(tserver: EmbeddedServer, tmp_path: Path) -> Path:
    """A kubeconfig (context ``kubewerk``) for ``tserver``."""
    return tserver.write_kubeconfig(tmp_path / "kubeconfig")


KubectlRun = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def kubectl(kubeconfig: Path) -> KubectlRun:
    """Run the real ``kubectl`` against ``tserver``: ``kubectl("get", "ns", check=True)``."""
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")

    def run(*args: str, input: str | None = None, check: bool = True, timeout: float = 30,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        import os

        full_env = {**os.environ, "KUBECONFIG": str(kubeconfig), **(env or {})}
        proc = subprocess.run([binary, *args], input=input, capture_output=True, text=True,
                              timeout=timeout, env=full_env, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run
