#!/usr/bin/env python3
"""Regenerate the vendored Kubernetes OpenAPI definitions the embedded server serves.

Input: a published Kubernetes OpenAPI v2 document that carries kube's enum data, as a
cluster serves it: the ``enum`` keyword and the "Possible enum values" paragraph of the
description of every field whose Go type is marked ``+enum``. kube-apiserver publishes
them while its ``OpenAPIEnums`` feature gate is on (beta, on by default since 1.24).

Kubernetes' own snapshot (``api/openapi-spec/swagger.json`` and ``api/openapi-spec/v3/``
of kubernetes/kubernetes, which ``hack/update-openapi-spec.sh`` takes from a server run
with ``OpenAPIEnums=false``) has none, nor has kubernetes-client/python's verbatim copy
(``kubernetes/swagger.json.unprocessed``). kubernetes-sigs/reference-docs publishes the
same document taken with the gate on (``gen-apidocs/config/v1_NN/swagger.json``, from
v1_34): use that one. The script refuses a document whose kept definitions carry no
``enum``.

Output, under ``src/kubewerk/apiserver/kinds/openapi_data/``:

* ``definitions.json.gz``: the ``definitions`` of every kind the server serves
  (``SERVED_KINDS`` below, group/version/kind as in ``x-kubernetes-group-version-kind``)
  and of everything they reach through ``$ref``, plus every ``io.k8s.apimachinery``
  definition; kept exactly as published (OpenAPI v2 form), keys sorted, gzip-compressed;
* ``SOURCE.md``: where they came from (repository, commit, path), how many enums they
  carry, and their licence.

Usage::

    python scripts/vendor_k8s_openapi.py SWAGGER_JSON --repo OWNER/NAME \
        --commit SHA --path PATH_IN_REPO [--release release-1.36]

for instance ``git show HEAD:gen-apidocs/config/v1_36/swagger.json`` of
kubernetes-sigs/reference-docs with ``--repo kubernetes-sigs/reference-docs``.

The embedded server converts the definitions to OpenAPI v3 when it serves them
(``kubewerk.apiserver.kinds.k8s_openapi``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

OUT_DIR = Path(__file__).resolve().parent.parent / "src/kubewerk/apiserver/kinds/openapi_data"

SERVED_KINDS: tuple[tuple[str, str, str], ...] = (
    # already served before issue 13 (their hand-written schemas are replaced in OpenAPI)
    ("", "v1", "Namespace"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "ServiceAccount"),
    ("", "v1", "Event"),
    ("events.k8s.io", "v1", "Event"),
    ("coordination.k8s.io", "v1", "Lease"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    # issue 13
    ("", "v1", "Pod"),
    ("", "v1", "Service"),
    ("", "v1", "Endpoints"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "PersistentVolume"),
    ("", "v1", "Node"),
    ("", "v1", "ReplicationController"),
    ("", "v1", "LimitRange"),
    ("", "v1", "ResourceQuota"),
    ("", "v1", "PodTemplate"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "ReplicaSet"),
    ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "ControllerRevision"),
    ("batch", "v1", "Job"),
    ("batch", "v1", "CronJob"),
    ("networking.k8s.io", "v1", "Ingress"),
    ("networking.k8s.io", "v1", "IngressClass"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("discovery.k8s.io", "v1", "EndpointSlice"),
    ("policy", "v1", "PodDisruptionBudget"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("autoscaling", "v1", "HorizontalPodAutoscaler"),
    ("autoscaling", "v1", "Scale"),
    ("storage.k8s.io", "v1", "StorageClass"),
    ("scheduling.k8s.io", "v1", "PriorityClass"),
    # issue 14: the admission chain's configuration kinds
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding"),
    # issue 15: RBAC, the access reviews, and authentication's review and TokenRequest
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("authorization.k8s.io", "v1", "SubjectAccessReview"),
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"),
    ("authentication.k8s.io", "v1", "SelfSubjectReview"),
    ("authentication.k8s.io", "v1", "TokenRequest"),
    ("authentication.k8s.io", "v1", "TokenReview"),
)
"""Every kind whose definition is vendored (with its ``...List`` kind)."""

_REF = "#/definitions/"


def _refs(value: Any, out: set[str]) -> None:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            out.add(ref[len(_REF) :])
        for v in value.values():
            _refs(v, out)
    elif isinstance(value, list):
        for v in value:
            _refs(v, out)


def trim(definitions: dict[str, Any]) -> dict[str, Any]:
    """The definitions of ``SERVED_KINDS`` (and their lists), everything they reach, and
    every ``io.k8s.apimachinery`` definition. Exits naming any served kind not found."""
    by_gvk: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            by_gvk.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    roots: set[str] = {n for n in definitions if n.startswith("io.k8s.apimachinery.")}
    missing = []
    for group, version, kind in SERVED_KINDS:
        for k in (kind, kind + "List"):
            name = by_gvk.get((group, version, k))
            if name is None:
                if k == kind:
                    missing.append(f"{group or 'core'}/{version} {k}")
                continue
            roots.add(name)
    if missing:
        sys.exit("not in the document: " + ", ".join(missing))
    keep: set[str] = set()
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in keep or name not in definitions:
            continue
        keep.add(name)
        found: set[str] = set()
        _refs(definitions[name], found)
        todo.extend(found - keep)
    return {name: definitions[name] for name in sorted(keep)}


def enum_count(value: Any) -> int:
    """How many schemas in ``value`` carry an ``enum`` keyword."""
    if isinstance(value, dict):
        own = 1 if isinstance(value.get("enum"), list) else 0
        return own + sum(enum_count(v) for v in value.values())
    if isinstance(value, list):
        return sum(enum_count(v) for v in value)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("swagger", type=Path, help="a published swagger.json (OpenAPI v2)")
    parser.add_argument("--repo", required=True, help="repository it came from (owner/name)")
    parser.add_argument("--commit", required=True, help="commit it was taken at")
    parser.add_argument("--path", required=True, help="its path in that repository")
    parser.add_argument("--release", default="", help="Kubernetes release branch it reflects")
    args = parser.parse_args(argv)
    doc = json.loads(args.swagger.read_text())
    definitions = trim(doc["definitions"])
    enums = enum_count(definitions)
    if enums == 0:
        sys.exit(
            "the kept definitions carry no 'enum': this document was published with the "
            "OpenAPIEnums feature gate off (kubernetes/kubernetes' api/openapi-spec, "
            "kubernetes-client/python's copy); use one taken with it on, as a cluster "
            "serves it (kubernetes-sigs/reference-docs gen-apidocs/config/v1_NN/swagger.json)"
        )
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    text = json.dumps(definitions, sort_keys=True, separators=(",", ":")).encode()
    # mtime=0: the same input gives byte-identical output
    (OUT_DIR / "definitions.json.gz").write_bytes(gzip.compress(text, 9, mtime=0))
    kinds = "\n".join(f"- {g or 'core'}/{v} {k}" for g, v, k in SERVED_KINDS)
    (OUT_DIR / "SOURCE.md").write_text(
        "# Vendored Kubernetes OpenAPI definitions\n\n"
        "`definitions.json.gz` holds OpenAPI v2 `definitions` exactly as Kubernetes publishes\n"
        "them, trimmed to the kinds below, what they reach through `$ref`, and every\n"
        "`io.k8s.apimachinery` definition. Regenerate with `scripts/vendor_k8s_openapi.py`.\n\n"
        'They carry kube\'s enum data (`enum` and the "Possible enum values" descriptions) as\n'
        "kube-apiserver serves them with its `OpenAPIEnums` feature gate on (the default).\n"
        "Kubernetes' own snapshot (kubernetes/kubernetes `api/openapi-spec/`, taken with the\n"
        "gate off by `hack/update-openapi-spec.sh`) and kubernetes-client/python's copy of it\n"
        "have none; kubernetes-sigs/reference-docs publishes the document taken with it on.\n\n"
        f"- repository: {args.repo}\n"
        f"- commit: {args.commit}\n"
        f"- path: {args.path}\n"
        + (f"- Kubernetes release: {args.release}\n" if args.release else "")
        + f"- definitions kept: {len(definitions)}\n"
        f"- schemas with `enum`: {enums}\n"
        "- licence: Apache License 2.0 (the Kubernetes API definitions are generated from\n"
        "  k8s.io/api and k8s.io/apimachinery, Copyright The Kubernetes Authors, under the\n"
        "  Apache License, Version 2.0: https://www.apache.org/licenses/LICENSE-2.0)\n\n"
        f"Kinds:\n\n{kinds}\n"
    )
    print(f"{len(definitions)} definitions ({enums} enums), {len(text)} bytes -> {OUT_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
