"""kubewerk.sync.federation: one template placed onto many clusters by labels.

Three layers of custom resources on a host cluster (group ``federation.kubewerk.dev``,
see :mod:`~kubewerk.sync.federation.models`): a ``ClusterSet`` lists member clusters
(kubeconfig in a Secret, labels, taints), a ``Placement`` selects members of a set
(label selector, ``Spread`` or ``PickN``, tolerations of unreachable members), and a
``FederatedObject`` holds a template of any kind plus per-member RFC 6902 overrides.
:class:`Federation` runs their controllers on a :class:`kubewerk.runtime.Manager`::

    from kubewerk.runtime import Manager
    from kubewerk.sync.federation import Federation, crds

    mgr = Manager()                       # the host cluster
    Federation(mgr)
    # install crds() on the host first (kubectl apply -f src/kubewerk/sync/federation/crds)
    await mgr.run()

Modules: :mod:`~kubewerk.sync.federation.placement` (the pure decision),
:mod:`~kubewerk.sync.federation.render` (what one member gets),
:mod:`~kubewerk.sync.federation.members` (member clients and their backoff),
:mod:`~kubewerk.sync.federation.controller` (the controllers). See docs/sync.md,
"Federation".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

from kubewerk.sync.federation.controller import (
    CLUSTER_SET,
    FEDERATED_OBJECT,
    FIELD_MANAGER,
    FINALIZER,
    ORPHAN_ANNOTATION,
    PLACEMENT,
    Federation,
)
from kubewerk.sync.federation.members import MemberPool, MemberUnavailable
from kubewerk.sync.federation.models import (
    GROUP,
    KINDS,
    UNREACHABLE_TAINT,
    VERSION,
    ClusterSet,
    FederatedObject,
    Placement,
)
from kubewerk.sync.federation.placement import Decision, PlacementError, decide
from kubewerk.sync.federation.render import MANAGED_LABEL, OWNER_ANNOTATION, RenderError, render

__all__ = [
    "CLUSTER_SET",
    "CRD_DIR",
    "FEDERATED_OBJECT",
    "FIELD_MANAGER",
    "FINALIZER",
    "GROUP",
    "KINDS",
    "MANAGED_LABEL",
    "ORPHAN_ANNOTATION",
    "OWNER_ANNOTATION",
    "PLACEMENT",
    "UNREACHABLE_TAINT",
    "VERSION",
    "ClusterSet",
    "Decision",
    "FederatedObject",
    "Federation",
    "MemberPool",
    "MemberUnavailable",
    "Placement",
    "PlacementError",
    "RenderError",
    "crds",
    "decide",
    "render",
]

CRD_DIR: Final = Path(__file__).resolve().parent / "crds"
"""The committed CRDs (``kubewerk gen crd kubewerk.sync.federation.models -o CRD_DIR``)."""


def crds() -> list[dict[str, Any]]:
    """The federation's CRDs as committed (ClusterSet, Placement, FederatedObject)."""
    out: list[dict[str, Any]] = []
    for path in sorted(CRD_DIR.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict):
            out.append(doc)
    return out
