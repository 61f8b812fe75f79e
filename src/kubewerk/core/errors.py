"""Kubernetes' error model: field errors (``field.Error``) and ``Status`` API errors.

``FieldError.message()`` renders exactly as k8s.io/apimachinery's ``field.Error.Error()``
does, e.g. ``spec.replicas: Invalid value: 200: spec.replicas in body should be less
than or equal to 100``; ``ApiError.to_status()`` gives the ``Status`` body a real API
server returns for the same condition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubewerk.core.gofmt import GoText, go_float_v, go_json, go_quote
from kubewerk.core.gvk import qualified

OMIT: Final = object()
"""Marker for a field error that carries no bad value."""

# cause type (metav1.CauseType) -> the words field.ErrorType.String() prints
_TYPE_WORDS: Final[dict[str, str]] = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}
# types whose message never shows the bad value
_NO_VALUE: Final = frozenset(
    {"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"}
)


def go_value(value: Any) -> str:
    """Render a bad value as ``field.Error.ErrorBody()`` does.

    Scalars print with ``%v``/``%q``; anything else (maps, lists) is ``json.Marshal``-ed,
    as current Kubernetes does (sorted map keys). A :class:`~kubewerk.core.gofmt.GoText`
    prints its text verbatim (for values Kubernetes renders from Go structs).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float_v(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, GoText):
        return value.text
    if isinstance(value, (Mapping, Sequence)):
        return go_json(value)
    return str(value)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field error, as ``field.Error``: a cause type, a field path, a detail."""

    type: str
    field: str
    detail: str = ""
    bad_value: Any = OMIT

    def body(self) -> str:
        """The message without the field path (``field.Error.ErrorBody()``)."""
        words = _TYPE_WORDS.get(self.type, self.type)
        if self.type in _NO_VALUE or self.bad_value is OMIT:
            text = words
        else:
            text = f"{words}: {go_value(self.bad_value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def message(self) -> str:
        """``<field>: <body>``, exactly as ``field.Error.Error()``."""
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, Any]:
        """The ``StatusCause`` for this error."""
        return {"reason": self.type, "message": self.body(), "field": self.field}

    # constructors named as in k8s.io/apimachinery/pkg/util/validation/field
    @staticmethod
    def invalid(field: str, value: Any, detail: str) -> FieldError:
        return FieldError("FieldValueInvalid", field, detail, value)

    @staticmethod
    def required(field: str, detail: str = "") -> FieldError:
        return FieldError("FieldValueRequired", field, detail)

    @staticmethod
    def forbidden(field: str, detail: str) -> FieldError:
        return FieldError("FieldValueForbidden", field, detail)

    @staticmethod
    def duplicate(field: str, value: Any) -> FieldError:
        return FieldError("FieldValueDuplicate", field, "", value)

    @staticmethod
    def not_supported(field: str, value: Any, valid: Iterable[Any]) -> FieldError:
        quoted = [go_value(v) for v in valid]
        detail = "supported values: " + ", ".join(quoted) if quoted else ""
        return FieldError("FieldValueNotSupported", field, detail, value)

    @staticmethod
    def type_invalid(field: str, value: Any, detail: str) -> FieldError:
        return FieldError("FieldValueTypeInvalid", field, detail, value)

    @staticmethod
    def too_long(field: str, max_length: int) -> FieldError:
        unit = "byte" if max_length == 1 else "bytes"
        detail = (
            f"may not be more than {max_length} {unit}" if max_length >= 0 else "value is too long"
        )
        return FieldError("FieldValueTooLong", field, detail)

    @staticmethod
    def too_many(field: str, actual: int, max_items: int) -> FieldError:
        unit = "item" if max_items == 1 else "items"
        detail = f"must have at most {max_items} {unit}" if max_items >= 0 else "has too many items"
        return FieldError("FieldValueTooMany", field, detail, actual if actual >= 0 else OMIT)


def aggregate_message(errors: Sequence[FieldError]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message, or ``[a, b, ...]``."""
    messages: list[str] = []
    seen: set[str] = set()
    for err in errors:
        msg = err.message()
        if msg not in seen:
            seen.add(msg)
            messages.append(msg)
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"


class ApiError(Exception):
    """An error the API answers with a ``Status`` body (``apierrors.StatusError``)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:  # metav1.Status's reason is omitempty (kube's bare 500s have none)
            del status["reason"]
        if self.details:
            status["details"] = self.details
        return status

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.reason!r}, {self.message!r})"

    # constructors named and worded as in k8s.io/apimachinery/pkg/api/errors
    @classmethod
    def not_found(cls, resource: str, group: str, name: str) -> ApiError:
        return cls(
            404,
            "NotFound",
            f'{qualified(resource, group)} "{name}" not found',
            _details(name, group, resource),
        )

    @classmethod
    def already_exists(cls, resource: str, group: str, name: str) -> ApiError:
        return cls(
            409,
            "AlreadyExists",
            f'{qualified(resource, group)} "{name}" already exists',
            _details(name, group, resource),
        )

    @classmethod
    def conflict(cls, resource: str, group: str, name: str, why: str) -> ApiError:
        return cls(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
            _details(name, group, resource),
        )

    @classmethod
    def stale(cls, resource: str, group: str, name: str) -> ApiError:
        """409 for a write carrying an outdated resourceVersion."""
        return cls.conflict(
            resource,
            group,
            name,
            "the object has been modified; please apply your changes to the latest "
            "version and try again",
        )

    @classmethod
    def invalid(cls, kind: str, group: str, name: str, errors: Sequence[FieldError]) -> ApiError:
        details = _details(name, group, kind)
        details["causes"] = [e.cause() for e in errors]
        message = f'{qualified(kind, group)} "{name}" is invalid'
        if errors:
            message += ": " + aggregate_message(errors)
        return cls(422, "Invalid", message, details)

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)

    @classmethod
    def forbidden(cls, resource: str, group: str, name: str, why: str) -> ApiError:
        subject = qualified(resource, group)
        if name:
            message = f'{subject} "{name}" is forbidden: {why}'
        else:
            message = f"{subject} is forbidden: {why}"
        return cls(403, "Forbidden", message, _details(name, group, resource))

    @classmethod
    def method_not_supported(cls, resource: str, group: str, action: str) -> ApiError:
        return cls(
            405,
            "MethodNotAllowed",
            f"{action} is not supported on resources of kind {qualified(resource, group)!r}",
            {"group": group, "kind": resource},
        )

    @classmethod
    def method_not_allowed(
        cls, method: str = "", details: dict[str, Any] | None = None
    ) -> ApiError:
        """405 for a method no route of the path serves: the generic MethodNotAllowed
        Status kube-apiserver's router answers, ``(METHOD)`` appended when given."""
        message = "the server does not allow this method on the requested resource"
        return cls(
            405, "MethodNotAllowed", f"{message} ({method})" if method else message, details or {}
        )

    @classmethod
    def unsupported_media_type(cls, message: str) -> ApiError:
        return cls(415, "UnsupportedMediaType", message)

    @classmethod
    def too_large(
        cls, message: str = "the server has received too large of a request body"
    ) -> ApiError:
        return cls(413, "RequestEntityTooLarge", message)

    @classmethod
    def expired(cls, message: str) -> ApiError:
        """410 for a compacted ``continue`` token or watch revision."""
        return cls(410, "Expired", message)

    @classmethod
    def gone(cls, message: str) -> ApiError:
        return cls(410, "Gone", message)

    @classmethod
    def timeout(cls, message: str) -> ApiError:
        return cls(504, "Timeout", message)

    @classmethod
    def internal(cls, message: str) -> ApiError:
        return cls(
            500,
            "InternalError",
            f"Internal error occurred: {message}",
            {"causes": [{"message": message}]},
        )

    @classmethod
    def not_found_path(cls) -> ApiError:
        """404 for a URL that names no resource (the Go mux's plain 404)."""
        return cls(404, "NotFound", "the server could not find the requested resource", {})


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    return details
