"""The CEL environment of admission expressions, and its compilation results.

Kubernetes compiles a ValidatingAdmissionPolicy's expressions in one environment per
set of optional declarations: ``object``, ``oldObject``, ``request`` and
``namespaceObject`` always; ``params`` only when the policy has a ``paramKind``;
``authorizer`` (and ``authorizer.requestResource``) everywhere except in
``messageExpression``; ``variables`` when the policy declares variables. This module
builds those environments over cel-expr-python with the Kubernetes function libraries
(:mod:`kubewerk.schema.cel.library`) plus the authorizer library of
:mod:`kubewerk.schema.admission_policy.authz`.

Where the static types differ from kube-apiserver's: ``object``, ``oldObject``,
``params`` and ``namespaceObject`` are ``dyn`` (as kube-apiserver declares them when
it has no schema), ``request`` and ``variables`` are ``map(string, dyn)`` (typed
objects there). So an expression whose static type is ``dyn`` is accepted where a
``bool`` or ``string`` is required (kube-apiserver accepts it where a variable's
checked type is the required one), and a reference to a variable that is not
declared before it is refused with cel-go's ``undefined field`` message by a scan of
the expression (see :func:`undefined_variables`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from kubewerk.schema.cel import library
from kubewerk.schema.cel.error_text import clean_compile_error

from . import authz
from .projection import Selects, expression_reads

T = cel.Type
_OBJ: Final = T.Map(T.STRING, T.DYN)
_LOCK = threading.Lock()
_ENVS: dict[tuple[bool, bool, bool], Any] = {}

# string literals (raw, triple-quoted, single and double quoted) removed before scanning
_STRING_LIT: Final = re.compile(
    r"[rR]?(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\")", re.S
)
TOP_LEVEL: Final = (
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "params",
    "authorizer",
    "variables",
)
"""The names an admission expression's activation can hold."""
_VARIABLE_REF: Final = re.compile(r"(?<![\w.])variables\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")


def activation(key: tuple[bool, bool, bool], data: dict[str, Any]) -> Any:
    """``data`` converted once for every expression compiled in environment ``key``
    (converting the object is most of a cheap expression's cost)."""
    found = _ENVS.get(key)
    if found is None:
        found = env(params=key[0], authorizer=key[1], variables=key[2])
    return found.Activation(data=data, arena=cel.Arena())


def evaluate_once(program: Any, data: dict[str, Any]) -> Any:
    """``program`` evaluated over ``data`` converted for this evaluation alone: the same
    value or error as over an :func:`activation` of it, for less when no other
    expression is evaluated over the same data."""
    return program.eval(data=data)


def env(*, params: bool, authorizer: bool, variables: bool) -> Any:
    """The (cached) environment with the given optional variables declared."""
    key = (params, authorizer, variables)
    found = _ENVS.get(key)
    if found is not None:
        return found
    with _LOCK:
        found = _ENVS.get(key)
        if found is None:
            decls: dict[str, Any] = {
                "object": T.DYN,
                "oldObject": T.DYN,
                "request": _OBJ,
                "namespaceObject": T.DYN,
            }
            if params:
                decls["params"] = T.DYN
            if authorizer:
                decls["authorizer"] = _OBJ
            if variables:
                decls["variables"] = _OBJ
            found = cel.NewEnv(
                variables=decls,
                extensions=[
                    ext_strings.ExtStrings(),
                    ext_optional.ExtOptional(),
                    ext_bindings.ExtBindings(),
                    cel.CelExtension("kubernetes", library.declarations()),
                    cel.CelExtension("kubernetes.authz", authz.declarations()),
                ],
            )
            _ENVS[key] = found
    return found


def variable_refs(expression: str) -> list[str]:
    """The names ``expression`` reads as ``variables.<name>``, in order, without repeats."""
    code = _STRING_LIT.sub(lambda m: " " * len(m.group(0)), expression)
    out: list[str] = []
    for m in _VARIABLE_REF.finditer(code):
        if m.group(1) not in out:
            out.append(m.group(1))
    return out


def undefined_variables(expression: str, declared: set[str] | frozenset[str]) -> str | None:
    """cel-go's error for the first ``variables.<name>`` not in ``declared``, or None.

    Worded and positioned as cel-go's checker reports a missing field of the
    ``variables`` object (column of the ``.``, the line's snippet and caret).
    """
    code = _STRING_LIT.sub(lambda m: " " * len(m.group(0)), expression)
    for m in _VARIABLE_REF.finditer(code):
        name = m.group(1)
        if name in declared:
            continue
        dot = code.index(".", m.start())
        line_no = code.count("\n", 0, dot) + 1
        line_start = code.rfind("\n", 0, dot) + 1
        col = dot - line_start
        line_text = expression.split("\n")[line_no - 1]
        return (
            f"ERROR: <input>:{line_no}:{col + 1}: undefined field '{name}'\n"
            f" | {line_text}\n | {'.' * col}^"
        )
    return None


@dataclass(frozen=True)
class Compiled:
    """One compiled expression: its program, or the kube-apiserver error ``detail``.

    ``detail`` is what follows the field path in kube's field error, e.g.
    ``compilation failed: ERROR: <input>:1:5: Syntax error: …`` or ``must evaluate to
    bool``. ``variables`` are the names the expression reads from ``variables``;
    ``reads`` the activation names (:data:`TOP_LEVEL`) it may read, so an evaluation
    can leave the others out, and ``selects`` what it may read of each (see
    :mod:`.projection`; a name read but absent there is read whole).
    """

    expression: str
    program: Any
    detail: str
    variables: tuple[str, ...]
    return_type: str
    env_key: tuple[bool, bool, bool] = (False, False, False)
    reads: frozenset[str] = frozenset(TOP_LEVEL)
    selects: Selects = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.program is not None


_TYPE_NAMES: Final = {"BOOL": "bool", "STRING": "string", "NULL": "null_type"}


def compile_expression(
    expression: str,
    *,
    returns: tuple[str, ...] | None,
    params: bool,
    authorizer: bool,
    declared_variables: frozenset[str] | None,
) -> Compiled:
    """Compile ``expression`` as kube-apiserver's ``CompileCELExpression`` does.

    ``returns``: the CEL types the result must have (``("bool",)``, ``("string",)``,
    ``("string", "null_type")``), None for any. ``declared_variables``: the variables
    declared before this expression (None: the policy has no variables, so
    ``variables`` is not declared at all).
    """
    refs = tuple(variable_refs(expression)) if declared_variables is not None else ()
    e = env(params=params, authorizer=authorizer, variables=declared_variables is not None)
    try:
        checked = e.compile(expression)
    except RuntimeError as exc:
        return Compiled(
            expression, None, "compilation failed: " + clean_compile_error(str(exc)), refs, ""
        )
    if declared_variables is not None:
        missing = undefined_variables(expression, declared_variables)
        if missing is not None:
            return Compiled(expression, None, "compilation failed: " + missing, refs, "")
    rt = checked.return_type()
    name = _TYPE_NAMES.get(rt.name(), rt.name().lower())
    if returns is not None and rt != T.DYN and name not in returns:
        if len(returns) == 1:
            reason = f"must evaluate to {returns[0]}"
        else:
            reason = "must evaluate to one of [" + " ".join(returns) + "]"
        return Compiled(expression, None, reason, refs, name)
    key = (params, authorizer, declared_variables is not None)
    reads, selects = expression_reads(checked, TOP_LEVEL)
    return Compiled(expression, checked, "", refs, name, key, reads, selects)
