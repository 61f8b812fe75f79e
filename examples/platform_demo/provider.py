"""The simulated cloud behind the platform: no network, no state outside the objects.

:func:`provision` (and :func:`deprovision`) is what a real operator would do with its
provider's API, reduced to
what the example needs to show: it takes time (``spec.simulate.delaySeconds``, else
the operator's default, :data:`DEFAULT_DELAY`), it can fail (``spec.simulate.fail``:
a :class:`ProvisioningFailed`, a terminal error, so the kernel moves the object to
Failed), and it answers with deterministic identifiers derived from the object's uid, so
provisioning the same object twice (after a restart, after a spec change) gives the
same answer — it is idempotent, as a reconcile must be.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from typing import Any

from kubewerk.runtime import TerminalError

__all__ = [
    "DEFAULT_DELAY",
    "ProvisioningFailed",
    "address",
    "delay_of",
    "deprovision",
    "provider_id",
    "provision",
]


def _seconds(text: str | None, default: float) -> float:
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if value >= 0 else default


DEFAULT_DELAY: float = _seconds(os.environ.get("KUBEWERK_PLATFORM_DELAY"), 0.2)
"""How long provisioning takes when an object does not say (seconds; the environment
variable ``KUBEWERK_PLATFORM_DELAY`` sets it, 0.2 when unset or not a number)."""


class ProvisioningFailed(TerminalError):
    """The provider refused the object (the kernel moves it to Failed; it is not retried
    until its spec changes)."""


def _digest(obj: Any) -> bytes:
    uid = str(obj.metadata.uid or f"{obj.namespace}/{obj.name}")
    return hashlib.sha256(uid.encode()).digest()


def provider_id(obj: Any) -> str:
    """The provider's id for ``obj``: its kind and 12 hex digits of its uid's hash."""
    return f"{type(obj).__name__.lower()}-{_digest(obj).hex()[:12]}"


def address(obj: Any) -> str:
    """A stable private IPv4 address for ``obj`` (in 10.0.0.0/8)."""
    d = _digest(obj)
    return f"10.{d[0]}.{d[1]}.{max(d[2], 1)}"


def delay_of(obj: Any) -> float:
    """How long provisioning ``obj`` takes."""
    simulate = getattr(obj.spec, "simulate", None)
    if simulate is not None and simulate.delay_seconds is not None:
        return float(simulate.delay_seconds)
    return DEFAULT_DELAY


async def provision(obj: Any, what: str = "provisioning") -> str:
    """Create or update ``obj`` at the provider; returns its provider id. Waits the
    object's delay, then raises :class:`ProvisioningFailed` when ``spec.simulate.fail``
    is true."""
    await asyncio.sleep(delay_of(obj))
    simulate = getattr(obj.spec, "simulate", None)
    if simulate is not None and simulate.fail:
        raise ProvisioningFailed(
            f"{what} {type(obj).__name__} {obj.name} failed: the provider refused it "
            "(spec.simulate.fail is true)"
        )
    return provider_id(obj)


async def deprovision(obj: Any) -> None:
    """Release what the provider holds for ``obj``: takes the object's delay too."""
    await asyncio.sleep(delay_of(obj))
