"""``x-kubernetes-validations``: compile once per schema, evaluate per object.

The adapter over cel-expr-python (the C++ cel-cpp runtime): one environment with the
strings, optional and bindings extensions plus the Kubernetes libraries; ``self`` is
declared with the CEL type of the schema node (objects as ``map(string, dyn)``), and
``oldSelf`` likewise. Evaluation follows the apiserver's ``cel.Validator``: rules run
on non-null values; transition rules (using ``oldSelf``) only where the old value
correlates (same property, same map key, same key in a ``map`` list) unless
``optionalOldSelf`` is true; failures produce ``Invalid`` (or the rule's ``reason``)
errors whose bad value is the schema type, e.g. ``spec: Invalid value: "object":
failed rule: self.a > 0``.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import GoText, go_json

from .._ratchet import MISSING as _UNCORRELATED
from .._ratchet import correlate_items, correlate_key, unchanged
from .._validator import ROOT_FIELD
from . import library
from .error_text import clean_compile_error, runtime_error
from .paths import parse_field_path, render_field_path

if TYPE_CHECKING:
    from .._structural import Structural

T = cel.Type
_ENV_LOCK = threading.Lock()
_ENVS: dict[tuple[str, str], Any] = {}
# CEL's reserved words (cel-spec, langdef.md): a property named by one is escaped as
# ``__name__``; a policy variable may not be named by one.
RESERVED_WORDS: Final = frozenset(
    {
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    }
)
_IDENT: Final = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*\Z")
_OLD_SELF: Final = re.compile(r"\boldSelf\b")
_STRING_LIT: Final = re.compile(
    r"'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"", re.S
)
_MISSING: Final = object()


def escape_name(name: str) -> str | None:
    """Kubernetes' escaping of a property name for CEL field access, or None if inaccessible."""
    if name in RESERVED_WORDS:
        return f"__{name}__"
    if not _IDENT.match(name):
        return None
    out = name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__")
    return out.replace("/", "__slash__")


def decl_type(node: Structural | None, depth: int = 0) -> Any:
    """The CEL type Kubernetes gives a schema node (objects become ``map(string, dyn)``)."""
    if (
        node is None
        or depth > 32
        or node.int_or_string
        or (node.preserve_unknown and not node.type)
    ):
        return T.DYN
    t = node.type
    if t == "object":
        if node.additional is not None and not node.properties:
            return T.Map(T.STRING, decl_type(node.additional, depth + 1))
        return T.Map(T.STRING, T.DYN)
    if t == "array":
        return T.List(decl_type(node.items, depth + 1))
    if t == "string":
        return T.BYTES if node.format == "byte" else T.STRING
    if t == "integer":
        return T.INT
    if t == "number":
        return T.DOUBLE
    if t == "boolean":
        return T.BOOL
    return T.DYN


def _env(self_type: Any, old_type: Any) -> Any:
    key = (self_type.name(), old_type.name())
    env = _ENVS.get(key)
    if env is None:
        with _ENV_LOCK:
            env = _ENVS.get(key)
            if env is None:
                env = cel.NewEnv(
                    variables={
                        "self": self_type,
                        "oldSelf": old_type,
                        "__kwOld": old_type,
                        "__kwHasOld": T.BOOL,
                    },
                    extensions=[
                        ext_strings.ExtStrings(),
                        ext_optional.ExtOptional(),
                        ext_bindings.ExtBindings(),
                        cel.CelExtension("kubernetes", library.declarations()),
                    ],
                )
                _ENVS[key] = env
    return env


def _unwrap_error(detail: str, prefix: str, text: str) -> str:
    """Compile errors of a wrapped rule, with columns and snippets of the rule as written."""
    shift = len(prefix)

    def col(m: re.Match[str]) -> str:
        return f"<input>:1:{max(1, int(m.group(1)) - shift)}"

    detail = re.sub(r"<input>:1:(\d+)", col, detail)
    out = []
    for line in detail.split("\n"):
        if line.startswith(" | " + prefix):
            line = " | " + text
        elif line.startswith(" | ") and set(line[3:]) <= {".", "^"} and len(line) > 3 + shift:
            line = " | " + line[3 + shift :]
        out.append(line)
    return "\n".join(out)


def _rule_value(rule: dict[str, Any]) -> Any:
    """The internal ``ValidationRule`` as field.Error prints it (json.Marshal, Go field names)."""
    reason = rule.get("reason")
    oos = rule.get("optionalOldSelf")
    text = (
        '{"Rule":'
        + go_json(rule.get("rule", ""))
        + ',"Message":'
        + go_json(rule.get("message", ""))
        + ',"MessageExpression":'
        + go_json(rule.get("messageExpression", ""))
        + ',"Reason":'
        + (go_json(reason) if reason is not None else "null")
        + ',"FieldPath":'
        + go_json(rule.get("fieldPath", ""))
        + ',"OptionalOldSelf":'
        + (go_json(oos) if oos is not None else "null")
        + "}"
    )
    return GoText(text)


def uses_old_self(expr: str) -> bool:
    return bool(_OLD_SELF.search(_STRING_LIT.sub("''", expr)))


_SELF: Final = re.compile(r"\bself\b")
_SELF_FIELD: Final = re.compile(r"\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\(?)")


def self_fields(*exprs: str) -> frozenset[str] | None:
    """The fields of ``self`` that ``exprs`` can observe, or None if they may observe more.

    When every ``self`` in the expressions is a field selection ``self.<name>`` (not a
    call such as ``self.all(…)``), only the fields named can change the result or the
    error: evaluating with ``self`` narrowed to those fields gives the same outcome.
    Anything the scan cannot read with certainty (comments, backslashes, quotes left
    after removing string literals, ``self[…]``, ``self.?x``, a bare ``self``) answers None.
    """
    fields: set[str] = set()
    for expr in exprs:
        if "\\" in expr or "//" in expr:
            return None
        code = _STRING_LIT.sub("''", expr)
        if "'" in code.replace("''", "") or '"' in code:
            return None
        for m in _SELF.finditer(code):
            sel = _SELF_FIELD.match(code, m.end())
            if sel is None or sel.group(2):
                return None
            fields.add(sel.group(1))
    return frozenset(fields)


@dataclass
class CompiledRule:
    rule: dict[str, Any]
    program: Any
    message_program: Any
    uses_old: bool
    optional_old: bool
    field_steps: list[str | int] | None
    detail: str
    self_fields: frozenset[str] | None


def _compile_one(
    node: Structural, rule: dict[str, Any], path: str
) -> tuple[CompiledRule | None, list[FieldError]]:
    errs: list[FieldError] = []
    raw_text = rule.get("rule")
    text: str = raw_text if isinstance(raw_text, str) else ""
    st_type = decl_type(node)
    optional_old = rule.get("optionalOldSelf") is True
    env = _env(st_type, st_type)
    program = None
    uses_old = uses_old_self(text)
    source = text
    prefix = ""
    if optional_old and uses_old:
        # oldSelf is an optional: bind it from two hidden variables (optionals cannot be passed in)
        prefix = "cel.bind(oldSelf, __kwHasOld ? optional.of(__kwOld) : optional.none(), ("
        source = prefix + text + "))"
    try:
        checked = env.compile(source)
        rt = checked.return_type()
        if rt != T.BOOL and rt != T.DYN:
            errs.append(
                FieldError.invalid(
                    f"{path}.rule", _rule_value(rule), "cel expression must evaluate to a bool"
                )
            )
        program = checked
    except RuntimeError as exc:
        detail = clean_compile_error(str(exc))
        if prefix:
            detail = _unwrap_error(detail, prefix, text)
        errs.append(
            FieldError.invalid(f"{path}.rule", _rule_value(rule), "compilation failed: " + detail)
        )
    message_program = None
    mexpr = rule.get("messageExpression")
    if isinstance(mexpr, str) and mexpr.strip():
        try:
            mp = env.compile(mexpr)
            rt = mp.return_type()
            if rt != T.STRING and rt != T.DYN:
                errs.append(
                    FieldError.invalid(
                        f"{path}.messageExpression", _rule_value(rule), "must evaluate to a string"
                    )
                )
            else:
                message_program = mp
        except RuntimeError as exc:
            errs.append(
                FieldError.invalid(
                    f"{path}.messageExpression",
                    _rule_value(rule),
                    "messageExpression compilation failed: " + clean_compile_error(str(exc)),
                )
            )
    fp = rule.get("fieldPath")
    steps = parse_field_path(fp) if isinstance(fp, str) and fp else None
    msg = rule.get("message")
    detail = msg.strip() if isinstance(msg, str) and msg.strip() else f"failed rule: {text.strip()}"
    if errs:
        return None, errs
    observed = self_fields(text, mexpr if isinstance(mexpr, str) else "")
    return (
        CompiledRule(
            rule, program, message_program, uses_old, optional_old, steps, detail, observed
        ),
        errs,
    )


def check_node_rules(
    node: Structural,
    rules: list[Any],
    path: str,
    old_self_forbidden: str | None,
    preexisting: set[str],
) -> list[FieldError]:
    """CRD-creation checks of one node's rules: compilation and oldSelf placement."""
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        rp = f"{path}[{i}]"
        _, cerrs = _compile_one(node, rule, rp)
        errs.extend(cerrs)
        raw_text = rule.get("rule")
        text: str = raw_text if isinstance(raw_text, str) else ""
        if uses_old_self(text):
            if old_self_forbidden is not None:
                errs.append(
                    FieldError.invalid(
                        f"{rp}.rule",
                        text,
                        "oldSelf cannot be used on the uncorrelatable "
                        f"portion of the schema within {old_self_forbidden}",
                    )
                )
        elif rule.get("optionalOldSelf") is not None:
            errs.append(
                FieldError.invalid(
                    f"{rp}.optionalOldSelf",
                    rule["optionalOldSelf"],
                    "may not be set if oldSelf is not used in rule",
                )
            )
    return errs


class _CelConversion:
    """How to turn one schema node's JSON value into what Kubernetes hands to CEL.

    Only nodes whose subtree needs a change (escaped property names, ``number`` as
    double, ``byte`` strings as bytes) get a ``_CelConversion``; everything else is passed
    as is.
    """

    __slots__ = ("additional", "byte", "has_props", "items", "number", "props")

    def __init__(self) -> None:
        self.props: dict[str, tuple[str | None, _CelConversion | None]] = {}
        self.additional: _CelConversion | None = None
        self.items: _CelConversion | None = None
        self.number = False
        self.byte = False
        self.has_props = False


def build_conv(node: Structural | None, depth: int = 0) -> _CelConversion | None:
    """The conversion plan for ``node``, or None when its values pass unchanged."""
    if node is None or depth > 64:
        return None
    conv = _CelConversion()
    needed = False
    if node.type == "number":
        conv.number = needed = True
    elif node.type == "string" and node.format == "byte":
        conv.byte = needed = True
    if node.properties:
        conv.has_props = True
        for name, sub in node.properties.items():
            escaped = escape_name(name)
            child = build_conv(sub, depth + 1)
            if escaped != name or child is not None:
                needed = True
            conv.props[name] = (escaped, child)
    conv.additional = build_conv(node.additional, depth + 1)
    conv.items = build_conv(node.items, depth + 1)
    if conv.additional is not None or conv.items is not None:
        needed = True
    return conv if needed else None


class _NodeRules:
    __slots__ = (
        "additional",
        "children",
        "convert",
        "items",
        "node",
        "passed",
        "raw_fields",
        "rules",
        "type_name",
    )

    def __init__(self, node: Structural) -> None:
        self.node = node
        self.rules: list[CompiledRule] = []
        self.children: dict[str, _NodeRules] = {}
        self.additional: _NodeRules | None = None
        self.items: _NodeRules | None = None
        self.type_name = node.type
        self.convert = build_conv(node) if node.rules else None
        # the keys of an object value the rules can observe (None: all of them)
        self.raw_fields: frozenset[str] | None = None
        # values (as _memo_key, or the JSON text of a flat object: ``_text_key``) on
        # which every rule passed; None while some rule reads
        # oldSelf (then the outcome depends on more than the value)
        self.passed: dict[tuple[Any, ...] | bytes, bool] | None = None

    def narrow(self) -> None:
        """Set ``raw_fields`` and ``passed`` from the compiled rules (call once they are
        all added)."""
        if not any(cr.uses_old for cr in self.rules):
            self.passed = {}
        names: set[str] = set()
        for cr in self.rules:
            if cr.self_fields is None:
                return
            names |= cr.self_fields
        raw = set(names)  # undeclared keys reach CEL under their own name
        for name in self.node.properties:
            if escape_name(name) in names:
                raw.add(name)
        self.raw_fields = frozenset(raw)


def to_cel(value: Any, conv: _CelConversion | None) -> Any:
    """A JSON value as Kubernetes presents it to CEL (escaped names, doubles, bytes)."""
    if conv is None or value is None:
        return value
    t = type(value)
    if t is dict:
        if conv.has_props:
            out: dict[str, Any] = {}
            props = conv.props
            for k, v in value.items():
                entry = props.get(k)
                if entry is not None:
                    name, child = entry
                    if name is not None:
                        out[name] = v if child is None else to_cel(v, child)
                elif conv.additional is not None:
                    out[k] = to_cel(v, conv.additional)
                else:
                    out[k] = v
            return out
        if conv.additional is not None:
            return {k: to_cel(v, conv.additional) for k, v in value.items()}
        return value
    if t is list:
        return [to_cel(v, conv.items) for v in value] if conv.items is not None else value
    if conv.number and t is int:
        return float(value)
    if conv.byte and t is str:
        try:
            return base64.b64decode(value)
        except ValueError:
            return value
    return value


class RuleSet:
    """Every rule of one schema, compiled; ``validate`` walks object and old object together."""

    def __init__(self, root: _NodeRules) -> None:
        self.root = root

    def validate(self, obj: Any, old: Any = None) -> list[FieldError]:
        """Evaluate every rule on ``obj`` (an update from ``old`` when it is not None).

        On update, the failures of rules that do not use ``oldSelf`` are ratcheted
        (dropped) where the node is unchanged from its correlated old value, or — for a
        node that cannot be correlated — where its nearest correlated ancestor is
        unchanged; evaluation errors are always reported (as the apiserver does).
        """
        errs: list[FieldError] = []
        if old is None:
            _walk(self.root, obj, _MISSING, ROOT_FIELD, errs, None)
        else:
            top = _CorrelatedNode(self.root.node, obj, None, None, old)
            _walk(self.root, obj, old, ROOT_FIELD, errs, top)
        return errs


_UNRESOLVED: Final = object()
_NEVER: Final = object()


class _CorrelatedNode:
    """A node on the update walk, correlated to its old value lazily (``CorrelatedObject``).

    The correlated old value is only worked out when a rule fails, so an update whose
    rules pass pays one small object per visited node.
    """

    __slots__ = ("equal", "items_old", "node", "old_value", "parent", "step", "value")

    def __init__(
        self,
        node: Structural,
        value: Any,
        parent: _CorrelatedNode | None,
        step: str | int | None,
        old: Any = _UNRESOLVED,
    ) -> None:
        self.node = node
        self.value = value
        self.parent = parent
        self.step = step
        self.old_value = old
        self.equal: bool | None = None
        self.items_old: list[Any] | None = None

    def old(self) -> Any:
        """The correlated old value, or ``_UNCORRELATED`` (then so are all descendants)."""
        o = self.old_value
        if o is _UNRESOLVED:
            parent = self.parent
            assert parent is not None  # the root is created resolved
            p_old = parent.old()
            step = self.step
            if p_old is _UNCORRELATED:
                o = _UNCORRELATED
            elif type(step) is str:
                if parent.parent is None and step in ("apiVersion", "kind"):
                    o = _NEVER  # never ratcheted: both objects are converted to one version
                else:
                    o = correlate_key(parent.node, parent.value, p_old, step)
            else:
                olds = parent.items_old
                if olds is None:
                    olds = parent.items_old = correlate_items(parent.node, parent.value, p_old) or [
                        _UNCORRELATED
                    ] * len(parent.value)
                o = olds[step]  # type: ignore[index]
            self.old_value = o
        return o

    def ratcheted(self) -> bool:
        """``ratchetingOptions.shouldRatchetError``: this node, if correlated, is
        unchanged; else its nearest correlated ancestor is."""
        c: _CorrelatedNode | None = self
        while c is not None:
            o = c.old()
            if o is _NEVER:
                return False
            if o is not _UNCORRELATED:
                eq = c.equal
                if eq is None:
                    eq = c.equal = unchanged(c.node, c.value, o)
                return eq
            c = c.parent
        return False


def _build(node: Structural, path: str, errs: list[FieldError]) -> _NodeRules | None:
    if not node.has_rules:
        return None
    nr = _NodeRules(node)
    for i, rule in enumerate(node.rules):
        compiled, cerrs = _compile_one(node, rule, f"{path}.x-kubernetes-validations[{i}]")
        errs.extend(cerrs)
        if compiled is not None:
            nr.rules.append(compiled)
    nr.narrow()
    for name, sub in node.properties.items():
        child = _build(sub, f"{path}.properties[{name}]", errs)
        if child is not None:
            nr.children[name] = child
    if node.additional is not None:
        nr.additional = _build(node.additional, f"{path}.additionalProperties", errs)
    if node.items is not None:
        nr.items = _build(node.items, f"{path}.items", errs)
    return nr


def compile_rules(node: Structural) -> tuple[RuleSet | None, list[FieldError]]:
    """Compile every rule under ``node`` (paths relative to ``openAPIV3Schema``)."""
    errs: list[FieldError] = []
    root = _build(node, "openAPIV3Schema", errs)
    if errs or root is None:
        return None, errs
    return RuleSet(root), []


def _walk(
    nr: _NodeRules,
    value: Any,
    old: Any,
    path: str,
    errs: list[FieldError],
    corr: _CorrelatedNode | None,
) -> None:
    """``old``: the value ``oldSelf`` is bound to (or ``_MISSING``); ``corr``: this
    node on an update, for ratcheting (None on create)."""
    if value is None:
        return
    if nr.rules:
        _eval_rules(nr, value, old, path, errs, corr)
    t = type(value)
    if t is dict:
        for name, child in nr.children.items():
            v = value.get(name, _MISSING)
            if v is _MISSING:
                continue
            prev = old.get(name, _MISSING) if type(old) is dict else _MISSING
            c = _CorrelatedNode(child.node, v, corr, name) if corr is not None else None
            _walk(child, v, prev, name if path == ROOT_FIELD else f"{path}.{name}", errs, c)
        addl = nr.additional
        if addl is not None:
            granular = nr.node.map_type != "atomic"
            for k, v in value.items():
                if k in nr.node.properties:
                    continue
                prev = old.get(k, _MISSING) if granular and type(old) is dict else _MISSING
                c = _CorrelatedNode(addl.node, v, corr, k) if corr is not None else None
                _walk(addl, v, prev, f"{path}[{k}]", errs, c)
    elif t is list:
        items = nr.items
        if items is None:
            return
        correlate = nr.node.list_type == "map" and type(old) is list
        old_by_key: dict[str, Any] = {}
        if correlate:
            keys = nr.node.list_map_keys
            for entry in old:
                if type(entry) is dict:
                    old_by_key[go_json([entry.get(k) for k in keys])] = entry
        for i, v in enumerate(value):
            match: Any = _MISSING
            if correlate and type(v) is dict:
                match = old_by_key.get(go_json([v.get(k) for k in nr.node.list_map_keys]), _MISSING)
            c = _CorrelatedNode(items.node, v, corr, i) if corr is not None else None
            _walk(items, v, match, f"{path}[{i}]", errs, c)


def _eval_rules(
    nr: _NodeRules,
    value: Any,
    old: Any,
    path: str,
    errs: list[FieldError],
    corr: _CorrelatedNode | None,
) -> None:
    node = nr.node
    fields = nr.raw_fields
    passed = nr.passed
    memo_key = None
    text = None
    if passed is not None and type(value) is dict:
        text = _text_key(value)
        if text is not None and text in passed:
            return  # these rules passed on this very object before (they read only self)
    if fields is not None and type(value) is dict:
        if passed is not None:
            value, memo_key = _narrow_keyed(value, fields)
        else:
            value = _narrow(value, fields)
    elif passed is not None:
        memo_key = _memo_key(value)
    if memo_key is not None and passed is not None and memo_key in passed:
        return  # these rules passed on an identical value before (they read only self)
    n_errs = len(errs)
    all_true = True
    cel_self = to_cel(value, nr.convert)
    cel_old: Any = None
    has_old = old is not _MISSING and old is not None
    if has_old:
        cel_old = to_cel(old, nr.convert)
    bad = node.type
    for cr in nr.rules:
        if cr.uses_old and not has_old and not cr.optional_old:
            continue
        if cr.uses_old:
            data = {"self": cel_self, "oldSelf": cel_old, "__kwOld": cel_old, "__kwHasOld": has_old}
        else:
            data = {"self": cel_self}
        try:
            result = cr.program.eval(data=data)
        except RuntimeError as exc:
            # cel-cpp stops runaway comprehensions with its iteration budget; Kubernetes
            # reports its cost limit the same way
            if "budget" in str(exc):
                errs.append(
                    FieldError.invalid(
                        path,
                        bad,
                        "'operation cancelled: actual cost limit exceeded': call "
                        f"cost exceeds limit for rule: {_rule_text(cr.rule)}",
                    )
                )
            else:
                errs.append(
                    FieldError.invalid(
                        path,
                        bad,
                        f"{runtime_error(str(exc))} evaluating rule: {_rule_text(cr.rule)}",
                    )
                )
            continue
        value = result.value()
        if value is True:
            continue  # only a bool result is True: the common case needs no type check
        all_true = False
        rtype = result.type()
        if rtype == T.ERROR:
            errs.append(
                FieldError.invalid(
                    path,
                    bad,
                    f"{runtime_error(str(value))} evaluating rule: {_rule_text(cr.rule)}",
                )
            )
            continue
        if rtype != T.BOOL:
            errs.append(
                FieldError.invalid(
                    path,
                    bad,
                    f"rule did not evaluate to a bool evaluating rule: {_rule_text(cr.rule)}",
                )
            )
            continue
        if not cr.uses_old and corr is not None and corr.ratcheted():
            # ratcheting: the rule failed on a value the update left unchanged (the
            # apiserver turns this failure into a warning)
            continue
        field = path
        if cr.field_steps:
            field = render_field_path(path, cr.field_steps)
        detail = cr.detail
        if cr.message_program is not None:
            msg = cr.message_program.eval(data=data)
            if msg.type() == T.STRING:
                text = msg.value()
                if (
                    isinstance(text, str)
                    and text.strip()
                    and "\n" not in text
                    and "\r" not in text
                    and len(text) <= 5000
                ):
                    detail = text
        errs.append(_error_for_reason(field, bad, detail, cr.rule.get("reason")))
    if passed is not None and all_true and len(errs) == n_errs:
        if memo_key is not None:
            if len(passed) >= _MEMO_MAX:
                passed.clear()
            passed[memo_key] = True
        if text is not None:
            # the whole object passed too: narrowing never changes an outcome
            if len(passed) >= _MEMO_MAX:
                passed.clear()
            passed[text] = True


_MEMO_MAX: Final = 4096

_TEXT_KEYED: Final = frozenset((str, int, bool, type(None)))
"""The value types of an object ``_text_key`` keys: no containers, and no floats (whose
NaN and infinities orjson writes as ``null``)."""
_TEXT_KEY_MAX: Final = 2048


def _text_key(value: dict[str, Any]) -> bytes | None:
    """The JSON text of ``value`` when it is an object of string, integer, boolean and
    null fields, at most ``_TEXT_KEY_MAX`` bytes: equal texts are equal objects to CEL
    (field order, names, types and values: ``1``, ``true`` and ``"1"`` are written
    apart); None for anything else (then ``_memo_key`` decides). Made in C, so a rule set
    that passed on an identical object is answered without narrowing or converting."""
    if not _TEXT_KEYED.issuperset(map(type, value.values())):
        return None
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError:  # a non-string key, an integer beyond 64 bits, a surrogate
        return None
    return text if len(text) <= _TEXT_KEY_MAX else None


def _memo_key(value: Any) -> tuple[Any, ...] | None:
    """A key equal only for values CEL cannot tell apart: a scalar, or an object of a few
    scalar fields (types kept, so ``1``, ``1.0`` and ``True`` differ; floats by their
    exact bits, so ``-0.0`` and ``0.0`` differ); None for anything else."""
    t = type(value)
    if t is dict:
        if len(value) > 8:
            return None
        parts: list[Any] = []
        for k, v in value.items():
            tv = type(v)
            if tv is float:
                v = v.hex()
            elif tv is str:
                if len(v) > 256:
                    return None
            elif tv is not int and tv is not bool and v is not None:
                return None
            parts.append((k, tv, v))
        return (dict, *parts)
    if t is str:
        return (t, value) if len(value) <= 256 else None
    if t is int or t is bool:
        return (t, value)
    if t is float:
        return (t, value.hex())
    return None


def _narrow(value: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
    """``value`` with only the keys the rules can observe, when that cannot change an outcome.

    cel-cpp converts the whole of ``self`` before evaluating, and a value it cannot
    convert (an integer beyond 64 bits, a tuple, a datetime, a lone surrogate) fails
    the rule even where the rule never looks. So a key is left out only when its value
    is certainly convertible; otherwise the whole value is kept. Leaving out the rest
    saves converting the whole object (most of an evaluation's cost for a large spec).
    """
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k in fields:
            out[k] = v
        elif (
            type(k) is not str
            or not k.isascii()
            or not (v.isascii() if type(v) is str else _convertible(v))
        ):
            return value
    return out


def _narrow_keyed(
    value: dict[str, Any], fields: frozenset[str]
) -> tuple[dict[str, Any], tuple[Any, ...] | None]:
    """``_narrow(value, fields)`` and the ``_memo_key`` of what it gives, in one pass over
    ``value`` (the key is made while the kept fields are copied)."""
    out: dict[str, Any] = {}
    parts: list[Any] | None = [dict]
    for k, v in value.items():
        if k in fields:
            out[k] = v
            if parts is not None:
                tv = type(v)
                if tv is str:
                    if len(v) > 256:
                        parts = None
                    else:
                        parts.append((k, tv, v))
                elif tv is int or tv is bool or v is None:
                    parts.append((k, tv, v))
                elif tv is float:
                    parts.append((k, tv, v.hex()))
                else:
                    parts = None
        elif (
            type(k) is not str
            or not k.isascii()
            or not (v.isascii() if type(v) is str else _convertible(v))
        ):
            return value, _memo_key(value)
    if parts is None or len(out) > 8:
        return out, None
    return out, tuple(parts)


_CEL_INT_MIN: Final = -(2**63)
_CEL_INT_END: Final = 2**64  # cel-cpp takes ints up to uint64


def _convertible(v: Any) -> bool:
    """True only for values cel-cpp certainly converts (JSON types, ASCII text, 64-bit ints)."""
    t = type(v)
    if t is dict:
        for k in v:
            if type(k) is not str or not k.isascii():
                return False
        return _all_convertible(v.values())
    if t is list:
        return _all_convertible(v)
    if t is str:
        return bool(v.isascii())
    if t is int:
        return bool(_CEL_INT_MIN <= v < _CEL_INT_END)
    return t is float or t is bool or v is None


def _all_convertible(values: Iterable[Any]) -> bool:
    """``_convertible`` of every item, with the scalar cases inline (hot path)."""
    for x in values:
        tx = type(x)
        if tx is str:
            if not x.isascii():
                return False
        elif tx is dict or tx is list:
            if not _convertible(x):
                return False
        elif tx is int:
            if not _CEL_INT_MIN <= x < _CEL_INT_END:
                return False
        elif not (tx is bool or tx is float or x is None):
            return False
    return True


def _rule_text(rule: dict[str, Any]) -> str:
    msg = rule.get("message")
    if isinstance(msg, str) and msg.strip():
        return msg.strip()
    text = rule.get("rule")
    return text.strip() if isinstance(text, str) else ""


def _error_for_reason(field: str, bad: str, detail: str, reason: Any) -> FieldError:
    if reason == "FieldValueForbidden":
        return FieldError.forbidden(field, detail)
    if reason == "FieldValueRequired":
        return FieldError.required(field, detail)
    if reason == "FieldValueDuplicate":
        return FieldError.duplicate(field, bad)
    return FieldError.invalid(field, bad, detail)


def validate_default_rules(
    node: Structural, value: Any, path: str, is_root: bool
) -> list[FieldError]:
    """CEL rules applied to a schema default (self = oldSelf = the default)."""
    errs: list[FieldError] = []
    built = _build(node, "default", errs)
    if errs or built is None:
        return []
    out: list[FieldError] = []
    _walk(built, value, value, path, out, None)
    return out
