"""Server-side apply from third-party Python clients against the embedded API server:
the official ``kubernetes`` client (its dynamic client's ``server_side_apply`` and a
typed ConfigMap apply through ``CoreV1Api``) and lightkube's ``apply``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import CRD_NAME, GROUP, VERSION, wait_until

pytestmark = pytest.mark.e2e

kubernetes = pytest.importorskip("kubernetes", reason="the official kubernetes client is needed")
from kubernetes import client, config, dynamic  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

NS = "default"


@pytest.fixture
def api(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture
def databases(api: client.ApiClient, demo_dir: Path) -> Any:
    """The demo CRD created and Established; the dynamic client's Database resource."""
    ext = client.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(yaml.safe_load((demo_dir / "crd.yaml").read_text()))

    def established() -> bool:
        got = ext.read_custom_resource_definition(CRD_NAME)
        return any(
            c.type == "Established" and c.status == "True" for c in got.status.conditions or []
        )

    wait_until(established)
    dyn = dynamic.DynamicClient(api)
    return dyn, dyn.resources.get(api_version=f"{GROUP}/{VERSION}", kind="Database")


def database(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Database",
        "metadata": {"name": "orders", "namespace": NS},
        "spec": {"engine": "postgres", "replicas": replicas},
    }


def test_official_dynamic_client_server_side_apply(databases: Any) -> None:
    dyn, db = databases
    created = dyn.server_side_apply(db, body=database(3), field_manager="py").to_dict()
    assert created["spec"]["replicas"] == 3
    assert created["spec"]["storage"] == "1Gi"  # the schema's default, owned by no one
    entry = created["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"]) == ("py", "Apply")
    again = dyn.server_side_apply(db, body=database(3), field_manager="py").to_dict()
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as err:
        dyn.server_side_apply(db, body=database(5), field_manager="other")
    assert err.value.status == 409
    status = json.loads(err.value.body)
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "py": .spec.replicas'
    assert status["reason"] == "Conflict"
    forced = dyn.server_side_apply(
        db, body=database(5), field_manager="other", force_conflicts=True
    ).to_dict()
    assert forced["spec"]["replicas"] == 5


def test_official_typed_client_apply_of_a_configmap(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    got = core.patch_namespaced_config_map(
        "c", NS, body, field_manager="py", _content_type="application/apply-patch+yaml"
    )
    assert got.data == {"a": "1"}
    assert [(m.manager, m.operation) for m in got.metadata.managed_fields] == [("py", "Apply")]
    # dropping a key it applied removes it
    body["data"] = {"b": "2"}
    got = core.patch_namespaced_config_map(
        "c", NS, body, field_manager="py", _content_type="application/apply-patch+yaml"
    )
    assert got.data == {"b": "2"}


def test_lightkube_apply(kubeconfig: Path) -> None:
    from lightkube import Client as LightClient
    from lightkube import KubeConfig
    from lightkube.resources.core_v1 import ConfigMap

    lk = LightClient(KubeConfig.from_file(str(kubeconfig)), field_manager="lightkube")
    cm = ConfigMap.from_dict(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lk"}, "data": {"a": "1"}}
    )
    got = lk.apply(cm, namespace=NS)
    assert got.data == {"a": "1"}
    assert got.metadata.managedFields[0].manager == "lightkube"
