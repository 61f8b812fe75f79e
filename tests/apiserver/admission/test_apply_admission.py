"""Server-side apply through the admission chain: with webhooks configured, an apply
is admitted (CREATE for a new object, UPDATE after) instead of answering 415; webhooks
see the applied object, a mutating webhook's change is kept, a denial stops it."""

from __future__ import annotations

from typing import Any

import orjson

from kubewerk.webhook import WebhookServer
from kubewerk.webhook.certs import CertificateSet
from tests.apiserver.admission import test_webhooks as webhooks
from tests.apiserver.helpers import Api

# the webhook suite's fixtures and helpers (a Recorder webhook over HTTPS)
api = webhooks.api
certs = webhooks.certs
hook_server = webhooks.hook_server
CM, Recorder, hook, register = webhooks.CM, webhooks.Recorder, webhooks.hook, webhooks.register


async def apply(api: Api, name: str, manager: str, **data: str) -> tuple[int, Any]:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    return await api.request(
        "PATCH",
        f"{CM}/{name}?fieldManager={manager}",
        raw=orjson.dumps(body),
        content_type="application/apply-patch+yaml",
    )


async def test_webhooks_see_applied_objects(
    api: Api, hook_server: tuple[WebhookServer, Recorder], certs: CertificateSet
) -> None:
    server, recorder = hook_server
    base = f"https://127.0.0.1:{server.port}"
    await register(
        api,
        "MutatingWebhookConfiguration",
        "tagger",
        hook("tag.hooks.test", certs, url=base + "/tag"),
    )
    await register(
        api,
        "ValidatingWebhookConfiguration",
        "check",
        hook("check.hooks.test", certs, url=base + "/validate"),
    )
    status, created = await apply(api, "a", "alice", size="1")
    assert status == 201, created
    assert created["data"] == {"size": "1", "tagged": "yes"}  # the mutating webhook's change
    ops = [(r["request"]["operation"], r["request"]["object"]["data"]) for r in recorder.reviews]
    assert ops[0] == ("CREATE", {"size": "1"})  # the mutating webhook sees the applied object
    assert ops[-1] == ("CREATE", {"size": "1", "tagged": "yes"})  # validation sees the result
    # the applied object carries alice's Apply entry when the webhooks see it
    entries = recorder.reviews[0]["request"]["object"]["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in entries] == [("alice", "Apply")]
    # the webhook's tag belongs to no manager (as on kube-apiserver)
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:size": {}}}
    recorder.reviews.clear()
    status, updated = await apply(api, "a", "alice", size="2")
    assert status == 200, updated
    assert updated["data"] == {"size": "2", "tagged": "yes"}
    review = recorder.reviews[0]["request"]
    assert review["operation"] == "UPDATE"
    assert review["object"]["data"]["size"] == "2"
    assert review["oldObject"]["data"]["size"] == "1"
    # a validating webhook's denial stops an apply as it stops any write
    status, denied = await apply(api, "a", "alice", size="3", deny="no thanks")
    assert status == 400, denied  # a webhook denial without a code is 400 (ToStatusErr)
    assert "no thanks" in denied["message"]
    status, kept = await api.get(f"{CM}/a")
    assert kept["data"]["size"] == "2"
    # conflicts still come from the field manager, before admission
    status, conflict = await apply(api, "a", "bob", size="9")
    assert status == 409, conflict
    assert conflict["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.size'
