"""A webhook's namespaceSelector and objectSelector are parsed when its configuration is
read, not on every request (a selector of thousands of expressions cost each write a
parse), and they select exactly as ``selector_matches`` does."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver.admission_chain import webhooks
from kubewerk.schema.admission_policy import matching
from kubewerk.schema.admission_policy.request import Request

POD = (("", "v1", "Pod"), ("", "v1", "pods"))


def _request(labels: dict[str, str], ns_labels: dict[str, str]) -> Request:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": labels}}
    return Request(
        operation="CREATE",
        kind=POD[0],
        resource=POD[1],
        object=obj,
        namespace="default",
        name="p",
        namespace_object={"metadata": {"name": "default", "labels": ns_labels}},
    )


def _hook(ns_selector: Any, obj_selector: Any) -> webhooks.Hook:
    spec: dict[str, Any] = {
        "name": "h.example.com",
        "rules": [
            {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
        ],
        "namespaceSelector": ns_selector,
        "objectSelector": obj_selector,
    }
    return webhooks.Hook("config", spec, False)


def test_selectors_are_parsed_once_per_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    parse = matching.label_selector_from_dict

    def counting(selector: Any) -> Any:
        nonlocal calls
        calls += 1
        return parse(selector)

    monkeypatch.setattr(matching, "label_selector_from_dict", counting)
    hook = _hook(
        {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
        {"matchLabels": {"app": "web"}},
    )
    assert calls == 2
    for _ in range(50):
        assert webhooks.should_call(hook, _request({"app": "web"}, {"env": "prod"}), [], False)
    assert calls == 2


SELECTORS: list[Any] = [
    None,
    {},
    {"matchLabels": {"app": "web"}},
    {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
    {"matchExpressions": [{"key": "env", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "env", "operator": "Bogus", "values": ["x"]}]},
]
LABELS = [{}, {"app": "web"}, {"env": "prod"}, {"env": "dev", "app": "web"}]


@pytest.mark.parametrize("selector", SELECTORS)
def test_compiled_selectors_select_as_selector_matches(selector: Any) -> None:
    for obj_labels in LABELS:
        for ns_labels in LABELS:
            want = matching.selector_matches(selector, ns_labels) and matching.selector_matches(
                selector, obj_labels
            )
            got = webhooks.should_call(
                _hook(selector, selector), _request(obj_labels, ns_labels), [], False
            )
            assert (got is not None) == want, (selector, obj_labels, ns_labels)
