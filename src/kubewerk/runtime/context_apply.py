"""Server-side apply from a reconcile: :class:`ApplyMethods`, the ``apply`` and
``apply_status`` methods every :class:`kubewerk.runtime.controller.Context` has.

Guarantees (both are one request, no read):

- ``ctx.apply(owner, child, field_manager=...)`` applies ``child`` as the controller
  ``owner``'s intent (controller ownerReference set, namespace defaulted to the owner's):
  the manager owns exactly the fields it applies, fields it stops applying are removed
  unless another manager owns them, and an unchanged intent writes nothing;
- ``ctx.apply_status(obj, field_manager=...)`` is the apply variant of
  ``patch_status``: the reconciled object's status (as the reconcile left it) applied to
  ``/status``. Unlike ``patch_status`` it is not guarded by the read resourceVersion:
  ownership, not a version, decides, so two managers may own different status fields
  (conditions by type, say) without retrying each other's writes. It returns True when
  the server wrote something (the resourceVersion changed), and keeps the reconcile's
  object and snapshot up to date as ``patch_status`` does;
- both force by default, as Kubernetes recommends for controllers (a field someone else
  changed is taken back); ``force=False`` raises Conflict instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubewerk.runtime.helpers import apply_owned, apply_status

if TYPE_CHECKING:
    from kubewerk.client.client import Client
    from kubewerk.runtime.controller import Controller

Obj = dict[str, Any]


class ApplyMethods:
    """The server-side apply methods of a reconcile's Context (a base class of it)."""

    client: Client
    controller: Controller[Any]
    name: str
    namespace: str | None

    if TYPE_CHECKING:  # what Context defines and these methods use

        @property
        def _snapshot(self) -> Obj: ...

        def _refresh(self, obj: Any, written: Obj) -> None: ...

    async def apply(self, owner: Any, child: Any, *, field_manager: str, force: bool = True) -> Any:
        """Apply ``child`` (dict or model) as a child controlled by ``owner``; returns the
        server's copy, as a model of ``child``'s class when ``child`` is a model."""
        written = await apply_owned(
            self.client, owner, child, field_manager=field_manager, force=force
        )
        if isinstance(child, dict):
            return written
        return type(child).model_validate(written)

    async def apply_status(self, obj: Any, *, field_manager: str, force: bool = True) -> bool:
        """Apply ``obj``'s status (the reconciled object) to ``/status``; True when the
        server wrote a new version."""
        from kubewerk.runtime.controller import status_of

        before = (self._snapshot.get("metadata") or {}).get("resourceVersion")
        rt = self.controller.rt
        data = {
            "apiVersion": rt.api_version,
            "kind": rt.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
        }
        written = await apply_status(
            self.client, data, status_of(obj), field_manager=field_manager, force=force
        )
        self._refresh(obj, written)
        return (written.get("metadata") or {}).get("resourceVersion") != before
