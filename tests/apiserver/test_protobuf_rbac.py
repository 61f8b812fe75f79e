"""Protobuf bodies of the rbac.authorization.k8s.io/v1 kinds (Role, RoleBinding,
ClusterRole, ClusterRoleBinding): what ``kubectl create role|clusterrole|rolebinding|
clusterrolebinding`` and ``kubectl auth reconcile`` send through client-go's typed clients.

- Bodies the real kubectl 1.32 sent (captured from its ``-v=9`` hex dump of the POST
  body) decode to the JSON kubectl itself writes for the same object (``--dry-run=client
  -o json``, Go's encoding/json of the same Go struct), key order included;
- over HTTP they are created with their rules, subjects and roleRef as sent, and a
  protobuf PUT (``auth reconcile``'s update) replaces the rules under resourceVersion;
- malformed RBAC bodies are 400s worded as kube-apiserver's decoder errors.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubewerk.apiserver import protobuf as pb
from tests.apiserver.helpers import Api
from tests.apiserver.test_protobuf import PROTO, envelope, ld, meta, vi

RBAC = "rbac.authorization.k8s.io/v1"

# kubectl 1.32's protobuf bodies (hex) and kubectl's own JSON for the same object
# (creationTimestamp: null left out as newer Go types omit it)
KUBECTL_132_RBAC_BODIES: list[tuple[str, str, str]] = [
    (
        (
            "kubectl create role pod-reader --verb=get --verb=list"
            " --resource=pods,pods/status,deployments.apps"
        ),
        (
            "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f6c65125e"
            "0a1a0a0a706f642d72656164657212001a0022002a0032003800420012200a036765740a046c69737412001a"
            "04706f64731a0b706f64732f737461747573121e0a036765740a046c6973741204617070731a0b6465706c6f"
            "796d656e74731a002200"
        ),
        (
            '{"kind":"Role","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"p'
            'od-reader"},"rules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods'
            '","pods/status"]},{"verbs":["get","list"],"apiGroups":["apps"],"resources":["dep'
            'loyments"]}]}'
        ),
    ),
    (
        (
            "kubectl create role web-reader --verb=get --resource=configmaps"
            " --resource-name=web --resource-name=api"
        ),
        (
            "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f6c65123b"
            "0a1a0a0a7765622d72656164657212001a0022002a00320038004200121d0a0367657412001a0a636f6e6669"
            "676d617073220377656222036170691a002200"
        ),
        (
            '{"kind":"Role","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"w'
            'eb-reader"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["configmaps"'
            '],"resourceNames":["web","api"]}]}'
        ),
    ),
    (
        "kubectl create clusterrole node-reader --verb=get,list,watch --resource=nodes",
        (
            "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c75737465"
            "72526f6c65123a0a1b0a0b6e6f64652d72656164657212001a0022002a00320038004200121b0a036765740a"
            "046c6973740a05776174636812001a056e6f6465731a002200"
        ),
        (
            '{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"n'
            'ame":"node-reader"},"rules":[{"verbs":["get","list","watch"],"apiGroups":[""],"r'
            'esources":["nodes"]}]}'
        ),
    ),
    (
        (
            "kubectl create clusterrole monitoring"
            " --aggregation-rule=rbac.example.com/aggregate-to-monitoring=true"
        ),
        (
            "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c75737465"
            "72526f6c6512520a1a0a0a6d6f6e69746f72696e6712001a0022002a003200380042001a340a320a300a2872"
            "6261632e6578616d706c652e636f6d2f6167677265676174652d746f2d6d6f6e69746f72696e671204747275"
            "651a002200"
        ),
        (
            '{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"n'
            'ame":"monitoring"},"rules":null,"aggregationRule":{"clusterRoleSelectors":[{"mat'
            'chLabels":{"rbac.example.com/aggregate-to-monitoring":"true"}}]}}'
        ),
    ),
    (
        (
            "kubectl create clusterrole logs --verb=get --non-resource-url=/logs/*"
            " --non-resource-url=/healthz"
        ),
        (
            "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c75737465"
            "72526f6c6512300a140a046c6f677312001a0022002a0032003800420012180a036765742a072f6c6f67732f"
            "2a2a082f6865616c74687a1a002200"
        ),
        (
            '{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"n'
            'ame":"logs"},"rules":[{"verbs":["get"],"nonResourceURLs":["/logs/*","/healthz"]}'
            "]}"
        ),
    ),
    (
        (
            "kubectl create rolebinding rb1 --role=pod-reader --user=alice --group=ops"
            " --serviceaccount=default:sa1"
        ),
        (
            "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b526f6c654269"
            "6e64696e6712bd010a130a0372623112001a0022002a00320038004200122a0a04557365721219726261632e"
            "617574686f72697a6174696f6e2e6b38732e696f1a05616c696365220012290a0547726f7570121972626163"
            "2e617574686f72697a6174696f6e2e6b38732e696f1a036f7073220012200a0e536572766963654163636f75"
            "6e7412001a03736131220764656661756c741a2d0a19726261632e617574686f72697a6174696f6e2e6b3873"
            "2e696f1204526f6c651a0a706f642d7265616465721a002200"
        ),
        (
            '{"kind":"RoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"n'
            'ame":"rb1"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","n'
            'ame":"alice"},{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"ops'
            '"},{"kind":"ServiceAccount","name":"sa1","namespace":"default"}],"roleRef":{"api'
            'Group":"rbac.authorization.k8s.io","kind":"Role","name":"pod-reader"}}'
        ),
    ),
    (
        "kubectl create rolebinding rb2 --clusterrole=view --user=bob",
        (
            "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b526f6c654269"
            "6e64696e67126f0a130a0372623212001a0022002a0032003800420012280a04557365721219726261632e61"
            "7574686f72697a6174696f6e2e6b38732e696f1a03626f6222001a2e0a19726261632e617574686f72697a61"
            "74696f6e2e6b38732e696f120b436c7573746572526f6c651a04766965771a002200"
        ),
        (
            '{"kind":"RoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"n'
            'ame":"rb2"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","n'
            'ame":"bob"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRo'
            'le","name":"view"}}'
        ),
    ),
    (
        (
            "kubectl create clusterrolebinding crb1 --clusterrole=node-reader --user=alice"
            " --serviceaccount=kube-system:sa"
        ),
        (
            "6b3873000a320a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311212436c75737465"
            "72526f6c6542696e64696e67129e010a140a046372623112001a0022002a00320038004200122a0a04557365"
            "721219726261632e617574686f72697a6174696f6e2e6b38732e696f1a05616c696365220012230a0e536572"
            "766963654163636f756e7412001a027361220b6b7562652d73797374656d1a350a19726261632e617574686f"
            "72697a6174696f6e2e6b38732e696f120b436c7573746572526f6c651a0b6e6f64652d7265616465721a0022"
            "00"
        ),
        (
            '{"kind":"ClusterRoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metada'
            'ta":{"name":"crb1"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8'
            's.io","name":"alice"},{"kind":"ServiceAccount","name":"sa","namespace":"kube-sys'
            'tem"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","n'
            'ame":"node-reader"}}'
        ),
    ),
]

PATHS = {
    "Role": f"/apis/{RBAC}/namespaces/default/roles",
    "RoleBinding": f"/apis/{RBAC}/namespaces/default/rolebindings",
    "ClusterRole": f"/apis/{RBAC}/clusterroles",
    "ClusterRoleBinding": f"/apis/{RBAC}/clusterrolebindings",
}


def _same(got: Any, want: Any) -> bool:
    """Equal, with every object's keys in the same order (as Go writes them)."""
    return orjson.dumps(got) == orjson.dumps(want)


def test_the_rbac_kinds_are_decoded() -> None:
    for kind in PATHS:
        assert (RBAC, kind) in pb.KINDS
        obj = pb.decode_object(pb.MAGIC + ld(2, meta("x")), RBAC, kind)
        assert obj["kind"] == kind and obj["metadata"] == {"name": "x"}


@pytest.mark.parametrize(
    ("command", "body", "expected"),
    KUBECTL_132_RBAC_BODIES,
    ids=[c.split(" --")[0].removeprefix("kubectl create ") for c, _, _ in KUBECTL_132_RBAC_BODIES],
)
def test_real_kubectl_rbac_bodies_decode_to_kubectls_own_json(
    command: str, body: str, expected: str
) -> None:
    data = bytes.fromhex(body)
    env = pb.decode_envelope(data)
    got = pb.decode_object(data, env.api_version, env.kind)
    want = orjson.loads(expected)
    assert got == want
    assert _same(got, want), (orjson.dumps(got), expected)


def test_rules_of_a_role_follow_the_go_struct_tags() -> None:
    # Role.rules has no omitempty (null when absent); PolicyRule.verbs neither; the other
    # lists are omitempty; Subject.apiGroup and namespace are omitempty, kind and name not
    role = pb.decode_object(envelope(RBAC, "Role", ld(1, ld(1, "r"))), RBAC, "Role")
    assert role == {"kind": "Role", "apiVersion": RBAC, "metadata": {"name": "r"}, "rules": None}
    rule = pb.decode_message("k8s.io.api.rbac.v1.PolicyRule", b"")
    assert rule == {"verbs": None}
    subject = pb.decode_message("k8s.io.api.rbac.v1.Subject", b"")
    assert subject == {"kind": "", "name": ""}
    binding = pb.decode_object(envelope(RBAC, "RoleBinding", b""), RBAC, "RoleBinding")
    assert binding["roleRef"] == {"apiGroup": "", "kind": "", "name": ""}
    assert "subjects" not in binding


async def test_real_kubectl_rbac_bodies_are_created_over_http(api: Api) -> None:
    for command, body, expected in KUBECTL_132_RBAC_BODIES:
        sent = orjson.loads(expected)
        path = PATHS[sent["kind"]]
        status, created = await api.request(
            "POST", path, raw=bytes.fromhex(body), content_type=PROTO
        )
        assert status == 201, (command, created)
        assert created["kind"] == sent["kind"] and created["apiVersion"] == RBAC
        assert created["metadata"]["name"] == sent["metadata"]["name"]
        for field in ("subjects", "roleRef", "aggregationRule"):
            assert created.get(field) == sent.get(field), (command, field)
        if sent.get("rules") is not None:
            assert created["rules"] == sent["rules"], command
        status, got = await api.get(f"{path}/{sent['metadata']['name']}")
        assert status == 200 and got == created


async def test_a_protobuf_update_of_a_role_as_auth_reconcile_sends_it(api: Api) -> None:
    path = PATHS["Role"]
    body = bytes.fromhex(KUBECTL_132_RBAC_BODIES[0][1])
    status, created = await api.request("POST", path, raw=body, content_type=PROTO)
    assert status == 201, orjson.dumps(created)
    rv = created["metadata"]["resourceVersion"]
    # the role with one more rule and its resourceVersion, as client-go PUTs it
    rules = ld(2, ld(1, "get") + ld(2, "") + ld(3, "pods")) + ld(
        2, ld(1, "watch") + ld(2, "") + ld(3, "configmaps")
    )
    update = envelope(
        RBAC, "Role", ld(1, ld(1, "pod-reader") + ld(3, "default") + ld(6, rv)) + rules
    )
    status, updated = await api.request("PUT", f"{path}/pod-reader", raw=update, content_type=PROTO)
    assert status == 200, updated
    assert updated["rules"] == [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["watch"], "apiGroups": [""], "resources": ["configmaps"]},
    ]
    status, stale = await api.request("PUT", f"{path}/pod-reader", raw=update, content_type=PROTO)
    assert status == 409 and stale["reason"] == "Conflict"


async def test_malformed_rbac_bodies_are_400(api: Api) -> None:
    # PolicyRule.verbs (1) as a varint
    bad = envelope(RBAC, "ClusterRole", ld(1, ld(1, "bad")) + ld(2, vi(1, 3)))
    status, err = await api.request("POST", PATHS["ClusterRole"], raw=bad, content_type=PROTO)
    assert status == 400, err
    assert err["message"] == (
        'ClusterRole in version "v1" cannot be handled as a ClusterRole: '
        "proto: wrong wireType = 0 for field Verbs"
    )
    truncated = bytes.fromhex(KUBECTL_132_RBAC_BODIES[5][1])[:-9]
    status, err = await api.request("POST", PATHS["RoleBinding"], raw=truncated, content_type=PROTO)
    assert status == 400 and err["reason"] == "BadRequest", err
