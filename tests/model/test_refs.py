"""``Ref[Kind]``: the schema a ref generates, the markers on it, where a model's refs are
(``references_of``) and the CRD annotation that carries them (``kubewerk.dev/references``).

No ``from __future__ import annotations`` here: a forward reference to a kind is written
as a string parameter (``Ref["Cache"]``), as model code without deferred annotations
writes it."""

import json
from typing import Annotated, Any

import pytest

from kubewerk.model import (
    REFERENCES_ANNOTATION,
    CrossNamespace,
    ExternalKind,
    KubeModel,
    ModelDefinitionError,
    OnDelete,
    Ref,
    RefField,
    Resource,
    crd_for,
    parse_references,
    references_of,
)
from kubewerk.model.markers import EmbeddedResource
from kubewerk.model.refs import Namespace, Secret
from kubewerk.schema import validate_crd

GROUP = "refs.kubewerk.dev"


class TenantSpec(KubeModel):
    """A tenant."""

    owner: str = ""


class Tenant(Resource[TenantSpec, None], group=GROUP, scope="Cluster"):
    """A tenant (cluster-scoped)."""


class DatabaseSpec(KubeModel):
    """A database."""

    tenant_ref: Annotated[Ref[Tenant], OnDelete.CASCADE]
    credentials_ref: Annotated[Ref[Secret], CrossNamespace()] | None = None


class Database(Resource[DatabaseSpec, None], group=GROUP):
    """A database."""


class Route(KubeModel):
    """A route to a database."""

    database_ref: Ref[Database]
    weight: int = 1


class ApplicationSpec(KubeModel):
    """An application."""

    database_ref: Ref[Database]
    """The database the application stores its data in."""
    cache_refs: list[Annotated[Ref["Cache"], OnDelete.ORPHAN]] = []
    routes: list[Route] = []
    parent_ref: Ref["Application"] | None = None
    secrets: dict[str, Ref[Secret]] = {}
    template: Annotated[Database, EmbeddedResource] | None = None


class ApplicationStatus(KubeModel):
    """Observed state."""

    bound_ref: Ref[Database] | None = None


class Application(Resource[ApplicationSpec, ApplicationStatus], group=GROUP):
    """An application."""


class CacheSpec(KubeModel):
    """A cache."""

    size: int = 0


class Cache(Resource[CacheSpec, None], group=GROUP):
    """A cache."""


def spec_schema(model: Any) -> dict[str, Any]:
    crd = crd_for(model)
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]  # type: ignore[no-any-return]


def test_a_ref_is_an_atomic_object_with_a_required_name_and_no_namespace() -> None:
    props = spec_schema(Application)["properties"]
    ref = props["databaseRef"]
    assert ref["type"] == "object"
    assert ref["required"] == ["name"]
    assert ref["x-kubernetes-map-type"] == "atomic"
    assert set(ref["properties"]) == {"name"}
    assert ref["properties"]["name"]["type"] == "string"
    assert (ref["properties"]["name"]["minLength"], ref["properties"]["name"]["maxLength"]) == (
        1,
        253,
    )
    assert ref["description"] == "The database the application stores its data in."
    assert set(props["cacheRefs"]["items"]["properties"]) == {"name"}
    assert set(props["secrets"]["additionalProperties"]["properties"]) == {"name"}
    assert "databaseRef" in spec_schema(Application)["required"]


def test_only_a_cross_namespace_ref_has_a_namespace() -> None:
    props = spec_schema(Database)["properties"]
    credentials = props["credentialsRef"]
    assert set(credentials["properties"]) == {"name", "namespace"}
    assert credentials["required"] == ["name"]
    namespace = credentials["properties"]["namespace"]
    assert (namespace["type"], namespace["minLength"], namespace["maxLength"]) == ("string", 1, 63)
    # the same class used elsewhere keeps its schema without namespace
    assert set(props["tenantRef"]["properties"]) == {"name"}
    assert set(
        spec_schema(Application)["properties"]["secrets"]["additionalProperties"]["properties"]
    ) == {"name"}


def test_the_generated_crds_are_accepted() -> None:
    for model in (Tenant, Database, Application, Cache):
        assert validate_crd(crd_for(model)) == []


def test_the_api_schema_prunes_a_namespace_where_the_ref_is_not_cross_namespace() -> None:
    obj = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Database",
        "metadata": {"name": "orders"},
        "spec": {
            "tenantRef": {"name": "acme", "namespace": "elsewhere"},
            "credentialsRef": {"name": "creds", "namespace": "vault"},
        },
    }
    pruned = Database.compiled_schema().prune(obj)
    assert pruned == ["spec.tenantRef.namespace"]
    assert obj["spec"] == {
        "tenantRef": {"name": "acme"},
        "credentialsRef": {"name": "creds", "namespace": "vault"},
    }


def test_refs_parse_and_dump_as_plain_objects() -> None:
    app = Application.from_dict(
        {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"databaseRef": {"name": "orders"}, "cacheRefs": [{"name": "hot"}]},
        }
    )
    assert app.spec.database_ref.name == "orders"
    assert app.spec.database_ref.namespace is None
    assert [r.name for r in app.spec.cache_refs] == ["hot"]
    assert app.to_dict()["spec"] == {
        "databaseRef": {"name": "orders"},
        "cacheRefs": [{"name": "hot"}],
    }
    assert Ref[Database](name="orders").to_dict() == {"name": "orders"}
    with pytest.raises(ValueError, match="name"):
        Application.from_dict({"spec": {"databaseRef": {"name": ""}}})


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (Annotated[str, CrossNamespace()], "CrossNamespace applies to Ref"),
        (Annotated[int, OnDelete.CASCADE], "OnDelete applies to Ref"),
        (Annotated[list[Ref[Secret]], OnDelete.ORPHAN], "OnDelete applies to Ref"),
    ],
)
def test_ref_markers_elsewhere_are_refused(annotation: Any, message: str) -> None:
    with pytest.raises(ModelDefinitionError, match=message):
        type("Bad", (KubeModel,), {"__annotations__": {"field": annotation}})


def test_references_of_lists_every_ref_of_the_desired_state() -> None:
    refs = references_of(Application)
    assert [(r.path, r.target_label, r.many, r.required, r.on_delete) for r in refs] == [
        (".spec.databaseRef", f"Database.{GROUP}", False, True, OnDelete.BLOCK),
        (".spec.cacheRefs[*]", f"Cache.{GROUP}", True, False, OnDelete.ORPHAN),
        (".spec.routes[*].databaseRef", f"Database.{GROUP}", True, False, OnDelete.BLOCK),
        (".spec.parentRef", f"Application.{GROUP}", False, False, OnDelete.BLOCK),
        (".spec.secrets[*]", "Secret", True, False, OnDelete.BLOCK),
    ]  # status.boundRef and the embedded template's refs are left out
    assert refs[0].target is Database and refs[1].target is Cache and refs[4].target is Secret
    (tenant, credentials) = references_of(Database)
    assert (tenant.kind, tenant.namespaced, tenant.on_delete, tenant.required) == (
        "Tenant",
        False,
        OnDelete.CASCADE,
        True,
    )
    assert (credentials.cross_namespace, credentials.required) == (True, False)
    assert references_of(Cache) == ()


def test_a_ref_field_reads_the_names_an_object_holds() -> None:
    by_path = {r.path: r for r in references_of(Application)}
    obj = {
        "spec": {
            "databaseRef": {"name": "orders", "namespace": "ignored"},
            "cacheRefs": [{"name": "hot"}, {"name": "cold"}, {"noname": 1}, "junk"],
            "routes": [{"databaseRef": {"name": "a"}}, {"weight": 2}],
            "secrets": {"tls": {"name": "web-tls"}},
        }
    }
    assert by_path[".spec.databaseRef"].names(obj) == [("orders", None)]
    assert by_path[".spec.cacheRefs[*]"].names(obj) == [("hot", None), ("cold", None)]
    assert by_path[".spec.routes[*].databaseRef"].names(obj) == [("a", None)]
    assert by_path[".spec.secrets[*]"].names(obj) == [("web-tls", None)]
    assert by_path[".spec.parentRef"].names(obj) == []
    credentials = references_of(Database)[1]
    assert credentials.names({"spec": {"credentialsRef": {"name": "c", "namespace": "vault"}}}) == [
        ("c", "vault")
    ]
    assert credentials.names({"spec": {"credentialsRef": {"name": "c"}}}) == [("c", None)]


def test_forward_references_resolve_by_module_name_kind_or_kind_and_group() -> None:
    class Holder(KubeModel):
        by_kind: Ref["Tenant"]
        by_label: Ref["Cache.refs.kubewerk.dev"]  # type: ignore[name-defined]
        builtin: Ref["Namespace"]

    refs = references_of(Holder)
    assert [(r.kind, r.target) for r in refs] == [
        ("Tenant", Tenant),
        ("Cache", Cache),
        ("Namespace", Namespace),
    ]
    assert refs[2].namespaced is False


def test_an_unresolvable_forward_reference_names_the_field() -> None:
    class Dangling(KubeModel):
        target: Ref["NoSuchKind"]  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(ModelDefinitionError, match=r"Dangling\.target: Ref\['NoSuchKind'\]"):
        references_of(Dangling)


def test_a_ref_must_name_a_kind() -> None:
    class NotAKind(KubeModel):
        target: Ref[int]

    with pytest.raises(ModelDefinitionError, match=r"NotAKind\.target: Ref\[int\] must name"):
        references_of(NotAKind)


def test_a_cluster_scoped_kind_may_refer_to_namespaced_kinds_only_across_namespaces() -> None:
    class Spec(KubeModel):
        database_ref: Ref[Database]

    class Global(Resource[Spec, None], group=GROUP, scope="Cluster"):
        """Cluster-scoped."""

    with pytest.raises(ModelDefinitionError, match="mark it CrossNamespace"):
        references_of(Global)

    class CrossSpec(KubeModel):
        database_ref: Annotated[Ref[Database], CrossNamespace()]

    class GlobalCross(Resource[CrossSpec, None], group=GROUP, scope="Cluster"):
        """Cluster-scoped, naming its database's namespace."""

    assert references_of(GlobalCross)[0].cross_namespace


def test_external_kinds_declare_other_operators_kinds() -> None:
    class Deployment(ExternalKind, group="apps"):
        """apps/v1 Deployment."""

    class Spec(KubeModel):
        deployment_ref: Ref[Deployment]

    (ref,) = references_of(Spec)
    assert (ref.group, ref.kind, ref.target_label) == ("apps", "Deployment", "Deployment.apps")
    assert (Deployment.plural, Deployment.version, Deployment.namespaced) == (
        "deployments",
        "v1",
        True,
    )
    with pytest.raises(ModelDefinitionError, match="CamelCase"):

        class _Bad(ExternalKind, group="x", kind="not-a-kind"):
            pass


def test_the_crd_annotation_lists_the_refs_and_reads_back() -> None:
    crd = crd_for(Application)
    text = crd["metadata"]["annotations"][REFERENCES_ANNOTATION]
    entries = json.loads(text)
    assert entries[0] == {
        "path": ".spec.databaseRef",
        "group": GROUP,
        "kind": "Database",
        "list": False,
        "crossNamespace": False,
        "onDelete": "block",
        "namespaced": True,
        "required": True,
    }
    assert entries[1]["list"] is True and entries[1]["onDelete"] == "orphan"
    assert parse_references(text) == references_of(Application)
    assert "annotations" not in crd_for(Cache)["metadata"]


def test_versions_with_different_refs_name_their_version() -> None:
    class SpecV1(KubeModel):
        database_ref: Ref[Database]

    class SpecV2(KubeModel):
        database_ref: Ref[Database]
        tenant_ref: Annotated[Ref[Tenant], OnDelete.ORPHAN]

    class Job(Resource[SpecV1, None], group=GROUP, version="v1"):
        """A job, v1."""

    class JobV2(Resource[SpecV2, None], group=GROUP, version="v2", storage=True):
        """A job, v2."""

    text = crd_for(Job, JobV2)["metadata"]["annotations"][REFERENCES_ANNOTATION]
    assert [(e["path"], e["version"]) for e in json.loads(text)] == [
        (".spec.databaseRef", "v2"),
        (".spec.tenantRef", "v2"),
        (".spec.databaseRef", "v1"),
    ]
    assert [r.path for r in parse_references(text, "v1")] == [".spec.databaseRef"]
    assert len(parse_references(text, "v2")) == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ('{"path": ".spec.x"}', "expected a JSON list"),
        ('[{"path": "spec.x", "kind": "X"}]', "is not a field path"),
        ('[{"path": ".spec.x", "kind": ""}]', "kind must be a non-empty string"),
        ('[{"path": ".spec.x", "kind": "X", "onDelete": "explode"}]', "onDelete must be one of"),
        ('[{"path": ".spec.x", "kind": "X", "list": 1, "required": "yes"}]', "required must be"),
    ],
)
def test_a_bad_annotation_is_refused_with_a_message(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_references(text)


def test_a_ref_field_round_trips_through_json() -> None:
    field = RefField(".spec.a[*].b", "example.com", "Thing", cross_namespace=True)
    assert RefField.from_json(field.to_json()) == field
    assert field.many and field.field_path == "spec.a[*].b"
