"""Server-side apply's field algebra, as structured-merge-diff defines it (pure data).

- ``path``: path elements (``f:``, ``k:{...}``, ``v:``, ``i:``) and their order;
- ``fieldset``: sets of field paths and the ``fieldsV1`` encoding;
- ``types``: the schema view (scalar / map / list; atomic, granular, set, keyed);
- ``typed``: field sets of objects, comparison, merge, removal;
- ``managed``: ``managedFields`` entries, apply and update with ownership and conflicts.
"""

from kubewerk.core.fieldpath.fieldset import BadFieldsV1, FieldSet
from kubewerk.core.fieldpath.managed import (
    APPLY,
    UPDATE,
    ApplyConflict,
    BadManagedFields,
    ManagedFields,
    Manager,
    Owned,
    apply,
    update,
)
from kubewerk.core.fieldpath.path import path_string
from kubewerk.core.fieldpath.typed import ListItemError, compare, merge, to_field_set
from kubewerk.core.fieldpath.types import DEDUCED, OpenApiTypes, TypeNode

__all__ = [
    "APPLY",
    "DEDUCED",
    "UPDATE",
    "ApplyConflict",
    "BadFieldsV1",
    "BadManagedFields",
    "FieldSet",
    "ListItemError",
    "ManagedFields",
    "Manager",
    "OpenApiTypes",
    "Owned",
    "TypeNode",
    "apply",
    "compare",
    "merge",
    "path_string",
    "to_field_set",
    "update",
]
