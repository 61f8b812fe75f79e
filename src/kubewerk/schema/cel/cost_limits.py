"""The CEL cost limits kube-apiserver applies to a CRD, with its messages.

For every ``x-kubernetes-validations`` rule of a version's ``openAPIV3Schema``
(``ValidateCustomResourceDefinitionOpenAPISchema`` with its ``CELSchemaContext``):

- the rule's cost is its static estimate times how often it can run: the product of
  ``maxItems``/``maxProperties`` of the lists and maps above it, or, when one of them
  is unbounded, ``3 MiB / (minimum size of the rule's node + 1)``;
- a rule over ``StaticEstimatedCostLimit`` (10,000,000) is ``Forbidden`` at
  ``….x-kubernetes-validations[i].rule``: ``estimated rule cost exceeds budget by factor
  of …``; a ``messageExpression`` likewise (its cost is not multiplied);
- all rules and message expressions of the schema add up; over
  ``StaticEstimatedCRDCostLimit`` (100,000,000) the (up to) four most expensive that
  each contributed at least 1% of that limit are ``Forbidden`` (``contributed to
  estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema``), then
  the schema root: ``x-kubernetes-validations estimated rule cost total for entire
  OpenAPIv3 schema exceeds budget by factor of …``.

The factor is printed as Go does: ``more than 100x`` above 100, ``%f`` (six decimals)
below 1.5, else one decimal. On an update, a version whose schema is unchanged is
not held to the per-expression limit (the total still applies).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kubewerk.core.errors import FieldError

from .cost import U64, CostError, estimate_rule
from .cost_types import MAX_REQUEST_SIZE_BYTES, CelTypeEstimate, schema_type
from .rules import escape_name

if TYPE_CHECKING:
    from .._structural import Structural

__all__ = [
    "PER_CALL_LIMIT",
    "STATIC_ESTIMATED_COST_LIMIT",
    "STATIC_ESTIMATED_CRD_COST_LIMIT",
    "RuleCost",
    "SchemaCost",
    "cost_error_message",
    "schema_costs",
]

STATIC_ESTIMATED_COST_LIMIT: Final = 10_000_000
STATIC_ESTIMATED_CRD_COST_LIMIT: Final = 100_000_000
PER_CALL_LIMIT: Final = 1_000_000  # runtime limit of one evaluation (for reference)

_TOTAL_CONTRIBUTOR: Final = (
    "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
)


def _go_f(x: float) -> str:
    return f"{x:f}"


def cost_error_message(cost_name: str, cost: int, limit: int) -> str:
    """``getCostErrorMessage``: how far ``cost`` exceeds ``limit``, in kube's words."""
    factor_value = float(cost) / float(limit)
    if factor_value > 100.0:
        factor = "more than 100x"
    elif factor_value < 1.5:
        factor = _go_f(factor_value) + "x"
    else:
        factor = f"{factor_value:.1f}x"
    return (
        f"{cost_name} exceeds budget by factor of {factor} (try simplifying the rule, or "
        "adding maxItems, maxProperties, and maxLength where arrays, maps, and strings "
        "are declared)"
    )


@dataclass(slots=True)
class RuleCost:
    """One expression's figures: ``field`` (``….x-kubernetes-validations[i].rule`` or
    ``.messageExpression``), the expression, its estimated cost per evaluation
    (``per_call``), how often it can run (``cardinality``) and ``cost`` (what counts
    against the limits)."""

    field: str
    expression: str
    per_call: int
    cardinality: int
    cost: int

    @property
    def share(self) -> float:
        """The cost as a fraction of the per-CRD limit."""
        return self.cost / STATIC_ESTIMATED_CRD_COST_LIMIT


@dataclass(slots=True)
class SchemaCost:
    """Every expression's cost in one ``openAPIV3Schema`` (walk order) and the total."""

    rules: list[RuleCost] = field(default_factory=list)
    total: int = 0

    def errors(self, schema_path: str, per_expression: bool = True) -> list[FieldError]:
        """kube-apiserver's cost errors for this schema at ``schema_path`` (the
        ``….openAPIV3Schema`` path): per expression (unless ``per_expression`` is off,
        as for an unchanged schema on update), then the total."""
        errs: list[FieldError] = []
        if per_expression:
            for r in self.rules:
                if r.cost > STATIC_ESTIMATED_COST_LIMIT:
                    name = (
                        "estimated rule cost"
                        if r.field.endswith(".rule")
                        else "estimated messageExpression cost"
                    )
                    errs.append(
                        FieldError.forbidden(
                            r.field, cost_error_message(name, r.cost, STATIC_ESTIMATED_COST_LIMIT)
                        )
                    )
        if self.total > STATIC_ESTIMATED_CRD_COST_LIMIT:
            for r in self.most_expensive():
                errs.append(FieldError.forbidden(r.field, _TOTAL_CONTRIBUTOR))
            errs.append(
                FieldError.forbidden(
                    schema_path,
                    cost_error_message(
                        "x-kubernetes-validations estimated rule cost total for entire "
                        "OpenAPIv3 schema",
                        self.total,
                        STATIC_ESTIMATED_CRD_COST_LIMIT,
                    ),
                )
            )
        return errs

    def most_expensive(self) -> list[RuleCost]:
        """The (up to) four costliest expressions that each reach 1% of the CRD limit."""
        big = [r for r in self.rules if r.cost >= STATIC_ESTIMATED_CRD_COST_LIMIT // 100]
        big.sort(key=lambda r: r.cost, reverse=True)
        return big[:4]


def _multiply(cost: int, cardinality: int) -> int:
    if cost == 0:
        return 0
    if U64 // cost < cardinality:
        return U64
    return cost * cardinality


def _max_elements(node: Structural) -> int | None:
    """``extractMaxElements``: how many times a node repeats each child (None: unbounded)."""
    raw = node.raw
    if node.type == "object":
        if "additionalProperties" in raw and raw["additionalProperties"] is not None:
            return max(0, node.max_properties) if node.max_properties is not None else None
        return 1
    if node.type == "array":
        return max(0, node.max_items) if node.max_items is not None else None
    return 1


def schema_costs(root: Structural, schema_path: str) -> SchemaCost:
    """The cost of every rule and message expression under ``root`` (a version's
    ``openAPIV3Schema`` at ``schema_path``). Expressions that do not compile count 0
    (their compile error is reported elsewhere)."""
    out = SchemaCost()
    _visit(root, schema_path, None, 1, True, out)
    return out


def _visit(
    node: Structural,
    path: str,
    parent_type: CelTypeEstimate | None,
    cardinality: int | None,
    is_root: bool,
    out: SchemaCost,
    depth: int = 0,
) -> None:
    """``parent_type``: the node's CEL type as read from its parent's (None: convert it
    from its own schema when it has rules); ``cardinality`` None when unbounded."""
    if depth > 64:
        return
    in_scope = parent_type is not None or bool(node.rules)
    own = parent_type
    if own is None and node.rules:
        own = schema_type(node, is_root or node.embedded)
    factor = _max_elements(node)
    child_card = cardinality * factor if cardinality is not None and factor is not None else None
    if node.additional is not None:
        sub = own.elem if own is not None and own.kind == "map" else None
        _visit(
            node.additional,
            f"{path}.additionalProperties",
            sub,
            child_card,
            False,
            out,
            depth + 1,
        )
    for name in sorted(node.properties):
        prop = node.properties[name]
        sub = None
        if own is not None and in_scope:
            escaped = escape_name(name)
            if escaped is not None:
                sub = own.fields.get(escaped)
        _visit(prop, f"{path}.properties[{name}]", sub, child_card, False, out, depth + 1)
    if node.items is not None:
        sub = own.elem if own is not None and own.kind == "list" else None
        _visit(node.items, f"{path}.items", sub, child_card, False, out, depth + 1)
    if not node.rules or own is None:
        return
    unbounded = MAX_REQUEST_SIZE_BYTES // (own.min_serialized_size + 1)
    times = cardinality if cardinality is not None else unbounded
    for i, rule in enumerate(node.rules):
        rp = f"{path}.x-kubernetes-validations[{i}]"
        text = rule.get("rule")
        if not isinstance(text, str) or not text.strip():
            continue
        optional_old = rule.get("optionalOldSelf") is True
        try:
            per_call = estimate_rule(node, own, text, optional_old).max
        except CostError:
            continue
        cost = _multiply(per_call, times)
        out.rules.append(RuleCost(f"{rp}.rule", text.strip(), per_call, times, cost))
        out.total = min(out.total + cost, U64)
        mexpr = rule.get("messageExpression")
        if isinstance(mexpr, str) and mexpr.strip():
            try:
                m_cost = estimate_rule(node, own, mexpr, optional_old).max
            except CostError:
                continue
            out.rules.append(RuleCost(f"{rp}.messageExpression", mexpr.strip(), m_cost, 1, m_cost))
            out.total = min(out.total + m_cost, U64)
