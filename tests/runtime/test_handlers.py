"""The controller's informer handlers: predicates in order (first refusal stops), which
keys each handler enqueues, and the built-in predicates on odd metadata."""

from __future__ import annotations

from typing import Any

from kubewerk.client import ResourceType
from kubewerk.runtime.controller import Controller, _EnqueueFor, _EnqueueMapped, _EnqueueOwner
from kubewerk.runtime.predicates import (
    ANNOTATIONS_CHANGED,
    GENERATION_CHANGED,
    RESOURCE_VERSION_CHANGED,
    Predicate,
)

WIDGET = ResourceType("example.dev", "v1", "Widget", "widgets")


class Recording(Predicate):
    def __init__(self, name: str, answer: bool, calls: list[str]) -> None:
        self.name, self.answer, self.calls = name, answer, calls

    def create(self, obj: Any) -> bool:
        self.calls.append(f"{self.name}.create")
        return self.answer

    def update(self, old: Any, new: Any) -> bool:
        self.calls.append(f"{self.name}.update")
        return self.answer

    def delete(self, obj: Any) -> bool:
        self.calls.append(f"{self.name}.delete")
        return self.answer


def obj(name: str = "w", ns: str | None = "ns", **meta: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, **meta}
    if ns:
        m["namespace"] = ns
    return {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": m}


async def _reconcile(obj: Any, ctx: Any) -> None:
    return None


def controller() -> Controller[Any]:
    return Controller("widget", WIDGET, _reconcile)


def queued(ctrl: Controller[Any]) -> list[str]:
    return list(ctrl.queue._queue)


async def test_predicates_run_in_order_and_stop_at_the_first_refusal() -> None:
    calls: list[str] = []
    ctrl = controller()
    handler = _EnqueueFor(
        ctrl,
        [Recording("a", True, calls), Recording("b", False, calls), Recording("c", True, calls)],
    )
    handler.on_add(obj())
    handler.on_update(obj(), obj())
    handler.on_delete(obj())
    assert calls == ["a.create", "b.create", "a.update", "b.update", "a.delete", "b.delete"]
    assert queued(ctrl) == []
    calls.clear()
    passing = _EnqueueFor(ctrl, [Recording("a", True, calls)])
    passing.on_update(obj("old"), obj("new"))
    passing.on_add(obj("x", ns=None))
    assert queued(ctrl) == ["ns/new", "x"]


async def test_no_predicates_enqueue_everything() -> None:
    ctrl = controller()
    handler = _EnqueueFor(ctrl, [])
    handler.on_add(obj("a"))
    handler.on_update(obj("b"), obj("b"))
    handler.on_delete(obj("c"))
    assert queued(ctrl) == ["ns/a", "ns/b", "ns/c"]


async def test_owner_handler_enqueues_old_and_new_controller() -> None:
    ctrl = controller()
    handler = _EnqueueOwner(ctrl, [])

    def child(
        owner: str, controller: bool = True, api_version: str = "example.dev/v2"
    ) -> dict[str, Any]:
        ref = {
            "apiVersion": api_version,
            "kind": "Widget",
            "name": owner,
            "uid": "u",
            "controller": controller,
        }
        return obj("child", ownerReferences=[ref])

    handler.on_add(child("w1"))
    handler.on_add(child("w2", controller=False))  # not the controller: ignored
    handler.on_add(child("w3", api_version="other.dev/v1"))  # another group: ignored
    handler.on_update(child("w1"), child("w4"))  # re-parented: both owners
    assert queued(ctrl) == ["ns/w1", "ns/w4"]


async def test_owner_handler_skips_a_reference_whose_api_version_does_not_parse() -> None:
    # controller-runtime parses the ref's apiVersion (schema.ParseGroupVersion) and skips
    # it on error; "x/y/v1" must not be read as some group (for a core-group owner kind,
    # not as the core group either)
    ctrl = Controller("cm", ResourceType("", "v1", "ConfigMap", "configmaps"), _reconcile)
    handler = _EnqueueOwner(ctrl, [])

    def child(owner: str, api_version: str) -> dict[str, Any]:
        ref = {
            "apiVersion": api_version,
            "kind": "ConfigMap",
            "name": owner,
            "uid": "u",
            "controller": True,
        }
        return obj("child", ownerReferences=[ref])

    handler.on_add(child("bad", "x/y/v1"))
    handler.on_add(child("bad-too", "/x/v1"))
    handler.on_add(child("good", "v1"))
    assert queued(ctrl) == ["ns/good"]


async def test_mapped_handler_enqueues_what_the_mapper_returns() -> None:
    ctrl = controller()
    handler = _EnqueueMapped(ctrl, lambda o: ["ns/a", ("ns", "b"), ("", "c")], [GENERATION_CHANGED])
    handler.on_update(obj(generation=1), obj(generation=1))  # filtered
    handler.on_update(obj(generation=1), obj(generation=2))
    assert queued(ctrl) == ["ns/a", "ns/b", "c"]


def test_metadata_predicates_on_missing_or_odd_metadata() -> None:
    assert GENERATION_CHANGED.update({}, {"metadata": {"generation": 1}})
    assert not GENERATION_CHANGED.update({}, {"metadata": None})
    assert not GENERATION_CHANGED.update({"metadata": "junk"}, {})
    assert RESOURCE_VERSION_CHANGED.update(obj(resourceVersion="1"), obj(resourceVersion="2"))
    assert not RESOURCE_VERSION_CHANGED.update(obj(resourceVersion="1"), obj(resourceVersion="1"))
    assert ANNOTATIONS_CHANGED.update(obj(annotations={"a": "1"}), obj())
    assert ANNOTATIONS_CHANGED.create(obj()) and ANNOTATIONS_CHANGED.delete(obj())
