"""What an admission handler answers: :class:`Allowed` or :class:`Denied`.

Both become the ``response`` of an ``admission.k8s.io/v1`` AdmissionReview. A denial
carries a ``Status`` (``result``) whose message kube-apiserver shows the user as
``admission webhook "<name>" denied the request: <message>``; its code defaults to 403
and its reason to ``Forbidden``, as controller-runtime's ``Denied`` does (kube-apiserver
itself makes a missing code, or one under 400, a 400). Field causes go into
``result.details.causes`` in the ``StatusCause`` shape (reason, message, field).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubewerk.core.errors import FieldError, aggregate_message

__all__ = ["Allowed", "Denied", "Verdict"]


def _check_warnings(warnings: Sequence[str]) -> tuple[str, ...]:
    if isinstance(warnings, str):
        raise TypeError("warnings must be a sequence of strings, not one string")
    out = tuple(warnings)
    for w in out:
        if not isinstance(w, str):
            raise TypeError(f"a warning must be a string, not {type(w).__name__}")
    return out


@dataclass(frozen=True)
class Allowed:
    """The request may proceed.

    ``warnings`` are shown by kubectl as ``Warning: ...`` (Kubernetes asks for at most
    120 characters each); ``audit_annotations`` are added to the audit event, their keys
    prefixed by kube-apiserver with the webhook's name.
    """

    warnings: Sequence[str] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        warnings = self.warnings
        if warnings.__class__ is not tuple or warnings:  # () is already checked and final
            object.__setattr__(self, "warnings", _check_warnings(warnings))
        object.__setattr__(self, "audit_annotations", dict(self.audit_annotations))


@dataclass(frozen=True)
class Denied:
    """The request is refused with ``message`` (and an HTTP ``code`` and ``reason`` that
    kube-apiserver passes on to the client), optional field ``causes``, ``warnings``
    and ``audit_annotations``."""

    message: str
    code: int = 403
    reason: str = "Forbidden"
    causes: Sequence[FieldError] = ()
    warnings: Sequence[str] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.code, int) or isinstance(self.code, bool):
            raise TypeError(f"code must be an HTTP status code, not {self.code!r}")
        if not 400 <= self.code <= 599:
            raise ValueError(
                f"a denial's code must be an HTTP error status (400-599), not {self.code}"
            )
        object.__setattr__(self, "causes", tuple(self.causes))
        object.__setattr__(self, "warnings", _check_warnings(self.warnings))
        object.__setattr__(self, "audit_annotations", dict(self.audit_annotations))

    @classmethod
    def invalid(cls, errors: Sequence[FieldError], *, what: str = "") -> Denied:
        """A 422 ``Invalid`` denial from field errors; the message is their aggregate
        (``spec.x: Invalid value: ...``), prefixed by ``what`` when given, as the API
        server words ``<kind> "<name>" is invalid: <errors>``."""
        text = aggregate_message(errors) if errors else "invalid object"
        return cls(f"{what}: {text}" if what else text, 422, "Invalid", tuple(errors))

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status`` of the response's ``result``."""
        out: dict[str, Any] = {
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.causes:
            out["details"] = {"causes": [c.cause() for c in self.causes]}
        return out


Verdict = Allowed | Denied
"""What a validating handler returns."""
