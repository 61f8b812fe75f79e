"""Project-wide test fixtures."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from kubewerk.apiserver.server import EmbeddedServer

from .data import corpus_archives

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_DIR = REPO_ROOT / "src" / "kubewerk" / "cli" / "demo_data"


@pytest.fixture(autouse=True)
def _restore_sys_path() -> Iterator[None]:
    """``sys.path`` as it was before the test, whatever the test ran in process.

    The CLI's ``gen``, ``run`` and ``webhook serve`` put the working directory (or a
    module's folder) first on ``sys.path``, as a command should; run in process by a test
    that changed directory (to ``tests/``, say), that entry outlived the test, and a later
    test of the same worker imported ``examples`` from ``tests/examples`` instead of the
    repository's ``examples`` package.
    """
    saved = list(sys.path)
    yield
    sys.path[:] = saved


@pytest.fixture(scope="session")
def corpus_dir() -> Iterator[Path]:
    """The real-world CRD corpus (``crds/``, ``crd-history/``), from the repository's own copy.

    Unpacked once per session from ``tests/data/corpus/*.tar.xz`` into a temporary directory
    that is removed afterwards; nothing outside the repository is read. Treat it as read-only.
    """
    with tempfile.TemporaryDirectory(prefix="kubewerk-corpus-") as tmp:
        yield corpus_archives.unpack(corpus_archives.ARCHIVE_DIR, Path(tmp))


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
    """Run the real ``kubectl`` against ``tserver``: ``kubectl("get", "ns", check=True)``.

    Each test has its own discovery cache (``KUBECACHEDIR``): kubectl keys its cache by
    host and port, and a port reused from an earlier test's server would otherwise hand
    kubectl that server's kinds for up to ten minutes.
    """
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")

    def run(
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 30,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        import os

        full_env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "KUBECACHEDIR": str(kubeconfig.parent / "kube-cache"),
            **(env or {}),
        }
        proc = subprocess.run(
            [binary, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed "
                f"({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    return run
