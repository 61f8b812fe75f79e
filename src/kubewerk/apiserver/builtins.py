"""The built-in kinds the embedded server serves: one registration line per kind.

Each kind's module under ``kinds/`` declares its ``ServedResource`` (names, versions,
schema) and its strategy; ``BUILTIN_KINDS`` lists them. Adding a kind is a module there
and a line here (see docs/apiserver.md, "Adding a built-in kind").
"""

from __future__ import annotations

from collections.abc import Callable

from kubewerk.apiserver.kinds import (
    catalog,
    configmaps,
    crds,
    events,
    leases,
    namespaces,
    secrets,
    serviceaccounts,
)
from kubewerk.apiserver.registry import Registry, ServedResource

BUILTIN_KINDS: tuple[Callable[[], ServedResource], ...] = (
    namespaces.resource_type,
    configmaps.resource_type,
    secrets.resource_type,
    serviceaccounts.resource_type,
    events.core_resource_type,
    events.events_v1_resource_type,
    leases.resource_type,
    crds.resource_type,
    *catalog.declarations(),  # the typed workload kinds, one row each in kinds/catalog.py
)
"""Each builds a fresh ``ServedResource`` (a server owns its types)."""

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
"""Namespaces present on every fresh store."""


def builtin_types() -> list[ServedResource]:
    """Fresh ``ServedResource`` objects for every built-in kind; every one of them is
    described in OpenAPI by the vendored Kubernetes definition of its kind (their
    hand-written ``schemas`` still drive typed decoding)."""
    types = [declare() for declare in BUILTIN_KINDS]
    for rtype in types:
        rtype.vendored_openapi = True
    return types


def install_builtins(registry: Registry) -> None:
    for rtype in builtin_types():
        registry.add(rtype)
