"""A CRD in the shape the acceptance checks read, and what they share.

The apiserver validates a CRD after applying the v1 defaults and converting it to the
internal version (:func:`apply_v1_defaults`, :class:`CrdSpec`): where every version
carries the same schema (subresources, printer columns, selectable fields) it moves to
the top level (``spec.validation`` …), and the error paths say so. Also here: which
checks apply (:class:`ValidationOptions`) and the small readers of decoded YAML/JSON the
checks use (a value of the wrong type reads as empty).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubewerk.core.gofmt import go_deep_equal
from kubewerk.core.jsoncopy import copy_tree


def join_path(*parts: str) -> str:
    """The non-empty parts joined with dots (``join_path("", "items")`` is ``items``)."""
    return ".".join(p for p in parts if p)


def as_str(v: Any) -> str:
    """``v`` if it is a string, else ``""``."""
    return v if isinstance(v, str) else ""


def as_dict(v: Any) -> dict[str, Any]:
    """``v`` if it is a dict, else ``{}``."""
    return v if isinstance(v, dict) else {}


def dict_or_none(v: Any) -> dict[str, Any] | None:
    """``v`` if it is a dict, else None."""
    return v if isinstance(v, dict) else None


def as_list(v: Any) -> list[Any]:
    """``v`` if it is a list, else ``[]``."""
    return v if isinstance(v, list) else []


def schema_has(s: Any, pred: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether ``pred`` holds for some node of schema ``s`` (any subschema, any depth)."""
    if not isinstance(s, dict):
        return False
    if pred(s):
        return True
    items = s.get("items")
    if isinstance(items, dict) and schema_has(items, pred):
        return True
    if isinstance(items, list) and any(schema_has(i, pred) for i in items):
        return True
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(s.get(key), list) and any(schema_has(i, pred) for i in s[key]):
            return True
    if schema_has(s.get("not"), pred):
        return True
    for key in ("properties", "patternProperties", "definitions"):
        if isinstance(s.get(key), dict) and any(schema_has(v, pred) for v in s[key].values()):
            return True
    for key in ("additionalProperties", "additionalItems"):
        if schema_has(s.get(key), pred):
            return True
    deps = s.get("dependencies")
    return isinstance(deps, dict) and any(schema_has(v, pred) for v in deps.values())


class CrdSpec:
    """The CRD spec after v1 defaulting and conversion to the internal version."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.raw = spec
        self.group = as_str(spec.get("group"))
        names = as_dict(spec.get("names"))
        self.names = dict(names)
        self.scope = as_str(spec.get("scope"))
        self.preserve_unknown = spec.get("preserveUnknownFields") is True
        self.conversion = dict_or_none(spec.get("conversion"))
        versions = spec.get("versions")
        self.versions: list[dict[str, Any]] = (
            [v if isinstance(v, dict) else {} for v in versions]
            if isinstance(versions, list)
            else []
        )
        self.validation: dict[str, Any] | None = None
        self.subresources: dict[str, Any] | None = None
        self.columns: list[Any] = []
        self.selectable: list[Any] = []
        # per-version values (None once moved to the top level)
        self.v_schema: list[Any] = [v.get("schema") for v in self.versions]
        self.v_sub: list[Any] = [v.get("subresources") for v in self.versions]
        self.v_cols: list[Any] = [v.get("additionalPrinterColumns") or [] for v in self.versions]
        self.v_sel: list[Any] = [v.get("selectableFields") or [] for v in self.versions]
        if self.versions:
            if all(go_deep_equal(x, self.v_schema[0]) for x in self.v_schema):
                self.validation = self.v_schema[0]
                self.v_schema = [None] * len(self.versions)
            if all(go_deep_equal(x, self.v_sub[0]) for x in self.v_sub):
                self.subresources = self.v_sub[0]
                self.v_sub = [None] * len(self.versions)
            if all(go_deep_equal(x, self.v_cols[0]) for x in self.v_cols):
                self.columns = self.v_cols[0]
                self.v_cols = [[] for _ in self.versions]
            if all(go_deep_equal(x, self.v_sel[0]) for x in self.v_sel):
                self.selectable = self.v_sel[0]
                self.v_sel = [[] for _ in self.versions]

    def schemas(self) -> list[dict[str, Any]]:
        """Every ``openAPIV3Schema`` of the spec (the top-level one, then per version)."""
        out = []
        for s in [self.validation, *self.v_schema]:
            if isinstance(s, dict) and isinstance(s.get("openAPIV3Schema"), dict):
                out.append(s["openAPIV3Schema"])
        return out


def apply_v1_defaults(crd: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of ``crd`` with the v1 defaults (``singular``, ``listKind``, conversion
    strategy ``None``, webhook service port 443) and the status the server sets: the
    storage version as ``storedVersions`` on create; on update (``old`` given) the old
    status with any new storage version added. ``crd`` itself is not changed.
    """
    crd = copy_tree(crd)
    spec = (
        crd.setdefault("spec", {}) if isinstance(crd.get("spec"), dict) or "spec" not in crd else {}
    )
    if not isinstance(crd.get("spec"), dict):
        crd["spec"] = spec = {}
    names = spec.get("names")
    if not isinstance(names, dict):
        names = spec["names"] = {}
    kind = as_str(names.get("kind"))
    if not names.get("singular"):
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    conv = spec.get("conversion")
    if conv is None:
        spec["conversion"] = {"strategy": "None"}
    elif isinstance(conv, dict):
        webhook = conv.get("webhook")
        if isinstance(webhook, dict):
            cc = webhook.get("clientConfig")
            if isinstance(cc, dict) and isinstance(cc.get("service"), dict):
                cc["service"].setdefault("port", 443)
    # PrepareForCreate / PrepareForUpdate: status comes from the server
    if old is None:
        status: dict[str, Any] = {}
        for v in spec.get("versions") or []:
            if isinstance(v, dict) and v.get("storage") is True:
                status["storedVersions"] = [as_str(v.get("name"))]
                break
        crd["status"] = status
    else:
        old_status = as_dict(old.get("status"))
        status = copy_tree(old_status)
        stored = list(status.get("storedVersions") or [])
        for v in spec.get("versions") or []:
            if isinstance(v, dict) and v.get("storage") is True and v.get("name") not in stored:
                stored.append(as_str(v.get("name")))
        status["storedVersions"] = stored
        crd["status"] = status
    return crd


@dataclass(slots=True)
class ValidationOptions:
    """Which checks apply (apiextensions' ``validationOptions``).

    On create every check applies. On update a check the old CRD already failed is
    relaxed (a CRD stored before the check existed stays updatable), and the scope and
    kind are immutable once the names are established.
    """

    require_structural: bool = True
    require_valid_type: bool = True
    require_pruned_defaults: bool = True
    require_atomic_set: bool = True
    require_map_list_keys: bool = True
    immutable_names: bool = False
    preexisting_rules: set[str] = field(default_factory=set)
