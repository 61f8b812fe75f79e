"""Quantities in the canonical form a typed decode writes, and cron schedules with the
parser's messages (the pieces the kinds' defaults and validation are built on)."""

from __future__ import annotations

import pytest

from kubewerk.apiserver.kindrules.cron import CronError, parse_standard
from kubewerk.apiserver.kindrules.quantity import (
    PARSE_ERROR,
    canonical,
    check_nonnegative_list,
    parse,
)
from kubewerk.core.errors import FieldError


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("1000m", "1"),
        ("0.5", "500m"),
        ("1.5Gi", "1536Mi"),
        ("2000", "2k"),
        ("1500", "1500"),
        ("1024Mi", "1Gi"),
        ("512", "512"),
        ("0.0001", "1m"),  # rounded up to milli units
        ("1e3", "1e3"),
        ("100M", "100M"),
        ("0", "0"),
        (2, "2"),
    ],
)
def test_canonical_quantities(given: str | int, shown: str) -> None:
    assert canonical(given) == shown


@pytest.mark.parametrize("text", ["", "1.2.3", "abc", "1 Gi", "1Gb", "--1"])
def test_malformed_quantities(text: str) -> None:
    with pytest.raises(ValueError):
        parse(text)
    assert canonical(text) == text  # left for the typed decode to refuse


def test_remembered_quantities_answer_as_computed() -> None:
    """The remembered parse and canonical form are what computing them gives, again and
    again; a malformed text raises every time; a text longer than ``CACHED_TEXT`` or a
    ``str`` subclass is computed each time and never takes a place in the cache."""
    from kubewerk.apiserver.kindrules import quantity

    texts = ["500m", "128Mi", "1.5Gi", "0.0001", "1e3", "2000", "-1", "+.5k", "7E-2"]
    for _ in range(3):
        for text in texts:
            assert quantity.parse(text) == quantity._parse(text)
            assert quantity.canonical(text) == quantity._canonical(text)
    for _ in range(2):
        with pytest.raises(ValueError, match="quantities must match"):
            quantity.parse("1.2.3")
        assert quantity.canonical("1.2.3") == "1.2.3"

    class Text(str):
        pass

    cached = quantity._canonical_remembered.cache_info().currsize
    long_text = "1" * (quantity.CACHED_TEXT + 1)
    assert quantity.canonical(long_text) == quantity._canonical(long_text)
    assert quantity.parse(long_text) == quantity._parse(long_text)
    odd = Text("bogus")
    assert quantity.canonical(odd) is odd
    assert quantity._canonical_remembered.cache_info().currsize == cached


def test_nonnegative_list_flags_each_negative_quantity_in_map_order() -> None:
    errs: list[FieldError] = []
    resources = {
        "memory": "-1Ki",  # canonical form shown
        "cpu": "500m",
        "pods": -2,  # a JSON number, shown as its canonical string
        "storage": "-0.0001",  # rounds away from zero to -1m
        "bad": "-x",  # does not parse: nothing here
        "flag": True,  # not a quantity
        "zero": "-0",
    }
    check_nonnegative_list(errs, resources, "spec.hard")
    assert [e.message() for e in errs] == [
        'spec.hard[memory]: Invalid value: "-1Ki": must be greater than or equal to 0',
        'spec.hard[pods]: Invalid value: "-2": must be greater than or equal to 0',
        'spec.hard[storage]: Invalid value: "-1m": must be greater than or equal to 0',
    ]


@pytest.mark.parametrize("resources", [None, [], "-1", -1, ["-1"]])
def test_nonnegative_list_ignores_what_is_not_a_map(resources: object) -> None:
    errs: list[FieldError] = [FieldError.required("kept")]
    check_nonnegative_list(errs, resources, "status.used")
    assert [e.message() for e in errs] == ["kept: Required value"]


def test_parse_error_text() -> None:
    with pytest.raises(ValueError, match="quantities must match the regular expression"):
        parse("abc")
    assert PARSE_ERROR.endswith("'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


@pytest.mark.parametrize(
    "schedule",
    [
        "*/5 * * * *",
        "0 0 * * MON-FRI",
        "@hourly",
        "0 9 1 JAN *",
        "15,45 8-18/2 * * 1-5",
        "CRON_TZ=UTC 0 * * * *",
        "@every 1h",
    ],
)
def test_valid_schedules(schedule: str) -> None:
    parse_standard(schedule)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("0 24 * * *", "end of range (24) above maximum (23): 24"),
        ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ],
)
def test_invalid_schedules(schedule: str, message: str) -> None:
    with pytest.raises(CronError) as err:
        parse_standard(schedule)
    assert str(err.value) == message
