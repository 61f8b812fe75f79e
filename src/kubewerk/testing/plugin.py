"""The kubewerk pytest plugin, registered as the ``pytest11`` entry point ``kubewerk``.

Installed kubewerk makes its fixtures available in every pytest run (``kube_server``,
``kube_client``, ``kube_kubeconfig``, ``install_crds``, ``run_manager``, ``wait_for``;
see ``kubewerk.testing._fixtures``). They are async fixtures and need pytest-asyncio
(``pip install 'kubewerk[testing]'``); without it the plugin registers nothing, so a
project that does not use the fixtures is never broken by kubewerk being installed.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("pytest_asyncio") is not None:
    from kubewerk.testing._fixtures import (
        install_crds,
        kube_client,
        kube_kubeconfig,
        kube_server,
        run_manager,
        wait_for,
    )

    __all__ = ["install_crds", "kube_client", "kube_kubeconfig", "kube_server", "run_manager", "wait_for"]
