"""The Kubernetes authorizer CEL library (``authorizer.group('apps').resource(…).check(…)``).

Values are tagged maps (as in :mod:`kubewerk.schema.cel.library`); ``check`` asks the
authorizer of the evaluation in progress, set with :func:`using`. An
:data:`Authorizer` is a callable taking :class:`AuthzAttributes` and answering
``(decision, reason)`` with decision ``"Allow"``, ``"Deny"`` or ``"NoOpinion"``, as
``authorizer.Authorizer.Authorize`` does; without one every check answers
``NoOpinion`` with reason ``no authorizer configured`` (so ``allowed()`` is false).

Covered: ``path``, ``group``, ``serviceAccount``, ``resource``, ``subresource``,
``namespace``, ``name``, ``check``, ``allowed``, ``reason``, ``errored``, ``error``
and ``authorizer.requestResource``. Not covered: the field and label selector checks.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cel_expr_python import cel

from kubewerk.schema.cel.library import CelError

T = cel.Type
_OBJ: Final = T.Map(T.STRING, T.DYN)
TAG: Final = "@kw"


@dataclass(frozen=True)
class AuthzAttributes:
    """What one ``check`` asks (``authorizer.AttributesRecord``)."""

    user: str
    groups: tuple[str, ...]
    verb: str
    resource_request: bool
    api_group: str = ""
    api_version: str = "*"
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)


Authorizer = Callable[[AuthzAttributes], tuple[str, str]]

_CURRENT: contextvars.ContextVar[Authorizer | None] = contextvars.ContextVar(
    "kubewerk_admission_authorizer", default=None
)


@contextlib.contextmanager
def using(authorizer: Authorizer | None) -> Iterator[None]:
    """Make ``authorizer`` answer the checks evaluated inside the block."""
    token = _CURRENT.set(authorizer)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def authorizer_value(
    user: str, groups: Sequence[str], extra: dict[str, list[str]], request_resource: dict[str, Any]
) -> dict[str, Any]:
    """The ``authorizer`` variable for one request's user; ``request_resource`` holds the
    request's ``group``, ``version``, ``resource``, ``subresource``, ``namespace``, ``name``."""
    who = {"user": user, "groups": list(groups), "extra": extra}
    value: dict[str, Any] = {TAG: "authorizer", **who}
    value["requestResource"] = {
        TAG: "resourcecheck",
        **who,
        "group": request_resource.get("group", ""),
        "version": request_resource.get("version", "*"),
        "resource": request_resource.get("resource", ""),
        "subresource": request_resource.get("subresource", ""),
        "namespace": request_resource.get("namespace", ""),
        "name": request_resource.get("name", ""),
    }
    return value


def _expect(value: Any, *kinds: str) -> dict[str, Any]:
    if not isinstance(value, dict) or value.get(TAG) not in kinds:
        raise CelError("no such overload")
    return value


def _who(value: dict[str, Any]) -> dict[str, Any]:
    return {"user": value["user"], "groups": value["groups"], "extra": value["extra"]}


def _path(a: Any, path: str) -> dict[str, Any]:
    return {TAG: "pathcheck", **_who(_expect(a, "authorizer")), "path": path}


def _group(a: Any, group: str) -> dict[str, Any]:
    return {TAG: "groupcheck", **_who(_expect(a, "authorizer")), "group": group}


def _service_account(a: Any, namespace: str, name: str) -> dict[str, Any]:
    _expect(a, "authorizer")
    user = f"system:serviceaccount:{namespace}:{name}"
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    return {TAG: "authorizer", "user": user, "groups": groups, "extra": {}}


def _resource(g: Any, resource: str) -> dict[str, Any]:
    g = _expect(g, "groupcheck")
    return {
        TAG: "resourcecheck",
        **_who(g),
        "group": g["group"],
        "version": "*",
        "resource": resource,
        "subresource": "",
        "namespace": "",
        "name": "",
    }


def _setter(key: str) -> Callable[[Any, str], dict[str, Any]]:
    def set_field(r: Any, value: str) -> dict[str, Any]:
        out = dict(_expect(r, "resourcecheck"))
        out[key] = value
        return out

    return set_field


def _check(target: Any, verb: str) -> dict[str, Any]:
    t = _expect(target, "resourcecheck", "pathcheck")
    if t[TAG] == "pathcheck":
        attrs = AuthzAttributes(
            t["user"], tuple(t["groups"]), verb, False, path=t["path"], extra=t["extra"]
        )
    else:
        attrs = AuthzAttributes(
            t["user"],
            tuple(t["groups"]),
            verb,
            True,
            api_group=t["group"],
            api_version=t["version"],
            resource=t["resource"],
            subresource=t["subresource"],
            namespace=t["namespace"],
            name=t["name"],
            extra=t["extra"],
        )
    authorizer = _CURRENT.get()
    if authorizer is None:
        return {
            TAG: "decision",
            "decision": "NoOpinion",
            "reason": "no authorizer configured",
            "error": "",
        }
    try:
        decision, reason = authorizer(attrs)
    except Exception as exc:  # an authorizer failure is the decision's error()
        return {TAG: "decision", "decision": "NoOpinion", "reason": "", "error": str(exc)}
    return {TAG: "decision", "decision": decision, "reason": reason, "error": ""}


def _allowed(d: Any) -> bool:
    return bool(_expect(d, "decision")["decision"] == "Allow")


def _reason(d: Any) -> str:
    return str(_expect(d, "decision")["reason"])


def _errored(d: Any) -> bool:
    return bool(_expect(d, "decision")["error"])


def _error(d: Any) -> str:
    return str(_expect(d, "decision")["error"])


def _guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except CelError:
            raise
        except (ValueError, TypeError, KeyError) as exc:
            raise CelError(str(exc) or "no such overload") from exc

    return call


def declarations() -> list[Any]:
    """The FunctionDecls of the authorizer library."""
    S, B = T.STRING, T.BOOL
    table: list[tuple[str, str, Any, list[Any], Callable[..., Any]]] = [
        ("path", "kw_authz_path", _OBJ, [_OBJ, S], _path),
        ("group", "kw_authz_group", _OBJ, [_OBJ, S], _group),
        ("serviceAccount", "kw_authz_sa", _OBJ, [_OBJ, S, S], _service_account),
        ("resource", "kw_authz_resource", _OBJ, [_OBJ, S], _resource),
        ("subresource", "kw_authz_subresource", _OBJ, [_OBJ, S], _setter("subresource")),
        ("namespace", "kw_authz_namespace", _OBJ, [_OBJ, S], _setter("namespace")),
        ("name", "kw_authz_name", _OBJ, [_OBJ, S], _setter("name")),
        ("check", "kw_authz_check", _OBJ, [_OBJ, S], _check),
        ("allowed", "kw_authz_allowed", B, [_OBJ], _allowed),
        ("reason", "kw_authz_reason", S, [_OBJ], _reason),
        ("errored", "kw_authz_errored", B, [_OBJ], _errored),
        ("error", "kw_authz_error", S, [_OBJ], _error),
    ]
    return [
        cel.FunctionDecl(name, [cel.Overload(oid, ret, params, is_member=True, impl=_guard(impl))])
        for name, oid, ret, params, impl in table
    ]
