"""The OpenAPI rules of a CRD schema (``ValidateCustomResourceDefinitionOpenAPISchema``).

One walk over a version's ``openAPIV3Schema`` checks each node in the apiserver's order:
its own fields (unsupported keywords, ``type``, defaults where they are forbidden,
``uniqueItems``), its children, then its list and map types (``x-kubernetes-list-type``,
``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type``) and the fields of its
``x-kubernetes-validations`` rules. The rules' CEL is compiled only where the schema is
structural and the subtree has no other error; those errors come after all others.
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.core.errors import FieldError

from . import _structural as st
from ._crd_internal import ValidationOptions, as_dict, as_str

OPENAPI_TYPES: Final = ("array", "boolean", "integer", "number", "object", "string")
VALIDATION_REASONS: Final = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)


def validate_openapi(
    schema: dict[str, Any],
    path: str,
    opts: ValidationOptions,
    node: st.Structural | None,
    cel_ok: bool,
) -> tuple[list[FieldError], list[FieldError]]:
    """``ValidateCustomResourceDefinitionOpenAPISchema`` of a version's root schema:
    (schema errors, CEL errors), each in the apiserver's order.

    ``node``: the structural view of ``schema`` when it is structural (CEL rules and
    ``fieldPath`` are only checked against one); ``cel_ok``: compile the CEL rules.
    """
    walk = _OpenAPIWalk(opts)
    walk.visit(schema, path, _SchemaContext(), True, node, cel_ok)
    return walk.schema_errors, walk.cel_errors


class _SchemaContext:
    """Where the walk stands (specStandardValidatorV3's state): whether ``default`` is
    allowed here (``reason``: why not), whether inside an object's ``metadata``, and the
    path below which ``oldSelf`` cannot be correlated. Children get derived copies; a
    context is not changed once made."""

    __slots__ = ("allow_defaults", "inside_meta", "old_self_forbidden", "reason")

    def __init__(self) -> None:
        self.allow_defaults = True
        self.reason = ""
        self.inside_meta = False
        self.old_self_forbidden: str | None = None

    def clone(self) -> _SchemaContext:
        """A copy to derive a child context from."""
        c = _SchemaContext()
        c.allow_defaults, c.reason, c.inside_meta, c.old_self_forbidden = (
            self.allow_defaults,
            self.reason,
            self.inside_meta,
            self.old_self_forbidden,
        )
        return c

    def forbid_defaults(self, reason: str) -> _SchemaContext:
        """A context where ``default`` is forbidden, ``reason`` saying why."""
        c = self.clone()
        c.allow_defaults, c.reason = False, reason
        return c

    def within_meta(self) -> _SchemaContext:
        """A context inside an object's ``metadata``."""
        c = self.clone()
        c.inside_meta = True
        return c

    def forbid_old_self(self, path: str) -> _SchemaContext:
        """``oldSelf`` cannot be correlated below ``path`` (kept if an ancestor already is)."""
        if self.old_self_forbidden is not None:
            return self
        c = self.clone()
        c.old_self_forbidden = path
        return c


class _OpenAPIWalk:
    """One walk over a schema: each node's own checks, its children, then its list/map
    types and its CEL rules. Schema errors and CEL errors are kept apart (the apiserver
    reports every schema error first)."""

    __slots__ = ("cel_errors", "opts", "schema_errors")

    def __init__(self, opts: ValidationOptions) -> None:
        self.opts = opts
        self.schema_errors: list[FieldError] = []
        self.cel_errors: list[FieldError] = []

    def visit(
        self,
        schema: Any,
        path: str,
        ctx: _SchemaContext,
        is_root: bool,
        node: st.Structural | None,
        cel_ok: bool,
    ) -> None:
        """Check ``schema`` at ``path`` and everything under it. ``node``: its structural
        view (None off the structural tree, e.g. inside ``not``); ``cel_ok``: compile its
        rules."""
        if not isinstance(schema, dict):
            return
        errs = self.schema_errors
        start = len(errs)
        errs.extend(_standard_checks(schema, path, ctx, self.opts))
        if schema.get("uniqueItems") is True:
            errs.append(
                FieldError.forbidden(
                    f"{path}.uniqueItems",
                    "uniqueItems cannot be set to true since "
                    "the runtime complexity becomes quadratic",
                )
            )
        addl = schema.get("additionalProperties")
        if as_dict(schema.get("properties")) and (addl is False or isinstance(addl, dict)):
            errs.append(
                FieldError.forbidden(
                    f"{path}.additionalProperties",
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        self._visit_children(schema, path, ctx, is_root, node, cel_ok)
        if schema.get("x-kubernetes-preserve-unknown-fields") is False:
            errs.append(
                FieldError.invalid(
                    f"{path}.x-kubernetes-preserve-unknown-fields",
                    False,
                    "must be true or undefined",
                )
            )
        t = as_str(schema.get("type"))
        errs.extend(_map_type_errors(schema, path, t))
        errs.extend(_list_type_errors(schema, path, t, self.opts))
        rules = schema.get("x-kubernetes-validations")
        if isinstance(rules, list) and rules:
            rp = f"{path}.x-kubernetes-validations"
            errs.extend(_rule_errors(rules, rp, node))
            # rules compile only where this subtree has no schema error
            if len(errs) == start and cel_ok and node is not None:
                from .cel.rules import check_node_rules

                self.cel_errors.extend(
                    check_node_rules(
                        node, rules, rp, ctx.old_self_forbidden, self.opts.preexisting_rules
                    )
                )

    def _visit_children(
        self,
        schema: dict[str, Any],
        path: str,
        ctx: _SchemaContext,
        is_root: bool,
        node: st.Structural | None,
        cel_ok: bool,
    ) -> None:
        """additionalProperties, properties, not, allOf/oneOf/anyOf, definitions, items,
        dependencies, in that order; CEL rules are only checked along the structural
        children (properties, additionalProperties, items)."""
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            sub = (
                ctx.forbid_defaults("inside additionalProperties applying to object metadata")
                if ctx.inside_meta
                else ctx
            )
            self.visit(
                addl,
                f"{path}.additionalProperties",
                sub,
                False,
                node.additional if node is not None else None,
                cel_ok,
            )
        props = as_dict(schema.get("properties"))
        for name in sorted(props):
            sub = ctx
            if schema.get("x-kubernetes-map-type") == "atomic":
                sub = sub.forbid_old_self(path)
            if (
                is_root or schema.get("x-kubernetes-embedded-resource") is True
            ) and name in st.META_FIELDS:
                sub = sub.within_meta()
                if is_root:
                    sub = sub.forbid_defaults(f"in top-level {name}")
            self.visit(
                props[name],
                f"{path}.properties[{name}]",
                sub,
                False,
                node.properties.get(name) if node is not None else None,
                cel_ok,
            )
        self.visit(schema.get("not"), f"{path}.not", ctx, False, None, False)
        for key in ("allOf", "oneOf", "anyOf"):
            subs = schema.get(key)
            if isinstance(subs, list):
                for i, s in enumerate(subs):
                    self.visit(s, f"{path}.{key}[{i}]", ctx, False, None, False)
        defs = schema.get("definitions")
        if isinstance(defs, dict):
            for k in sorted(defs):
                self.visit(defs[k], f"{path}.definitions[{k}]", ctx, False, None, False)
        items = schema.get("items")
        if items is not None:
            sub = ctx
            if schema.get("x-kubernetes-list-type") != "map":
                sub = sub.forbid_old_self(path)
            if isinstance(items, dict):
                self.visit(
                    items,
                    f"{path}.items",
                    sub,
                    False,
                    node.items if node is not None else None,
                    cel_ok,
                )
            elif isinstance(items, list):
                for i, s in enumerate(items):
                    self.visit(s, f"{path}.items[{i}]", sub, False, None, False)
        deps = schema.get("dependencies")
        if isinstance(deps, dict):
            for k in sorted(deps):
                if isinstance(deps[k], dict):
                    self.visit(deps[k], f"{path}.dependencies[{k}]", ctx, False, None, False)


def _standard_checks(
    schema: dict[str, Any], path: str, ctx: _SchemaContext, opts: ValidationOptions
) -> list[FieldError]:
    """specStandardValidatorV3 on one node: keywords CRD schemas do not support, an unknown
    ``type``, a ``default`` where ``ctx`` forbids one, an embedded resource inside metadata."""
    errs: list[FieldError] = []
    t = schema.get("type")
    if opts.require_valid_type and isinstance(t, str) and t and t not in OPENAPI_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", t, list(OPENAPI_TYPES)))
    if "default" in schema and not ctx.allow_defaults:
        detail = "must not be set"
        if ctx.reason:
            detail += " " + ctx.reason
        errs.append(FieldError.forbidden(f"{path}.default", detail))
    if schema.get("id"):
        errs.append(FieldError.forbidden(f"{path}.id", "id is not supported"))
    if schema.get("additionalItems") is not None:
        errs.append(
            FieldError.forbidden(f"{path}.additionalItems", "additionalItems is not supported")
        )
    if schema.get("patternProperties"):
        errs.append(
            FieldError.forbidden(f"{path}.patternProperties", "patternProperties is not supported")
        )
    if schema.get("definitions"):
        errs.append(FieldError.forbidden(f"{path}.definitions", "definitions is not supported"))
    if schema.get("dependencies") is not None:
        errs.append(FieldError.forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if schema.get("$ref") is not None:
        errs.append(FieldError.forbidden(f"{path}.$ref", "$ref is not supported"))
    if t == "null":
        errs.append(
            FieldError.forbidden(
                f"{path}.type", "type cannot be set to null, use nullable as an alternative"
            )
        )
    if isinstance(schema.get("items"), list) and schema["items"]:
        errs.append(
            FieldError.forbidden(f"{path}.items", "items must be a schema object and not an array")
        )
    if ctx.inside_meta and schema.get("x-kubernetes-embedded-resource") is True:
        errs.append(
            FieldError.forbidden(
                f"{path}.x-kubernetes-embedded-resource", "must not be used inside of resource meta"
            )
        )
    return errs


def _map_type_errors(schema: dict[str, Any], path: str, t: str) -> list[FieldError]:
    """``x-kubernetes-map-type``: only on objects, only ``atomic`` or ``granular``."""
    mt = schema.get("x-kubernetes-map-type")
    if mt is None:
        return []
    errs: list[FieldError] = []
    if t != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        if not t:
            errs.append(FieldError.required(f"{path}.type", detail))
        else:
            errs.append(FieldError.invalid(f"{path}.type", t, detail))
    if mt not in ("atomic", "granular"):
        errs.append(
            FieldError.not_supported(f"{path}.x-kubernetes-map-type", mt, ["atomic", "granular"])
        )
    return errs


def _list_type_errors(
    schema: dict[str, Any], path: str, t: str, opts: ValidationOptions
) -> list[FieldError]:
    """``x-kubernetes-list-type`` and ``x-kubernetes-list-map-keys``: only on arrays; set
    items atomic; a map list has keys, one object item schema and scalar key fields."""
    errs: list[FieldError] = []
    items = schema.get("items")
    lt = schema.get("x-kubernetes-list-type")
    if lt is not None and t != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        if not t:
            errs.append(FieldError.required(f"{path}.type", detail))
        else:
            errs.append(FieldError.invalid(f"{path}.type", t, detail))
    elif opts.require_atomic_set and lt == "set" and isinstance(items, dict):
        errs.extend(_set_item_errors(items, path))
    if lt is not None and lt not in ("atomic", "set", "map"):
        errs.append(
            FieldError.not_supported(f"{path}.x-kubernetes-list-type", lt, ["atomic", "set", "map"])
        )
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if lt is None:
            errs.append(FieldError.required(f"{path}.x-kubernetes-list-type", detail))
        elif lt != "map":
            errs.append(FieldError.invalid(f"{path}.x-kubernetes-list-type", lt, detail))
    if lt == "map":
        errs.extend(_map_list_errors(items, keys, path))
    if opts.require_map_list_keys:
        errs.extend(map_list_keys_errors(schema, path))
    return errs


def _set_item_errors(items: dict[str, Any], path: str) -> list[FieldError]:
    """The items of a ``set`` list must be atomic (scalars, atomic lists and maps)."""
    detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
    if items.get("type") == "array":
        ilt = items.get("x-kubernetes-list-type")
        if ilt is not None and ilt != "atomic":
            return [FieldError.invalid(f"{path}.items.x-kubernetes-list-type", ilt, detail)]
    elif items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
        return [
            FieldError.invalid(
                f"{path}.items.x-kubernetes-map-type", items.get("x-kubernetes-list-type"), detail
            )
        ]
    return []


def _map_list_errors(items: Any, keys: list[Any], path: str) -> list[FieldError]:
    """A ``map`` list: keys given, one object item schema, each key a scalar item property."""
    errs: list[FieldError] = []
    if not keys:
        errs.append(
            FieldError.required(
                f"{path}.x-kubernetes-list-map-keys",
                "must not be empty if x-kubernetes-list-type is map",
            )
        )
    if items is None:
        errs.append(
            FieldError.required(
                f"{path}.items", "must have a schema if x-kubernetes-list-type is map"
            )
        )
    elif not isinstance(items, dict):
        errs.append(
            FieldError.invalid(
                f"{path}.items",
                items,
                "must only have a single schema if x-kubernetes-list-type is map",
            )
        )
    elif items.get("type") != "object":
        errs.append(
            FieldError.invalid(
                f"{path}.items.type",
                as_str(items.get("type")),
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        )
    else:
        iprops = as_dict(items.get("properties"))
        seen: set[str] = set()
        for k in keys:
            if k in iprops:
                if isinstance(iprops[k], dict) and iprops[k].get("type") in ("array", "object"):
                    errs.append(
                        FieldError.invalid(
                            f"{path}.items.properties[{k}].type",
                            "object",
                            "must be a scalar type if parent array's x-kubernetes-list-type is map",
                        )
                    )
            else:
                errs.append(
                    FieldError.invalid(
                        f"{path}.x-kubernetes-list-map-keys",
                        keys,
                        "entries must all be names of item properties",
                    )
                )
            if k in seen:
                errs.append(
                    FieldError.invalid(
                        f"{path}.x-kubernetes-list-map-keys",
                        keys,
                        "must not contain duplicate entries",
                    )
                )
            seen.add(k)
    return errs


def map_list_keys_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """Items of a ``set`` or ``map`` list are not nullable; each key of a ``map`` list is
    required or defaulted, and not nullable (``requireMapListKeysMapSetValidation``)."""
    errs: list[FieldError] = []
    items = schema.get("items")
    lt = schema.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or lt not in ("set", "map"):
        return errs
    if items.get("nullable") is True:
        errs.append(
            FieldError.forbidden(
                f"{path}.items.nullable", f"cannot be nullable when x-kubernetes-list-type is {lt}"
            )
        )
    if lt == "map":
        required = set(items.get("required") or [])
        iprops = as_dict(items.get("properties"))
        for k in schema.get("x-kubernetes-list-map-keys") or []:
            prop = iprops.get(k)
            if not isinstance(prop, dict):
                continue
            if k not in required and "default" not in prop:
                errs.append(
                    FieldError.required(
                        f"{path}.items.properties[{k}].default",
                        "this property is in x-kubernetes-list-map-keys, so "
                        "it must have a default or be a required property",
                    )
                )
            if prop.get("nullable") is True:
                errs.append(
                    FieldError.forbidden(
                        f"{path}.items.properties[{k}].nullable",
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )
                )
    return errs


def has_non_atomic_set(n: dict[str, Any]) -> bool:
    """Whether ``n`` is a ``set`` list whose items are lists or maps that are not atomic."""
    if n.get("x-kubernetes-list-type") == "set" and isinstance(n.get("items"), dict):
        items = n["items"]
        if items.get("type") == "array":
            lt = items.get("x-kubernetes-list-type")
            return lt is not None and lt != "atomic"
        if items.get("type") == "object":
            return bool(items.get("x-kubernetes-map-type") != "atomic")
    return False


def _rule_errors(rules: list[Any], path: str, node: st.Structural | None) -> list[FieldError]:
    """The fields of each ``x-kubernetes-validations`` rule (not its CEL: see
    ``check_node_rules``): rule and message text, reason, fieldPath."""
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        rule = rule if isinstance(rule, dict) else {}
        text = as_str(rule.get("rule"))
        msg = as_str(rule.get("message"))
        msg_expr = as_str(rule.get("messageExpression"))
        if not text.strip():
            errs.append(FieldError.required(f"{path}[{i}].rule", "rule is not specified"))
        elif msg and not msg.strip():
            errs.append(
                FieldError.invalid(f"{path}[{i}].message", msg, "must be non-empty if specified")
            )
        elif "\n" in msg.strip() or "\r" in msg.strip():
            errs.append(
                FieldError.invalid(f"{path}[{i}].message", msg, "must not contain line breaks")
            )
        elif ("\n" in text.strip() or "\r" in text.strip()) and not msg.strip():
            errs.append(
                FieldError.required(
                    f"{path}[{i}].message",
                    "message must be specified if rule contains line breaks",
                )
            )
        if msg_expr and not msg_expr.strip():
            errs.append(
                FieldError.required(
                    f"{path}[{i}].messageExpression",
                    "messageExpression must be non-empty if specified",
                )
            )
        reason = rule.get("reason")
        if reason is not None and reason not in VALIDATION_REASONS:
            errs.append(
                FieldError.not_supported(f"{path}[{i}].reason", reason, list(VALIDATION_REASONS))
            )
        fp = as_str(rule.get("fieldPath"))
        if fp and not fp.strip():
            errs.append(
                FieldError.invalid(f"{path}[{i}].fieldPath", fp, "must be non-empty if specified")
            )
        if "\n" in fp or "\r" in fp:
            errs.append(
                FieldError.invalid(f"{path}[{i}].fieldPath", fp, "must not contain line breaks")
            )
        if fp and node is not None:
            from .cel.paths import valid_field_path

            if valid_field_path(fp, node) is not None:
                errs.append(
                    FieldError.invalid(f"{path}[{i}].fieldPath", fp, "must be a valid path")
                )
    return errs
