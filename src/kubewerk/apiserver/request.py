"""What a request addresses and the query options every verb reads.

``Target`` names the resource, version, namespace, name and subresource of a request;
``RestResponse`` is a verb's answer before HTTP encoding. The option parsers answer bad
values with kube-apiserver's errors: ``resourceVersion`` (decimal, 504 for a revision not
reached yet), ``dryRun``, ``fieldValidation``, and label and field selectors (compiled
into a ``Filter`` over stored objects, field labels converted by the kind's strategy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubewerk.apiserver.admission import FieldValidation
from kubewerk.apiserver.registry import ServedResource
from kubewerk.core.errors import ApiError
from kubewerk.core.selectors import parse_field_selector, parse_label_selector

JSON = dict[str, Any]


def parse_resource_version(text: str) -> int:
    """A resourceVersion query parameter: decimal digits only, else 400."""
    if not (text.isascii() and text.isdigit()):
        raise ApiError.bad_request(f'invalid resource version "{text}"')
    return int(text)


def too_large_resource_version(requested: int, current: int) -> ApiError:
    """504 for a read at a revision the server has not reached (the cacher's answer)."""
    return ApiError(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


@dataclass(slots=True)
class Target:
    """What a request addresses."""

    rtype: ServedResource
    version: str
    namespace: str | None
    name: str | None = None
    subresource: str | None = None

    @property
    def api_version(self) -> str:
        """``rtype.api_version(version)`` (``GroupVersion.String``), written out: read
        several times per request."""
        group = self.rtype.group
        return f"{group}/{self.version}" if group else self.version


@dataclass(slots=True)
class RestResponse:
    """A REST answer: HTTP status, JSON body, warnings for ``Warning`` headers."""

    status: int
    body: JSON
    warnings: list[str] = field(default_factory=list)
    commit: Callable[[], RestResponse] | None = None
    """Set by a write asked to ``defer``: ``body`` is the admitted object (as served) that
    validating admission sees, and ``commit()`` stores it (with the revision it was read
    at: ``ApiError`` 409 if the object changed meanwhile) and gives the real answer."""


def dry_run(query: dict[str, str], body: JSON | None = None) -> bool:
    values = query.get("dryRun", "")
    if body is not None and isinstance(body.get("dryRun"), list):
        values = ",".join(str(v) for v in body["dryRun"])
    if not values:
        return False
    for value in values.split(","):
        if value != "All":
            raise ApiError.bad_request(
                f'Invalid dry run value: unsupported dry run value "{value}"'
            )
    return True


def field_validation(query: dict[str, str]) -> FieldValidation:
    value = query.get("fieldValidation", "")
    if value in ("", "Warn"):
        return "Warn"
    if value == "Strict":
        return "Strict"
    if value == "Ignore":
        return "Ignore"
    raise ApiError.bad_request(
        (
            f"fieldValidation: Unsupported value: {value!r}: "
            'supported values: "Ignore", "Strict", "Warn"'
        ).replace(f"{value!r}", f'"{value}"')
    )


@dataclass(slots=True)
class Filter:
    """Label and field selectors of a list or watch, compiled once."""

    match: Callable[[JSON], bool] | None

    def __call__(self, obj: JSON) -> bool:
        return self.match is None or self.match(obj)


def make_filter(target: Target, query: dict[str, str]) -> Filter:
    """Compile ``labelSelector``/``fieldSelector``; 400 with Kubernetes' message if invalid."""
    label_text = query.get("labelSelector", "")
    field_text = query.get("fieldSelector", "")
    if not label_text.strip() and not field_text.strip():
        return Filter(None)
    label_sel = None
    if label_text.strip():
        try:
            label_sel = parse_label_selector(label_text)
        except ValueError as exc:
            raise ApiError.bad_request(str(exc)) from None
    field_sel = None
    field_set: Callable[[JSON], dict[str, str]] | None = None
    if field_text.strip():
        try:
            parsed = parse_field_selector(field_text)
            # matched against the stored form (events.k8s.io Events are core Events)
            convert, field_set = target.rtype.strategy.field_selector(target.version)
            field_sel = parsed.transform(lambda f, v: (convert(f), v))
        except ValueError as exc:
            raise ApiError.bad_request(str(exc)) from None

    def match(obj: JSON) -> bool:
        if label_sel is not None and not label_sel.matches(
            (obj.get("metadata") or {}).get("labels") or {}
        ):
            return False
        return field_sel is None or field_set is None or field_sel.matches(field_set(obj))

    return Filter(match)
