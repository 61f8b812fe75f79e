"""``CompiledSchema``: one CRD version's schema, compiled once into validator, defaulter
and pruner, with the apiserver's order of checks; ``compile_schema`` compiles a schema,
``compile_crd_version`` one version of a CRD, cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

from kubewerk.core.errors import FieldError

from . import _structural as st
from ._crd_internal import as_dict, as_list, as_str
from ._validator import ROOT_FIELD, Validator


class SchemaError(ValueError):
    """A schema that cannot be compiled; ``errors`` says why, as Kubernetes would."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(e.message() for e in self.errors) or "invalid schema")


_BLOCKING = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)
CEL_SKIPPED_DETAIL = (
    "some validation rules were not checked because the object was invalid; correct the existing "
    "errors to complete validation"
)


class CompiledSchema:
    """A compiled ``openAPIV3Schema`` for custom resources of one CRD version.

    Guarantees: ``apply_defaults`` and ``prune`` mutate in place exactly as the
    apiserver's structural defaulting and pruning do; ``validate`` returns the field
    errors the apiserver answers for a create (``old`` is None) or an update, in the
    apiserver's order: OpenAPI value validation, embedded resources, list sets/maps,
    then CEL rules (skipped with one error when an earlier error blocks them).
    Instances are immutable after construction and safe to share between threads.
    """

    __slots__ = ("_cel", "_cel_error", "_cel_lock", "root", "schema", "structural", "validator")

    def __init__(
        self,
        schema: dict[str, Any],
        *,
        compile_rules: bool = True,
        structural: st.Structural | None = None,
    ) -> None:
        """``structural``: ``st.Structural(schema)`` when the caller has built it already."""
        if not isinstance(schema, dict):
            raise SchemaError([FieldError.required("openAPIV3Schema", "")])
        self.schema = schema
        try:
            self.structural = structural if structural is not None else st.Structural(schema)
            self.root = self.structural.as_root()
            self.validator = Validator(schema)
        except RecursionError:
            raise SchemaError(
                [FieldError.invalid("openAPIV3Schema", "", "schema is nested too deeply")]
            ) from None
        self._cel: Any = None
        self._cel_error: SchemaError | None = None
        self._cel_lock = threading.Lock()
        if compile_rules and self.structural.has_rules:
            self._rules()

    def _rules(self) -> Any:
        if self._cel is None and self._cel_error is None:
            with self._cel_lock:
                if self._cel is None and self._cel_error is None:
                    from .cel.rules import compile_rules  # CEL is only loaded when used

                    rules, errors = compile_rules(self.structural)
                    if errors:
                        self._cel_error = SchemaError(errors)
                    else:
                        self._cel = rules
        if self._cel_error is not None:
            raise self._cel_error
        return self._cel

    # ------------------------------------------------------------------ mutation
    def apply_defaults(self, obj: dict[str, Any]) -> None:
        """Structural defaulting in place (create, update and read from storage)."""
        st.default(obj, self.structural)

    def prune(self, obj: dict[str, Any]) -> list[str]:
        """Drop unknown fields in place; return their paths sorted (``spec.foo``, ``spec.a[0].b``).

        At the root ``apiVersion``, ``kind`` and ``metadata`` are kept; inside
        ``metadata`` (root and embedded resources) only ObjectMeta's fields stay.
        """
        out: list[str] = []
        st.prune(obj, self.root, "", out)
        st.coerce_meta(obj, self.root, "", out)
        out.sort()
        return out

    # ---------------------------------------------------------------- validation
    def validate_schema(self, obj: Any) -> list[FieldError]:
        """OpenAPI value validation only (kube-openapi's errors, converted)."""
        errs: list[FieldError] = []
        self.validator.validate(obj, "", errs)
        return errs

    def validate(
        self, obj: Any, old: Any = None, *, reduced_from: CompiledSchema | None = None
    ) -> list[FieldError]:
        """All of the apiserver's checks for a custom resource (create, or update from ``old``).

        ``reduced_from``: this schema is that one with some subtrees left out (the caller
        knows they need no checks); the whole-object decisions then follow the full
        schema: whether ``old`` already breaks a list-type rule, and whether rules exist
        that an earlier error keeps from running. An object nested deeper than Python's
        recursion allows is answered with one error instead of an exception (JSON
        decoders stop far earlier anyway).
        """
        try:
            return self._validate(obj, old, reduced_from or self)
        except RecursionError:
            return [FieldError.invalid(ROOT_FIELD, "", "object is nested too deeply to validate")]

    def _validate(self, obj: Any, old: Any, full: CompiledSchema) -> list[FieldError]:
        errs: list[FieldError] = []
        if old is None:
            self.validator.validate(obj, "", errs)
        else:
            # validation ratcheting (CRDValidationRatcheting, on by default since 1.30)
            self.validator.validate_update(self.structural, obj, old, "", errs)
        if self.structural.has_embedded:
            # the apiserver checks nested embedded resources only (isResourceRoot=false)
            st.validate_embedded(obj, self.structural, "", errs)
        # on update, list set/map errors are only reported when the old object had none
        if (
            self.structural.has_lists
            and type(obj) is dict
            and (old is None or not full.has_list_errors(old))
        ):
            st.validate_lists(obj, self.structural, "", errs)
        if full.structural.has_rules:
            if errs and any(e.type in _BLOCKING for e in errs):
                errs.append(FieldError.invalid(ROOT_FIELD, "null", CEL_SKIPPED_DETAIL))
            elif self.structural.has_rules:
                errs.extend(self._rules().validate(obj, old))
        return errs

    def has_list_errors(self, old: Any) -> bool:
        """Whether ``old`` breaks a ``x-kubernetes-list-type`` set or map rule."""
        if not self.structural.has_lists:
            return False
        found: list[FieldError] = []
        st.validate_lists(old, self.structural, "", found)
        return bool(found)

    def validate_rules(self, obj: Any, old: Any = None) -> list[FieldError]:
        """Only the CEL ``x-kubernetes-validations`` rules."""
        if not self.structural.has_rules:
            return []
        result: list[FieldError] = self._rules().validate(obj, old)
        return result


def compile_schema(openapi_v3_schema: dict[str, Any]) -> CompiledSchema:
    """Compile a CRD ``openAPIV3Schema``; raises :class:`SchemaError` if it cannot be compiled.

    CEL rules are compiled (and type-checked) here, so a rule that does not compile
    raises ``SchemaError`` with the apiserver's message.
    """
    return CompiledSchema(openapi_v3_schema)


_CACHE_LIMIT: Final = 512
_cache: OrderedDict[tuple[str, str, str], CompiledSchema] = OrderedDict()
_cache_lock = threading.Lock()


def compile_crd_version(crd: dict[str, Any], version: str) -> CompiledSchema:
    """The compiled schema of ``spec.versions[name=version].schema.openAPIV3Schema``.

    Cached per (metadata.uid, metadata.generation or resourceVersion, version), the
    512 most recently used; a CRD without a uid, or without both generation and
    resourceVersion, is compiled afresh on every call. Raises
    :class:`SchemaError` if the version does not exist, has no schema, or the schema
    (or one of its CEL rules) does not compile.
    """
    meta = as_dict(crd.get("metadata"))
    uid = as_str(meta.get("uid"))
    gen = meta.get("generation")
    stamp = str(gen) if gen is not None else as_str(meta.get("resourceVersion"))
    key: tuple[str, str, str] | None = (uid, stamp, version) if uid and stamp else None
    if key is not None:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
    spec = as_dict(crd.get("spec"))
    versions = as_list(spec.get("versions"))
    for i, v in enumerate(versions):
        if isinstance(v, dict) and v.get("name") == version:
            schema = (
                (v.get("schema") or {}).get("openAPIV3Schema")
                if isinstance(v.get("schema"), dict)
                else None
            )
            if not isinstance(schema, dict):
                raise SchemaError(
                    [FieldError.required(f"spec.versions[{i}].schema.openAPIV3Schema")]
                )
            compiled = CompiledSchema(schema)
            if key is not None:
                with _cache_lock:
                    _cache[key] = compiled
                    if len(_cache) > _CACHE_LIMIT:
                        _cache.popitem(last=False)
            return compiled
    raise SchemaError(
        [
            FieldError.not_supported(
                "spec.versions",
                version,
                [as_str(v.get("name")) for v in versions if isinstance(v, dict)],
            )
        ]
    )
