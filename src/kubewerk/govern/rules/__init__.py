"""The CRD lint rules: the registry, and :func:`lint_crd`, which runs them over one CRD.

Each rule is one :class:`~kubewerk.govern.rules.base.Rule` subclass in a module of this
package named after its id: its id, default severity, summary, documented example and
its checks. :data:`RULES` registers them, in the order docs/lint-rules.md lists them;
that file is generated from the rules (``python -m kubewerk.govern.rules.doc``), and a
test fails when it is out of date.
"""

from __future__ import annotations

from kubewerk.govern.crd_view import CRDView
from kubewerk.govern.rules.base import (
    PRESERVE_UNKNOWN_FIELDS,
    VALIDATIONS,
    Emit,
    Nodes,
    RawFinding,
    Rule,
    Section,
)
from kubewerk.govern.rules.conditions_shape import ConditionsShape
from kubewerk.govern.rules.cross_namespace_reference import CrossNamespaceReference
from kubewerk.govern.rules.deprecated_api import DeprecatedApi
from kubewerk.govern.rules.linter import Linter, version_groups
from kubewerk.govern.rules.list_type_missing import ListTypeMissing
from kubewerk.govern.rules.logic_in_spec import LogicInSpec, logic_head
from kubewerk.govern.rules.names import words
from kubewerk.govern.rules.no_floats import NoFloats
from kubewerk.govern.rules.plaintext_credential import PlaintextCredential, credential_name
from kubewerk.govern.rules.preserve_unknown_fields import PreserveUnknownFields
from kubewerk.govern.rules.status_as_cache import StatusAsCache
from kubewerk.govern.rules.status_without_subresource import StatusWithoutSubresource
from kubewerk.govern.rules.structural_schema import StructuralSchema
from kubewerk.govern.rules.unbounded_cel_input import UnboundedCelInput, cel_reads, unbounded
from kubewerk.govern.rules.version_discipline import VersionDiscipline

__all__ = [
    "PRESERVE_UNKNOWN_FIELDS",
    "RULES",
    "VALIDATIONS",
    "Emit",
    "Linter",
    "Nodes",
    "RawFinding",
    "Rule",
    "Section",
    "cel_reads",
    "credential_name",
    "enabled_rules",
    "lint_crd",
    "logic_head",
    "unbounded",
    "version_groups",
    "words",
]

RULES: dict[str, type[Rule]] = {
    rule.id: rule
    for rule in (
        PlaintextCredential,
        LogicInSpec,
        StatusWithoutSubresource,
        StatusAsCache,
        CrossNamespaceReference,
        VersionDiscipline,
        PreserveUnknownFields,
        ConditionsShape,
        ListTypeMissing,
        NoFloats,
        UnboundedCelInput,
        StructuralSchema,
        DeprecatedApi,
    )
}


def enabled_rules(enabled: frozenset[str]) -> list[type[Rule]]:
    """The registered rules whose ids are in ``enabled``, in registry order."""
    return [rule for rule in RULES.values() if rule.id in enabled]


def lint_crd(view: CRDView, enabled: frozenset[str], emit: Emit) -> None:
    """Run the enabled rules over one CRD: first every rule's CRD-level checks, then one
    walk per distinct schema for the rules that look at schema nodes (versions whose
    schema and subresources are identical are linted once, and their findings list all
    of them). To lint many CRDs, a :class:`Linter` made once is cheaper."""
    Linter(enabled_rules(enabled)).lint(view, emit)
