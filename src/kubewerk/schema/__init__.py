"""kubewerk.schema: Kubernetes structural schemas compiled once into a validator,
defaulter and pruner, with CEL ``x-kubernetes-validations`` rules and CRD acceptance.

Public API::

    cs = compile_schema(openapi_v3_schema)        # SchemaError if it cannot compile
    cs = compile_crd_version(crd, "v1")           # cached per uid/generation/version
    cs.apply_defaults(obj); dropped = cs.prune(obj); errors = cs.validate(obj, old)
    errors = validate_crd(crd, old=None)

Every error is a :class:`kubewerk.core.errors.FieldError` with the path and wording a
kube-apiserver answers. See docs/schema.md.
"""

from .compiled import CompiledSchema, SchemaError, compile_crd_version, compile_schema
from .crd_acceptance import validate_crd

__all__ = [
    "CompiledSchema",
    "SchemaError",
    "compile_crd_version",
    "compile_schema",
    "validate_crd",
]
