"""TokenRequest bound to a Node, and the node claims of a Pod-bound token, as kube 1.33
issues and checks them (ServiceAccountTokenNodeBinding GA in 1.33, ...NodeBindingValidation
and ...PodNodeInfo GA in 1.32: pkg/registry/core/serviceaccount/storage/token.go,
pkg/serviceaccount/claims.go)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.test_sa_tokens import SSR, TR, call

NS = "/api/v1/namespaces/default"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
NODE_NAME = "authentication.kubernetes.io/node-name"
NODE_UID = "authentication.kubernetes.io/node-uid"
POD_NAME = "authentication.kubernetes.io/pod-name"
POD_UID = "authentication.kubernetes.io/pod-uid"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    """A plain-HTTP server with an admin static token and ServiceAccount default/robot."""
    tokens = tmp_path_factory.mktemp("satokens-node") / "tokens.csv"
    tokens.write_text('adm,admin,uid-adm,"system:masters"\n')
    srv = EmbeddedServer(token_auth_file=tokens).start_in_thread()
    try:
        status, body = call(srv, "POST", f"{NS}/serviceaccounts", {"metadata": {"name": "robot"}})
        assert status == 201, body
        yield srv
    finally:
        srv.stop_thread()


def node(server: EmbeddedServer, name: str) -> str:
    status, body = call(server, "POST", "/api/v1/nodes", {"metadata": {"name": name}})
    assert status == 201, body
    uid: str = body["metadata"]["uid"]
    return uid


def pod(server: EmbeddedServer, name: str, **spec: Any) -> str:
    body = {
        "metadata": {"name": name},
        "spec": {
            "serviceAccountName": "robot",
            "containers": [{"name": "c", "image": "busybox"}],
            **spec,
        },
    }
    status, got = call(server, "POST", f"{NS}/pods", body)
    assert status == 201, got
    uid: str = got["metadata"]["uid"]
    return uid


def request_token(server: EmbeddedServer, ref: dict[str, Any]) -> tuple[int, Any]:
    return call(
        server, "POST", f"{NS}/serviceaccounts/robot/token", {"spec": {"boundObjectRef": ref}}
    )


def bound_token(server: EmbeddedServer, kind: str, name: str) -> str:
    status, body = request_token(server, {"apiVersion": "v1", "kind": kind, "name": name})
    assert status == 201, body
    assert body["spec"]["boundObjectRef"] == {"apiVersion": "v1", "kind": kind, "name": name}
    token: str = body["status"]["token"]
    return token


def private_claims(token: str) -> Any:
    payload = token.split(".")[1]
    return orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))[
        "kubernetes.io"
    ]


def whoami(server: EmbeddedServer, token: str) -> tuple[int, Any]:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    status, got = call(server, "POST", SSR, body, headers={"Authorization": f"Bearer {token}"})
    return status, got["status"]["userInfo"] if status == 201 else got


def review_error(server: EmbeddedServer, token: str) -> Any:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    status, got = call(server, "POST", TR, {**body, "spec": {"token": token}})
    assert status == 201, got
    assert "authenticated" not in got["status"]
    return got["status"]["error"]


def test_a_node_bound_token_lives_with_that_node(server: EmbeddedServer) -> None:
    uid = node(server, "n1")
    token = bound_token(server, "Node", "n1")
    account = private_claims(token)["serviceaccount"]
    assert private_claims(token) == {
        "namespace": "default",
        "node": {"name": "n1", "uid": uid},
        "serviceaccount": account,
    }
    status, user = whoami(server, token)
    assert status == 201, user
    assert sorted(user["extra"]) == [CREDENTIAL_ID, NODE_NAME, NODE_UID]
    assert (user["extra"][NODE_NAME], user["extra"][NODE_UID]) == (["n1"], [uid])

    assert call(server, "DELETE", "/api/v1/nodes/n1")[0] == 200
    assert whoami(server, token)[0] == 401
    assert review_error(server, token) == "service account token has been invalidated"
    again = node(server, "n1")  # another Node of that name is another Node
    assert whoami(server, token)[0] == 401
    assert review_error(server, token) == (
        f"node UID ({again}) does not match service account node ref claim ({uid})"
    )


def test_node_binding_refusals_are_kubes(server: EmbeddedServer) -> None:
    status, body = request_token(server, {"apiVersion": "v1", "kind": "Node", "name": "nope"})
    assert (status, body["message"]) == (404, 'nodes "nope" not found')
    node(server, "n2")
    ref = {"apiVersion": "v1", "kind": "Node", "name": "n2", "uid": "not-its-uid"}
    status, body = request_token(server, ref)
    assert status == 409
    assert body["message"] == (
        'Operation cannot be fulfilled on Node "n2": the UID in the bound object reference '
        "(not-its-uid) does not match the UID in record. The object might have been deleted "
        "and then recreated"
    )
    status, body = request_token(server, {"apiVersion": "v1", "kind": "Service", "name": "x"})
    assert (status, body["message"]) == (
        400,
        "cannot bind token to object of type /v1, Kind=Service",
    )


def test_a_pod_bound_token_names_the_node_of_its_pod(server: EmbeddedServer) -> None:
    node_uid = node(server, "n3")
    pod_uid = pod(server, "on-n3", nodeName="n3")
    token = bound_token(server, "Pod", "on-n3")
    claims = private_claims(token)
    assert claims["pod"] == {"name": "on-n3", "uid": pod_uid}
    assert claims["node"] == {"name": "n3", "uid": node_uid}
    status, user = whoami(server, token)
    assert status == 201, user
    extra = user["extra"]
    assert sorted(extra) == [CREDENTIAL_ID, NODE_NAME, NODE_UID, POD_NAME, POD_UID]
    assert (extra[POD_NAME], extra[POD_UID]) == (["on-n3"], [pod_uid])
    assert (extra[NODE_NAME], extra[NODE_UID]) == (["n3"], [node_uid])
    # the node of a Pod-bound token is reported, not checked
    assert call(server, "DELETE", "/api/v1/nodes/n3")[0] == 200
    assert whoami(server, token)[0] == 201

    # a Node that is not stored: its name alone; an unscheduled Pod: no node claim
    pod(server, "on-ghost", nodeName="ghost")
    token = bound_token(server, "Pod", "on-ghost")
    assert private_claims(token)["node"] == {"name": "ghost"}
    status, user = whoami(server, token)
    assert status == 201 and user["extra"][NODE_NAME] == ["ghost"]
    assert NODE_UID not in user["extra"]
    pod(server, "pending")
    token = bound_token(server, "Pod", "pending")
    assert "node" not in private_claims(token)
    assert NODE_NAME not in whoami(server, token)[1]["extra"]


def test_a_terminating_pods_token_works_until_the_pod_is_gone(server: EmbeddedServer) -> None:
    pod(server, "leaving", nodeName="n4")
    token = bound_token(server, "Pod", "leaving")
    status, body = call(server, "DELETE", f"{NS}/pods/leaving", {"gracePeriodSeconds": 30})
    assert status == 200 and body["metadata"]["deletionTimestamp"], body
    # kube's validator refuses only objects deleted more than its 60 s leeway ago
    assert whoami(server, token)[0] == 201
    status, _ = call(server, "DELETE", f"{NS}/pods/leaving", {"gracePeriodSeconds": 0})
    assert status == 200
    assert whoami(server, token)[0] == 401
    assert review_error(server, token) == "service account token has been invalidated"


def test_kubectl_create_token_bound_to_a_node(tserver: EmbeddedServer, kubectl: Any) -> None:
    kubectl("create", "serviceaccount", "robot", check=True)
    kubectl("create", "-f", "-", input='{"apiVersion":"v1","kind":"Node","metadata":{"name":"k1"}}')
    uid = kubectl("get", "node", "k1", "-o", "jsonpath={.metadata.uid}", check=True).stdout
    out = kubectl(
        "create", "token", "robot", "--bound-object-kind", "Node", "--bound-object-name", "k1"
    )
    assert out.returncode == 0, out.stderr
    token = out.stdout.strip()
    assert private_claims(token)["node"] == {"name": "k1", "uid": uid}
    user = tserver.app.service_accounts.authenticate(token)
    assert user is not None and user.extra[NODE_UID] == (uid,)
