"""Resource descriptors: which URL a kind lives at, and how typed models map onto it.

A :class:`ResourceType` names one served resource (group, version, kind, plural,
namespaced) and builds its URLs. The client accepts three ways to name a kind:

- a ``ResourceType`` (dynamic: objects are plain dicts),
- a typed model class (objects are model instances): anything satisfying
  :class:`ResourceModel` -- class attributes for group/version/kind/plural/namespaced
  (or ``api_version``) plus pydantic's ``model_validate``/``model_dump`` -- which is the
  shape ``kubewerk.model.Resource`` subclasses have,
- for objects passed to create/replace: the dict itself (its ``apiVersion``/``kind``
  are resolved through the built-in table or discovery).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from kubewerk.client.errors import ConfigError
from kubewerk.core.gvk import format_api_version, parse_api_version, qualified


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource: GVK plus the plural used in URLs."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``group/version`` (``v1`` for the core group)."""
        return format_api_version(self.group, self.version)

    @property
    def group_resource(self) -> str:
        """``plural.group`` as Kubernetes prints it in messages."""
        return qualified(self.plural, self.group)

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path: collection (name None), object, or object subresource."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    @staticmethod
    def parse_api_version(api_version: str) -> tuple[str, str]:
        """``apps/v1`` -> (``apps``, ``v1``); ``v1`` -> (``""``, ``v1``); more than one
        slash raises ``ValueError`` (:func:`kubewerk.core.gvk.parse_api_version`)."""
        return parse_api_version(api_version)


@runtime_checkable
class ResourceModel(Protocol):
    """The typed-model protocol the client relies on (pydantic v2 models fit it)."""

    @classmethod
    def model_validate(cls, obj: Any) -> Any: ...

    def model_dump(
        self, *, mode: str = ..., by_alias: bool = ..., exclude_none: bool = ...
    ) -> dict[str, Any]: ...


M = TypeVar("M", bound=ResourceModel)


def _class_attr(cls: type, *names: str) -> Any:
    for name in names:
        value = getattr(cls, name, None)
        if value is not None and not callable(value):
            return value
        # pydantic may keep class keywords in a config/meta object
    meta = getattr(cls, "__kubewerk__", None) or getattr(cls, "__resource__", None)
    if meta is not None:
        for name in names:
            value = meta.get(name) if isinstance(meta, dict) else getattr(meta, name, None)
            if value is not None:
                return value
    return None


_MODEL_TYPES: dict[type, ResourceType] = {}


def resource_type_of(kind: Any) -> ResourceType:
    """The ``ResourceType`` for a ``ResourceType`` or a typed model class."""
    if isinstance(kind, ResourceType):
        return kind
    if isinstance(kind, type):
        cached = _MODEL_TYPES.get(kind)
        if cached is not None:
            return cached
        rt_attr = getattr(kind, "resource_type", None)
        if isinstance(rt_attr, ResourceType):
            _MODEL_TYPES[kind] = rt_attr
            return rt_attr
        info = getattr(kind, "__kube__", None)
        if info is not None and hasattr(info, "plural"):
            # a kubewerk.model.Resource subclass: its KindInfo says everything
            rt = ResourceType(
                info.group, info.version, info.kind, info.plural, info.scope == "Namespaced"
            )
            _MODEL_TYPES[kind] = rt
            return rt
        group = _class_attr(kind, "group", "__group__")
        version = _class_attr(kind, "version", "__version__")
        api_version = _class_attr(kind, "api_version", "apiVersion", "__api_version__")
        if api_version and (group is None or version is None):
            try:
                group, version = parse_api_version(str(api_version))
            except ValueError as exc:
                raise ConfigError(f"{kind.__name__}: {exc}") from None
        kind_name = _class_attr(kind, "kind", "__kind__") or kind.__name__
        plural = _class_attr(kind, "plural", "__plural__")
        scope = _class_attr(kind, "scope", "__scope__")
        namespaced = _class_attr(kind, "namespaced", "__namespaced__")
        if namespaced is None:
            namespaced = str(scope or "Namespaced") == "Namespaced"
        if version is None:
            raise ConfigError(f"{kind.__name__} does not say its API group/version")
        rt = ResourceType(
            group=str(group or ""),
            version=str(version),
            kind=str(kind_name),
            plural=str(plural or str(kind_name).lower() + "s"),
            namespaced=bool(namespaced),
        )
        _MODEL_TYPES[kind] = rt
        return rt
    raise TypeError(f"expected a ResourceType or a typed model class, got {kind!r}")


def is_model_class(kind: Any) -> bool:
    """True for a typed model class (as opposed to a ResourceType)."""
    return isinstance(kind, type) and hasattr(kind, "model_validate")


def to_dict(obj: Any) -> dict[str, Any]:
    """A plain JSON-ready dict for a dict or a model instance (aliases, no None fields)."""
    if isinstance(obj, dict):
        return obj
    to_dict_method = getattr(obj, "to_dict", None)
    if callable(to_dict_method):
        # kubewerk models: only fields that were set, JSON names
        out: dict[str, Any] = to_dict_method()
        return out
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        raise TypeError(f"expected a dict or a typed model instance, got {type(obj).__name__}")
    data: dict[str, Any] = dump(mode="json", by_alias=True, exclude_none=True)
    return data


# Built-in resources the runtime itself uses or operators commonly own.
SECRET = ResourceType("", "v1", "Secret", "secrets")
CONFIGMAP = ResourceType("", "v1", "ConfigMap", "configmaps")
SERVICE = ResourceType("", "v1", "Service", "services")
POD = ResourceType("", "v1", "Pod", "pods")
SERVICEACCOUNT = ResourceType("", "v1", "ServiceAccount", "serviceaccounts")
NAMESPACE = ResourceType("", "v1", "Namespace", "namespaces", namespaced=False)
CORE_EVENT = ResourceType("", "v1", "Event", "events")
DEPLOYMENT = ResourceType("apps", "v1", "Deployment", "deployments")
STATEFULSET = ResourceType("apps", "v1", "StatefulSet", "statefulsets")
JOB = ResourceType("batch", "v1", "Job", "jobs")
LEASE = ResourceType("coordination.k8s.io", "v1", "Lease", "leases")
EVENT = ResourceType("events.k8s.io", "v1", "Event", "events")
CRD = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    namespaced=False,
)

BUILTINS: dict[tuple[str, str], ResourceType] = {
    (rt.api_version, rt.kind): rt
    for rt in (
        SECRET,
        CONFIGMAP,
        SERVICE,
        POD,
        SERVICEACCOUNT,
        NAMESPACE,
        DEPLOYMENT,
        STATEFULSET,
        JOB,
        LEASE,
        EVENT,
        CRD,
    )
}
