"""The admission request a policy is evaluated for (``admission.Attributes``).

:class:`Request` carries what kube-apiserver hands the ValidatingAdmissionPolicy
plugin: operation, object and old object, kind and resource (with subresource), the
namespace and name, the user, dry run, the operation's options, the namespace object,
and the equivalent resources ``matchPolicy: Equivalent`` may match through.
:meth:`Request.for_object` derives the kind, resource, namespace and name from an
object the way a client's request would name them (the resource by
``meta.UnsafeGuessKindToResource`` unless given).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubewerk.core.gvk import split_api_version

_IRREGULAR: Final = {"endpoints": "endpoints"}
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")


@dataclass(frozen=True)
class UserInfo:
    """The requesting user (``authenticationv1.UserInfo``)."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As the AdmissionRequest's ``userInfo`` (empty fields left out)."""
        out: dict[str, Any] = {}
        if self.username:
            out["username"] = self.username
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


def guess_resource(kind: str) -> str:
    """``meta.UnsafeGuessKindToResource``: lower case, ``s``→``ses``, ``y``→``ies``, else ``+s``."""
    singular = kind.lower()
    if singular in _IRREGULAR:
        return _IRREGULAR[singular]
    if not singular:
        return singular
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"


def _meta(obj: Any) -> Mapping[str, Any]:
    if type(obj) is dict:  # the common case, without the abstract class check
        meta = obj.get("metadata")
        if type(meta) is dict:
            return meta
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        if isinstance(meta, Mapping):
            return meta
    return {}


@dataclass
class Request:
    """One admission request. ``kind`` is (group, version, kind), ``resource`` (group,
    version, resource); ``namespace`` of a Namespace object is its own name, as
    kube-apiserver sets it; ``equivalents`` lists other (resource, kind) pairs the same
    object is served as."""

    operation: str
    kind: tuple[str, str, str]
    resource: tuple[str, str, str]
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    sub_resource: str = ""
    namespace: str = ""
    name: str = ""
    user: UserInfo = field(default_factory=UserInfo)
    dry_run: bool = False
    options: dict[str, Any] | None = None
    namespace_object: dict[str, Any] | None = None
    equivalents: tuple[tuple[tuple[str, str, str], tuple[str, str, str]], ...] = ()

    @classmethod
    def for_object(
        cls,
        operation: str,
        obj: Mapping[str, Any] | None,
        old: Mapping[str, Any] | None = None,
        *,
        resource: str | None = None,
        sub_resource: str = "",
        user: UserInfo | None = None,
        dry_run: bool = False,
        namespace_object: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Request:
        """The request that writes ``obj`` (or deletes ``old``) with ``operation``."""
        source = obj if obj is not None else old
        if source is None:
            raise ValueError("a request needs an object or an old object")
        group, version = split_api_version(str(source.get("apiVersion") or ""))
        kind = str(source.get("kind") or "")
        res = resource or guess_resource(kind)
        meta = _meta(source)
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "")
        if group == "" and res == "namespaces":
            namespace = name
        return cls(
            operation=operation,
            kind=(group, version, kind),
            resource=(group, version, res),
            object=dict(obj) if obj is not None else None,
            old_object=dict(old) if old is not None else None,
            sub_resource=sub_resource,
            namespace=namespace,
            name=name,
            user=user or UserInfo(),
            dry_run=dry_run,
            options=dict(options) if options is not None else None,
            namespace_object=dict(namespace_object) if namespace_object is not None else None,
        )

    def namespace_labels(self) -> dict[str, str]:
        """The labels the namespace selector is matched against: the Namespace object's
        own (new, else old) for a request on a Namespace, else the namespace object's."""
        if self.resource[0] == "" and self.resource[2] == "namespaces" and not self.sub_resource:
            source = self.object if self.object is not None else self.old_object
        else:
            source = self.namespace_object
        labels = _meta(source).get("labels")
        return dict(labels) if isinstance(labels, Mapping) else {}

    def to_cel(self, resource: tuple[str, str, str], kind: tuple[str, str, str]) -> dict[str, Any]:
        """The ``request`` variable (an AdmissionRequest without object and oldObject),
        ``resource``/``kind`` being the matched ones, ``requestResource``/``requestKind``
        the request's own."""
        out: dict[str, Any] = {
            "uid": "",
            "kind": {"group": kind[0], "version": kind[1], "kind": kind[2]},
            "resource": {"group": resource[0], "version": resource[1], "resource": resource[2]},
            "requestKind": {"group": self.kind[0], "version": self.kind[1], "kind": self.kind[2]},
            "requestResource": {
                "group": self.resource[0],
                "version": self.resource[1],
                "resource": self.resource[2],
            },
            "operation": self.operation,
            "userInfo": self.user.to_dict(),
            "dryRun": self.dry_run,
            "options": self.options,
        }
        if self.sub_resource:
            out["subResource"] = self.sub_resource
            out["requestSubResource"] = self.sub_resource
        if self.name:
            out["name"] = self.name
        if self.namespace:
            out["namespace"] = self.namespace
        return out


_NAMESPACE_META_KEYS: Final = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "finalizers",
)


def namespace_object_value(ns: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The ``namespaceObject`` variable: the Namespace's spec, status and the metadata
    fields kube-apiserver's ``CreateNamespaceObject`` copies (no ownerReferences, no
    managedFields, no apiVersion or kind)."""
    if ns is None:
        return None
    meta = _meta(ns)
    out: dict[str, Any] = {
        "metadata": {k: meta[k] for k in _NAMESPACE_META_KEYS if k in meta},
    }
    for key in ("spec", "status"):
        if isinstance(ns.get(key), Mapping):
            out[key] = dict(ns[key])
    return out
