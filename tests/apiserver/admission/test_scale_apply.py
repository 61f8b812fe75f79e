"""Server-side apply of ``/scale`` as kube-apiserver serves and admits it: the
configuration is an ``autoscaling/v1`` Scale; ownership of the replicas moves between
the object and its Scale (kube's ScaleHandler); webhooks and policies whose rules name
``deployments/scale`` get an UPDATE of the Scale (mutating ones the applied Scale, the
others the Scale the write produces) with the PatchOptions as UpdateOptions."""

from __future__ import annotations

import base64
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.webhook import WebhookServer
from kubewerk.webhook.certs import CertificateSet, write_certificates
from tests.apiserver.admission import test_webhooks as hooks
from tests.apiserver.admission.test_scale import AR, DEPLOY, deployment, scale_rule
from tests.apiserver.admission.test_webhooks import register
from tests.apiserver.helpers import CRD_PATH, DB_PATH, DEMO_CRD, Api, database

certs = hooks.certs  # the webhook server's certificate fixture

APPLY = "application/apply-patch+yaml"


@dataclass
class ScaleHooks:
    """A raw ASGI webhook server: ``/validate`` records and allows, ``/cap`` records and
    patches the Scale's ``spec.replicas`` down to 2."""

    reviews: list[dict[str, Any]] = field(default_factory=list)
    paths: tuple[str, ...] = ("/validate", "/cap")
    race: Callable[[], Awaitable[None]] | None = None
    """Run (once) while the first review is being answered: a write racing the request."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        review = orjson.loads(body)
        self.reviews.append(review)
        race, self.race = self.race, None
        if race is not None:
            await race()
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": True}
        if scope["path"] == "/cap":
            patch = [{"op": "replace", "path": "/spec/replicas", "value": 2}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(orjson.dumps(patch)).decode()
        answer = orjson.dumps(
            {"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response}
        )
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": answer})


@pytest.fixture
async def scale_hooks(
    certs: CertificateSet, tmp_path: Path
) -> AsyncIterator[tuple[WebhookServer, ScaleHooks]]:
    files = write_certificates(certs, tmp_path / "certs")
    recorder = ScaleHooks()
    server = WebhookServer(
        recorder,  # type: ignore[arg-type]
        host="127.0.0.1",
        port=0,
        cert_file=files["cert"],
        key_file=files["key"],
    )
    async with server:
        yield server, recorder


def scale(name: str, replicas: int | None, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": name, "namespace": "default", **meta},
    }
    if replicas is not None:
        body["spec"] = {"replicas": replicas}
    return body


async def apply(api: Api, path: str, body: dict[str, Any], query: str) -> tuple[int, Any]:
    return await api.request("PATCH", f"{path}?{query}", raw=orjson.dumps(body), content_type=APPLY)


def replicas_owners(obj: dict[str, Any]) -> dict[tuple[str, str, str, str], str | None]:
    """(manager, operation, apiVersion, subresource) → time, of the entries owning
    ``spec.replicas``."""
    out: dict[tuple[str, str, str, str], str | None] = {}
    for entry in obj["metadata"].get("managedFields") or []:
        spec = (entry.get("fieldsV1") or {}).get("f:spec") or {}
        if "f:replicas" in spec:
            key = (
                entry["manager"],
                entry["operation"],
                entry.get("apiVersion", ""),
                entry.get("subresource", ""),
            )
            out[key] = entry.get("time")
    return out


async def max_five_policy(api: Api) -> None:
    status, body = await api.post(
        f"{AR}/validatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "max-scale"},
            "spec": {
                "matchConstraints": {"resourceRules": [scale_rule()]},
                "validations": [
                    {
                        "expression": "object.spec.replicas <= 5",
                        "messageExpression": "'at most 5 replicas, not ' + "
                        "string(object.spec.replicas)",
                    }
                ],
            },
        },
    )
    assert status == 201, body
    status, body = await api.post(
        f"{AR}/validatingadmissionpolicybindings",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "max-scale"},
            "spec": {"policyName": "max-scale", "validationActions": ["Deny"]},
        },
    )
    assert status == 201, body


async def _validating_hook(api: Api, server: WebhookServer, certs: CertificateSet) -> None:
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "scale",
        {
            "name": "scale.hooks.test",
            "clientConfig": {
                "url": f"https://127.0.0.1:{server.port}/validate",
                "caBundle": certs.ca_bundle,
            },
            "rules": [scale_rule()],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        },
    )


async def test_policy_denies_an_apply_to_scale(api: Api) -> None:
    status, body = await api.post(DEPLOY, deployment("db"))
    assert status == 201, body
    await max_five_policy(api)
    status, body = await apply(
        api, f"{DEPLOY}/db/scale", scale("db", 9), "fieldManager=hpa&force=true"
    )
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        "deployments.apps \"db\" is forbidden: ValidatingAdmissionPolicy 'max-scale' with "
        "binding 'max-scale' denied request: at most 5 replicas, not 9"
    )
    status, body = await api.get(f"{DEPLOY}/db")
    assert body["spec"]["replicas"] == 1
    assert ("hpa", "Apply", "apps/v1", "scale") not in replicas_owners(body)
    # within the limit it is applied (and the Deployment's own PATCH is not a scale write)
    status, body = await apply(
        api, f"{DEPLOY}/db/scale", scale("db", 5), "fieldManager=hpa&force=true"
    )
    assert status == 200, body
    assert body["kind"] == "Scale" and body["spec"] == {"replicas": 5}
    status, body = await api.patch(f"{DEPLOY}/db", {"spec": {"replicas": 8}})
    assert status == 200, body


async def test_webhook_sees_the_applied_scale_and_dry_run_writes_nothing(
    api: Api, scale_hooks: tuple[WebhookServer, ScaleHooks], certs: CertificateSet
) -> None:
    server, recorder = scale_hooks
    status, body = await api.post(DEPLOY, deployment("web"))
    assert status == 201, body
    await _validating_hook(api, server, certs)
    status, body = await apply(
        api, f"{DEPLOY}/web/scale", scale("web", 3), "fieldManager=hpa&force=true"
    )
    assert status == 200, body
    assert body["kind"] == "Scale" and body["spec"] == {"replicas": 3}
    [review] = recorder.reviews
    req = review["request"]
    assert req["operation"] == "UPDATE"
    assert req["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert req["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert req["subResource"] == "scale"
    assert req["name"] == "web" and req["namespace"] == "default"
    assert req["object"]["kind"] == "Scale" and req["object"]["spec"] == {"replicas": 3}
    assert req["oldObject"]["kind"] == "Scale" and req["oldObject"]["spec"] == {"replicas": 1}
    assert req["dryRun"] is False
    # kube admits a PATCH with its PatchOptions as UpdateOptions (force is not carried)
    assert req["options"] == {
        "kind": "UpdateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "hpa",
    }
    status, stored = await api.get(f"{DEPLOY}/web")
    rv = stored["metadata"]["resourceVersion"]
    assert stored["spec"]["replicas"] == 3
    # dry run: admitted and answered, nothing stored
    status, body = await apply(
        api, f"{DEPLOY}/web/scale", scale("web", 4), "fieldManager=hpa&dryRun=All"
    )
    assert status == 200, body
    assert body["spec"] == {"replicas": 4}
    req = recorder.reviews[-1]["request"]
    assert req["dryRun"] is True
    assert req["options"]["dryRun"] == ["All"]
    assert req["object"]["spec"] == {"replicas": 4}
    status, after = await api.get(f"{DEPLOY}/web")
    assert after["spec"]["replicas"] == 3 and after["metadata"]["resourceVersion"] == rv


async def test_mutating_webhook_change_lands(
    api: Api, scale_hooks: tuple[WebhookServer, ScaleHooks], certs: CertificateSet
) -> None:
    server, recorder = scale_hooks
    status, body = await api.post(DEPLOY, deployment("api"))
    assert status == 201, body
    await register(
        api,
        "MutatingWebhookConfiguration",
        "cap",
        {
            "name": "cap.hooks.test",
            "clientConfig": {
                "url": f"https://127.0.0.1:{server.port}/cap",
                "caBundle": certs.ca_bundle,
            },
            "rules": [scale_rule()],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        },
    )
    status, body = await apply(
        api, f"{DEPLOY}/api/scale", scale("api", 9), "fieldManager=hpa&force=true"
    )
    assert status == 200, body
    assert body["spec"] == {"replicas": 2}
    [review] = recorder.reviews
    assert review["request"]["object"]["spec"] == {"replicas": 9}
    status, body = await api.get(f"{DEPLOY}/api")
    assert body["spec"]["replicas"] == 2
    assert set(replicas_owners(body)) == {("hpa", "Apply", "apps/v1", "scale")}


async def test_a_concurrent_write_starts_the_apply_again(
    api: Api, scale_hooks: tuple[WebhookServer, ScaleHooks], certs: CertificateSet
) -> None:
    server, recorder = scale_hooks
    status, body = await api.post(DEPLOY, deployment("race"))
    assert status == 201, body
    await _validating_hook(api, server, certs)

    async def relabel() -> None:
        status, body = await api.patch(f"{DEPLOY}/race", {"metadata": {"labels": {"x": "1"}}})
        assert status == 200, body

    recorder.race = relabel
    status, body = await apply(
        api, f"{DEPLOY}/race/scale", scale("race", 3), "fieldManager=hpa&force=true"
    )
    assert status == 200, body
    # admitted twice: the first attempt met the label write and was made again on it
    assert len(recorder.reviews) == 2
    status, stored = await api.get(f"{DEPLOY}/race")
    assert stored["spec"]["replicas"] == 3
    assert stored["metadata"]["labels"] == {"x": "1"}
    assert body["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    # with a resourceVersion in the configuration the race is the client's 409
    rv = stored["metadata"]["resourceVersion"]

    async def relabel_again() -> None:
        status, body = await api.patch(f"{DEPLOY}/race", {"metadata": {"labels": {"x": "2"}}})
        assert status == 200, body

    recorder.race = relabel_again
    status, body = await apply(
        api,
        f"{DEPLOY}/race/scale",
        scale("race", 4, resourceVersion=rv),
        "fieldManager=hpa&force=true",
    )
    assert status == 409, body
    assert body["reason"] == "Conflict"
    status, stored = await api.get(f"{DEPLOY}/race")
    assert stored["spec"]["replicas"] == 3


async def _ownership_walk(api: Api, name: str) -> list[Any]:
    """kube's apply scale test (test/integration/apiserver/apply/scale_test.go) on one
    Deployment: the replicas and their owners after each step."""
    path = f"{DEPLOY}/{name}"
    seen: list[Any] = []

    async def record(status: int, body: Any) -> None:
        _, obj = await api.get(path)
        seen.append((status, (body or {}).get("message"), obj["spec"]["replicas"]))
        seen.append(sorted((k, t is None) for k, t in replicas_owners(obj).items()))

    dep = deployment(name)
    await record(*await apply(api, path, dep, "fieldManager=apply_test"))
    await record(
        *await api.request(
            "PATCH",
            f"{path}/scale?fieldManager=scale_test",
            raw=b'{"spec":{"replicas":5}}',
            content_type="application/merge-patch+json",
        )
    )
    await record(*await apply(api, path, dep, "fieldManager=apply_test&force=true"))
    await record(*await apply(api, f"{path}/scale", scale(name, 17), "fieldManager=apply_scale"))
    await record(
        *await apply(api, f"{path}/scale", scale(name, 17), "fieldManager=apply_scale&force=true")
    )
    await record(*await api.put(f"{path}/scale?fieldManager=replace_test", scale(name, 7)))
    await record(*await apply(api, f"{path}/scale", scale(name, 7), "fieldManager=co_owning_test"))
    await record(
        *await apply(api, f"{path}/scale", scale(name, 6), "fieldManager=co_owning_test&force=true")
    )
    # the sole owner stops applying spec.replicas: the Scale has none, which kube's typed
    # Scale reads as 0 replicas
    await record(
        *await apply(api, f"{path}/scale", scale(name, None), "fieldManager=co_owning_test")
    )
    return seen


async def test_apply_to_scale_moves_ownership_as_kube(api: Api) -> None:
    seen = await _ownership_walk(api, "walk")
    apps = "apps/v1"
    assert seen == [
        (201, None, 1),
        [(("apply_test", "Apply", apps, ""), False)],
        (200, None, 5),
        [(("scale_test", "Update", apps, ""), False)],
        (200, None, 1),
        [(("apply_test", "Apply", apps, ""), False)],
        (409, 'Apply failed with 1 conflict: conflict with "apply_test": .spec.replicas', 1),
        [(("apply_test", "Apply", apps, ""), False)],
        (200, None, 17),
        # an owner new to the object has no time: kube takes times from its entries only
        [(("apply_scale", "Apply", apps, "scale"), True)],
        (200, None, 7),
        [(("replace_test", "Update", apps, ""), False)],
        (200, None, 7),
        # kube's identities: the updater seen through the Scale (autoscaling/v1) is
        # another identity than the object's (apps/v1), so its entry is made anew
        [
            (("co_owning_test", "Apply", apps, "scale"), True),
            (("replace_test", "Update", apps, ""), True),
        ],
        (200, None, 6),
        [(("co_owning_test", "Apply", apps, "scale"), True)],
        (200, None, 0),
        [],
    ]


async def test_admitted_apply_records_what_the_direct_path_records(api: Api) -> None:
    direct = await _ownership_walk(api, "direct")
    await max_five_policy(api)
    # the policy refuses the 17 replicas of the walk: raise its limit past them
    status, policy = await api.get(f"{AR}/validatingadmissionpolicies/max-scale")
    policy["spec"]["validations"][0]["expression"] = "object.spec.replicas <= 50"
    status, body = await api.put(f"{AR}/validatingadmissionpolicies/max-scale", policy)
    assert status == 200, body
    admitted = await _ownership_walk(api, "admitted")
    assert admitted == direct


async def test_apply_to_scale_takes_a_scale(api: Api) -> None:
    status, body = await api.post(DEPLOY, deployment("cfg"))
    assert status == 201, body
    # the Deployment itself is not what /scale applies (kube: the Scale's field manager)
    evil = deployment("cfg")
    evil["spec"]["template"]["spec"]["containers"][0]["image"] = "evil"
    status, body = await apply(api, f"{DEPLOY}/cfg/scale", evil, "fieldManager=x&force=true")
    assert status == 400, body
    assert body["message"] == (
        "Incorrect version specified in apply patch. Specified patch version: apps/v1, "
        "expected: autoscaling/v1"
    )
    wrong_kind = {**scale("cfg", 2), "kind": "Deployment"}
    status, body = await apply(api, f"{DEPLOY}/cfg/scale", wrong_kind, "fieldManager=x")
    assert status == 400, body
    assert body["message"] == (
        "the kind in the data (Deployment) does not match the expected kind (Scale)"
    )
    status, body = await apply(api, f"{DEPLOY}/gone/scale", scale("gone", 2), "fieldManager=x")
    assert status == 404, body
    status, body = await apply(
        api, f"{DEPLOY}/cfg/scale", scale("cfg", -1), "fieldManager=x&force=true"
    )
    assert status == 422, body
    assert "must be greater than or equal to 0" in body["message"]
    status, body = await apply(
        api,
        f"{DEPLOY}/cfg/scale",
        scale("cfg", 2, resourceVersion="1"),
        "fieldManager=x&force=true",
    )
    assert status == 409, body
    status, body = await api.get(f"{DEPLOY}/cfg")
    assert body["spec"]["replicas"] == 1
    assert body["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"


def _send(base: str, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        base + path,
        data=orjson.dumps(body),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read())


@pytest.mark.e2e
def test_kubectl_apply_to_scale_cannot_rewrite_the_object(
    tserver: EmbeddedServer, kubectl: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    """``kubectl apply --server-side --subresource=scale`` sends the manifest's own object
    (kubectl maps its kind; it has no mapping for Scale) to ``/scale``: kube's Scale field
    manager refuses it, so it can neither change the object nor pass the policy by."""
    base = tserver.url
    crd = yaml.safe_load(DEMO_CRD.read_text())
    status, body = _send(base, "POST", CRD_PATH, crd)
    assert status == 201, body
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}{CRD_PATH}/{crd['metadata']['name']}") as resp:
            conditions = (orjson.loads(resp.read()).get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            break
        time.sleep(0.01)
    rule = {
        "operations": ["UPDATE"],
        "apiGroups": ["demo.kubewerk.dev"],
        "apiVersions": ["v1"],
        "resources": ["databases/scale"],
    }
    status, body = _send(
        base,
        "POST",
        f"{AR}/validatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "max-scale"},
            "spec": {
                "matchConstraints": {"resourceRules": [rule]},
                "validations": [{"expression": "object.spec.replicas <= 5"}],
            },
        },
    )
    assert status == 201, body
    status, body = _send(
        base,
        "POST",
        f"{AR}/validatingadmissionpolicybindings",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "max-scale"},
            "spec": {"policyName": "max-scale", "validationActions": ["Deny"]},
        },
    )
    assert status == 201, body
    status, body = _send(base, "POST", DB_PATH, database("db", replicas=1))
    assert status == 201, body
    manifest = yaml.safe_dump(database("db", engine="mysql", replicas=9))
    proc = kubectl(
        "apply",
        "--server-side",
        "--subresource=scale",
        "--force-conflicts",
        "-f",
        "-",
        input=manifest,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.strip() == (
        "Error from server (BadRequest): Incorrect version specified in apply patch. "
        "Specified patch version: demo.kubewerk.dev/v1, expected: autoscaling/v1"
    )
    with urllib.request.urlopen(f"{base}{DB_PATH}/db") as resp:
        stored = orjson.loads(resp.read())
    assert stored["spec"]["engine"] == "postgres" and stored["spec"]["replicas"] == 1


async def test_apply_to_a_custom_resource_scale(api: Api) -> None:
    status, body = await api.post(DB_PATH, database("pg", replicas=2))
    assert status == 201, body
    status, body = await apply(
        api, f"{DB_PATH}/pg/scale", scale("pg", 3), "fieldManager=hpa&force=true"
    )
    assert status == 200, body
    assert body["kind"] == "Scale" and body["spec"] == {"replicas": 3}
    status, body = await api.get(f"{DB_PATH}/pg")
    assert body["spec"]["replicas"] == 3
    assert set(replicas_owners(body)) == {("hpa", "Apply", "demo.kubewerk.dev/v1", "scale")}


async def test_replicas_nobody_owns_are_owned_before_the_first_apply(api: Api) -> None:
    """No entry of the object owns its replicas (here: a create that left them to the
    default, which its manager owns as in kube, then an update that stripped the
    managedFields with ``[{}]``): kube's field manager gives the Scale a
    ``before-first-apply`` owner of what differs from an empty Scale first."""
    dep = deployment("free")
    del dep["spec"]["replicas"]
    status, body = await api.post(DEPLOY, dep)
    assert status == 201, body
    assert body["spec"]["replicas"] == 1 and replicas_owners(body)
    status, body = await api.patch(f"{DEPLOY}/free", {"metadata": {"managedFields": [{}]}})
    assert status == 200, body
    assert body["spec"]["replicas"] == 1 and not replicas_owners(body)
    status, body = await apply(api, f"{DEPLOY}/free/scale", scale("free", 3), "fieldManager=hpa")
    assert status == 409, body
    assert body["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" with subresource '
        '"scale" using autoscaling/v1: .spec.replicas'
    )
    # agreeing with the value: both own it, and the owner kube made goes to the object
    status, body = await apply(api, f"{DEPLOY}/free/scale", scale("free", 1), "fieldManager=hpa")
    assert status == 200, body
    status, body = await api.get(f"{DEPLOY}/free")
    assert replicas_owners(body) == {
        ("hpa", "Apply", "apps/v1", "scale"): None,
        ("before-first-apply", "Update", "apps/v1", "scale"): None,
    }
    # forcing takes the replicas from it (and the object's entry of it goes)
    status, body = await apply(
        api, f"{DEPLOY}/free/scale", scale("free", 3), "fieldManager=hpa&force=true"
    )
    assert status == 200, body
    status, body = await api.get(f"{DEPLOY}/free")
    assert body["spec"]["replicas"] == 3
    assert list(replicas_owners(body)) == [("hpa", "Apply", "apps/v1", "scale")]


async def test_entries_in_versions_not_served_are_dropped(api: Api) -> None:
    """kube's ScaleHandler drops the object's entries whose apiVersion its replicas path
    mappings do not know (here ``apps/v1beta1``, which is not served)."""
    status, body = await api.post(DEPLOY, deployment("old"))
    assert status == 201, body
    entries = body["metadata"]["managedFields"] + [
        {
            "manager": "ancient",
            "operation": "Update",
            "apiVersion": "apps/v1beta1",
            "time": "2020-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:revisionHistoryLimit": {}}},
        }
    ]
    status, body = await api.patch(f"{DEPLOY}/old", {"metadata": {"managedFields": entries}})
    assert status == 200, body
    assert "ancient" in {e["manager"] for e in body["metadata"]["managedFields"]}
    status, body = await apply(
        api, f"{DEPLOY}/old/scale", scale("old", 2), "fieldManager=hpa&force=true"
    )
    assert status == 200, body
    status, body = await api.get(f"{DEPLOY}/old")
    managers = {e["manager"] for e in body["metadata"]["managedFields"]}
    assert "ancient" not in managers and "hpa" in managers


def _typed_patch_error(text: str, name: str = "cfg") -> str:
    return (
        f"failed to create typed patch object (default/{name}; autoscaling/v1, Kind=Scale): {text}"
    )


@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore", ""])
async def test_unknown_fields_of_an_applied_scale_are_refused_whatever_field_validation(
    api: Api, validation: str
) -> None:
    # kube's field manager cannot make a typed Scale of the configuration: refused before
    # fieldValidation is looked at (which, for an apply, concerns duplicate keys only)
    status, body = await api.post(DEPLOY, deployment("cfg"))
    assert status == 201, body
    query = "fieldManager=x&force=true" + (f"&fieldValidation={validation}" if validation else "")
    config = scale("cfg", 3)
    config["spec"]["foo"] = 1
    code, body = await apply(api, f"{DEPLOY}/cfg/scale", config, query)
    assert code == 400, body
    assert body["reason"] == "BadRequest"
    assert body["message"] == _typed_patch_error(".spec.foo: field not declared in schema")
    config = scale("cfg", 3, foo="x")
    code, body = await apply(api, f"{DEPLOY}/cfg/scale", config, query)
    assert code == 400, body
    assert body["message"] == _typed_patch_error(".metadata.foo: field not declared in schema")
    config = {**scale("cfg", 3), "status": {"replicas": "2"}, "extra": True, "more": 1}
    code, body = await apply(api, f"{DEPLOY}/cfg/scale", config, query)
    assert code == 400, body
    assert body["message"] == _typed_patch_error(
        "errors:\n  .status.replicas: expected numeric (int or float), got string"
        "\n  .extra: field not declared in schema"
    )
    refs = [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u1", "bogus": 1}]
    code, body = await apply(
        api, f"{DEPLOY}/cfg/scale", scale("cfg", 3, ownerReferences=refs), query
    )
    assert code == 400, body
    assert body["message"] == _typed_patch_error(
        '.metadata.ownerReferences[uid="u1"].bogus: field not declared in schema'
    )
    status, body = await api.get(f"{DEPLOY}/cfg")
    assert body["spec"]["replicas"] == 1
    assert not any(
        entry.get("subresource") == "scale" for entry in body["metadata"]["managedFields"]
    )


@pytest.mark.parametrize(
    ("raw", "got"),
    [
        ("'3'", "string"),
        ("true", "bool"),
        ("{a: 1}", "map[string]interface {}"),
        ("[1]", "[]interface {}"),
    ],
    ids=["string", "bool", "map", "list"],
)
async def test_replicas_that_are_not_a_number_are_a_typed_patch_error(
    api: Api, raw: str, got: str
) -> None:
    status, body = await api.post(DEPLOY, deployment("cfg"))
    assert status == 201, body
    doc = (
        "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: cfg}\n"
        f"spec:\n  replicas: {raw}\n"
    )
    code, body = await api.request(
        "PATCH",
        f"{DEPLOY}/cfg/scale?fieldManager=x&force=true",
        raw=doc.encode(),
        content_type=APPLY,
    )
    assert code == 400, body
    assert body["message"] == (
        "failed to create typed patch object (/cfg; autoscaling/v1, Kind=Scale): "
        f".spec.replicas: expected numeric (int or float), got {got}"
    )


async def test_an_admitted_apply_refuses_an_unknown_field_before_webhooks(
    api: Api,
) -> None:
    await max_five_policy(api)
    status, body = await api.post(DEPLOY, deployment("cfg"))
    assert status == 201, body
    config = scale("cfg", 3)
    config["spec"]["foo"] = 1
    code, body = await apply(api, f"{DEPLOY}/cfg/scale", config, "fieldManager=x&force=true")
    assert code == 400, body
    assert body["message"] == _typed_patch_error(".spec.foo: field not declared in schema")
