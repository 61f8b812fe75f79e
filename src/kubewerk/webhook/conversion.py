"""``apiextensions.k8s.io`` ConversionReview: converting objects between a kind's versions
with the models' registered hub-and-spoke conversions (:mod:`kubewerk.model.conversion`).

kube-apiserver posts ``{"apiVersion": "apiextensions.k8s.io/v1", "kind":
"ConversionReview", "request": {"uid", "desiredAPIVersion", "objects": [...]}}`` (one
object, or every object of a list or watch that is not yet in the desired version) and
checks the answer: a ConversionReview of the same apiVersion with the request's uid,
``result.status: Success``, exactly as many ``convertedObjects`` as objects, in order,
each of the desired apiVersion and the same kind, name, namespace and uid; it then
keeps its own metadata and takes only labels and annotations from the answer (refusing
invalid ones).

:meth:`ConversionEndpoint.review` answers in that shape, with these guarantees:

- every object is converted, or none: the first failure (no registered model for the
  object's apiVersion/kind, an object that does not parse as its model, no conversion
  path, a converter that breaks a metadata rule, labels or annotations Kubernetes would
  refuse) gives ``result: {status: Failure, message: ...}`` naming the object's index
  and no ``convertedObjects``;
- each converted object carries the received object's metadata verbatim except labels
  and annotations, which come from the conversion (where converters keep fields an
  older version cannot hold);
- an object already in the desired version is returned unchanged;
- nothing it is given makes it raise, except an envelope that is not a ConversionReview
  with a request, uid and desiredAPIVersion (:class:`ReviewError`, an HTTP 400).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Final

from kubewerk.core.errors import aggregate_message
from kubewerk.core.gvk import parse_api_version
from kubewerk.core.jsoncopy import copy_json
from kubewerk.core.validation import validate_annotations, validate_labels
from kubewerk.model.conversion import convert
from kubewerk.model.errors import ConversionError, InvalidObjectError
from kubewerk.model.resource import AnyResource, resource_class
from kubewerk.webhook.review import ReviewError

__all__ = ["CONVERSION_VERSIONS", "ConversionEndpoint", "ConversionFailed", "convert_objects"]

log = logging.getLogger("kubewerk.webhook")

CONVERSION_VERSIONS: Final = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")


class ConversionFailed(Exception):
    """One object could not be converted; ``str()`` is the answer's ``result.message``."""


def _parse_review(review: dict[str, Any]) -> tuple[str, str, str, list[Any]]:
    api_version = review.get("apiVersion")
    kind = review.get("kind")
    if kind != "ConversionReview" or api_version not in CONVERSION_VERSIONS:
        raise ReviewError(
            f"expected a ConversionReview of {' or '.join(CONVERSION_VERSIONS)}, "
            f"got apiVersion={api_version!r} kind={kind!r}"
        )
    req = review.get("request")
    if not isinstance(req, dict):
        raise ReviewError(
            "the ConversionReview has no request" if req is None else "request must be an object"
        )
    uid = req.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError(
            "request.uid is missing" if uid in (None, "") else "request.uid must be a string"
        )
    desired = req.get("desiredAPIVersion")
    if not isinstance(desired, str) or not desired:
        raise ReviewError("request.desiredAPIVersion is missing")
    objects = req.get("objects")
    if objects is None:
        objects = []
    if not isinstance(objects, list):
        raise ReviewError("request.objects must be a list")
    return str(api_version), uid, desired, objects


def _restore_metadata(original: dict[str, Any], converted: dict[str, Any]) -> None:
    """``converted["metadata"]``: the original's, with the conversion's labels and
    annotations (checked as the API server checks them)."""
    out_meta = converted.get("metadata")
    out_meta = out_meta if isinstance(out_meta, dict) else {}
    meta = copy_json(original.get("metadata") or {})
    for name in ("labels", "annotations"):
        value = out_meta.get(name)
        if not value:
            meta.pop(name, None)
            continue
        if value != meta.get(name):
            errors = (
                validate_labels(value)
                if name == "labels"
                else validate_annotations(value, "metadata.annotation")  # sic, as kube
            )
            if errors:
                raise ConversionFailed(aggregate_message(errors))
        meta[name] = value
    converted["metadata"] = meta


def convert_objects(
    objects: list[Any],
    desired: str,
    kinds: Collection[tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """``objects`` converted to ``desired``, in order; raises :class:`ConversionFailed` at
    the first object that cannot be (see the module doc). ``kinds`` limits the
    ``(group, kind)`` pairs converted (None: every registered model)."""
    try:
        target_gv = parse_api_version(desired)
    except ValueError as exc:
        raise ConversionFailed(f"invalid desiredAPIVersion {desired!r}: {exc}") from None
    out: list[dict[str, Any]] = []
    for i, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise ConversionFailed(f"objects[{i}] is not a JSON object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
            raise ConversionFailed(f"objects[{i}] has no apiVersion and kind")
        try:
            group = parse_api_version(api_version).group
        except ValueError as exc:
            raise ConversionFailed(
                f"objects[{i}]: invalid apiVersion {api_version!r}: {exc}"
            ) from None
        if group != target_gv.group:
            raise ConversionFailed(
                f"objects[{i}]: cannot convert {kind} of group {group!r} to {desired}"
            )
        if kinds is not None and (group, kind) not in kinds:
            raise ConversionFailed(f"objects[{i}]: this webhook does not convert {kind}.{group}")
        if api_version == desired:
            out.append(obj)
            continue
        cls = resource_class(api_version, kind)
        if cls is None:
            raise ConversionFailed(
                f"objects[{i}]: no model is registered for {api_version}, Kind={kind}"
            )
        if resource_class(desired, kind) is None:
            raise ConversionFailed(
                f"objects[{i}]: no model is registered for {desired}, Kind={kind}"
            )
        try:
            model: AnyResource = cls.from_dict(obj)
            converted: AnyResource = convert(model, desired)
        except InvalidObjectError as exc:
            raise ConversionFailed(f"objects[{i}]: {exc}") from None
        except ConversionError as exc:
            raise ConversionFailed(f"objects[{i}]: {exc}") from None
        result = converted.to_dict()
        try:
            _restore_metadata(obj, result)
        except ConversionFailed as exc:
            raise ConversionFailed(f"objects[{i}]: invalid metadata: {exc}") from None
        out.append(result)
    return out


@dataclass(eq=False)
class ConversionEndpoint:
    """The conversion webhook at ``path``; ``kinds`` (``(group, kind)`` pairs) limits what
    it converts, None: every kind with registered models."""

    path: str
    kinds: frozenset[tuple[str, str]] | None = field(default=None)

    async def review(self, review: dict[str, Any]) -> dict[str, Any]:
        """The ConversionReview answering ``review`` (see the module doc)."""
        api_version, uid, desired, objects = _parse_review(review)
        response: dict[str, Any] = {"uid": uid}
        try:
            response["convertedObjects"] = convert_objects(objects, desired, self.kinds)
            response["result"] = {"metadata": {}, "status": "Success"}
        except ConversionFailed as exc:
            response["result"] = {"metadata": {}, "status": "Failure", "message": str(exc)}
        except Exception as exc:  # a converter's bug: a Failure, never a traceback
            log.exception("conversion to %s failed on request %s", desired, uid)
            response["result"] = {
                "metadata": {},
                "status": "Failure",
                "message": f"internal error converting to {desired}: {type(exc).__name__}: {exc}",
            }
        return {"apiVersion": api_version, "kind": "ConversionReview", "response": response}
