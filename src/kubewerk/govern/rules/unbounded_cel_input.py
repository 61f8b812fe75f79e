"""``unbounded-cel-input``: unbounded strings, lists and maps that CEL rules read."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kubewerk.govern.crd_view import ADDL, ITEMS, PROP, Location, SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import VALIDATIONS, Nodes, Rule, SchemaScope
from kubewerk.govern.rules.example import Example, Where

if TYPE_CHECKING:
    from kubewerk.schema.cel.cost_limits import RuleCost

_CEL_PATH = re.compile(
    r"(?<![\w.])(self|oldSelf)(?![\w])((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*(?![\w]|\s*\()"
    r"|\s*\[\s*'[^']*'\s*\]|\s*\[\s*\"[^\"]*\"\s*\])*)"
)
_CEL_STEP = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*['\"]([^'\"]*)['\"]\s*\]")
_HAS_BEFORE = re.compile(r"(?:has|size)\(\s*$")
_SIZE_AFTER = re.compile(r"\s*\.\s*size\(\s*\)")
_IN_BEFORE = re.compile(r"\bin\s*$")
_CEL_ESCAPES = (("__underscores__", "_"), ("__dot__", "."), ("__dash__", "-"), ("__slash__", "/"))


def _cel_unescape(name: str) -> str:
    if "__" in name:
        for token, char in _CEL_ESCAPES:
            name = name.replace(token, char)
    return name


def cel_reads(expression: str, *, membership: list[bool] | None = None) -> list[list[str]]:
    """Field paths (relative to ``self``) an expression reads: ``self.spec.name`` →
    ``["spec", "name"]``; ``self`` alone → ``[]``. Paths only tested with ``has()`` are
    not reads, nor are those only measured with ``size()`` (constant cost). Method calls
    end a path (``self.items.all(...)`` reads ``items``). With ``membership``, one flag
    per path is appended: whether it is the right side of ``in``."""
    out: list[list[str]] = []
    for m in _CEL_PATH.finditer(expression):
        if _HAS_BEFORE.search(expression, 0, m.start()) or _SIZE_AFTER.match(expression, m.end()):
            continue
        steps = [_cel_unescape(a or b) for a, b in _CEL_STEP.findall(m.group(2))]
        out.append(steps)
        if membership is not None:  # ``k in self.m``: a map lookup costs the same at any size
            membership.append(bool(_IN_BEFORE.search(expression, 0, m.start())))
    return out


def _resolve(node: SchemaNode, steps: list[str]) -> list[SchemaNode]:
    """The nodes a path passes through (the last one is what is read)."""
    chain: list[SchemaNode] = []
    current = node
    for step in steps:
        s = current.schema
        props = s.get("properties")
        if isinstance(props, dict) and isinstance(props.get(step), dict):
            current = SchemaNode(props[step], current, PROP, step, current.top or step, 0)
        elif isinstance(s.get("additionalProperties"), dict):
            current = SchemaNode(s["additionalProperties"], current, ADDL, "", current.top, 0)
        else:
            break
        chain.append(current)
    return chain


def unbounded(schema: dict[str, Any]) -> str | None:
    """What bound a string/list/map lacks for CEL's cost estimate, or None if bounded.

    Strings are bounded by ``maxLength``, an ``enum`` or a ``duration``/``date``/
    ``date-time`` format; lists by ``maxItems``; maps by ``maxProperties`` (as the API
    server's cost estimator reads them)."""
    t = schema.get("type")
    if t == "string" or schema.get("x-kubernetes-int-or-string"):
        if "maxLength" in schema or "enum" in schema:
            return None
        if schema.get("format") in ("duration", "date", "date-time"):
            return None
        return "maxLength"
    if t == "array":
        return None if "maxItems" in schema else "maxItems"
    if t == "object" and isinstance(schema.get("additionalProperties"), dict):
        return None if "maxProperties" in schema else "maxProperties"
    return None


class UnboundedCelInput(Rule):
    """A string without `maxLength` (or an `enum`, or a `date`/`date-time`/`duration`
    format), an array without `maxItems` or a map without `maxProperties` that an
    `x-kubernetes-validations` rule or `messageExpression` reads. The API server
    estimates a rule's cost from these bounds, for the largest input they allow, and
    rejects a CRD whose rules are too expensive. kubewerk does not estimate that cost
    itself (`structural-schema` does not report it); this rule points at its usual
    cause. Each finding carries the rule's estimated cost as the API server computes
    it (its static estimate times how often it can run) and that cost's share of the
    per-CRD budget (100,000,000); a rule over its own limit (10,000,000) is also
    reported by `structural-schema`, with the API server's message.

    Paths only tested with `has()`, measured with `size()`, or looked up with
    `k in self.map` (constant cost) are not reads. Paths through macro variables
    (`self.items.all(i, i.name ...)`) are followed to the list only, and paths that
    leave the declared schema are not followed. Each field is reported once per schema.
    """

    id = "unbounded-cel-input"
    severity = Severity.WARNING
    summary = "strings, lists and maps without max bounds that CEL rules read (cost)"
    example = Example(
        Where.SCHEMA_PROPERTIES,
        bad="""\
spec:
  type: object
  x-kubernetes-validations: [{rule: "self.name.startsWith('a')"}]
  properties:
    name: {type: string}
""",
        good="""\
spec:
  type: object
  x-kubernetes-validations: [{rule: "self.name.startsWith('a')"}]
  properties:
    name: {type: string, maxLength: 63}
""",
    )
    nodes = Nodes(keyword=VALIDATIONS)

    seen: set[Location]  # fields already reported in this schema
    costs: dict[str, RuleCost] | None  # by rule path, computed on first use

    def start(self, scope: SchemaScope) -> None:
        super().start(scope)
        self.seen = set()
        self.costs = None

    def _cost(self, node: SchemaNode, index: int, key: str) -> RuleCost | None:
        """The API server's cost figure of rule ``index`` of ``node`` (``key``: rule or
        messageExpression), or None when it cannot be estimated."""
        if self.costs is None:
            self.costs = {}
            root = self.scope.version.schema  # the version's openAPIV3Schema
            if isinstance(root, dict):
                from kubewerk.schema._structural import Structural
                from kubewerk.schema.cel.cost_limits import schema_costs

                try:
                    found = schema_costs(Structural(root), "openAPIV3Schema")
                except Exception:  # a schema the engine cannot read: no figure
                    found = None
                if found is not None:
                    self.costs = {r.field: r for r in found.rules}
        return self.costs.get(f"{_kube_path(node)}.x-kubernetes-validations[{index}].{key}")

    def visit(self, node: SchemaNode) -> None:
        rules = node.schema.get(VALIDATIONS)
        if not isinstance(rules, list):
            return
        for i, rule in enumerate(rules):
            if not isinstance(rule, dict):
                continue
            for key in ("rule", "messageExpression"):
                text = rule.get(key)
                if isinstance(text, str):
                    self._check(node, text, i, key)

    def _check(self, node: SchemaNode, text: str, index: int, part: str) -> None:
        lookups: list[bool] = []
        for steps, lookup in zip(cel_reads(text, membership=lookups), lookups, strict=True):
            chain = _resolve(node, steps)
            if len(chain) != len(steps):
                continue  # the path leaves the declared schema
            target = chain[-1] if chain else node
            if lookup and isinstance(target.schema.get("additionalProperties"), dict):
                continue
            missing = unbounded(target.schema)
            key = target.location()
            if missing is None or key in self.seen:
                continue
            self.seen.add(key)
            path = target.field_path() or "the root"
            cost = self._cost(node, index, part)
            figure = ""
            extra: tuple[tuple[str, str], ...] = (("rule", text.strip()),)
            if cost is not None:
                figure = (
                    f" (estimated cost {cost.cost:,}, {_percent(cost.share)} of the per-CRD budget)"
                )
                extra = (*extra, ("estimatedCost", str(cost.cost)), ("share", f"{cost.share:.6f}"))
            self.report(
                target,
                f"{path} is read by the CEL rule {text.strip()!r}{figure} but has no "
                f"{missing}: the API server estimates its cost for the largest possible "
                f"input and may reject the CRD or the rule. Set {missing} to a realistic bound",
                extra=extra,
            )


def _percent(share: float) -> str:
    """A share of the budget as a percentage a reader can compare (``0.04%``, ``12%``)."""
    pct = share * 100
    if pct >= 10:
        return f"{pct:.0f}%"
    if pct >= 0.01:
        return f"{pct:.2f}%"
    return "<0.01%"


def _kube_path(node: SchemaNode) -> str:
    """The node's path as kube-apiserver names it below ``openAPIV3Schema``."""
    steps: list[str] = []
    cur: SchemaNode | None = node
    while cur is not None and cur.parent is not None:
        if cur.step == PROP:
            steps.append(f".properties[{cur.key}]")
        elif cur.step == ITEMS:
            steps.append(".items")
        elif cur.step == ADDL:
            steps.append(".additionalProperties")
        cur = cur.parent
    return "openAPIV3Schema" + "".join(reversed(steps))
