"""Compile policies and evaluate them for a request, worded as kube-apiserver words it.

:func:`compile_policy` compiles once; :func:`admit` runs every matching (policy,
binding, param) triple as kube-apiserver's ValidatingAdmissionPolicy dispatcher does
and answers an :class:`Admission`: allowed or the ``Status`` error of the first denial
(``ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>``, the
validation's reason and its HTTP code), the warnings (``Validation failed for
ValidatingAdmissionPolicy 'p' with binding 'b': <message>``) and the audit
annotations (``<policy>/<key>`` and ``validation.policy.admission.k8s.io/
validation_failure``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cel_expr_python import cel

from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.selectors import LabelSelectorError, label_selector_from_dict
from kubewerk.schema.cel.error_text import runtime_error

from . import authz
from .cel_env import Compiled, activation, compile_expression, evaluate_once
from .matching import Criteria, Match, compile_criteria, matches
from .projection import PROJECTED, Projection, merge_selects, project
from .request import Request, namespace_object_value
from .shortcut import Evaluator, compile_validations
from .validation import default_policy, validate_policy

T = cel.Type
MAX_MESSAGE_BYTES: Final = 5 * 1024
MAX_AUDIT_VALUE_BYTES: Final = 10 * 1024
VALIDATION_FAILURE_KEY: Final = "validation.policy.admission.k8s.io/validation_failure"
_CODES: Final = {
    "Forbidden": 403,
    "Unauthorized": 401,
    "RequestEntityTooLarge": 413,
    "Invalid": 422,
}


@dataclass(frozen=True)
class Validation:
    expression: Compiled
    message: str
    message_expression: Compiled | None
    reason: str


@dataclass
class CompiledPolicy:
    """A policy compiled once. ``errors``: what kube-apiserver refuses the object for
    (an expression that does not compile is still kept, and fails at evaluation with
    ``compilation error: …`` as a stored expression does there)."""

    policy: dict[str, Any]
    name: str
    failure_policy: str
    param_kind: dict[str, Any] | None
    match_constraints: dict[str, Any] | None
    match_conditions: list[tuple[str, Compiled]]
    variables: list[tuple[str, Compiled]]
    validations: list[Validation]
    audit_annotations: list[tuple[str, Compiled]]
    errors: list[FieldError]
    batch: tuple[Compiled, tuple[int, ...]] | None = None
    """Validations evaluated together (see :func:`_batch`), and which."""
    criteria: Criteria | None = None
    """``match_constraints`` with its selectors parsed once."""
    reads: frozenset[str] = frozenset()
    """The activation names any of the policy's expressions may read: an evaluation
    builds only these."""
    admits: tuple[Decision, ...] = ()
    """Each validation's ``Admit`` decision, by index (immutable, so one set serves every
    evaluation)."""
    projections: dict[str, Projection] = field(default_factory=dict)
    """What the expressions may read of the request's JSON variables (``object``,
    ``oldObject``, ``params``, ``namespaceObject``) when not the whole value: an
    evaluation over plain JSON values converts only that (see :mod:`.projection`)."""
    sole_batch: Any = None
    """The batch's program when it is all there is to evaluate (every validation, no
    matchConditions, variables, audit annotations or authorizer): :func:`validate`
    then decides from its values without an activation."""
    shortcut: Evaluator | None = None
    """The validations evaluated in Python (:mod:`.shortcut`) when they are all there is
    to evaluate (as for ``sole_batch``) and every one is in the shortcut's subset: over
    plain JSON values it answers their values exactly as cel-cpp would, or None (then
    cel-cpp evaluates as without it)."""

    def __post_init__(self) -> None:
        self.criteria = compile_criteria(self.match_constraints)
        reads: set[str] = set()
        selects: dict[str, Projection | None] = {}
        for compiled in self._expressions():
            reads |= compiled.reads
            whole = {name: None for name in compiled.reads if name not in compiled.selects}
            selects = merge_selects(selects, {**compiled.selects, **whole})
        self.reads = frozenset(reads)
        self.projections = {
            name: proj
            for name, proj in selects.items()
            if name in PROJECTED and name in self.reads and proj is not None
        }
        self.admits = tuple(
            Decision("Admit", "admit", "", "", i) for i in range(len(self.validations))
        )
        # the validations are all there is to evaluate: no matchConditions, variables,
        # audit annotations or authorizer (the condition of both shortcuts below)
        validations_only = (
            not self.match_conditions
            and not self.variables
            and not self.audit_annotations
            and "authorizer" not in self.reads
        )
        self.sole_batch = None
        if (
            validations_only
            and self.batch is not None
            and len(self.batch[1]) == len(self.validations)
        ):
            self.sole_batch = self.batch[0].program
        self.shortcut = None
        if validations_only and self.validations and all(v.expression.ok for v in self.validations):
            self.shortcut = compile_validations([v.expression.program for v in self.validations])

    def _expressions(self) -> list[Compiled]:
        out = [c for _, c in self.match_conditions]
        out += [c for _, c in self.variables]
        for v in self.validations:
            out.append(v.expression)
            if v.message_expression is not None:
                out.append(v.message_expression)
        out += [c for _, c in self.audit_annotations]
        return out


def compile_policy(policy: Mapping[str, Any]) -> CompiledPolicy:
    """Default, validate and compile a ValidatingAdmissionPolicy object."""
    errors = validate_policy(policy)
    obj = default_policy(policy)
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(meta, dict) and isinstance(spec, dict)
    pk = spec.get("paramKind")
    param_kind = pk if isinstance(pk, dict) else None
    has_params = param_kind is not None

    def items(key: str) -> list[dict[str, Any]]:
        value = spec.get(key)
        return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []

    conds = [
        (
            str(c.get("name", "")),
            compile_expression(
                str(c.get("expression", "")).strip(),
                returns=("bool",),
                params=has_params,
                authorizer=True,
                declared_variables=None,
            ),
        )
        for c in items("matchConditions")
    ]
    declared: frozenset[str] | None = None
    variables: list[tuple[str, Compiled]] = []
    if items("variables"):
        names: list[str] = []
        for v in items("variables"):
            name = str(v.get("name", ""))
            variables.append(
                (
                    name,
                    compile_expression(
                        str(v.get("expression", "")),
                        returns=None,
                        params=has_params,
                        authorizer=True,
                        declared_variables=frozenset(names),
                    ),
                )
            )
            names.append(name)
        declared = frozenset(names)
    validations = []
    for v in items("validations"):
        mexpr = str(v.get("messageExpression") or "")
        validations.append(
            Validation(
                compile_expression(
                    str(v.get("expression", "")),
                    returns=("bool",),
                    params=has_params,
                    authorizer=True,
                    declared_variables=declared,
                ),
                str(v.get("message") or ""),
                compile_expression(
                    mexpr,
                    returns=("string",),
                    params=has_params,
                    authorizer=False,
                    declared_variables=declared,
                )
                if mexpr.strip()
                else None,
                str(v.get("reason") or ""),
            )
        )
    audits = [
        (
            str(a.get("key", "")),
            compile_expression(
                str(a.get("valueExpression", "")).strip(),
                returns=("string", "null_type"),
                params=has_params,
                authorizer=True,
                declared_variables=declared,
            ),
        )
        for a in items("auditAnnotations")
    ]
    mc = spec.get("matchConstraints")
    batched = _batch(validations, has_params, declared)
    return CompiledPolicy(
        policy=obj,
        name=str(meta.get("name", "")),
        failure_policy=str(spec.get("failurePolicy") or "Fail"),
        param_kind=param_kind,
        match_constraints=mc if isinstance(mc, dict) else None,
        match_conditions=conds,
        variables=variables,
        validations=validations,
        audit_annotations=audits,
        errors=errors,
        batch=batched,
    )


def _batch(
    validations: list[Validation], has_params: bool, declared: frozenset[str] | None
) -> tuple[Compiled, tuple[int, ...]] | None:
    """The validations that read neither ``variables`` nor ``authorizer`` compiled into one
    program giving the list of their values (one evaluation instead of one each), with
    their indexes; None when fewer than two qualify or the list does not compile.

    Evaluating the list reads nothing the separate expressions would not and calls
    nothing with an effect, so it is only a cheaper way to get the same values: when
    the list fails (some element errs) or holds something else than booleans, each
    validation is evaluated on its own as without it."""
    indexes = tuple(
        i
        for i, v in enumerate(validations)
        if v.expression.ok
        and "variables" not in v.expression.reads
        and "authorizer" not in v.expression.reads
    )
    if len(indexes) < 2:
        return None
    # each expression on lines of its own: a trailing // comment ends with its line
    text = "[" + ", ".join(f"(\n{validations[i].expression.expression}\n)" for i in indexes) + "]"
    compiled = compile_expression(
        text, returns=None, params=has_params, authorizer=True, declared_variables=declared
    )
    if not compiled.ok or compiled.env_key != validations[indexes[0]].expression.env_key:
        return None
    return compiled, indexes


@dataclass(frozen=True)
class CompiledBinding:
    """A ValidatingAdmissionPolicyBinding read once: what :func:`admit` needs of it, its
    ``matchResources`` selectors parsed (``criteria`` None: no ``matchResources``)."""

    binding: Mapping[str, Any]
    name: str
    policy_name: Any
    criteria: Criteria | None
    param_ref: dict[str, Any] | None
    actions: tuple[str, ...]


def compile_binding(binding: Mapping[str, Any]) -> CompiledBinding:
    """Read a (defaulted) binding object once for :func:`admit`."""
    spec = binding.get("spec") if isinstance(binding.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    mr = spec.get("matchResources")
    ref = spec.get("paramRef")
    return CompiledBinding(
        binding,
        str(_meta(binding).get("name", "")),
        spec.get("policyName"),
        compile_criteria(mr) if isinstance(mr, dict) else None,
        ref if isinstance(ref, dict) else None,
        tuple(a for a in spec.get("validationActions") or [] if isinstance(a, str)),
    )


# ------------------------------------------------------------------ params
class ParamStore:
    """The objects params are read from, by kind (what the policy's param informer
    holds). ``scopes`` declares kinds known to the server, ``(apiVersion, kind) ->
    namespaced``; the kinds of the objects given are known too (namespaced when any
    object of the kind has a namespace), as are ConfigMap and Secret (namespaced)."""

    def __init__(
        self,
        objects: Sequence[Mapping[str, Any]] = (),
        scopes: Mapping[tuple[str, str], bool] | None = None,
    ) -> None:
        self.objects = [dict(o) for o in objects]
        self.scopes: dict[tuple[str, str], bool] = {
            ("v1", "ConfigMap"): True,
            ("v1", "Secret"): True,
        }
        for o in self.objects:
            key = (str(o.get("apiVersion", "")), str(o.get("kind", "")))
            ns = bool(_meta(o).get("namespace"))
            self.scopes[key] = self.scopes.get(key, False) or ns
        if scopes:
            self.scopes.update(scopes)

    def namespaced(self, api_version: str, kind: str) -> bool | None:
        """Whether the kind is namespaced, None if the kind is not known."""
        return self.scopes.get((api_version, kind))

    def of_kind(self, api_version: str, kind: str, namespace: str | None) -> list[dict[str, Any]]:
        """The objects of a kind (in ``namespace`` when not None), by name."""
        out = [
            o
            for o in self.objects
            if o.get("apiVersion") == api_version
            and o.get("kind") == kind
            and (namespace is None or (_meta(o).get("namespace") or "") == namespace)
        ]
        return sorted(out, key=lambda o: str(_meta(o).get("name", "")))


def _meta(obj: Any) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return meta if isinstance(meta, dict) else {}


def _param_kind_text(pk: Mapping[str, Any]) -> str:
    return f"&ParamKind{{APIVersion:{pk.get('apiVersion', '')},Kind:{pk.get('kind', '')},}}"


class ConfigError(Exception):
    """A binding or policy that cannot be applied to this request (a config error)."""


def collect_params(
    param_kind: Mapping[str, Any] | None,
    param_ref: Mapping[str, Any] | None,
    namespace: str,
    store: ParamStore | None,
) -> list[dict[str, Any] | None]:
    """``generic.CollectParams``: the params to evaluate with (``[None]`` when the policy
    or binding uses none, ``[]`` when none was found and the binding allows that)."""
    if param_kind is None or param_ref is None:
        return [None]
    api_version = str(param_kind.get("apiVersion", ""))
    kind = str(param_kind.get("kind", ""))
    namespaced = store.namespaced(api_version, kind) if store is not None else None
    if store is None or namespaced is None:
        raise ConfigError(f"paramKind kind `{_param_kind_text(param_kind)}` not known")
    ref_ns = str(param_ref.get("namespace") or "")
    lookup_ns: str | None = None
    if namespaced:
        lookup_ns = ref_ns or namespace
        if not lookup_ns:
            raise ConfigError(
                "cannot use namespaced paramRef in policy binding that matches "
                "cluster-scoped resources"
            )
    elif ref_ns:
        raise ConfigError(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
        )
    candidates = store.of_kind(api_version, kind, lookup_ns)
    name = str(param_ref.get("name") or "")
    params: list[dict[str, Any] | None] = []
    if name:
        params.extend([o for o in candidates if _meta(o).get("name") == name][:1])
    else:
        try:
            selector = label_selector_from_dict(param_ref.get("selector"))
        except LabelSelectorError as exc:
            raise ConfigError(str(exc)) from None
        params.extend(o for o in candidates if selector.matches(_meta(o).get("labels") or {}))
    if not params and (param_ref.get("parameterNotFoundAction") or "Deny") == "Deny":
        raise ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
    return params


# ---------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class Decision:
    """One expression's outcome: ``action`` ``Admit``/``Deny``; ``evaluation``
    ``admit``/``deny``/``error``; ``index`` the validation's position (-1 for others)."""

    action: str
    evaluation: str
    message: str = ""
    reason: str = ""
    index: int = -1


class _Activation:
    """One evaluation's variables: ``data`` converted into a CEL activation once per
    environment and set of ``variables`` values it carries (not once per expression),
    the policy's ``variables`` each evaluated at most once, when first read."""

    __slots__ = ("activations", "data", "policy", "var_errors", "var_values")

    def __init__(self, data: dict[str, Any], policy: CompiledPolicy) -> None:
        self.data = data
        self.policy = policy
        self.var_values: dict[str, Any] = {}
        self.var_errors: dict[str, str] = {}
        self.activations: dict[tuple[tuple[bool, bool, bool], tuple[str, ...]], Any] = {}

    def _variable(self, name: str) -> None:
        if name in self.var_values or name in self.var_errors:
            return
        for vname, compiled in self.policy.variables:
            if vname == name:
                ok, value = self._run(compiled)
                if ok:
                    self.var_values[name] = value
                else:
                    self.var_errors[name] = value
                return
        self.var_errors[name] = f"no such key: {name}"

    def _run(self, compiled: Compiled, keep: bool = True) -> tuple[bool, Any]:
        """(True, value) or (False, cel-go's error text, without the expression prefix).
        ``keep`` False: the last evaluation expected, so when no activation is built yet
        the data is converted for this evaluation alone (cheaper than an activation)."""
        if compiled.program is None:
            return False, "\0compile"
        try:
            present: tuple[str, ...] = ()
            if compiled.variables:
                for ref in compiled.variables:
                    self._variable(ref)
                present = tuple(k for k in compiled.variables if k in self.var_values)
            key = (compiled.env_key, present)
            act = self.activations.get(key)
            if act is None:
                data = self.data
                if self.policy.variables:
                    data = {**data, "variables": {k: self.var_values[k] for k in present}}
                if not keep:
                    result = evaluate_once(compiled.program, data)
                else:
                    act = self.activations[key] = activation(compiled.env_key, data)
                    result = compiled.program.eval(act)
            else:
                result = compiled.program.eval(act)
        except RuntimeError as exc:
            return False, self._error_text(compiled, str(exc))
        if result.type() == T.ERROR:
            return False, self._error_text(compiled, str(result.value()))
        value = result.value()
        if isinstance(value, (list, dict)):
            # a list or map result holds accessors into the evaluation's arena, which
            # cannot be handed to another evaluation (a variable read by a later
            # expression): its plain Python form can, and reads the same in CEL
            return True, result.plain_value()
        return True, value

    def _error_text(self, compiled: Compiled, text: str) -> str:
        msg = runtime_error(text)
        # a variable that failed is left out of `variables`: report its own error
        for ref in compiled.variables:
            if ref in self.var_errors and msg == f"no such key: {ref}":
                return self.var_errors[ref]
        return msg

    def run_batch(self, program: Compiled, count: int, keep: bool = True) -> list[bool] | None:
        """The values of a batch of validations (see :func:`_batch`): a list of ``count``
        booleans, or None when the list erred or holds anything else (then each
        validation is to be evaluated on its own). ``keep`` as for :meth:`_run`."""
        ok, values = self._run(program, keep)
        if (
            ok
            and isinstance(values, list)
            and len(values) == count
            and all(type(x) is bool for x in values)
        ):
            return values
        return None

    def run(self, compiled: Compiled) -> tuple[bool, Any]:
        """(True, value) or (False, the evaluation error as kube-apiserver words it)."""
        ok, value = self._run(compiled)
        if ok:
            return ok, value
        if value == "\0compile":
            return False, f"compilation error: {compiled.detail}"
        return False, f"expression '{compiled.expression}' resulted in error: {value}"


@dataclass
class ValidateResult:
    """What one (policy, binding, param) evaluation decided; ``matched`` False when the
    matchConditions excluded the request."""

    matched: bool
    decisions: list[Decision]
    audit_annotations: list[tuple[str, str, str]]  # (key, action, value-or-error)
    all_admit: bool = False
    """``decisions`` are the policy's ``admits`` and there are no audit annotations."""


def validate(
    policy: CompiledPolicy,
    request: Request,
    match: Match,
    param: Mapping[str, Any] | None,
    authorizer: authz.Authorizer | None = None,
    *,
    json_values: bool = False,
) -> ValidateResult:
    """Evaluate one policy for a request with one param (``validator.Validate``).

    ``json_values``: the request's objects, its namespace object and the param are plain
    JSON values (str-keyed dicts, lists, strings, finite floats, booleans, null,
    integers within int64, as the API server decodes them), which CEL always converts
    whole; then only the parts of them the policy's expressions can read are handed to
    CEL (the same decisions, less to convert). Otherwise they are handed over whole, so
    a value CEL cannot convert fails every expression that reads its variable."""
    fail = policy.failure_policy != "Ignore"
    reads = policy.reads
    pre: list[bool] | None = None
    if json_values and policy.shortcut is not None:
        # the validations are simple enough to be decided in Python over the JSON
        # values themselves (see .shortcut); when any is undecided, cel-cpp decides
        pre = policy.shortcut(_json_data(policy, request, param, {}))
        if pre is not None and all(pre):
            # the result the cel-cpp path gives, field by field (a policy without a
            # sole batch is decided there by _evaluate, which does not mark it)
            return ValidateResult(True, list(policy.admits), [], policy.sole_batch is not None)
    projections = policy.projections if json_values else {}
    # only the names some expression of the policy reads are built and converted
    data = _json_data(policy, request, param, projections)
    if "request" in reads:
        data["request"] = request.to_cel(match.resource, match.kind)
    if "authorizer" in reads:
        data["authorizer"] = authz.authorizer_value(
            request.user.username,
            request.user.groups,
            request.user.extra,
            {
                "group": match.resource[0],
                "version": match.resource[1],
                "resource": match.resource[2],
                "subresource": request.sub_resource,
                "namespace": request.namespace,
                "name": request.name,
            },
        )
    sole = policy.sole_batch
    if sole is None:
        pre = None
    elif pre is None:
        # the batch holds every validation and nothing else is evaluated: its values
        # decide directly, without an activation (the common all-admit case ends here)
        pre = _batch_values(sole, data, len(policy.validations))
        if pre is not None and all(pre):
            return ValidateResult(True, list(policy.admits), [], True)
    act = _Activation(data, policy)
    if "authorizer" in reads:
        with authz.using(authorizer):
            return _evaluate(policy, act, fail, pre, sole is not None)
    return _evaluate(policy, act, fail, pre, sole is not None)


def _json_data(
    policy: CompiledPolicy,
    request: Request,
    param: Mapping[str, Any] | None,
    projections: Mapping[str, Projection],
) -> dict[str, Any]:
    """The request's JSON variables the policy reads (``object``, ``oldObject``,
    ``namespaceObject``, ``params``), each cut down to its projection when it has one."""
    reads = policy.reads
    data: dict[str, Any] = {}
    if "object" in reads:
        data["object"] = project(request.object, projections.get("object"))
    if "oldObject" in reads:
        data["oldObject"] = project(request.old_object, projections.get("oldObject"))
    if "namespaceObject" in reads:
        ns_name = request.namespace
        if request.kind == ("", "v1", "Namespace"):
            ns_name = ""
        data["namespaceObject"] = project(
            namespace_object_value(request.namespace_object) if ns_name else None,
            projections.get("namespaceObject"),
        )
    if policy.param_kind is not None and "params" in reads:
        value = dict(param) if param is not None else None
        data["params"] = project(value, projections.get("params"))
    return data


def _batch_values(program: Any, data: dict[str, Any], count: int) -> list[bool] | None:
    """:meth:`_Activation.run_batch` over ``data`` converted for this evaluation alone."""
    try:
        result = evaluate_once(program, data)
    except RuntimeError:
        return None
    if result.type() == T.ERROR:
        return None
    values = result.plain_value()
    if type(values) is list and len(values) == count and all(type(x) is bool for x in values):
        return values
    return None


def _evaluate(
    policy: CompiledPolicy,
    act: _Activation,
    fail: bool,
    pre: list[bool] | None = None,
    ran: bool = False,
) -> ValidateResult:
    """The match conditions, validations and audit annotations of ``policy`` over one
    activation (``fail``: the failure policy is Fail)."""
    error_action = "Deny" if fail else "Admit"
    if policy.match_conditions:
        errors: list[str] = []
        excluded = False
        for _name, compiled in policy.match_conditions:
            ok, value = act.run(compiled)
            if not ok:
                errors.append(value)
            elif value is False:
                excluded = True
        if excluded:
            return ValidateResult(False, [], [])
        if errors:
            if not fail:
                return ValidateResult(False, [], [])
            message = (
                errors[0] if len(set(errors)) == 1 else "[" + ", ".join(dict.fromkeys(errors)) + "]"
            )
            return ValidateResult(True, [Decision("Deny", "error", message)], [])
    validations = policy.validations
    batched: dict[int, bool] = {}
    if policy.batch is not None:
        program, indexes = policy.batch
        sole = len(indexes) == len(validations) and not policy.audit_annotations
        # when it holds every validation and all are true, nothing is evaluated after it
        values = pre if ran else act.run_batch(program, len(indexes), keep=not sole)
        if values is not None:
            if sole and all(values):
                # every validation admits (the common case): the shared decisions
                return ValidateResult(True, list(policy.admits), [], True)
            batched = dict(zip(indexes, values, strict=True))
    decisions: list[Decision] = []
    for i, v in enumerate(validations):
        if i in batched:
            ok, value = True, batched[i]
        else:
            ok, value = act.run(v.expression)
        if not ok:
            decisions.append(Decision(error_action, "error", value, "", i))
            continue
        if value is True:
            decisions.append(policy.admits[i])
            continue
        message = ""
        if v.message_expression is not None:
            mok, mval = act.run(v.message_expression)
            if mok and isinstance(mval, str):
                message = mval.strip()
                if len(message.encode()) > MAX_MESSAGE_BYTES or "\n" in message:
                    message = ""
        if not message and v.message:
            message = v.message.strip()
        if not message:
            message = f"failed expression: {v.expression.expression.strip()}"
        decisions.append(Decision("Deny", "deny", message, v.reason or "Invalid", i))
    audits: list[tuple[str, str, str]] = []
    for key, compiled in policy.audit_annotations:
        ok, value = act.run(compiled)
        if not ok:
            audits.append((key, "error" if fail else "exclude", value))
        elif value is None:
            audits.append((key, "exclude", ""))
        elif isinstance(value, str):
            value = value.strip()
            audits.append((key, "publish" if value else "exclude", value))
        else:
            audits.append(
                (
                    key,
                    "error" if fail else "exclude",
                    f"valueExpression '{compiled.expression}' resulted in unsupported return "
                    f"type: {_cel_type_name(value)}. "
                    "Return type must be either string or null.",
                )
            )
    return ValidateResult(True, decisions, audits)


def _cel_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


@dataclass(slots=True)
class Outcome:
    """One (policy, binding, param) evaluation, for reports: what matched and decided."""

    policy: str
    binding: str
    param: str
    decisions: tuple[Decision, ...]


@dataclass
class Admission:
    """The verdict on a request: ``error`` is the denial (None when allowed)."""

    error: ApiError | None
    warnings: list[str]
    audit_annotations: dict[str, str]
    outcomes: list[Outcome]

    @property
    def allowed(self) -> bool:
        return self.error is None


def _denial(
    request: Request, policy: str, binding: str | None, message: str, reason: str
) -> ApiError:
    if binding is not None:
        text = (
            f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' "
            f"denied request: {message}"
        )
    else:
        text = f"ValidatingAdmissionPolicy '{policy}' denied request: {message}"
    group, _, resource = request.resource
    name = request.name
    if not name:
        name = "Unknown"
        meta = _meta(request.object)
        if meta.get("name"):
            name = str(meta["name"])
        elif meta.get("generateName"):
            name = str(meta["generateName"])
    err = ApiError.forbidden(resource, group, name, text)
    if not resource:
        err = ApiError(403, "Forbidden", f"forbidden: {text}", {"kind": ""})
    reason = reason or "Invalid"
    err.reason = reason
    err.code = _CODES.get(reason, 422)
    details = dict(err.details or {})
    details["causes"] = [{"message": text}]
    err.details = details
    return err


def admit(
    policies: Sequence[CompiledPolicy],
    bindings: Sequence[Mapping[str, Any] | CompiledBinding],
    request: Request,
    *,
    params: ParamStore | None = None,
    authorizer: authz.Authorizer | None = None,
    json_values: bool = False,
) -> Admission:
    """Run every policy and its bindings for ``request`` (the dispatcher). A binding
    given as its object is read on each call; compiled once (:func:`compile_binding`) it
    is not. ``json_values``: as for :func:`validate` (the request's objects and the
    params are plain JSON values)."""
    denied: list[tuple[str, str | None, Decision]] = []
    warnings: list[str] = []
    annotations: dict[str, str] = {}
    outcomes: list[Outcome] = []

    def config_error(policy: CompiledPolicy, binding: str | None, err: str) -> None:
        if policy.failure_policy == "Ignore":
            return
        prefix = (
            "failed to configure binding: "
            if binding is not None
            else "failed to configure policy: "
        )
        denied.append((policy.name, binding, Decision("Deny", "error", prefix + err)))

    compiled_bindings = [
        b if isinstance(b, CompiledBinding) else compile_binding(b) for b in bindings
    ]
    for policy in policies:
        match = matches(policy.criteria, request)
        if match is None:
            continue
        collected: dict[str, list[str]] = {}
        for b in compiled_bindings:
            if b.policy_name != policy.name:
                continue
            bname = b.name
            if matches(b.criteria, request, binding=True) is None:
                continue
            try:
                found = collect_params(policy.param_kind, b.param_ref, request.namespace, params)
            except ConfigError as exc:
                config_error(policy, bname, str(exc))
                continue
            actions = list(b.actions)
            for param in found:
                result = validate(
                    policy, request, match, param, authorizer, json_values=json_values
                )
                pname = ""
                if param is not None:
                    pm = _meta(param)
                    pname = (
                        f"{pm['namespace']}/{pm.get('name', '')}"
                        if pm.get("namespace")
                        else str(pm.get("name", ""))
                    )
                if not result.matched:
                    continue
                if result.all_admit:
                    outcomes.append(Outcome(policy.name, bname, pname, policy.admits))
                    continue
                outcomes.append(Outcome(policy.name, bname, pname, tuple(result.decisions)))
                for d in result.decisions:
                    if d.action != "Deny":
                        continue
                    for action in actions:
                        if action == "Deny":
                            denied.append((policy.name, bname, d))
                        elif action == "Warn":
                            warnings.append(
                                f"Validation failed for ValidatingAdmissionPolicy '{policy.name}' "
                                f"with binding '{bname}': {d.message}"
                            )
                        elif action == "Audit":
                            failure = json.dumps(
                                [
                                    {
                                        "message": d.message,
                                        "policy": policy.name,
                                        "binding": bname,
                                        "expressionIndex": d.index if d.index >= 0 else 0,
                                        "validationActions": actions,
                                    }
                                ],
                                separators=(",", ":"),
                            )
                            annotations.setdefault(VALIDATION_FAILURE_KEY, failure)
                for key, action, value in result.audit_annotations:
                    if action == "publish":
                        value = value.encode()[:MAX_AUDIT_VALUE_BYTES].decode(errors="ignore")
                        values = collected.setdefault(key, [])
                        if value not in values:
                            values.append(value)
                    elif action == "error":
                        denied.append((policy.name, bname, Decision("Deny", "error", value)))
        for key, values in collected.items():
            annotations.setdefault(f"{policy.name}/{key}", ", ".join(values))
    error = None
    if denied:
        first_policy, first_binding, first = denied[0]
        error = _denial(request, first_policy, first_binding, first.message, first.reason)
    return Admission(error, warnings, annotations, outcomes)
