"""Impersonation headers, as kube-apiserver's ``WithImpersonation`` filter reads them.

``Impersonate-User``, ``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and
``Impersonate-Extra-KEY`` (KEY lower-cased and percent-decoded; repeatable) ask to act as
another user. Each thing asked for is authorized for the requesting user with verb
``impersonate``: a user name on ``users`` (a ``system:serviceaccount:NS:NAME`` name on
``serviceaccounts`` NAME in NS), a group on ``groups``, a uid on
``uids.authentication.k8s.io``, an extra value on ``userextras.authentication.k8s.io``
with the key as subresource. The first refusal is kube's 403 for those attributes.

The impersonated user has the groups asked for, plus for a ServiceAccount its
``system:serviceaccounts`` groups, plus ``system:authenticated`` (or, for
``system:anonymous``, ``system:unauthenticated``) unless such a group was asked for.
Groups, extras or a uid without a user are refused as kube refuses them (500).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import unquote

from kubewerk.apiserver.auth.tokens import split_service_account_user
from kubewerk.apiserver.auth.types import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    ANONYMOUS_USER,
    SERVICE_ACCOUNTS_GROUP,
    Attributes,
    UserInfo,
)

USER_HEADER = b"impersonate-user"
GROUP_HEADER = b"impersonate-group"
UID_HEADER = b"impersonate-uid"
EXTRA_PREFIX = b"impersonate-extra-"
_PREFIX = b"impersonate-"


class Wanted(NamedTuple):
    """One thing a request asks to impersonate, as the authorizer checks it."""

    resource: str
    name: str
    namespace: str = ""
    api_group: str = ""
    subresource: str = ""
    display: str = ""


class ImpersonationError(Exception):
    """Headers kube refuses before authorizing anything (its 500 answer)."""


def asks_to_impersonate(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """Whether any ``Impersonate-*`` header is present (ASGI headers, lower-case names)."""
    return any(name.startswith(_PREFIX) for name, _ in headers)


def wanted(headers: Sequence[tuple[bytes, bytes]]) -> tuple[list[Wanted], UserInfo | None]:
    """What the headers ask for and the user that results (None without any header).
    ``ImpersonationError`` for groups, extras or a uid without a user."""
    user_name = ""
    uid = ""
    has_uid = False
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    asked: list[Wanted] = []
    for name, raw in headers:
        if not name.startswith(_PREFIX):
            continue
        value = raw.decode("latin-1").strip()
        if name == USER_HEADER:
            if user_name:
                continue  # kube reads the first value (Header.Get)
            user_name = value
        elif name == GROUP_HEADER:
            groups.append(value)
        elif name == UID_HEADER:
            if not has_uid:
                uid, has_uid = value, True
        elif name.startswith(EXTRA_PREFIX):
            key = name[len(EXTRA_PREFIX) :].decode("latin-1").lower()
            with contextlib.suppress(UnicodeDecodeError):
                key = unquote(key, errors="strict")
            extra.setdefault(key, []).append(value)
    if not (user_name or groups or extra or has_uid):
        return [], None
    account = split_service_account_user(user_name) if user_name else None
    if user_name:
        if account is not None:
            asked.append(Wanted("serviceaccounts", account[1], account[0], display=user_name))
        else:
            asked.append(Wanted("users", user_name, display=user_name))
    asked.extend(Wanted("groups", g, display=g) for g in groups)
    for key, values in extra.items():
        asked.extend(
            Wanted("userextras", v, api_group="authentication.k8s.io", subresource=key, display=v)
            for v in values
        )
    if has_uid:
        asked.append(Wanted("uids", uid, api_group="authentication.k8s.io", display=uid))
    if not user_name:
        kinds = ", ".join(f"{w.resource} {w.display!r}" for w in asked)
        raise ImpersonationError(f"requested [{kinds}] without impersonating a user")
    all_groups = list(groups)
    if account is not None:
        all_groups.extend([SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{account[0]}"])
    if user_name != ANONYMOUS_USER:
        if ALL_AUTHENTICATED not in all_groups and ALL_UNAUTHENTICATED not in all_groups:
            all_groups.append(ALL_AUTHENTICATED)
    elif ALL_UNAUTHENTICATED not in all_groups:
        all_groups.append(ALL_UNAUTHENTICATED)
    user = UserInfo(user_name, uid, tuple(all_groups), {k: tuple(v) for k, v in extra.items()})
    return asked, user


def attributes(requester: UserInfo, want: Wanted) -> Attributes:
    """The authorizer attributes checking that ``requester`` may impersonate ``want``."""
    return Attributes(
        requester,
        "impersonate",
        namespace=want.namespace,
        api_group=want.api_group,
        resource=want.resource,
        subresource=want.subresource,
        name=want.name,
    )
