"""What a policy sees of a write's names through the chain: ``request.kind`` and
``request.resource`` are the matched ones (an equivalent version under ``matchPolicy:
Equivalent``), ``requestKind`` and ``requestResource`` the request's own, and
``request.options`` is ``CreateOptions``/``UpdateOptions``. The equivalent versions are
the ones the CRD serves now: a CRD that stops serving a version stops matching through
it from the next request on."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.storage import open_store
from tests.apiserver.helpers import asgi_call
from tests.apiserver.helpers import json_call as _send

AR = "/apis/admissionregistration.k8s.io/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NAMES = (
    "request.kind.version + ' ' + request.requestKind.version + ' ' + "
    "request.resource.version + ' ' + request.requestResource.version + ' ' + "
    "request.kind.kind + ' ' + request.resource.resource + ' ' + request.options.kind"
)


def _version(name: str, storage: bool) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    }
    return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": schema}}


def _crd(*versions: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": list(versions),
        },
    }


POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "names"},
    "spec": {
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["example.com"],
                    "apiVersions": ["v1beta1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["gadgets"],
                }
            ]
        },
        "validations": [{"expression": "object.spec.size < 0", "messageExpression": NAMES}],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "names"},
    "spec": {"policyName": "names", "validationActions": ["Deny"]},
}


def _gadget(version: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"example.com/{version}",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"size": 1},
    }


async def _served(app: ApiServer, versions: list[str]) -> None:
    for _ in range(500):
        rtype = app.registry.get("example.com", "gadgets")
        if rtype is not None and rtype.versions == versions:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"gadgets not served in {versions}")


def _seen(body: Any) -> str:
    """What the policy's message expression said, from kube-apiserver's wording."""
    marker = "ValidatingAdmissionPolicy 'names' with binding 'names' denied request: "
    message = str(body["message"])
    assert marker in message, message
    return message.split(marker, 1)[1]


async def test_matched_and_requested_names_follow_the_served_versions() -> None:
    app = ApiServer(open_store("memory"))
    crd = _crd(_version("v1", True), _version("v1beta1", False))
    assert (await _send(app, "POST", CRDS, crd))[0] == 201
    await _served(app, ["v1", "v1beta1"])
    v1 = "/apis/example.com/v1/namespaces/default/gadgets"
    v1beta1 = "/apis/example.com/v1beta1/namespaces/default/gadgets"
    assert (await _send(app, "POST", v1, _gadget("v1", "old")))[0] == 201
    assert (await _send(app, "POST", f"{AR}/validatingadmissionpolicies", POLICY))[0] == 201
    assert (await _send(app, "POST", f"{AR}/validatingadmissionpolicybindings", BINDING))[0] == 201

    # a v1 write matches the v1beta1 rule through its equivalent version
    status, body = await _send(app, "POST", v1, _gadget("v1", "a"))
    assert status == 422, body
    assert _seen(body) == "v1beta1 v1 v1beta1 v1 Gadget gadgets CreateOptions"
    status, body = await _send(app, "POST", v1beta1, _gadget("v1beta1", "b"))
    assert status == 422, body
    assert _seen(body) == "v1beta1 v1beta1 v1beta1 v1beta1 Gadget gadgets CreateOptions"
    status, old = await _send(app, "GET", f"{v1}/old")
    assert status == 200, old
    status, body = await _send(app, "PUT", f"{v1}/old", old)
    assert status == 422, body
    assert _seen(body) == "v1beta1 v1 v1beta1 v1 Gadget gadgets UpdateOptions"

    # v1beta1 no longer served: nothing is equivalent to a v1 write any more
    status, crd = await _send(app, "GET", f"{CRDS}/gadgets.example.com")
    assert status == 200, crd
    crd["spec"]["versions"] = [_version("v1", True)]
    assert (await _send(app, "PUT", f"{CRDS}/gadgets.example.com", crd))[0] == 200
    await _served(app, ["v1"])
    status, body = await _send(app, "POST", v1, _gadget("v1", "c"))
    assert status == 201, body


OPTIONS = (
    "request.options.kind + ' ' + "
    "(has(request.options.fieldManager) ? request.options.fieldManager : '-') + ' ' + "
    "(has(request.options.fieldValidation) ? request.options.fieldValidation : '-') + ' ' + "
    "(has(request.options.dryRun) ? request.options.dryRun[0] : '-')"
)


async def test_options_are_the_requests_own() -> None:
    """``request.options`` of a create, an update and a patch carry the query's
    ``dryRun``, ``fieldManager`` and ``fieldValidation`` (a patch's as UpdateOptions,
    kube's ``patchToUpdateOptions``), and only what was given."""
    app = ApiServer(open_store("memory"))
    assert (await _send(app, "POST", CRDS, _crd(_version("v1beta1", True))))[0] == 201
    await _served(app, ["v1beta1"])
    path = "/apis/example.com/v1beta1/namespaces/default/gadgets"
    assert (await _send(app, "POST", path, _gadget("v1beta1", "old")))[0] == 201
    policy = {**POLICY, "spec": {**POLICY["spec"]}}
    policy["spec"]["validations"] = [
        {"expression": "object.spec.size < 0", "messageExpression": OPTIONS}
    ]
    assert (await _send(app, "POST", f"{AR}/validatingadmissionpolicies", policy))[0] == 201
    assert (await _send(app, "POST", f"{AR}/validatingadmissionpolicybindings", BINDING))[0] == 201

    status, body = await _send(app, "POST", path, _gadget("v1beta1", "a"))
    assert status == 422, body
    assert _seen(body) == "CreateOptions - - -"
    query = "?fieldManager=me&fieldValidation=Strict&dryRun=All"
    status, body = await _send(app, "POST", path + query, _gadget("v1beta1", "a"))
    assert status == 422, body
    assert _seen(body) == "CreateOptions me Strict All"
    status, old = await _send(app, "GET", f"{path}/old")
    status, body = await _send(app, "PUT", f"{path}/old?fieldManager=you", old)
    assert status == 422, body
    assert _seen(body) == "UpdateOptions you - -"
    status, _, payload = await asgi_call(
        app,
        "PATCH",
        f"{path}/old",
        "fieldManager=them&dryRun=All",
        headers={"content-type": "application/merge-patch+json"},
        body=b'{"spec":{"size":2}}',
    )
    assert status == 422, payload
    assert _seen(orjson.loads(payload)) == "UpdateOptions them - All"
    # the PatchOptions are checked before admission, as without it
    status, _, payload = await asgi_call(
        app,
        "PATCH",
        f"{path}/old",
        "force=true",
        headers={"content-type": "application/merge-patch+json"},
        body=b'{"spec":{"size":2}}',
    )
    assert status == 422, payload
    assert orjson.loads(payload)["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: '
        "may not be specified for non-apply patch"
    )
