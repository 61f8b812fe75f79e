"""Per-kind knowledge a diff needs: scope, comparison shape, and schema defaults.

:class:`KindSchemas` collects it from CustomResourceDefinitions (from either side of a
diff: the manifests' own CRDs or a cluster's), from a cluster's discovery (the scope of
a kind no known CRD defines) and from a server's published OpenAPI v2 definitions (the
built-in kinds' list types and patch merge keys). A custom resource is
defaulted through the schema engine (:func:`kubewerk.schema.compile_schema` on the CRD
version's ``openAPIV3Schema``, the same defaulting a kube-apiserver applies); built-in
kinds are defaulted by a server, not here (see :mod:`kubewerk.sync.compare`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubewerk.core.gvk import split_api_version
from kubewerk.schema import CompiledSchema, SchemaError, compile_schema
from kubewerk.sync.keys import GroupKind
from kubewerk.sync.shapes import ANY, Shape, ShapeReader, struct

__all__ = ["CLUSTER_SCOPED_BUILTINS", "KindSchemas"]

CLUSTER_SCOPED_BUILTINS: Final = frozenset(
    {
        GroupKind("", "Namespace"),
        GroupKind("", "Node"),
        GroupKind("", "PersistentVolume"),
        GroupKind("apiextensions.k8s.io", "CustomResourceDefinition"),
        GroupKind("rbac.authorization.k8s.io", "ClusterRole"),
        GroupKind("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        GroupKind("storage.k8s.io", "StorageClass"),
        GroupKind("storage.k8s.io", "CSIDriver"),
        GroupKind("scheduling.k8s.io", "PriorityClass"),
        GroupKind("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        GroupKind("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        GroupKind("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        GroupKind("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        GroupKind("apiregistration.k8s.io", "APIService"),
        GroupKind("networking.k8s.io", "IngressClass"),
        GroupKind("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        GroupKind("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    }
)
"""Built-in kinds that are cluster-scoped (everything else built in is namespaced)."""

_CRD_GK: Final = GroupKind("apiextensions.k8s.io", "CustomResourceDefinition")


def _is_crd(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "CustomResourceDefinition" and str(
        obj.get("apiVersion", "")
    ).startswith("apiextensions.k8s.io/")


class KindSchemas:
    """Scope, shape and defaulting per kind, from CRDs and OpenAPI v2 definitions."""

    def __init__(self) -> None:
        self._crds: dict[GroupKind, Mapping[str, Any]] = {}
        self._compiled: dict[tuple[GroupKind, str], CompiledSchema | None] = {}
        self._shapes: dict[tuple[GroupKind, str], Shape] = {}
        self._crd_reader = ShapeReader()
        self._builtin_reader = ShapeReader()
        self._builtin_defs: dict[tuple[str, str, str], str] = {}
        self._scopes: dict[GroupKind, bool] = {}
        self.served_by_right: set[GroupKind] = set()
        """Kinds whose CRD (the one used here) is served by the right side's cluster, whose
        objects therefore already carry its defaults."""

    # -- input ---------------------------------------------------------------------

    def add_crd(self, crd: Mapping[str, Any], *, prefer: bool = False) -> None:
        """Learn a CRD. The first one seen for a kind wins unless ``prefer`` (the
        destination's CRD is preferred over the source's)."""
        spec = crd.get("spec")
        if not isinstance(spec, Mapping):
            return
        names = spec.get("names")
        kind = names.get("kind") if isinstance(names, Mapping) else None
        group = spec.get("group")
        if not isinstance(kind, str) or not isinstance(group, str):
            return
        gk = GroupKind(group, kind)
        if gk in self._crds and not prefer:
            return
        self._crds[gk] = crd
        for key in [k for k in self._compiled if k[0] == gk]:
            del self._compiled[key]
        for key in [k for k in self._shapes if k[0] == gk]:
            del self._shapes[key]

    def add_scope(self, gk: GroupKind, namespaced: bool) -> None:
        """Learn a kind's scope from a cluster's discovery (the first answer wins; a CRD
        of the kind, once known, still decides: see :meth:`namespaced`)."""
        self._scopes.setdefault(gk, namespaced)

    def add_objects(self, objects: Iterable[Mapping[str, Any]], *, prefer: bool = False) -> None:
        """Learn every CRD among ``objects``."""
        for obj in objects:
            if _is_crd(obj):
                self.add_crd(obj, prefer=prefer)

    def add_openapi_v2(self, document: Mapping[str, Any]) -> None:
        """Learn the built-in kinds' shapes from a server's ``/openapi/v2`` document."""
        defs = document.get("definitions")
        if not isinstance(defs, Mapping):
            return
        self._builtin_reader = ShapeReader(defs)
        self._builtin_defs.clear()
        for name, schema in defs.items():
            gvks = (
                schema.get("x-kubernetes-group-version-kind")
                if isinstance(schema, Mapping)
                else None
            )
            for gvk in gvks or ():
                if isinstance(gvk, Mapping):
                    key = (
                        str(gvk.get("group", "")),
                        str(gvk.get("version", "")),
                        str(gvk.get("kind", "")),
                    )
                    self._builtin_defs.setdefault(key, name)
        self._shapes = {k: v for k, v in self._shapes.items() if k[0] in self._crds}

    @property
    def has_builtin_shapes(self) -> bool:
        return bool(self._builtin_defs)

    # -- queries -------------------------------------------------------------------

    def crd(self, gk: GroupKind) -> Mapping[str, Any] | None:
        """The CRD serving ``gk``, if one is known."""
        return self._crds.get(gk)

    def is_custom(self, gk: GroupKind) -> bool:
        return gk in self._crds

    def namespaced(self, gk: GroupKind) -> bool:
        """Whether ``gk`` is namespaced: its CRD's ``spec.scope`` when a CRD is known, else
        what a cluster's discovery said (:meth:`add_scope`), else the built-in table; a
        kind none of them knows (not built in, no CRD on either side, not served) is taken
        as namespaced, as most custom kinds are."""
        crd = self._crds.get(gk)
        if crd is not None:
            return bool((crd.get("spec") or {}).get("scope", "Namespaced") == "Namespaced")
        found = self._scopes.get(gk)
        if found is not None:
            return found
        return gk not in CLUSTER_SCOPED_BUILTINS

    def _version_schema(self, gk: GroupKind, version: str) -> Mapping[str, Any] | None:
        crd = self._crds.get(gk)
        if crd is None:
            return None
        for v in (crd.get("spec") or {}).get("versions") or ():
            if isinstance(v, Mapping) and v.get("name") == version:
                schema = (v.get("schema") or {}).get("openAPIV3Schema")
                return schema if isinstance(schema, Mapping) else None
        return None

    def shape(self, api_version: str, kind: str) -> Shape:
        """The comparison shape of ``apiVersion``/``kind`` (``ANY`` when unknown)."""
        group, version = split_api_version(api_version)
        gk = GroupKind(group, kind)
        key = (gk, version)
        found = self._shapes.get(key)
        if found is not None:
            return found
        made: Shape = ANY
        schema = self._version_schema(gk, version)
        if schema is not None:
            made = self._crd_reader.shape(schema)
        elif gk == _CRD_GK:
            made = self._crd_shape()
        else:
            name = self._builtin_defs.get((group, version, kind))
            if name is not None:
                made = self._builtin_reader.definition(name) or ANY
        self._shapes[key] = made
        return made

    def _crd_shape(self) -> Shape:
        name = self._builtin_defs.get(("apiextensions.k8s.io", "v1", "CustomResourceDefinition"))
        if name is not None:
            return self._builtin_reader.definition(name) or ANY
        from kubewerk.sync.shapes import keyed_list

        return struct({"spec": struct({"versions": keyed_list(("name",))})})

    def defaulter(self, api_version: str, kind: str) -> CompiledSchema | None:
        """The compiled schema defaulting a custom resource of this version, or None
        (a built-in kind, an unknown version, or a schema that does not compile)."""
        group, version = split_api_version(api_version)
        key = (GroupKind(group, kind), version)
        if key in self._compiled:
            return self._compiled[key]
        schema = self._version_schema(key[0], version)
        compiled: CompiledSchema | None = None
        if schema is not None:
            try:
                compiled = compile_schema(dict(schema))
            except SchemaError:
                compiled = None
        self._compiled[key] = compiled
        return compiled
