"""Per-item metadata checks do work linear in the items, with the per-item work of the
common valid item only (a set lookup or one match): counted, not timed.

A 3 MiB request body holds some hundred thousand finalizers, labels, annotations or
ownerReferences; every check below runs on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubewerk.apiserver.responses import WARNINGS_READ_MAX, warning_headers
from kubewerk.core import validation

N = 10_000


class Counter:
    """Wraps a module function and counts its calls."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.fixture
def count(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Counter]]:
    def wrap(name: str) -> Counter:
        counter = Counter(getattr(validation, name))
        monkeypatch.setattr(validation, name, counter)
        return counter

    yield wrap


def test_valid_domain_finalizers_are_neither_sorted_nor_quoted(
    count: Callable[[str], Counter],
) -> None:
    quote = count("go_quote")
    detail = count("is_qualified_name")
    names = [f"example.com/f{i}" for i in range(N)]
    assert validation.finalizer_warnings(names) == []
    assert validation.finalizer_warnings(names, names[: N // 2]) == []
    assert quote.calls == 0 and detail.calls == 0


def test_finalizer_warnings_with_a_limit_work_out_only_those(
    count: Callable[[str], Counter],
) -> None:
    names = [f"f{i}" for i in range(N)] + ["example.com/ok", "Bad_/x", "orphan"]
    full = validation.finalizer_warnings(names)
    assert len(full) == N + 1  # one per unqualified name, one for the invalid prefix
    quote = count("go_quote")
    limited = validation.finalizer_warnings(names, limit=WARNINGS_READ_MAX)
    assert quote.calls <= WARNINGS_READ_MAX
    assert limited == full[: len(limited)] and len(limited) >= WARNINGS_READ_MAX
    # the response's headers are the same either way
    assert warning_headers(limited) == warning_headers(full)


def test_valid_finalizers_are_matched_not_explained(count: Callable[[str], Counter]) -> None:
    detail = count("is_qualified_name")
    names = [f"example.com/f{i}" for i in range(N)]
    assert validation.validate_finalizers(names) == []
    bad = validation.validate_finalizers([*names, "-bad-"])
    assert [e.bad_value for e in bad] == ["-bad-"]
    assert detail.calls == 1


def test_labels_with_one_bad_key_explain_that_key_alone(count: Callable[[str], Counter]) -> None:
    detail = count("is_qualified_name")
    value_detail = count("is_label_value")
    labels = {f"k{i}": "v" for i in range(N)}
    labels["-bad-"] = "v"
    errs = validation.validate_labels(labels)
    assert [e.bad_value for e in errs] == ["-bad-"]
    assert detail.calls == 1 and value_detail.calls == 0


def test_oversized_annotations_are_matched_once_and_not_explained(
    count: Callable[[str], Counter],
) -> None:
    detail = count("is_qualified_name")
    quick = count("_qualified_ok")
    annotations = {f"example.com/k{i}": "v" * 30 for i in range(N)}
    errs = validation.validate_annotations(annotations)
    assert [e.type for e in errs] == ["FieldValueTooLong"]
    assert detail.calls == 0
    assert quick.calls <= N


def test_many_controllers_render_the_list_once_and_bound_the_answer(
    count: Callable[[str], Counter],
) -> None:
    marshal = count("_go_marshal")
    refs = [
        {"apiVersion": "v1", "kind": "K", "name": f"n{i}", "uid": f"u{i}", "controller": True}
        for i in range(3000)
    ]
    errs = validation.validate_owner_references(refs)
    assert marshal.calls == 1
    shown = sum(len(str(e.bad_value)) for e in errs)
    assert len(errs) >= 1 and shown <= 1024 * 1024 + len(str(errs[0].bad_value))
    assert errs[0].detail.endswith("references for K/n0 and K/n1")


def test_a_few_controllers_give_every_error_kube_gives() -> None:
    refs = [
        {"apiVersion": "v1", "kind": "K", "name": f"n{i}", "uid": f"u{i}", "controller": True}
        for i in range(3)
    ]
    errs = validation.validate_owner_references(refs)
    assert [e.detail[-22:] for e in errs] == [
        "references for K/n0 and K/n1"[-22:],
        "references for K/n0 and K/n2"[-22:],
    ]
    assert errs[0].bad_value == errs[1].bad_value
    assert str(errs[0].bad_value).startswith('[{"apiVersion":"v1","kind":"K","name":"n0"')
