#!/usr/bin/env python3
"""Generate ``src/kubewerk/apiserver/protodata/messages.json``: the protobuf message
tables ``kubewerk.apiserver.protobuf`` decodes built-in kinds with.

Inputs are checkouts of https://github.com/kubernetes/api and
https://github.com/kubernetes/apimachinery (Apache-2.0). From each package it reads

- ``generated.proto`` for every message's fields: number, protobuf type (scalar, message,
  ``map<K, V>``) and whether it is ``repeated``;
- ``types.go`` for the Go struct each message is generated from: field order (Go's
  encoding/json writes fields in struct order), Go field names (the unmarshaler's error
  texts name them), JSON names and options (``omitempty``, ``omitzero``, embedded structs
  whose fields are promoted), and whether the Go field is a pointer.

Only the messages the served kinds reach are written (a closure from ``ROOTS``). The
output is data (numbers and names), with the source commits noted in ``SOURCE.md``.

Usage::

    python scripts/vendor_k8s_proto.py --api PATH --apimachinery PATH

where each PATH is a work tree, or a bare git directory (``HEAD`` is read with
``git show``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent.parent / "src" / "kubewerk" / "apiserver" / "protodata"

# proto package -> (repository key, directory)
PACKAGES: dict[str, tuple[str, str]] = {
    "k8s.io.api.core.v1": ("api", "core/v1"),
    "k8s.io.api.apps.v1": ("api", "apps/v1"),
    "k8s.io.api.batch.v1": ("api", "batch/v1"),
    "k8s.io.api.networking.v1": ("api", "networking/v1"),
    "k8s.io.api.discovery.v1": ("api", "discovery/v1"),
    "k8s.io.api.policy.v1": ("api", "policy/v1"),
    "k8s.io.api.autoscaling.v1": ("api", "autoscaling/v1"),
    "k8s.io.api.autoscaling.v2": ("api", "autoscaling/v2"),
    "k8s.io.api.storage.v1": ("api", "storage/v1"),
    "k8s.io.api.scheduling.v1": ("api", "scheduling/v1"),
    "k8s.io.api.events.v1": ("api", "events/v1"),
    "k8s.io.api.coordination.v1": ("api", "coordination/v1"),
    "k8s.io.api.rbac.v1": ("api", "rbac/v1"),
    "k8s.io.api.admissionregistration.v1": ("api", "admissionregistration/v1"),
    "k8s.io.apimachinery.pkg.apis.meta.v1": ("apimachinery", "pkg/apis/meta/v1"),
    "k8s.io.apimachinery.pkg.api.resource": ("apimachinery", "pkg/api/resource"),
    "k8s.io.apimachinery.pkg.util.intstr": ("apimachinery", "pkg/util/intstr"),
    "k8s.io.apimachinery.pkg.runtime": ("apimachinery", "pkg/runtime"),
}

# messages with their own JSON form (custom MarshalJSON): decoded by hand, not by table
META = "k8s.io.apimachinery.pkg.apis.meta.v1."
SPECIAL: dict[str, str] = {
    META + "Time": "time",
    META + "MicroTime": "microtime",
    META + "FieldsV1": "fieldsv1",
    META + "Duration": "duration",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "rawextension",
}

SPECIAL_ONLY = {"k8s.io.apimachinery.pkg.api.resource", "k8s.io.apimachinery.pkg.util.intstr"}

# (apiVersion, kind, message) of the objects decoded from request bodies
ROOTS: list[tuple[str, str, str]] = [
    ("v1", k, "k8s.io.api.core.v1." + k)
    for k in (
        "ConfigMap",
        "Secret",
        "Namespace",
        "ServiceAccount",
        "Event",
        "Pod",
        "Service",
        "Endpoints",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "Node",
        "ReplicationController",
        "LimitRange",
        "ResourceQuota",
        "PodTemplate",
        "Binding",
    )
]
ROOTS += [
    ("apps/v1", k, "k8s.io.api.apps.v1." + k)
    for k in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ControllerRevision")
]
ROOTS += [("batch/v1", k, "k8s.io.api.batch.v1." + k) for k in ("Job", "CronJob")]
ROOTS += [
    ("networking.k8s.io/v1", k, "k8s.io.api.networking.v1." + k)
    for k in ("Ingress", "IngressClass", "NetworkPolicy")
]
ROOTS += [
    ("discovery.k8s.io/v1", "EndpointSlice", "k8s.io.api.discovery.v1.EndpointSlice"),
    ("policy/v1", "PodDisruptionBudget", "k8s.io.api.policy.v1.PodDisruptionBudget"),
    ("policy/v1", "Eviction", "k8s.io.api.policy.v1.Eviction"),
    (
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        "k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler",
    ),
    ("autoscaling/v1", "Scale", "k8s.io.api.autoscaling.v1.Scale"),
    (
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "k8s.io.api.autoscaling.v2.HorizontalPodAutoscaler",
    ),
    ("storage.k8s.io/v1", "StorageClass", "k8s.io.api.storage.v1.StorageClass"),
    ("scheduling.k8s.io/v1", "PriorityClass", "k8s.io.api.scheduling.v1.PriorityClass"),
    ("events.k8s.io/v1", "Event", "k8s.io.api.events.v1.Event"),
    ("coordination.k8s.io/v1", "Lease", "k8s.io.api.coordination.v1.Lease"),
]
# kubectl create role/clusterrole/rolebinding/clusterrolebinding and kubectl auth
# reconcile send these through client-go's typed clients, i.e. as protobuf
ROOTS += [
    ("rbac.authorization.k8s.io/v1", k, "k8s.io.api.rbac.v1." + k)
    for k in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
]
# what client-go typed clients (controller-runtime operators) create for their webhooks
# and policies
ROOTS += [
    ("admissionregistration.k8s.io/v1", k, "k8s.io.api.admissionregistration.v1." + k)
    for k in (
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    )
]
EXTRA_ROOTS = [META + "DeleteOptions"]

SCALARS = {"string", "bytes", "bool", "int32", "int64"}
# special messages the decoder has no JSON form for yet: reaching one is an error here
UNSUPPORTED = {"duration"}


class Source:
    """Files of one repository: a work tree, or a bare git directory read at HEAD."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bare = not (path / ".git").exists() and (path / "HEAD").exists()

    def read(self, rel: str) -> str:
        if self.bare:
            return subprocess.run(
                ["git", "--git-dir", str(self.path), "show", f"HEAD:{rel}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        return (self.path / rel).read_text()

    def commit(self) -> str:
        git = ["git", "--git-dir", str(self.path)] if self.bare else ["git", "-C", str(self.path)]
        return subprocess.run(
            [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()


@dataclass
class ProtoField:
    number: int
    name: str
    type: str  # scalar name or fully qualified message name
    repeated: bool
    map_value: str | None  # for map<string, V>: V (scalar or message)


@dataclass
class GoField:
    go_name: str
    json_name: str
    omitempty: bool
    omitzero: bool
    pointer: bool
    embedded: bool
    number: int


_MESSAGE = re.compile(r"^message (\w+) \{$")
_FIELD = re.compile(r"^\s+(optional|repeated) ([\w.]+) (\w+) = (\d+);$")
_MAP = re.compile(r"^\s+map<(\w+), ([\w.]+)> (\w+) = (\d+);$")


def _qualify(type_name: str, package: str) -> str:
    if type_name in SCALARS:
        return type_name
    if type_name.startswith("."):
        return type_name[1:]
    return f"{package}.{type_name}"


def parse_proto(text: str, package: str) -> dict[str, list[ProtoField]]:
    """Messages of one generated.proto: full name -> fields."""
    messages: dict[str, list[ProtoField]] = {}
    current: list[ProtoField] | None = None
    for line in text.splitlines():
        if current is None:
            m = _MESSAGE.match(line)
            if m:
                current = messages.setdefault(f"{package}.{m.group(1)}", [])
            continue
        if line == "}":
            current = None
            continue
        m = _FIELD.match(line)
        if m:
            label, type_name, name, number = m.groups()
            current.append(
                ProtoField(
                    int(number), name, _qualify(type_name, package), label == "repeated", None
                )
            )
            continue
        m = _MAP.match(line)
        if m:
            key, value, name, number = m.groups()
            if key != "string":
                raise SystemExit(f"{package}: map key {key} is not handled")
            current.append(ProtoField(int(number), name, "map", False, _qualify(value, package)))
            continue
        stripped = line.strip()
        if stripped and not stripped.startswith("//"):
            raise SystemExit(f"{package}: cannot read proto line {line!r}")
    return messages


_STRUCT = re.compile(r"^type (\w+) struct \{$")
_GO_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?([*\[\]\w.]+)\s+`([^`]*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')


def parse_go(text: str) -> dict[str, list[GoField]]:
    """Go structs of one types.go: type name -> fields carrying a protobuf tag, in order."""
    structs: dict[str, list[GoField]] = {}
    current: list[GoField] | None = None
    for line in text.splitlines():
        if current is None:
            m = _STRUCT.match(line)
            if m:
                current = structs.setdefault(m.group(1), [])
            continue
        if line == "}":
            current = None
            continue
        code = line.split("//", 1)[0] if "`" not in line else line
        m = _GO_FIELD.match(code)
        if not m:
            continue
        go_name, go_type, tags = m.groups()
        tag = dict(_TAG.findall(tags))
        proto = tag.get("protobuf")
        if not proto or proto == "-":
            continue
        parts = proto.split(",")
        number = int(parts[1])
        embedded = go_name is None
        if embedded:
            go_name = go_type.lstrip("*").rpartition(".")[2]
        json_parts = tag.get("json", "").split(",")
        json_name = json_parts[0]
        if json_name == "-":
            continue
        options = set(json_parts[1:])
        inline = embedded and not json_name
        current.append(
            GoField(
                go_name=go_name,
                json_name=json_name or ("" if inline else go_name),
                omitempty="omitempty" in options,
                omitzero="omitzero" in options,
                pointer=go_type.startswith("*"),
                embedded=inline,
                number=number,
            )
        )
    return structs


def build(sources: dict[str, Source]) -> dict[str, object]:
    protos: dict[str, list[ProtoField]] = {}
    gos: dict[str, list[GoField]] = {}
    loaded: set[str] = set()

    def load(package: str) -> None:
        if package in loaded:
            return
        loaded.add(package)
        if package in PACKAGES:
            repo, directory = PACKAGES[package]
        elif package.startswith("k8s.io.api."):
            repo, directory = "api", package.removeprefix("k8s.io.api.").replace(".", "/")
        else:
            raise SystemExit(f"{package}: unknown package")
        src = sources[repo]
        protos.update(parse_proto(src.read(f"{directory}/generated.proto"), package))
        if package in SPECIAL_ONLY:
            return  # every message of the package has its own JSON form
        for name, fields in parse_go(src.read(f"{directory}/types.go")).items():
            gos[f"{package}.{name}"] = fields

    out: dict[str, object] = {}
    todo = [root for _, _, root in ROOTS] + EXTRA_ROOTS
    while todo:
        name = todo.pop()
        if name in out or name in SPECIAL:
            continue
        load(name.rpartition(".")[0])
        if name not in protos or name not in gos:
            raise SystemExit(f"{name}: no generated.proto message or Go struct")
        by_number = {f.number: f for f in protos[name]}
        rows: list[list[object]] = []
        for go in gos[name]:
            pf = by_number.pop(go.number, None)
            if pf is None:
                raise SystemExit(f"{name}.{go.go_name}: field {go.number} not in generated.proto")
            rows.append(row(name, go, pf))
            for ref in (pf.type, pf.map_value):
                if ref and ref not in SCALARS and ref != "map" and ref not in SPECIAL:
                    todo.append(ref)
        if by_number:
            raise SystemExit(f"{name}: proto fields without a Go field: {sorted(by_number)}")
        out[name] = rows
    return out


def row(message: str, go: GoField, pf: ProtoField) -> list[object]:
    """``[number, json name, kind, mode, repeated, message, Go field name]``."""
    ref = ""
    if pf.type == "map":
        value = pf.map_value or ""
        if value == "string":
            kind = "map_str"
        elif value == "bytes":
            kind = "map_bytes"
        elif value in SCALARS:
            raise SystemExit(f"{message}.{go.go_name}: map value {value} is not handled")
        else:
            kind, ref = "map_msg", value
            if SPECIAL.get(value) in UNSUPPORTED:
                raise SystemExit(f"{message}.{go.go_name}: map of {value} is not decoded")
    elif pf.type in SCALARS:
        kind = pf.type
    elif pf.type in SPECIAL:
        kind = SPECIAL[pf.type]
        if kind in UNSUPPORTED:
            raise SystemExit(f"{message}.{go.go_name}: {kind} is not decoded")
    else:
        kind, ref = "message", pf.type
    if go.embedded:
        if kind != "message" or go.pointer or pf.repeated:
            raise SystemExit(f"{message}.{go.go_name}: an embedded field that is not a struct")
        mode = "inline"
    elif go.pointer:
        if pf.repeated:
            raise SystemExit(f"{message}.{go.go_name}: a pointer to a slice")
        mode = "pointer" if go.omitempty else "nullable"
    elif go.omitzero:
        mode = "omitzero"
    elif go.omitempty:
        mode = "omitempty"
    else:
        mode = "always"
    return [pf.number, go.json_name, kind, mode, pf.repeated, ref, go.go_name]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", type=Path, required=True, help="kubernetes/api checkout")
    parser.add_argument(
        "--apimachinery", type=Path, required=True, help="kubernetes/apimachinery checkout"
    )
    args = parser.parse_args()
    sources = {"api": Source(args.api), "apimachinery": Source(args.apimachinery)}
    messages = build(sources)
    data = {
        "kinds": [[api_version, kind, message] for api_version, kind, message in ROOTS],
        "messages": dict(sorted(messages.items())),
    }
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=None, separators=(",", ":"))
    # one message per line keeps diffs of a re-vendoring readable
    text = text.replace('],"k8s.io.', '],\n"k8s.io.').replace('"messages":{', '"messages":{\n')
    (OUT_DIR / "messages.json").write_text(text + "\n")
    commits = {repo: src.commit() for repo, src in sources.items()}
    (OUT_DIR / "SOURCE.md").write_text(
        "# Source of messages.json\n\n"
        "`messages.json` is generated by `scripts/vendor_k8s_proto.py` from the published\n"
        "protobuf definitions (`generated.proto`) and Go struct tags (`types.go`) of:\n\n"
        f"- https://github.com/kubernetes/api at commit {commits['api']}\n"
        f"- https://github.com/kubernetes/apimachinery at commit {commits['apimachinery']}\n\n"
        "Both are Copyright The Kubernetes Authors and licensed under the Apache License,\n"
        "Version 2.0 (https://www.apache.org/licenses/LICENSE-2.0). The file holds only\n"
        "field numbers, types and names taken from them; no code.\n\n"
        "Each message maps to its fields in Go struct order, one row each:\n"
        "`[number, json name, kind, mode, repeated, message, Go field name]`.\n"
        "`kinds` lists the (apiVersion, kind, message) of the objects decoded from request\n"
        "bodies. Regenerate with\n\n"
        "    python scripts/vendor_k8s_proto.py --api PATH --apimachinery PATH\n"
    )
    print(f"{len(messages)} messages, {len(ROOTS)} kinds -> {OUT_DIR}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
