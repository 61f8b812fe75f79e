"""Test helpers for operators: an embedded API server, clients, CRD install, waiting.

The pytest fixtures come with kubewerk's ``testing`` extra (the plugin is a
``pytest11`` entry point; it needs pytest-asyncio); write tests that need no cluster::

    async def test_converges(kube_client, install_crds, run_manager, wait_for):
        await install_crds(Database)
        mgr = build_manager()               # your Manager, without a client
        await run_manager(mgr)               # bound to the embedded server, stopped after the test
        await kube_client.create(Database(...))
        await wait_for(lambda: ready(kube_client), timeout=10)

The helpers below work without pytest too.
"""

from kubewerk.testing.helpers import (
    crd_established,
    install_crds,
    wait_for,
    wait_for_condition,
)

__all__ = ["crd_established", "install_crds", "wait_for", "wait_for_condition"]
