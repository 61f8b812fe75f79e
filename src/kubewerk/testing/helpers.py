"""Framework-independent helpers for operator tests."""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Callable
from typing import Any

from kubewerk.client.client import Client
from kubewerk.client.errors import NotFound
from kubewerk.client.resources import CRD


async def wait_for(
    condition: Callable[[], Any],
    timeout: float = 10.0,
    interval: float = 0.05,
    message: str = "",
) -> Any:
    """Poll ``condition`` (sync or async) until it returns something truthy; return it.

    Exceptions raised by the condition count as "not yet" (the last one is reported).
    Raises ``TimeoutError`` naming ``message`` (or the condition) after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
        except AssertionError as exc:
            last_error = exc
        except Exception as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            what = message or getattr(condition, "__name__", "condition")
            detail = f" (last error: {last_error!r})" if last_error is not None else ""
            raise TimeoutError(f"{what} not met within {timeout:.1f}s{detail}")
        await asyncio.sleep(interval)


def crd_established(crd: dict[str, Any]) -> bool:
    """True when the CRD's Established condition is True."""
    conds = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conds)


async def install_crds(client: Client, *models: Any, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Create (or replace) the CRD of each typed model and wait until each is Established.

    Accepts model classes (``kubewerk.model.Resource`` subclasses) or CRD dicts.
    """
    from kubewerk.model import crd_for

    installed: list[dict[str, Any]] = []
    for model in models:
        crd = model if isinstance(model, dict) else crd_for(model)
        name = crd["metadata"]["name"]
        try:
            current = await client.get(CRD, name)
            crd = {
                **crd,
                "metadata": {
                    **crd["metadata"],
                    "resourceVersion": current["metadata"]["resourceVersion"],
                },
            }
            await client.replace(crd)
        except NotFound:
            await client.create(crd)
        check = functools.partial(_established, client, name)
        installed.append(await wait_for(check, timeout, 0.01, f"CRD {name} Established"))
    client.forget_discovery()
    return installed


async def _established(client: Client, name: str) -> dict[str, Any] | None:
    crd = await client.get(CRD, name)
    return crd if crd_established(crd) else None


async def wait_for_condition(
    client: Client,
    kind: Any,
    name: str,
    namespace: str | None = None,
    type: str = "Ready",
    status: str = "True",
    timeout: float = 10.0,
) -> Any:
    """Wait until the object's condition ``type`` has ``status``; return the object."""

    async def check() -> Any:
        obj = await client.get(kind, name, namespace)
        data = obj if isinstance(obj, dict) else obj.to_dict()
        for cond in (data.get("status") or {}).get("conditions") or []:
            if cond.get("type") == type and cond.get("status") == status:
                return obj
        return None

    return await wait_for(check, timeout, 0.05, f"{name}: condition {type}={status}")
