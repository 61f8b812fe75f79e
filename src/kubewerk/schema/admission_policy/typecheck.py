"""``status.typeChecking``: expression warnings against the schemas of the matched kinds.

kube-apiserver's type checker compiles each validation's ``expression`` and
``messageExpression`` once per kind the ``matchConstraints.resourceRules`` name
exactly (no ``*`` group, version or resource, no subresource; at most 10 kinds,
sorted by group, version, kind), with ``object``/``oldObject`` typed by that kind's
schema and ``params`` by the paramKind's, and reports each failure as an
``ExpressionWarning`` ``{fieldRef: spec.validations[0].expression, warning:
"apps/v1, Kind=Deployment: ERROR: <input>:1:…: undefined field 'replicass'\\n…"}``.

Best effort here: cel-expr-python has no object types built from schemas, so the check
is a scan of the field selections rooted at ``object``, ``oldObject`` and ``params``
(outside string literals) walked down the schema: the first field a schema object does
not declare (and that is not a map or an object preserving unknown fields) is reported
with cel-go's ``undefined field`` wording and position. Type mismatches and fields
selected inside macros (``c.image`` in ``object.spec.containers.all(c, …)``) are not
checked. Schemas come from the caller's resolver.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubewerk.core.meta import OBJECT_META_FIELDS
from kubewerk.schema.cel.rules import escape_name

from .cel_env import _STRING_LIT
from .validation import default_policy

Resolver = Callable[[str, str, str], "tuple[str, Mapping[str, Any]] | None"]
"""(group, version, resource) → (kind, OpenAPI v3 schema of the kind) or None."""

MAX_TYPES: Final = 10
_CHAIN: Final = re.compile(
    r"(?<![\w.])(object|oldObject|params)((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)+)"
)
_STEP: Final = re.compile(r"\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")


def _field_names(node: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    props = node.get("properties")
    if not isinstance(props, Mapping):
        return {}
    out: dict[str, Mapping[str, Any]] = {}
    for name, sub in props.items():
        escaped = escape_name(str(name))
        if escaped is not None:
            out[escaped] = sub if isinstance(sub, Mapping) else {}
    return out


_META_NODE: Final = {"type": "object", "properties": {k: {} for k in sorted(OBJECT_META_FIELDS)}}


def _undefined(expression: str, code: str, roots: Mapping[str, Mapping[str, Any]]) -> str | None:
    for m in _CHAIN.finditer(code):
        node: Mapping[str, Any] | None = roots.get(m.group(1))
        typed_object = m.group(1) != "params"
        for depth, step in enumerate(_STEP.finditer(code, m.start(2), m.end(2))):
            if code[step.end() :].lstrip().startswith("("):
                break  # a method call, not a field
            if node is None or node.get("x-kubernetes-preserve-unknown-fields") is True:
                break
            if node.get("type") not in (None, "object"):
                break
            fields = _field_names(node)
            if depth == 0 and typed_object:
                fields.setdefault("apiVersion", {"type": "string"})
                fields.setdefault("kind", {"type": "string"})
                fields.setdefault("metadata", _META_NODE)
            name = step.group(1)
            if name in fields:
                node = fields[name]
                if depth == 0 and typed_object and name == "metadata" and not _field_names(node):
                    node = _META_NODE
            elif isinstance(node.get("additionalProperties"), Mapping):
                node = node["additionalProperties"]
            elif node.get("additionalProperties") is True or not fields:
                break
            else:
                dot = code.index(".", step.start())
                line_no = code.count("\n", 0, dot) + 1
                col = dot - (code.rfind("\n", 0, dot) + 1)
                line = expression.split("\n")[line_no - 1]
                return (
                    f"ERROR: <input>:{line_no}:{col + 1}: undefined field '{name}'\n"
                    f" | {line}\n | {'.' * col}^"
                )
    return None


def _gvk_text(gvk: tuple[str, str, str]) -> str:
    return f"{gvk[0]}/{gvk[1]}, Kind={gvk[2]}"


def _types(
    spec: Mapping[str, Any], resolve: Resolver
) -> list[tuple[tuple[str, str, str], Mapping[str, Any]]]:
    found: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    mc = spec.get("matchConstraints")
    rules = mc.get("resourceRules") if isinstance(mc, Mapping) else None
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, Mapping):
            continue
        groups = [g for g in rule.get("apiGroups") or [] if isinstance(g, str)]
        versions = [v for v in rule.get("apiVersions") or [] if isinstance(v, str)]
        if any("*" in g for g in groups) or any("*" in v for v in versions):
            continue
        resources = sorted(
            r for r in rule.get("resources") or [] if isinstance(r, str) and not set(r) & {"*", "/"}
        )
        for g in sorted(groups):
            for v in sorted(versions):
                for r in resources:
                    hit = resolve(g, v, r)
                    if hit is not None:
                        found[(g, v, hit[0])] = hit[1]
                        if len(found) == MAX_TYPES:
                            return sorted(found.items())
    return sorted(found.items())


def type_check(
    policy: Mapping[str, Any],
    resolve: Resolver,
    params_schema: Mapping[str, Any] | None = None,
) -> list[dict[str, str]]:
    """The ``expressionWarnings`` of ``policy`` (empty: nothing to report)."""
    spec = default_policy(policy).get("spec")
    if not isinstance(spec, Mapping):
        return []
    kinds = _types(spec, resolve)
    warnings: list[dict[str, str]] = []
    validations = spec.get("validations")
    for i, v in enumerate(validations if isinstance(validations, list) else []):
        if not isinstance(v, Mapping):
            continue
        for key in ("expression", "messageExpression"):
            expr = v.get(key)
            if not isinstance(expr, str) or not expr:
                continue
            code = _STRING_LIT.sub(lambda m: " " * len(m.group(0)), expr)
            parts = []
            for gvk, schema in kinds:
                roots: dict[str, Mapping[str, Any]] = {"object": schema, "oldObject": schema}
                if params_schema is not None:
                    roots["params"] = params_schema
                issue = _undefined(expr, code, roots)
                if issue is not None:
                    parts.append(f"{_gvk_text(gvk)}: {issue}\n")
            if parts:
                warnings.append(
                    {"fieldRef": f"spec.validations[{i}].{key}", "warning": "\n".join(parts)}
                )
    return warnings
