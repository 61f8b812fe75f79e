"""ObjectMeta helpers: timestamps, names, owner references, human durations."""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC, datetime
from typing import Any

# the alphabet utilrand.String uses for generateName suffixes (no vowels, no 0/1/3)
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATE_NAME_SUFFIX_LEN = 5
MAX_GENERATED_PREFIX = 63 - GENERATE_NAME_SUFFIX_LEN


def now_rfc3339() -> str:
    """The current time as metav1.Time serialises it (second precision, ``Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def now_rfc3339_micro() -> str:
    """The current time as metav1.MicroTime serialises it (``.000000Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> float | None:
    """Seconds since the epoch for an RFC 3339 timestamp, or None if unparseable."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError, TypeError):
        return None


def new_uid() -> str:
    """A random (version 4) UUID in its canonical text form."""
    return str(uuid.uuid4())


def generate_name(prefix: str) -> str:
    """``names.SimpleNameGenerator``: prefix (trimmed to 58 chars) + 5 random chars."""
    prefix = prefix[:MAX_GENERATED_PREFIX]
    suffix = "".join(random.choices(_NAME_ALPHABET, k=GENERATE_NAME_SUFFIX_LEN))
    return prefix + suffix


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: ``5s``, ``3m12s``, ``2d3h``, ``4y``... as kubectl shows Age."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m{rem}s" if rem else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rem = minutes % 60
        return f"{hours}h{rem}m" if rem else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rem = hours % 24
        return f"{hours // 24}d{rem}h" if rem else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        rem = days % 365
        return f"{days // 365}y{rem}d" if rem else f"{days // 365}y"
    return f"{hours // 24 // 365}y"


def age(obj: dict[str, Any], now: float | None = None) -> str:
    """The Age column for an object (``<unknown>`` without a creationTimestamp)."""
    created = obj.get("metadata", {}).get("creationTimestamp")
    ts = parse_time(created) if isinstance(created, str) else None
    if ts is None:
        return "<unknown>"
    return human_duration((now if now is not None else time.time()) - ts)
