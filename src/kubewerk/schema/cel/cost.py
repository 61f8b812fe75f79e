"""The static cost of a CEL expression, as kube-apiserver estimates it.

This is cel-go's ``checker.Cost`` estimator (``checker/cost.go``) with Kubernetes'
``library.CostEstimator`` (``k8s.io/apiserver/pkg/cel/library/cost.go``) and, for CRD
rules, the size estimates of the structural schema (:mod:`.cost_types`). It runs over
the checked expression cel-cpp produces (:mod:`.checked`): macros expanded as cel-go
expands them, the overloads the checker resolved, the type of every node. Where
kubewerk's adapter types an object as ``map(string, dyn)`` (kube gives it a struct
type with typed fields), the field path cel-go tracks through the expression gives the
schema type back, so selections, overloads and element types are those kube sees.

The rules, as cel-go applies them (costs are ``[min, max]`` ranges; kube compares the
max with its limits):

- a literal costs 0; an identifier or a field selection on an object or map 1;
  ``has()`` 0 (kube turns presence-test cost off);
- a call costs its arguments plus the function's own cost: 1 for most; string
  traversals ``size * 0.1`` (``startsWith``, ``endsWith``, string/bytes ``+``,
  ``==``/``!=``/``<``… bounded by the smaller side, Kubernetes' ``lowerAscii``,
  ``trim``, ``substring``, ``replace``/``split`` ``* 0.2``, ``join``, ``url``…);
  ``contains`` ``(size * 0.1) * (size * 0.1)``; ``matches``/``find``/``findAll``
  ``((size + 1) * 0.1) * (regex size * 0.25)``; ``in`` on a list its size;
  ``isSorted``/``sum``/``min``/``max``/``indexOf``/``lastIndexOf`` per element;
  ``&&``, ``||`` and ``?:`` nothing beyond their arguments (the cheaper branch sets the
  minimum); creating a list costs 10, a map 30;
- a comprehension (``all``, ``exists``, ``exists_one``, ``map``, ``filter``) costs its
  range and accumulator once, plus ``size(range) * (condition + step)``;
  ``cel.bind`` costs its binding (plus 10 for the empty range), then its body.

Sizes come from the schema (``maxItems``, ``maxProperties``, ``maxLength``, else what
fits in a 3 MiB request), from literals, and from what is built in the expression.

Public API: :func:`estimate_cost` (any expression over typed variables, e.g. admission
policy expressions) and :func:`estimate_rule` (a CRD rule on a schema node); the CRD
limits and messages live in :mod:`.cost_limits`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from . import library
from .checked import (
    CALL,
    COMPREHENSION,
    IDENT,
    LIST,
    LITERAL,
    MAP,
    SELECT,
    STRUCT,
    CelType,
    CheckedAst,
    Node,
    decode_checked,
)
from .cost_types import CelTypeEstimate
from .rules import _env, decl_type, uses_old_self

if TYPE_CHECKING:
    from .._structural import Structural

__all__ = ["CostError", "CostEstimate", "estimate_cost", "estimate_rule"]

U64: Final = 2**64 - 1
_U64F: Final = float(U64)
_TWO64: Final = math.ldexp(1.0, 64)
STRING_TRAVERSAL: Final = 0.1
REGEX_LENGTH: Final = 0.25
LIST_CREATE: Final = 10
MAP_CREATE: Final = 30
STRUCT_CREATE: Final = 40
ACCUMULATORS: Final = ("@result", "__result__")


class CostError(ValueError):
    """The expression does not compile (the message is cel-cpp's)."""


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """A cost (or size) range ``[min, max]``; arithmetic saturates at 2**64-1 as
    cel-go's does."""

    min: int
    max: int

    def add(self, o: CostEstimate) -> CostEstimate:
        return CostEstimate(min(self.min + o.min, U64), min(self.max + o.max, U64))

    def mul(self, o: CostEstimate) -> CostEstimate:
        return CostEstimate(min(self.min * o.min, U64), min(self.max * o.max, U64))

    def factor(self, f: float) -> CostEstimate:
        return CostEstimate(_mul_factor(self.min, f), _mul_factor(self.max, f))

    def union(self, o: CostEstimate) -> CostEstimate:
        return CostEstimate(min(self.min, o.min), max(self.max, o.max))


def _mul_factor(x: int, y: float) -> int:
    """cel-go's ``multiplyByCostFactor``: ``ceil(x * y)`` in float64, saturating."""
    xf = float(x)
    if xf > 0 and y > 0 and xf > _U64F / y:
        return U64
    c = math.ceil(xf * y)
    if c >= _TWO64:
        return U64
    return int(c)


def fixed(n: int) -> CostEstimate:
    return CostEstimate(n, n)


ZERO: Final = fixed(0)
ONE: Final = fixed(1)
UNKNOWN: Final = CostEstimate(0, U64)


@dataclass(slots=True)
class _Entry:
    """The size of a container's keys and values (``entrySizeEstimate``)."""

    container: str
    key: CostEstimate
    val: CostEstimate

    def union(self, o: _Entry | None) -> _Entry | None:
        if o is None:
            return None
        return _Entry(self.container, self.key.union(o.key), self.val.union(o.val))


@dataclass(slots=True)
class _Local:
    path: list[str] | None
    size: CostEstimate | None
    entry: _Entry | None


@dataclass(slots=True)
class _AstNode:
    """What a function estimator sees of an argument (cel-go's ``AstNode``)."""

    path: list[str] | None
    type: CelType
    size: CostEstimate | None
    expr: Node | None = None


SizeEstimator = Callable[[list[str]], CostEstimate | None]

_SCALARS: Final = frozenset({"bool", "double", "duration", "int", "timestamp", "uint"})


def _is_scalar(t: CelType) -> bool:
    if t.kind in _SCALARS:
        return True
    return t.kind == "optional" and bool(t.params) and _is_scalar(t.params[0])


def as_cel_type(d: CelTypeEstimate, depth: int = 0) -> CelType:
    """The CEL type kube declares for a schema type (objects are structs)."""
    if depth > 8:
        return CelType("dyn")
    if d.kind == "object":
        return CelType("struct")
    if d.kind == "list":
        e = d.elem
        return CelType("list", (as_cel_type(e, depth + 1) if e else CelType("dyn"),))
    if d.kind == "map":
        e = d.elem
        return CelType(
            "map", (CelType("string"), as_cel_type(e, depth + 1) if e else CelType("dyn"))
        )
    return CelType(d.kind)


_TOKENS: Final = {
    "int64": "int",
    "uint64": "uint",
    "double": "double",
    "bool": "bool",
    "string": "string",
    "bytes": "bytes",
    "duration": "duration",
    "timestamp": "timestamp",
    "list": "list",
}
_SIG_FIXED: Final[dict[str, tuple[str | None, ...]]] = {
    "in_list": (None, "list"),
    "in_map": (None, "map"),
    "index_list": ("list", None),
    "index_map": ("map", None),
    "list_size": ("list",),
    "size_list": ("list",),
    "map_size": ("map",),
    "size_map": ("map",),
    "string_size": ("string",),
    "size_string": ("string",),
    "bytes_size": ("bytes",),
    "size_bytes": ("bytes",),
    "optional_list_index_int": ("optional", None),
    "optional_map_index_value": ("optional", None),
}


def _signature(overload: str) -> tuple[str | None, ...] | None:
    """The argument kinds of a standard overload, from its id (None: not known)."""
    sig = _SIG_FIXED.get(overload)
    if sig is not None:
        return sig
    for prefix in ("less_equals_", "greater_equals_", "less_", "greater_", "add_"):
        if overload.startswith(prefix):
            parts = overload[len(prefix) :].split("_")
            kinds = [_TOKENS.get(p) for p in parts]
            if not kinds or any(k is None for k in kinds) or len(kinds) > 2:
                return None
            return (kinds[0], kinds[0]) if len(kinds) == 1 else tuple(kinds)
    return None


_ANY_KIND: Final = frozenset({"dyn", "typeparam", "error", "opaque"})


def _fits(kind: str, want: str | None) -> bool:
    if want is None or kind in _ANY_KIND:
        return True
    if want == "map" and kind == "struct":
        return True
    return kind == want


class _Coster:
    """cel-go's ``coster`` over one checked expression."""

    def __init__(
        self,
        ast: CheckedAst,
        sizes: SizeEstimator,
        types: Callable[[list[str]], CelType | None],
    ) -> None:
        self.ast = ast
        self.sizes = sizes
        self.types = types
        self.paths: dict[int, list[str]] = {}
        self.locals: dict[str, list[_Local]] = {}
        self.computed: dict[int, CostEstimate] = {}
        self.entries: dict[int, _Entry] = {}

    # -- variables, paths, sizes ------------------------------------------------
    def push_local(self, name: str, path: list[str] | None, size: Any, entry: Any) -> None:
        self.locals.setdefault(name, []).append(_Local(path, size, entry))

    def pop_local(self, name: str) -> None:
        stack = self.locals.get(name)
        if stack:
            stack.pop()

    def peek(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def get_path(self, e: Node) -> list[str] | None:
        if e.kind == IDENT:
            v = self.peek(str(e.value))
            if v is not None:
                return list(v.path) if v.path is not None else None
        p = self.paths.get(e.id)
        return list(p) if p is not None else None

    def type_of(self, e: Node) -> CelType:
        path = self.get_path(e)
        if path:
            t = self.types(path)
            if t is not None:
                return t
        return self.ast.type_of(e)

    def new_node(self, e: Node) -> _AstNode:
        path = self.get_path(e)
        if path and path[0] in ACCUMULATORS:
            path = None
        return _AstNode(path, self.type_of(e), self.compute_size(e), e)

    def compute_size(self, e: Node) -> CostEstimate | None:
        s = self.computed.get(e.id)
        if s is not None:
            return s
        s = _expr_size(e)
        if s is not None:
            return s
        path = self.get_path(e)
        if path:
            s = self.sizes(path)
            if s is not None:
                self.computed[e.id] = s
                return s
        if _is_scalar(self.type_of(e)):
            return ONE
        if e.kind == IDENT:
            v = self.peek(str(e.value))
            if v is not None and v.size is not None:
                return v.size
        return None

    def size_or_unknown(self, e: Node | _AstNode) -> CostEstimate:
        s = self.compute_size(e) if isinstance(e, Node) else e.size
        return s if s is not None else UNKNOWN

    def entry_size(self, e: Node) -> _Entry | None:
        s = self.entries.get(e.id)
        if s is not None:
            return s
        if e.kind == IDENT:
            v = self.peek(str(e.value))
            if v is not None and v.entry is not None:
                return v.entry
        return None

    def set_size(self, e: Node, s: CostEstimate | None) -> None:
        if s is not None:
            self.computed[e.id] = s

    def set_entry(self, e: Node, s: _Entry | None) -> None:
        if s is not None:
            self.entries[e.id] = s

    # -- the walk ----------------------------------------------------------------
    def cost(self, e: Node) -> CostEstimate:
        k = e.kind
        if k == LITERAL:
            return ZERO
        if k == IDENT:
            v = self.peek(str(e.value))
            self.paths[e.id] = list(v.path or []) if v is not None else [str(e.value)]
            return ONE
        if k == SELECT:
            return self.cost_select(e)
        if k == CALL:
            return self.cost_call(e)
        if k == LIST:
            return self.cost_list(e)
        if k == MAP:
            return self.cost_map(e)
        if k == STRUCT:
            total = ZERO
            for i in range(1, len(e.args), 2):
                total = total.add(self.cost(e.args[i]))
            return total.add(fixed(STRUCT_CREATE))
        if k == COMPREHENSION:
            return self.cost_bind(e) if _is_bind(e) else self.cost_comprehension(e)
        return ZERO

    def cost_select(self, e: Node) -> CostEstimate:
        op = e.target
        if op is None:
            return ZERO
        if e.test_only:  # has(): kube sets presence tests to cost 0
            return self.cost(op)
        total = self.cost(op)
        if self.type_of(op).kind in ("map", "struct", "typeparam"):
            total = total.add(ONE)
        base = self.get_path(op)
        self.paths[e.id] = [*(base or []), str(e.value)]
        return total

    def cost_list(self, e: Node) -> CostEstimate:
        total = ZERO
        item = CostEstimate(U64, 0) if e.args else ZERO
        for a in e.args:
            total = total.add(self.cost(a))
            item = item.union(self.size_or_unknown(a))
        self.set_entry(e, _Entry("list", ONE, item))
        return total.add(fixed(LIST_CREATE))

    def cost_map(self, e: Node) -> CostEstimate:
        total = ZERO
        keys = CostEstimate(U64, 0) if e.args else ZERO
        vals = CostEstimate(U64, 0) if e.args else ZERO
        for i in range(0, len(e.args) - 1, 2):
            k, v = e.args[i], e.args[i + 1]
            total = total.add(self.cost(k)).add(self.cost(v))
            keys = keys.union(self.size_or_unknown(k))
            vals = vals.union(self.size_or_unknown(v))
        self.set_entry(e, _Entry("map", keys, vals))
        return total.add(fixed(MAP_CREATE))

    def _push_iter(self, name: str, rng: Node, mode: str) -> None:
        entry = self.entry_size(rng)
        container = entry.container if entry is not None else self.type_of(rng).kind
        path = self.get_path(rng) or []
        if mode == "key":
            size = entry.key if entry is not None else None
            sub = "@indices" if container == "list" else "@keys"
        elif mode == "value":
            size = entry.val if entry is not None else None
            sub = "@items" if container == "list" else "@values"
        else:
            size = entry.key if entry is not None else None
            sub = "@keys"
            if container == "list":
                size = entry.val if entry is not None else None
                sub = "@items"
        self.push_local(name, [*path, sub], size, None)

    def cost_comprehension(self, e: Node) -> CostEstimate:
        c = e.comp
        assert c is not None
        total = self.cost(c.iter_range).add(self.cost(c.accu_init))
        self.push_local(
            c.accu_var,
            self.get_path(c.accu_init),
            self.compute_size(c.accu_init),
            self.entry_size(c.accu_init),
        )
        if c.iter_var2:
            self._push_iter(c.iter_var, c.iter_range, "key")
            self._push_iter(c.iter_var2, c.iter_range, "value")
        else:
            self._push_iter(c.iter_var, c.iter_range, "single")
        loop = self.cost(c.loop_condition)
        step = self.cost(c.loop_step)
        self.pop_local(c.iter_var)
        if c.iter_var2:
            self.pop_local(c.iter_var2)
        total = total.add(self.cost(c.result))
        self.pop_local(c.accu_var)
        count = self.size_or_unknown(c.iter_range)
        total = total.add(count.mul(step.add(loop)))
        init = c.accu_init.kind
        if init == LITERAL:
            self.set_size(e, self.compute_size(c.accu_init))
        elif init in (LIST, MAP):
            self.set_size(e, count)
            self.set_entry(e, self.entry_size(c.loop_step))
        return total

    def cost_bind(self, e: Node) -> CostEstimate:
        c = e.comp
        assert c is not None
        total = self.cost(c.iter_range).add(self.cost(c.accu_init))
        self.push_local(
            c.accu_var,
            self.get_path(c.accu_init),
            self.compute_size(c.accu_init),
            self.entry_size(c.accu_init),
        )
        total = total.add(self.cost(c.result))
        self.pop_local(c.accu_var)
        self.set_size(e, self.compute_size(c.result))
        self.set_entry(e, self.entry_size(c.result))
        return total

    def cost_call(self, e: Node) -> CostEstimate:
        fn = str(e.value)
        if fn == "dyn" and e.args and e.target is None:
            a = e.args[0]
            cost = self.cost(a)
            self.set_size(e, self.compute_size(a))
            self.set_entry(e, self.entry_size(a))
            return ONE.add(cost)
        args = e.args
        arg_costs = []
        arg_nodes = []
        for a in args:
            arg_costs.append(self.cost(a))
            arg_nodes.append(self.new_node(a))
        overloads = self.ast.overloads.get(e.id, [])
        if not overloads:
            return ZERO
        total = ZERO
        target: _AstNode | None = None
        if e.target is not None:
            total = self.cost(e.target)
            target = self.new_node(e.target)
        overloads = self._narrow(overloads, target, arg_nodes)
        fn_cost = CostEstimate(U64, 0)
        result: CostEstimate | None = None
        for ov in overloads:
            est, rsize = self.function_cost(e, fn, ov, target, arg_nodes, arg_costs)
            fn_cost = fn_cost.union(est)
            if rsize is not None:
                result = rsize if result is None else result.union(rsize)
            if ov == "index_list" and args:
                ent = self.entry_size(args[0])
                result = ent.val if ent is not None else None
                self.paths[e.id] = [*(self.get_path(args[0]) or []), "@items"]
            elif ov == "index_map" and args:
                ent = self.entry_size(args[0])
                result = ent.val if ent is not None else None
                self.paths[e.id] = [*(self.get_path(args[0]) or []), "@values"]
            if result is None:
                result = self.compute_size(e)
        self.set_size(e, result)
        return total.add(fn_cost)

    def _narrow(
        self, overloads: list[str], target: _AstNode | None, args: list[_AstNode]
    ) -> list[str]:
        """The overloads kube's checker would keep: cel-cpp sees ``dyn`` where kube
        knows a field's schema type, so candidates that do not fit the schema types
        of the arguments are dropped (all are kept if none fits)."""
        if len(overloads) < 2:
            return overloads
        kinds = [a.type.kind for a in ([target] if target is not None else []) + args]
        kept = []
        for ov in overloads:
            sig = _signature(ov)
            if sig is None or (
                len(sig) == len(kinds) and all(_fits(k, w) for k, w in zip(kinds, sig, strict=True))
            ):
                kept.append(ov)
        return kept or overloads

    def function_cost(
        self,
        e: Node,
        fn: str,
        ov: str,
        target: _AstNode | None,
        args: list[_AstNode],
        arg_costs: list[CostEstimate],
    ) -> tuple[CostEstimate, CostEstimate | None]:
        arg_sum = ZERO
        for c in arg_costs:
            arg_sum = arg_sum.add(c)
        k8s = self.k8s_call(fn, ov, target, args)
        if k8s is not None:
            return k8s[0].add(arg_sum), k8s[1]
        if fn == "format" and target is not None and args:
            t = self.size_or_unknown(target)
            rs = t.add(self.size_or_unknown(args[0]))
            return t.factor(STRING_TRAVERSAL).add(arg_sum), rs
        if ov == "string_to_bytes" and len(args) == 1:
            sz = self.size_or_unknown(args[0])
            return sz.factor(STRING_TRAVERSAL).add(arg_sum), CostEstimate(sz.min, sz.max * 4)
        if ov == "bytes_to_string" and len(args) == 1:
            sz = self.size_or_unknown(args[0])
            return sz.factor(STRING_TRAVERSAL).add(arg_sum), CostEstimate(sz.min // 4, sz.max)
        if fn == "strings.quote" and len(args) == 1:
            sz = self.size_or_unknown(args[0])
            return sz.factor(STRING_TRAVERSAL).add(arg_sum), CostEstimate(
                sz.min + 2, min(sz.max * 2 + 2, U64)
            )
        if ov in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return self.size_or_unknown(args[0]).factor(STRING_TRAVERSAL).add(arg_sum), None
        if ov == "in_list" and len(args) == 2:
            return self.size_or_unknown(args[1]).factor(1).add(arg_sum), None
        if ov == "matches_string" and target is not None and len(args) == 1:
            s = self.size_or_unknown(target).add(ONE).factor(STRING_TRAVERSAL)
            r = self.size_or_unknown(args[0]).factor(REGEX_LENGTH)
            return s.mul(r).add(arg_sum), None
        if ov == "contains_string" and target is not None and len(args) == 1:
            s = self.size_or_unknown(target).factor(STRING_TRAVERSAL)
            r = self.size_or_unknown(args[0]).factor(STRING_TRAVERSAL)
            return s.mul(r).add(arg_sum), None
        if ov in ("logical_or", "logical_and") and len(arg_costs) == 2:
            lhs, rhs = arg_costs
            return CostEstimate(lhs.min, lhs.add(rhs).max), None
        if ov == "conditional" and len(args) == 3:
            size = self.size_or_unknown(args[1]).union(self.size_or_unknown(args[2]))
            a = self.entry_size(e.args[1])
            b = self.entry_size(e.args[2])
            self.set_entry(e, a.union(b) if a is not None else None)
            c0, c1, c2 = arg_costs
            return c0.add(c1.union(c2)), size
        if ov in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            rs = self.size_or_unknown(args[0]).add(self.size_or_unknown(args[1]))
            a = self.entry_size(e.args[0])
            b = self.entry_size(e.args[1])
            merged = a.union(b) if a is not None else None
            if merged is not None:
                self.set_entry(e, merged)
            if ov == "add_list":
                return ONE.add(arg_sum), rs
            return rs.factor(STRING_TRAVERSAL).add(arg_sum), rs
        if ov in _COMPARISONS and len(args) == 2:
            lhs = self.size_or_unknown(args[0])
            rhs = self.size_or_unknown(args[1])
            smallest = min(lhs.max, rhs.max)
            lo = 1 if smallest > 0 else 0
            return CostEstimate(lo, smallest).factor(STRING_TRAVERSAL).add(arg_sum), None
        return ONE.add(arg_sum), None

    def _size(self, n: _AstNode) -> CostEstimate:
        """Kubernetes' ``sizeEstimate``: computed size, else the schema's, else unknown."""
        if n.size is not None:
            return n.size
        if n.path:
            s = self.sizes(n.path)
            if s is not None:
                return s
        return UNKNOWN

    def _list_element(self, n: _AstNode) -> _AstNode | None:
        if not n.type.params:
            return None
        elem = n.type.params[0]
        if n.path is not None:
            return _AstNode([*n.path, "@items"], elem, None)
        return _AstNode(None, elem, None)

    def k8s_call(
        self, fn: str, ov: str, target: _AstNode | None, args: list[_AstNode]
    ) -> tuple[CostEstimate, CostEstimate | None] | None:
        """Kubernetes' ``library.CostEstimator.EstimateCallCost`` (None: no estimate)."""
        t = STRING_TRAVERSAL
        if fn == "check":
            return fixed(350000), None
        if fn in _K8S_NOMINAL:
            return ONE, None
        if fn in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
            if target is None:
                return None
            el = self._list_element(target)
            if el is not None:
                cost = ONE
                if el.type.kind in ("string", "bytes"):
                    cost = cost.add(self._size(el).factor(t))
                return self._size(target).mul(cost), None
            return self._size(target).factor(t), None
        if fn == "url" and len(args) == 1:
            return self._size(args[0]).factor(t), None
        if fn in ("lowerAscii", "upperAscii", "substring", "trim") and target is not None:
            sz = self._size(target)
            return sz.factor(t), sz
        if fn == "replace" and target is not None and len(args) >= 2:
            return self._replace(target, args)
        if fn == "split" and target is not None:
            sz = self._size(target)
            hi = sz.max
            lit = args[1].expr if len(args) > 1 else None
            if lit is not None and lit.kind == LITERAL:
                hi = _split_limit(lit.value, hi)
            return sz.factor(2 * t), CostEstimate(0, hi)
        if fn == "join" and target is not None:
            size = ZERO
            n = self._size(target)
            el = self._list_element(target)
            if el is not None:
                size = n.mul(self._size(el))
            if args:
                sep = self._size(args[0])
                lo = n.min - 1 if n.min > 0 else 0
                hi = n.max - 1 if n.max > 0 else 0
                size = size.add(sep.mul(CostEstimate(lo, hi)))
            return size.factor(t), size
        if fn in ("find", "findAll") and target is not None and args:
            sz = self._size(target)
            s = sz.add(ONE).factor(t)
            r = self._size(args[0]).factor(REGEX_LENGTH)
            return s.mul(r), CostEstimate(0, sz.max)
        if fn in ("cidr", "isIP", "isCIDR"):
            if target is not None and args:
                return self._size(args[0]).factor(t), None
            return None
        if fn == "ip":
            if target is not None and args:
                if ov in ("cidr_ip", "kw_cidr_ip"):
                    return ONE, None
                return self._size(args[0]).factor(t), None
            if target is not None:
                return ONE, None
            return None
        if fn == "ip.isCanonical":
            if target is not None and args:
                return self._size(args[0]).factor(2 * t), None
            return None
        if fn in ("containsIP", "containsCIDR") and target is not None and args:
            base = CostEstimate(4, 16)
            cost = base.add(base).factor(t)
            if fn == "containsCIDR":
                cost = cost.add(base.factor(t)).add(ONE)
            if args[0].type.kind == "string":
                cost = cost.add(self._size(args[0]).factor(t))
            return cost, None
        if fn in ("quantity", "isQuantity"):
            if target is not None and args:
                return self._size(args[0]).factor(t), None
            return None
        return None

    def _replace(
        self, target: _AstNode, args: list[_AstNode]
    ) -> tuple[CostEstimate, CostEstimate | None]:
        sz = self._size(target)
        old = self._size(args[0])
        new = self._size(args[1])
        if old.min == 0:
            cmax = sz.max + 1 if sz.max < U64 else sz.max
            rmax = sz.max
        elif new.max <= old.min:
            cmax, rmax = 0, sz.max
        else:
            cmax, rmax = math.ceil(sz.max / old.min), 0
        if old.max == 0:
            cmin = sz.min + 1 if sz.min < U64 else sz.min
            rmin = sz.min
        elif old.max <= new.min:
            cmin, rmin = 0, sz.min
        else:
            cmin, rmin = math.ceil(sz.min / old.max), 0
        size = CostEstimate(cmin, min(cmax, U64)).mul(new).add(CostEstimate(rmin, rmax))
        return sz.factor(2 * STRING_TRAVERSAL), size


def _split_limit(value: Any, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value % (U64 + 1)
    return default


_K8S_NOMINAL: Final = frozenset(
    {
        "serviceAccount",
        "path",
        "group",
        "resource",
        "subresource",
        "namespace",
        "name",
        "allowed",
        "reason",
        "error",
        "errored",
        "masked",
        "prefixLength",
        "family",
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "sign",
        "asInteger",
        "isInteger",
        "asApproximateFloat",
        "isGreaterThan",
        "isLessThan",
        "compareTo",
        "add",
        "sub",
    }
)
_COMPARISONS: Final = frozenset(
    {
        "less_string",
        "greater_string",
        "less_equals_string",
        "greater_equals_string",
        "less_bytes",
        "greater_bytes",
        "less_equals_bytes",
        "greater_equals_bytes",
        "equals",
        "not_equals",
    }
)


def _expr_size(e: Node) -> CostEstimate | None:
    """cel-go's ``computeExprSize``: the size of a literal, list or map written inline."""
    if e.kind == LITERAL:
        if e.lit_kind == "string":
            return fixed(len(str(e.value)))
        if e.lit_kind == "bytes":
            v = e.value
            return fixed(len(v) if isinstance(v, bytes) else 0)
        return ONE
    if e.kind == LIST:
        return fixed(len(e.args))
    if e.kind == MAP:
        return fixed(len(e.args) // 2)
    return None


def _is_bind(e: Node) -> bool:
    c = e.comp
    return (
        c is not None
        and c.iter_range.kind == LIST
        and not c.iter_range.args
        and c.loop_condition.kind == LITERAL
        and c.loop_condition.value is False
        and c.accu_var not in ACCUMULATORS
    )


def _walk(root: CelTypeEstimate | None, steps: list[str]) -> CelTypeEstimate | None:
    cur = root
    for s in steps:
        if cur is None:
            return None
        cur = cur.child(s)
    return cur


# -- compiling ------------------------------------------------------------------

_ENV_LOCK = threading.Lock()
_ENVS: dict[tuple[tuple[str, str], ...], Any] = {}


def _generic_env(variables: Mapping[str, CelTypeEstimate]) -> Any:
    key = tuple(sorted((n, _cpp_type(t).name()) for n, t in variables.items()))
    env = _ENVS.get(key)
    if env is None:
        with _ENV_LOCK:
            env = _ENVS.get(key)
            if env is None:
                env = cel.NewEnv(
                    variables={n: _cpp_type(t) for n, t in variables.items()},
                    extensions=[
                        ext_strings.ExtStrings(),
                        ext_optional.ExtOptional(),
                        ext_bindings.ExtBindings(),
                        cel.CelExtension("kubernetes", library.declarations()),
                    ],
                )
                _ENVS[key] = env
    return env


def _cpp_type(t: CelTypeEstimate, depth: int = 0) -> Any:
    T = cel.Type
    if depth > 32:
        return T.DYN
    k = t.kind
    if k == "object":
        return T.Map(T.STRING, T.DYN)
    if k == "map":
        return T.Map(T.STRING, _cpp_type(t.elem, depth + 1) if t.elem else T.DYN)
    if k == "list":
        return T.List(_cpp_type(t.elem, depth + 1) if t.elem else T.DYN)
    return {
        "string": T.STRING,
        "bytes": T.BYTES,
        "int": T.INT,
        "uint": T.UINT,
        "double": T.DOUBLE,
        "bool": T.BOOL,
        "duration": T.DURATION,
        "timestamp": T.TIMESTAMP,
        "null": T.NULL,
    }.get(k, T.DYN)


def _compile(env: Any, source: str) -> CheckedAst:
    try:
        checked = env.compile(source)
    except RuntimeError as exc:
        raise CostError(str(exc)) from None
    return decode_checked(checked.serialize())


def estimate_cost(expression: str, variables: Mapping[str, CelTypeEstimate]) -> CostEstimate:
    """The static cost range of ``expression`` over ``variables`` (name → type with
    size bounds), as cel-go's estimator with Kubernetes' function costs computes it.

    A variable's size comes from its :class:`CelTypeEstimate` (``max_elements`` of the
    variable and of every field, element and key below it). Raises :class:`CostError`
    when the expression does not compile.
    """
    ast = _compile(_generic_env(variables), expression)

    def sizes(path: list[str]) -> CostEstimate | None:
        if not path or path[0] not in variables:
            return None
        t = _walk(variables[path[0]], path[1:])
        return CostEstimate(0, t.max_elements) if t is not None else None

    def types(path: list[str]) -> CelType | None:
        if not path or path[0] not in variables:
            return None
        t = _walk(variables[path[0]], path[1:])
        return as_cel_type(t) if t is not None else None

    return _Coster(ast, sizes, types).cost(ast.expr)


_OPTIONAL_PREFIX: Final = "cel.bind(oldSelf, __kwHasOld ? optional.of(__kwOld) : optional.none(), ("


def estimate_rule(
    node: Structural, root: CelTypeEstimate, expression: str, optional_old_self: bool = False
) -> CostEstimate:
    """The static cost of one CRD expression (a ``rule`` or ``messageExpression``) on
    the schema node ``node`` whose CEL type is ``root``, as kube-apiserver estimates
    it for ``x-kubernetes-validations`` (``self`` and ``oldSelf`` both have ``root``'s
    sizes; any other path starts from ``root`` too, as kube's size estimator reads
    every path from the rule's own type). Raises :class:`CostError` when the expression
    does not compile."""
    t = decl_type(node)
    env = _env(t, t)
    source = expression
    wrapped = optional_old_self and uses_old_self(expression)
    if wrapped:
        source = _OPTIONAL_PREFIX + expression + "))"
    ast = _compile(env, source)
    expr = ast.expr
    if wrapped and expr.comp is not None:
        expr = expr.comp.result  # the rule itself, with oldSelf typed optional

    def sizes(path: list[str]) -> CostEstimate | None:
        t = _walk(root, path[1:])
        return CostEstimate(0, t.max_elements) if t is not None else None

    def types(path: list[str]) -> CelType | None:
        if path[0] == "self" or (path[0] == "oldSelf" and not wrapped):
            t = _walk(root, path[1:])
            return as_cel_type(t) if t is not None else None
        return None

    return _Coster(ast, sizes, types).cost(expr)
