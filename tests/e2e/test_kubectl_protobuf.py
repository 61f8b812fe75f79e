"""``kubectl create <builtin>``: kubectl 1.32+ sends these bodies as Kubernetes protobuf.

Each test checks what was stored, field by field, as a real cluster stores it, and one
checks (``-v=8``) that kubectl really sent protobuf and accepted a JSON answer.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e


def get_json(kc: KubectlRun, *args: str) -> Any:
    return json.loads(kc("get", *args, "-o", "json").stdout)


SYSTEM_META = {"uid", "resourceVersion", "creationTimestamp"}


def user_meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    assert set(meta) >= SYSTEM_META, meta
    for k in SYSTEM_META:
        meta.pop(k)
    return meta


def test_kubectl_sends_protobuf_and_takes_json(kc: KubectlRun) -> None:
    out = kc("-v=8", "create", "configmap", "seen", "--from-literal=a=b")
    assert out.stdout.strip() == "configmap/seen created"
    request = (
        out.stderr[out.stderr.index('"Request" verb="POST"') :]
        if '"Request" verb="POST"' in out.stderr
        else out.stderr[out.stderr.index("POST ") :]
    )
    assert "Content-Type: application/vnd.kubernetes.protobuf" in request
    assert "Accept: application/vnd.kubernetes.protobuf,application/json" in request
    assert "Content-Type: application/json" in request  # the answer kubectl accepted


def test_create_configmap(kc: KubectlRun, tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)))
    notes = tmp_path / "notes.txt"
    notes.write_text("line 1\nline 2 — ü\n")
    out = kc(
        "create",
        "configmap",
        "app-config",
        "--from-literal=mode=fast",
        "--from-literal=empty=",
        f"--from-file=blob={blob}",
        f"--from-file={notes}",
    )
    assert out.stdout.strip() == "configmap/app-config created"
    cm = get_json(kc, "cm", "app-config")
    assert cm["apiVersion"] == "v1" and cm["kind"] == "ConfigMap"
    assert user_meta(cm) == {"name": "app-config", "namespace": "default"}
    assert cm["data"] == {"mode": "fast", "empty": "", "notes.txt": "line 1\nline 2 — ü\n"}
    assert cm["binaryData"] == {"blob": base64.b64encode(bytes(range(256))).decode()}
    assert "immutable" not in cm

    kc("label", "cm", "app-config", "tier=web")
    kc("annotate", "cm", "app-config", "note=hello")
    meta = get_json(kc, "cm", "app-config")["metadata"]
    assert meta["labels"] == {"tier": "web"} and meta["annotations"] == {"note": "hello"}

    again = kc("create", "configmap", "app-config", check=False)
    assert again.returncode != 0 and 'configmaps "app-config" already exists' in again.stderr

    dry = kc("create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server")
    assert dry.stdout.strip() == "configmap/dry created (server dry run)"
    assert kc("get", "cm", "dry", check=False).returncode != 0


def test_create_secrets(kc: KubectlRun) -> None:
    kc(
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=user=admin",
        "--from-literal=pass=pässwörd",
    )
    secret = get_json(kc, "secret", "creds")
    assert user_meta(secret) == {"name": "creds", "namespace": "default"}
    assert secret["type"] == "Opaque"
    assert secret["data"] == {
        "user": base64.b64encode(b"admin").decode(),
        "pass": base64.b64encode("pässwörd".encode()).decode(),
    }

    kc("create", "secret", "generic", "typed", "--type=example.com/token", "--from-literal=t=x")
    assert get_json(kc, "secret", "typed")["type"] == "example.com/token"

    kc(
        "create",
        "secret",
        "docker-registry",
        "reg",
        "--docker-server=r.example.com",
        "--docker-username=u",
        "--docker-password=p",
    )
    reg = get_json(kc, "secret", "reg")
    assert reg["type"] == "kubernetes.io/dockerconfigjson" and list(reg["data"]) == [
        ".dockerconfigjson"
    ]
    config = json.loads(base64.b64decode(reg["data"][".dockerconfigjson"]))
    assert config["auths"]["r.example.com"]["username"] == "u"
    assert config["auths"]["r.example.com"]["auth"] == base64.b64encode(b"u:p").decode()


def test_create_namespace_and_service_account(kc: KubectlRun) -> None:
    assert kc("create", "namespace", "team-b").stdout.strip() == "namespace/team-b created"
    ns = get_json(kc, "ns", "team-b")
    assert user_meta(ns) == {"name": "team-b", "labels": {"kubernetes.io/metadata.name": "team-b"}}
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}

    assert (
        kc("create", "serviceaccount", "bot", "-n", "team-b").stdout.strip()
        == "serviceaccount/bot created"
    )
    sa = get_json(kc, "sa", "bot", "-n", "team-b")
    assert user_meta(sa) == {"name": "bot", "namespace": "team-b"}
    assert set(sa) == {"apiVersion", "kind", "metadata"}

    missing = kc("create", "serviceaccount", "bot", "-n", "nope", check=False)
    assert missing.returncode != 0 and 'namespaces "nope" not found' in missing.stderr

    # a namespaced object created into a namespace that is going away
    kc("create", "configmap", "keep", "-n", "team-b")
    kc("delete", "ns", "team-b", "--wait=false")
    late = kc("create", "configmap", "late", "-n", "team-b", check=False)
    assert late.returncode != 0  # terminating, or already gone (nothing held it)
    assert (
        "because it is being terminated" in late.stderr
        or 'namespaces "team-b" not found' in late.stderr
    )
