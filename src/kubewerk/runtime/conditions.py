"""Status conditions with metav1.Condition semantics (``meta.SetStatusCondition``).

:func:`set_condition` guarantees: ``lastTransitionTime`` changes only when ``status``
changes (or the condition is new); ``reason``, ``message`` and ``observedGeneration``
are always updated; the result says whether anything changed (so a reconcile can skip
a no-op status write). It works on dict objects (``obj["status"]["conditions"]``,
JSON names) and on typed models whose ``status.conditions`` is a list of
:class:`kubewerk.model.meta.Condition`.
"""

from __future__ import annotations

import typing
from datetime import UTC, datetime
from typing import Any, Literal

Status = Literal["True", "False", "Unknown"]


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status_text(status: bool | Status) -> Status:
    if isinstance(status, bool):
        return "True" if status else "False"
    if status not in ("True", "False", "Unknown"):
        raise ValueError(f"condition status must be True, False or Unknown, not {status!r}")
    return status


def _generation(obj: Any) -> int | None:
    if isinstance(obj, dict):
        gen = (obj.get("metadata") or {}).get("generation")
        return int(gen) if gen is not None else None
    meta = getattr(obj, "metadata", None)
    gen = getattr(meta, "generation", None)
    return int(gen) if gen is not None else None


def _conditions_list(obj: Any, create: bool) -> list[Any] | None:
    if isinstance(obj, dict):
        status = obj.get("status")
        if status is None:
            if not create:
                return None
            status = obj["status"] = {}
        conds = status.get("conditions")
        if conds is None:
            if not create:
                return None
            conds = status["conditions"] = []
        return conds
    status = getattr(obj, "status", None)
    if status is None:
        if not create:
            return None
        status = _new_status(obj)
        obj.status = status
    conds = getattr(status, "conditions", None)
    if conds is None:
        if not create:
            return None
        conds = []
        status.conditions = conds
    return conds


def _new_status(obj: Any) -> Any:
    """An empty instance of a typed model's status class (from the ``status`` field's type)."""
    field = type(obj).model_fields.get("status") if hasattr(type(obj), "model_fields") else None
    annotation = getattr(field, "annotation", None)
    candidates = typing.get_args(annotation) or (annotation,)
    for candidate in candidates:
        if isinstance(candidate, type) and hasattr(candidate, "model_validate"):
            return candidate()
    raise ValueError(f"{type(obj).__name__} has no status type to put conditions in")


def set_condition(
    obj: Any,
    type: str,
    status: bool | Status,
    reason: str,
    message: str = "",
    *,
    observed_generation: int | None = None,
    now: datetime | None = None,
) -> bool:
    """Set (add or update) one condition on ``obj``; True when something changed.

    ``observed_generation`` defaults to the object's ``metadata.generation``.
    """
    text = _status_text(status)
    gen = observed_generation if observed_generation is not None else _generation(obj)
    conds = _conditions_list(obj, create=True)
    assert conds is not None
    when = now or _now()
    typed = not isinstance(obj, dict)
    for i, cond in enumerate(conds):
        ctype = cond.get("type") if isinstance(cond, dict) else cond.type
        if ctype != type:
            continue
        if isinstance(cond, dict):
            changed = False
            if cond.get("status") != text:
                cond["status"] = text
                cond["lastTransitionTime"] = _stamp(when)
                changed = True
            for key, value in (
                ("reason", reason),
                ("message", message),
                ("observedGeneration", gen),
            ):
                if value is None:
                    continue
                if cond.get(key) != value:
                    cond[key] = value
                    changed = True
            return changed
        changed = False
        if cond.status != text:
            cond.status = text
            cond.last_transition_time = when
            changed = True
        for attr, value in (("reason", reason), ("message", message), ("observed_generation", gen)):
            if value is not None and getattr(cond, attr) != value:
                setattr(cond, attr, value)
                changed = True
        conds[i] = cond
        return bool(changed)
    if typed:
        from kubewerk.model.meta import Condition

        conds.append(Condition.make(type, text, reason, message, gen, when))
    else:
        new: dict[str, Any] = {
            "type": type,
            "status": text,
            "lastTransitionTime": _stamp(when),
            "reason": reason,
            "message": message,
        }
        if gen is not None:
            new["observedGeneration"] = gen
        conds.append(new)
    return True


def get_condition(obj: Any, type: str) -> dict[str, Any] | None:
    """The condition of that type as a dict with JSON names (None when absent)."""
    conds = _conditions_list(obj, create=False) or []
    for cond in conds:
        if isinstance(cond, dict):
            if cond.get("type") == type:
                return cond
        elif cond.type == type:
            data: dict[str, Any] = cond.model_dump(mode="json", by_alias=True, exclude_none=True)
            return data
    return None


def is_condition_true(obj: Any, type: str) -> bool:
    """True when the condition exists with status True."""
    cond = get_condition(obj, type)
    return cond is not None and cond.get("status") == "True"


def remove_condition(obj: Any, type: str) -> bool:
    """Remove the condition; True when it was there."""
    conds = _conditions_list(obj, create=False)
    if not conds:
        return False
    for i, cond in enumerate(conds):
        ctype = cond.get("type") if isinstance(cond, dict) else cond.type
        if ctype == type:
            del conds[i]
            return True
    return False
