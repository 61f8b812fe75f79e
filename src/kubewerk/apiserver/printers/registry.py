"""Every printer of this package, keyed ``apiVersion/Kind`` (``apps/v1/Deployment``)."""

from __future__ import annotations

from kubewerk.apiserver.printers import (
    apps,
    autoscaling,
    batch,
    core,
    networking,
    policy,
    rbac,
)
from kubewerk.apiserver.printers.printer import Printer


def printers() -> dict[str, Printer]:
    """A fresh mapping of every kind's printer (each served version its own key)."""
    table: dict[str, Printer] = {}
    for module in (core, apps, batch, networking, policy, autoscaling, rbac):
        table.update(module.printers())
    return table
