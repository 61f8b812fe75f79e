"""The ValidatingAdmissionPolicy engine: one library for the embedded server and the CLI.

A pure library over JSON dicts (``admissionregistration.k8s.io/v1`` objects), worded
and decided as kube-apiserver does:

- :func:`validate_policy` / :func:`validate_binding`: the field errors kube-apiserver
  refuses a ValidatingAdmissionPolicy or its binding with on create (after the same
  defaulting, :func:`default_policy` / :func:`default_binding`), e.g.
  ``spec.validations[0].expression: Invalid value: "object.x ==": compilation failed:
  ERROR: <input>:1:11: Syntax error: …``.
- :func:`type_check`: the ``status.typeChecking.expressionWarnings`` for the kinds
  whose schemas the caller can resolve (best effort, see :mod:`.typecheck`).
- :func:`compile_policy`: compile once into a :class:`CompiledPolicy` (selectors parsed,
  the names its expressions read worked out); :func:`compile_binding` reads a binding
  once into a :class:`CompiledBinding`.
- :func:`matches`: whether ``matchConstraints`` (or a binding's ``matchResources``)
  select a :class:`Request`.
- :func:`admit`: evaluate every matching (policy, binding, param) for a request with
  params from a :class:`ParamStore` and an optional authorizer callable → an
  :class:`Admission`: the denial as an :class:`~kubewerk.core.errors.ApiError`
  (``ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>``,
  reason Invalid 422 unless the validation names Forbidden 403, Unauthorized 401 or
  RequestEntityTooLarge 413), the warnings, the audit annotations.
- :func:`validate`: one (policy, request, param) evaluation → :class:`Decision` list.

CEL runs on cel-expr-python with the Kubernetes libraries; the variables are
``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject``,
``authorizer`` (answered by the caller's callable, ``NoOpinion`` without one) and
``variables`` (each evaluated at most once per evaluation, only when read). The static
cost of an expression is not limited at validation, as kube-apiserver does not limit it
there; its runtime cost limits are not enforced (cel-cpp tracks no cost). See
docs/policy.md.
"""

from .authz import Authorizer, AuthzAttributes
from .engine import (
    Admission,
    CompiledBinding,
    CompiledPolicy,
    ConfigError,
    Decision,
    Outcome,
    ParamStore,
    ValidateResult,
    admit,
    collect_params,
    compile_binding,
    compile_policy,
    validate,
)
from .matching import Match, matches
from .request import Request, UserInfo
from .typecheck import type_check
from .validation import default_binding, default_policy, validate_binding, validate_policy

__all__ = [
    "Admission",
    "Authorizer",
    "AuthzAttributes",
    "CompiledBinding",
    "CompiledPolicy",
    "ConfigError",
    "Decision",
    "Match",
    "Outcome",
    "ParamStore",
    "Request",
    "UserInfo",
    "ValidateResult",
    "admit",
    "collect_params",
    "compile_binding",
    "compile_policy",
    "default_binding",
    "default_policy",
    "matches",
    "type_check",
    "validate",
    "validate_binding",
    "validate_policy",
]
