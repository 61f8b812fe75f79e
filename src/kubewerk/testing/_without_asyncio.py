"""Stand-ins for the server fixtures when pytest-asyncio is not installed.

The real fixtures (``kubewerk.testing._fixtures``) are async and need pytest-asyncio.
Without it, the plugin still registers their names, so a test that asks for one fails
at setup with one line saying what to install, instead of pytest's "fixture not found";
tests that use none of them, and projects that merely have kubewerk installed, are not
affected.
"""

from __future__ import annotations

from typing import Any

import pytest

INSTALL_HINT = "pip install pytest-asyncio"


def _needs_pytest_asyncio(name: str) -> Any:
    @pytest.fixture(name=name)
    def fixture() -> None:
        pytest.fail(
            f"kubewerk's {name} fixture needs pytest-asyncio, which is not installed: "
            f"{INSTALL_HINT}",
            pytrace=False,
        )

    fixture.__doc__ = f"Unavailable: needs pytest-asyncio ({INSTALL_HINT})."
    return fixture


kube_server = _needs_pytest_asyncio("kube_server")
kube_client = _needs_pytest_asyncio("kube_client")
kube_kubeconfig = _needs_pytest_asyncio("kube_kubeconfig")
install_crds = _needs_pytest_asyncio("install_crds")
run_manager = _needs_pytest_asyncio("run_manager")
