"""Lifecycle tests use the kubewerk pytest plugin's fixtures (an embedded API server)."""

from kubewerk.testing.plugin import (  # noqa: F401
    install_crds,
    kube_client,
    kube_kubeconfig,
    kube_server,
    run_manager,
    wait_for,
)
