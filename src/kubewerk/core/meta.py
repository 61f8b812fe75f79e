"""ObjectMeta helpers: timestamps, names, owner references, human durations."""

from __future__ import annotations

import os
import random
import threading
import time
from datetime import datetime
from typing import Any, Final

# metav1.ObjectMeta's JSON fields: a typed decode drops anything else under metadata
OBJECT_META_FIELDS: Final = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
# the alphabet utilrand.String uses for generateName suffixes (no vowels, no 0/1/3)
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATE_NAME_SUFFIX_LEN = 5
MAX_GENERATED_PREFIX = 63 - GENERATE_NAME_SUFFIX_LEN


_last_second: list[Any] = [-1, ""]  # (epoch second, its text): one strftime per second


def now_rfc3339() -> str:
    """The current time as metav1.Time serialises it (second precision, ``Z``)."""
    now = int(time.time())
    last = _last_second
    if last[0] != now:
        last[1] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        last[0] = now
    text: str = last[1]
    return text


def parse_time(text: str) -> float | None:
    """Seconds since the epoch for an RFC 3339 timestamp, or None if unparseable."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError, TypeError):
        return None


class _RandomBytes:
    """``os.urandom`` drawn 4 KiB at a time (one system call per 256 UIDs, not per UID);
    thread-safe, and a forked child starts with fresh bytes of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._pos = 0
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._pos = 0

    def take16(self) -> bytes:
        with self._lock:
            pos = self._pos
            if pos + 16 > len(self._pool):
                self._pool = os.urandom(4096)
                pos = 0
            self._pos = pos + 16
            return self._pool[pos : pos + 16]


_random_bytes = _RandomBytes()
# the variant digit (the 17th hex digit, bits 63..60): its top two bits become 10
_VARIANT_DIGIT = {f"{d:x}": f"{d & 0x3 | 0x8:x}" for d in range(16)}


def uid_from_bytes(raw: bytes) -> str:
    """The version 4, RFC 4122 variant UUID text of 16 random bytes: the bytes as 32 hex
    digits with the version digit (the 13th) set to ``4`` and the variant bits (the top
    two of the 17th digit) set to ``10``, as ``uuid.UUID(bytes=raw, version=4)`` writes it."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT_DIGIT[h[16]]}{h[17:20]}-{h[20:32]}"


def new_uid() -> str:
    """A random (version 4, RFC 4122 variant) UUID in its canonical text form, from the
    operating system's random source as ``uuid.uuid4`` (and Kubernetes) use it."""
    return uid_from_bytes(_random_bytes.take16())


_ALPHABET_SIZE = float(len(_NAME_ALPHABET))


def generate_name(prefix: str) -> str:
    """``names.SimpleNameGenerator``: prefix (trimmed to 58 chars) + 5 random chars.

    The characters are those ``random.choices(_NAME_ALPHABET, k=5)`` picks: the same
    draws of the module's generator (``random.random()``, one per character, in order),
    each mapped to ``_NAME_ALPHABET[floor(r * 27)]`` as ``choices`` maps it."""
    draw = random.random
    pick = _NAME_ALPHABET
    n = _ALPHABET_SIZE
    return (
        prefix[:MAX_GENERATED_PREFIX]
        + pick[int(draw() * n)]
        + pick[int(draw() * n)]
        + pick[int(draw() * n)]
        + pick[int(draw() * n)]
        + pick[int(draw() * n)]
    )


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
