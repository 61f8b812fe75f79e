"""How much kubewerk reads from one input, and reading no more than that.

Every file, directory entry, pipe or standard input a command reads (manifests, a
kubeconfig and the certificate files it names, a policy file, an audit log's line) is read
through :func:`read_bounded` or :func:`read_file_bounded`: at most :func:`max_input_bytes`
bytes are kept, and an input with more (or an endless one, ``/dev/zero``) is refused with
:class:`InputTooLarge` as soon as one byte past the limit has arrived. Reading goes in
chunks of at most :data:`CHUNK_BYTES`, so memory grows with what arrives, never with the
limit itself (a buffered ``read(n)`` allocates ``n`` bytes up front).

The limit is :data:`DEFAULT_MAX_INPUT_BYTES` (64 MiB, some forty of the largest CRDs
published) unless a command sets another for the duration of a call with
:func:`input_limit` (``kubewerk ... --max-input-bytes``); the setting is a context
variable, so it follows ``asyncio`` tasks and ``asyncio.to_thread`` calls made within.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Final

KiB: Final = 1024
MiB: Final = 1024 * KiB
GiB: Final = 1024 * MiB

DEFAULT_MAX_INPUT_BYTES: Final = 64 * MiB
"""The most bytes read from one input unless a command says otherwise."""

MAX_INPUT_BYTES_CEILING: Final = 4 * GiB
"""The largest limit :func:`parse_byte_size` accepts: parsing an input this large already
takes tens of GiB of memory, so a larger one would only move where a command fails."""

CHUNK_BYTES: Final = 1 * MiB
"""The most bytes asked of the operating system in one read."""

_limit: ContextVar[int] = ContextVar("kubewerk_max_input_bytes", default=DEFAULT_MAX_INPUT_BYTES)

_SIZE = re.compile(r"([0-9]+)(Ki|Mi|Gi)?")
_UNITS: Final = {None: 1, "Ki": KiB, "Mi": MiB, "Gi": GiB}


class InputTooLarge(Exception):
    """An input holds more than the limit; ``str()`` says so and how to raise the limit,
    ``size_text`` only the first part (``larger than 67108864 bytes (64 MiB)``), for
    readers of files that no option of the command bounds."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        human = human_size(limit)
        self.size_text = f"larger than {limit} bytes" + (
            "" if human.endswith(" bytes") else f" ({human})"
        )
        super().__init__(
            f"{self.size_text}, the most kubewerk reads from one input; split it into "
            "several files or raise --max-input-bytes"
        )


def human_size(n: int) -> str:
    """``n`` bytes in the largest binary unit that divides it: ``64 MiB``, ``1500 bytes``."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def max_input_bytes() -> int:
    """The limit in force in the current context."""
    return _limit.get()


@contextmanager
def input_limit(limit: int) -> Iterator[None]:
    """Make ``limit`` (at least 1) the limit of every read made inside the block."""
    if limit < 1:
        raise ValueError(f"an input limit must be at least 1 byte, not {limit}")
    token = _limit.set(limit)
    try:
        yield
    finally:
        _limit.reset(token)


def parse_byte_size(text: str) -> int:
    """A byte count as ``--max-input-bytes`` takes it: digits, optionally followed by a
    binary suffix of Kubernetes' quantity syntax (``Ki``, ``Mi``, ``Gi``), from 1 byte to
    :data:`MAX_INPUT_BYTES_CEILING`. Raises ``ValueError`` with a one-line message that
    names the text and the accepted form otherwise (no sign, fraction or other suffix)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a byte count (digits, optionally followed by Ki, Mi or Gi: 64Mi)"
        )
    digits = match.group(1).lstrip("0") or "0"
    # a 30-digit count is over the ceiling whatever its unit; longer ones are not converted
    value = int(digits) * _UNITS[match.group(2)] if len(digits) <= 30 else None
    if value is not None and value < 1:
        raise ValueError(f"{text!r}: must be at least 1 byte")
    if value is None or value > MAX_INPUT_BYTES_CEILING:
        raise ValueError(f"{text!r}: must be at most {human_size(MAX_INPUT_BYTES_CEILING)}")
    return value


def read_bounded(stream: IO[bytes], limit: int | None = None) -> bytes:
    """All of ``stream`` when it holds at most ``limit`` bytes (default: the limit in
    force); else :class:`InputTooLarge`, raised after reading one byte past the limit and
    never more. Reads block as ``stream`` does (a pipe until its writers close it)."""
    bound = max_input_bytes() if limit is None else limit
    parts: list[bytes] = []
    total = 0
    while total <= bound:
        chunk = stream.read(min(CHUNK_BYTES, bound + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    if total > bound:
        raise InputTooLarge(bound)
    return b"".join(parts)


def read_file_bounded(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the file at ``path`` (a regular file, a pipe, a device), read with
    :func:`read_bounded`. ``OSError`` as ``open`` raises it (a missing file, a
    directory, no permission); :class:`InputTooLarge` past the limit."""
    with open(path, "rb") as stream:
        return read_bounded(stream, limit)


def iter_lines_bounded(stream: IO[bytes], limit: int | None = None) -> Iterator[bytes]:
    """The lines of ``stream`` (each with its newline), for inputs that are streams of
    records such as audit logs: the stream may be of any length, but no line may hold more
    than ``limit`` bytes (default: the limit in force), else :class:`InputTooLarge` once one
    byte past the limit of that line has arrived."""
    bound = max_input_bytes() if limit is None else limit
    while True:
        parts: list[bytes] = []
        total = 0
        while True:
            piece = stream.readline(min(CHUNK_BYTES, bound + 1 - total))
            if not piece:
                break
            parts.append(piece)
            total += len(piece)
            if piece.endswith(b"\n") or total > bound:
                break
        if total > bound:
            raise InputTooLarge(bound)
        if not parts:
            return
        yield b"".join(parts)
