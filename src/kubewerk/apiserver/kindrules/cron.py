"""Cron schedules as CronJob validation parses them (``cron.ParseStandard`` of
robfig/cron v3: five fields or a descriptor), with that parser's error texts."""

from __future__ import annotations

from typing import Final

_DESCRIPTORS: Final = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
_MONTHS: Final = {
    m: i + 1
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_DAYS: Final = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_BOUNDS: Final[tuple[tuple[int, int, dict[str, int]], ...]] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)


class CronError(ValueError):
    """A schedule the parser refuses; ``str()`` is the parser's message."""


def _atoi(text: str) -> int:
    if not text or not (text.isdigit() or (text[0] in "+-" and text[1:].isdigit())):
        raise CronError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    return int(text)


def _int(text: str) -> int:
    value = _atoi(text)
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _int_or_name(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    return _int(text)


def _range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if single and low_and_high[0] not in ("*", "?"):
            end = high
        if step <= 0:
            raise CronError(f"step of range should be a positive number: {expr}")
    elif len(range_and_step) > 2:
        raise CronError(f"too many slashes: {expr}")
    if start < low:
        raise CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")


def parse_standard(schedule: str) -> None:
    """Raise :class:`CronError` when ``schedule`` is not a valid standard spec."""
    if not schedule:
        raise CronError("empty spec string")
    spec = schedule
    if spec.startswith(("TZ=", "CRON_TZ=")):
        parts = spec.split(" ", 1)
        spec = parts[1].strip() if len(parts) > 1 else ""
    if spec.startswith("@"):
        if spec in _DESCRIPTORS or spec.startswith("@every "):
            return
        raise CronError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for field, (low, high, names) in zip(fields, _BOUNDS, strict=True):
        for expr in field.split(","):
            _range(expr, low, high, names)
