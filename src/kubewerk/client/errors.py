"""Typed client errors, built from the ``Status`` bodies the API server returns.

Every error an API call raises for an HTTP error response is an instance of
:class:`kubewerk.core.errors.ApiError` (so ``code``, ``reason``, ``message`` and
``details`` are always there) and, more specifically, of the subclass that matches the
Status ``reason`` (falling back to the HTTP code when the reason is empty or unknown),
mirroring ``k8s.io/apimachinery/pkg/api/errors`` (``IsNotFound``, ``IsConflict``, ...).

Errors that never reached an API server are separate: :class:`ConfigError` (a kubeconfig
or in-cluster configuration that cannot be used) and :class:`ServerUnreachable` (no
HTTP answer at all). Both carry one human-readable sentence, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubewerk.core.errors import ApiError

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Cause",
    "ConfigError",
    "Conflict",
    "Expired",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "ServerTimeout",
    "ServerUnreachable",
    "ServiceUnavailable",
    "StatusError",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
    "error_from_status",
]


class ConfigError(Exception):
    """A client configuration (kubeconfig, in-cluster files, exec plugin) is unusable."""


class ServerUnreachable(Exception):
    """The API server did not answer (connection refused, DNS, TLS handshake, timeout)."""

    def __init__(self, url: str, why: str) -> None:
        super().__init__(f"cannot reach the API server at {url}: {why}")
        self.url = url
        self.why = why


@dataclass(frozen=True, slots=True)
class Cause:
    """One ``StatusCause``: a machine reason, a message and the field it concerns."""

    reason: str
    message: str
    field: str


class _Typed(ApiError):
    """Base of the typed errors: an ``ApiError`` that also exposes ``causes`` and
    ``retry_after``."""

    @property
    def causes(self) -> list[Cause]:
        """The Status ``details.causes`` (empty when the server sent none)."""
        raw = (self.details or {}).get("causes") or []
        return [
            Cause(str(c.get("reason", "")), str(c.get("message", "")), str(c.get("field", "")))
            for c in raw
            if isinstance(c, dict)
        ]

    @property
    def retry_after(self) -> float | None:
        """``details.retryAfterSeconds`` when the server suggested a retry delay."""
        value = (self.details or {}).get("retryAfterSeconds")
        return float(value) if isinstance(value, int | float) else None

    @property
    def name(self) -> str:
        """``details.name``: the object the error concerns ('' when not given)."""
        return str((self.details or {}).get("name", ""))


class BadRequest(_Typed):
    """400 BadRequest."""


class Unauthorized(_Typed):
    """401 Unauthorized: the credentials were rejected."""


class Forbidden(_Typed):
    """403 Forbidden: authenticated, but not allowed (RBAC, admission)."""


class NotFound(_Typed):
    """404 NotFound: the object (or the resource) does not exist."""


class MethodNotAllowed(_Typed):
    """405 MethodNotAllowed."""


class AlreadyExists(_Typed):
    """409 AlreadyExists: a create named an object that already exists."""


class Conflict(_Typed):
    """409 Conflict: the write carried a stale resourceVersion (or another precondition failed)."""


class Gone(_Typed):
    """410 Gone: a watch or list asked for a revision that has been compacted."""


class Expired(Gone):
    """410 Expired: a ``continue`` token or resourceVersion too old (reason ``Expired``)."""


class Invalid(_Typed):
    """422 Invalid: the object failed validation; ``causes`` names each bad field."""


class TooManyRequests(_Typed):
    """429 TooManyRequests: throttled; ``retry_after`` says when to come back."""


class InternalError(_Typed):
    """500 InternalError."""


class ServiceUnavailable(_Typed):
    """503 ServiceUnavailable."""


class ServerTimeout(_Typed):
    """500/504 with reason ServerTimeout: the server could not finish in time."""


class Timeout(_Typed):
    """504 Timeout: the request timed out before it could complete."""


_BY_REASON: dict[str, type[_Typed]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Expired,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "ServerTimeout": ServerTimeout,
    "Timeout": Timeout,
}

_BY_CODE: dict[int, type[_Typed]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: Timeout,
}


class StatusError(_Typed):
    """An error whose reason and code match none of the typed classes."""


def error_from_status(code: int, body: Any, fallback_message: str = "") -> ApiError:
    """Build the typed error for an HTTP error answer.

    ``body`` is the decoded response: a ``Status`` dict when the server sent one (the
    usual case); anything else (plain text from a proxy, empty) is reduced to the HTTP
    code with ``fallback_message``, as client-go's ``newUnstructuredResponseError`` does.
    """
    if isinstance(body, dict) and body.get("kind") == "Status":
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or fallback_message)
        details = body.get("details") if isinstance(body.get("details"), dict) else None
        status_code = body.get("code")
        if isinstance(status_code, int) and status_code:
            code = status_code
    else:
        reason = ""
        message = fallback_message or f"the server responded with HTTP {code}"
        details = None
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or StatusError
    if not reason:
        reason = (
            {v: k for k, v in _BY_REASON.items()}.get(cls, "Unknown")
            if cls is not StatusError
            else "Unknown"
        )
    return cls(code, reason, message, details)
