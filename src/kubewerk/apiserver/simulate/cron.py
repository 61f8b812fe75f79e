"""CronJob schedules, parsed and stepped as Kubernetes' CronJob controller does.

kube-controller-manager parses ``spec.schedule`` with ``robfig/cron``'s standard parser:
five fields (minute, hour, day of month, month, day of week) where each field is a
comma-separated list of ``*``/``?``, ``N``, ``N-M``, each optionally ``/STEP`` (``N/STEP``
runs to the field's maximum), month and weekday names (``JAN``, ``sun``) in any case,
weekdays 0-6 with 0 Sunday; the macros ``@yearly``/``@annually``, ``@monthly``, ``@weekly``,
``@daily``/``@midnight``, ``@hourly`` and ``@every <duration>``; and an optional
``CRON_TZ=Zone``/``TZ=Zone`` prefix (the API refuses it; ``spec.timeZone`` is the field).
As in cron (and robfig), when both day fields are restricted a day matches either; when
either is ``*`` both must match. Written here (rather than taken from PyPI) because the
maintained Python libraries follow Vixie/POSIX cron with extensions (``L``, ``W``, ``#``,
seconds, 7 as Sunday) that Kubernetes refuses, and their day-matching rule differs for
``*/N`` day fields.

Times are computed in the schedule's zone (``zoneinfo``): a wall time that does not
exist on a DST change is skipped; one that exists twice fires once, at its first instance.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["CronError", "Schedule", "parse_schedule"]


class CronError(ValueError):
    """The schedule is not one Kubernetes' parser accepts (the message says why)."""


_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|m|s|ms|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_SEARCH_YEARS = 5  # as robfig: no match within five years means never


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: the allowed values of each field, or a fixed interval."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    dom_star: bool
    dow_star: bool
    zone: dt.tzinfo | None = None
    """The ``CRON_TZ``/``TZ`` prefix's zone (None: the caller's zone)."""
    every: float | None = None
    """``@every``: the interval in whole seconds."""

    def _day_matches(self, day: dt.date) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days_of_month
        dow = (day.isoweekday() % 7) in self.days_of_week
        if self.dom_star or self.dow_star:
            return dom and dow
        return dom or dow

    def next_after(self, after: dt.datetime, zone: dt.tzinfo | None = None) -> dt.datetime | None:
        """The first activation strictly after ``after`` (aware), in UTC; None if there is
        none within five years. ``zone`` is ``spec.timeZone`` (default UTC, as the
        controller runs in UTC); a ``CRON_TZ`` prefix wins over it."""
        if after.tzinfo is None:
            raise ValueError("next_after needs an aware datetime")
        if self.every is not None:
            base = after.replace(microsecond=0)
            return (base + dt.timedelta(seconds=self.every)).astimezone(dt.UTC)
        tz = self.zone or zone or dt.UTC
        local = after.astimezone(tz)
        start = local.replace(second=0, microsecond=0, tzinfo=None) + dt.timedelta(minutes=1)
        hours = sorted(self.hours)
        minutes = sorted(self.minutes)
        day = start.date()
        last = (
            day.replace(year=day.year + _SEARCH_YEARS)
            if not (day.month == 2 and day.day == 29)
            else day.replace(year=day.year + _SEARCH_YEARS, day=28)
        )
        while day <= last:
            if self._day_matches(day):
                for hour in hours:
                    for minute in minutes:
                        wall = dt.datetime(day.year, day.month, day.day, hour, minute)
                        if wall < start:
                            continue
                        found = _existing(wall, tz)
                        if found is not None and found > after:
                            return found.astimezone(dt.UTC)
            day += dt.timedelta(days=1)
        return None

    def times_between(
        self,
        earliest: dt.datetime,
        now: dt.datetime,
        zone: dt.tzinfo | None = None,
        limit: int = 101,
    ) -> list[dt.datetime]:
        """Activations in ``(earliest, now]``, oldest first, at most ``limit`` of them."""
        out: list[dt.datetime] = []
        t = earliest
        while len(out) < limit:
            nxt = self.next_after(t, zone)
            if nxt is None or nxt > now:
                break
            out.append(nxt)
            t = nxt
        return out


def _existing(wall: dt.datetime, tz: dt.tzinfo) -> dt.datetime | None:
    """``wall`` in ``tz`` (its first instance if ambiguous), or None if it does not exist."""
    aware = wall.replace(tzinfo=tz, fold=0)
    back = aware.astimezone(dt.UTC).astimezone(tz).replace(tzinfo=None)
    return aware if back == wall else None


def zone_named(name: str) -> dt.tzinfo:
    """An IANA time zone (``spec.timeZone``); ``CronError`` if unknown."""
    if name in ("UTC", "Etc/UTC", ""):
        return dt.UTC
    if name == "Local":
        raise CronError(f"unknown time zone {name}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"unknown time zone {name}") from None


def parse_schedule(text: str) -> Schedule:
    """Parse ``spec.schedule`` as the CronJob controller does (``CronError`` if refused)."""
    spec = text.strip()
    zone: dt.tzinfo | None = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        head, _, spec = spec.partition(" ")
        zone = zone_named(head.split("=", 1)[1])
        spec = spec.strip()
    if spec.startswith("@"):
        if spec.startswith("@every "):
            return _every(spec[len("@every ") :].strip(), zone)
        if spec not in _MACROS:
            raise CronError(f"unrecognized descriptor: {spec}")
        spec = _MACROS[spec]
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    sets: list[frozenset[int]] = []
    stars: list[bool] = []
    for field_text, (low, high, names) in zip(fields, _BOUNDS, strict=True):
        values, star = _field(field_text, low, high, names)
        sets.append(values)
        stars.append(star)
    return Schedule(
        minutes=sets[0],
        hours=sets[1],
        days_of_month=sets[2],
        months=sets[3],
        days_of_week=sets[4],
        dom_star=stars[2],
        dow_star=stars[4],
        zone=zone,
    )


def _every(text: str, zone: dt.tzinfo | None) -> Schedule:
    pos = 0
    total = 0.0
    if not text:
        raise CronError('failed to parse duration @every : time: invalid duration ""')
    while pos < len(text):
        m = _DURATION.match(text, pos)
        if m is None:
            raise CronError(
                f'failed to parse duration @every {text}: time: invalid duration "{text}"'
            )
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    seconds = max(1, int(total))  # robfig rounds down to whole seconds, at least one
    empty: frozenset[int] = frozenset()
    return Schedule(empty, empty, empty, empty, empty, False, False, zone, float(seconds))


def _number(text: str, names: dict[str, int]) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    if not text.isdigit():
        raise CronError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    return int(text)


def _field(text: str, low: int, high: int, names: dict[str, int]) -> tuple[frozenset[int], bool]:
    values: set[int] = set()
    star = False
    for part in text.split(","):
        range_text, slash, step_text = part.partition("/")
        bounds = range_text.split("-")
        single = len(bounds) == 1
        if bounds[0] in ("*", "?"):
            if not single:
                raise CronError(f"too many hyphens: {part}")
            start, end = low, high
            part_star = True
        else:
            start = _number(bounds[0], names)
            if len(bounds) == 1:
                end = start
            elif len(bounds) == 2:
                end = _number(bounds[1], names)
            else:
                raise CronError(f"too many hyphens: {part}")
            part_star = False
        step = 1
        if slash:
            if "/" in step_text:
                raise CronError(f"too many slashes: {part}")
            step = _number(step_text, {})
            if step <= 0:
                raise CronError(f"step of range should be a positive number: {part}")
            if single:
                end = high
            if step > 1:
                part_star = False
        if start < low:
            raise CronError(f"beginning of range ({start}) below minimum ({low}): {part}")
        if end > high:
            raise CronError(f"end of range ({end}) above maximum ({high}): {part}")
        if start > end:
            raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {part}")
        values.update(range(start, end + 1, step))
        star = star or part_star
    return frozenset(values), star
