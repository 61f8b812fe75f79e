"""``SecretRef``: a reference to one key of a Secret in the object's namespace.

Use it for every field that would otherwise hold a credential: the linter's
``plaintext-credential`` rule recommends exactly this shape (``<name>SecretRef: {name,
key}``) for ``password``, ``token``, ``apiKey`` and the like::

    class DatabaseSpec(KubeModel):
        password_secret_ref: SecretRef

generates ``passwordSecretRef: {type: object, properties: {name: {type: string}, key:
{type: string}}, required: [name, key], x-kubernetes-map-type: atomic}`` (an atomic map:
server-side apply replaces the reference whole). The shipped Secret reference
allow-list policy (:mod:`kubewerk.webhook.policy.secret_refs`) checks the ``name`` of
such fields.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kubewerk.model.base import KubeModel
from kubewerk.model.markers import MapType


class SecretRef(KubeModel, map_type=MapType.ATOMIC):
    """Reference to a key of a Secret in the same namespace as the object."""

    name: Annotated[str, Field(min_length=1, max_length=253)]
    """Name of the Secret, in the object's namespace."""
    key: Annotated[str, Field(min_length=1, max_length=253)]
    """Key within the Secret's data whose value is used."""
