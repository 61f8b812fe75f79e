"""Pod rows as kube-apiserver's printPod computes them (what ``kubectl get pods -o wide``
shows): READY, STATUS, RESTARTS, AGE, IP, NODE, NOMINATED NODE, READINESS GATES."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver.printers import printer
from kubewerk.core.meta import parse_time

NOW = parse_time("2025-01-01T12:00:00Z") or 0.0
CREATED = "2025-01-01T11:00:00Z"  # one hour before NOW: Age 60m


def pod(
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "d", "creationTimestamp": CREATED, **meta},
        "spec": spec or {"containers": [{"name": "app", "image": "nginx"}]},
        "status": status or {},
    }


def cells(obj: dict[str, Any]) -> list[Any]:
    p = printer("v1", "Pod")
    assert p is not None
    return p.cells_at(obj, NOW)


def running(name: str = "app", ready: bool = True, restarts: int = 0, **extra: Any) -> Any:
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": CREATED}},
        **extra,
    }


def test_columns() -> None:
    p = printer("v1", "Pod")
    assert p is not None
    assert [(c.name, c.type, c.priority) for c in p.columns] == [
        ("Ready", "string", 0),
        ("Status", "string", 0),
        ("Restarts", "string", 0),
        ("Age", "string", 0),
        ("IP", "string", 1),
        ("Node", "string", 1),
        ("Nominated Node", "string", 1),
        ("Readiness Gates", "string", 1),
    ]


def test_pending_unscheduled_pod() -> None:
    assert cells(pod(status={"phase": "Pending"})) == [
        "0/1",
        "Pending",
        "0",
        "60m",
        "<none>",
        "<none>",
        "<none>",
        "<none>",
    ]


def test_container_creating() -> None:
    status = {
        "phase": "Pending",
        "containerStatuses": [
            {
                "name": "app",
                "ready": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}},
            }
        ],
    }
    spec = {"nodeName": "node-a", "containers": [{"name": "app", "image": "nginx"}]}
    assert cells(pod(spec, status))[:2] == ["0/1", "ContainerCreating"]
    assert cells(pod(spec, status))[5] == "node-a"


def test_running_pod_wide() -> None:
    status = {
        "phase": "Running",
        "podIP": "10.244.0.5",
        "podIPs": [{"ip": "10.244.0.5"}, {"ip": "fd00::5"}],
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [running("app"), running("sidecar", ready=False)],
    }
    spec = {
        "nodeName": "node-a",
        "containers": [{"name": "app", "image": "a"}, {"name": "sidecar", "image": "b"}],
    }
    assert cells(pod(spec, status)) == [
        "1/2",
        "Running",
        "0",
        "60m",
        "10.244.0.5",
        "node-a",
        "<none>",
        "<none>",
    ]


def test_pod_ip_without_pod_ips() -> None:
    """A v1 pod carrying only ``status.podIP`` (older kubelets): the conversion makes it
    ``podIPs[0]``, which is what the IP column prints."""
    status = {"phase": "Running", "podIP": "10.1.2.3"}
    assert cells(pod(status=status))[4] == "10.1.2.3"


def test_crash_looping_pod_with_restart_age() -> None:
    status = {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "app",
                "ready": False,
                "restartCount": 5,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
                "lastState": {
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "finishedAt": "2025-01-01T11:58:00Z",
                    }
                },
            }
        ],
    }
    assert cells(pod(status=status))[:3] == ["0/1", "CrashLoopBackOff", "5 (2m ago)"]


def test_completed_pod() -> None:
    status = {
        "phase": "Succeeded",
        "containerStatuses": [
            {
                "name": "app",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
            }
        ],
    }
    assert cells(pod(status=status))[:3] == ["0/1", "Completed", "0"]


def test_terminated_without_reason_prints_exit_code_or_signal() -> None:
    def one(term: dict[str, Any]) -> str:
        status = {
            "phase": "Failed",
            "containerStatuses": [
                {"name": "app", "ready": False, "restartCount": 0, "state": {"terminated": term}}
            ],
        }
        return str(cells(pod(status=status))[1])

    assert one({"exitCode": 137}) == "ExitCode:137"
    assert one({"exitCode": 0, "signal": 9}) == "Signal:9"
    assert one({"exitCode": 137, "reason": "OOMKilled"}) == "OOMKilled"


def test_completed_container_with_another_still_running() -> None:
    """The first container's state names the pod; a Completed one is shown as Running
    (Ready condition) or NotReady while another container still runs."""
    done = {
        "name": "a",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
    }
    status: dict[str, Any] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [done, running("b")],
    }
    spec = {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}
    assert cells(pod(spec, status))[:2] == ["1/2", "NotReady"]
    status["conditions"] = [{"type": "Ready", "status": "True"}]
    assert cells(pod(spec, status))[:2] == ["1/2", "Running"]


def test_init_containers_progress() -> None:
    spec = {
        "initContainers": [{"name": "i1", "image": "x"}, {"name": "i2", "image": "x"}],
        "containers": [{"name": "app", "image": "y"}],
    }
    status = {
        "phase": "Pending",
        "initContainerStatuses": [
            {
                "name": "i1",
                "ready": True,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
            },
            {"name": "i2", "ready": False, "restartCount": 0, "state": {"running": {}}},
        ],
        "containerStatuses": [
            {
                "name": "app",
                "ready": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "PodInitializing"}},
            }
        ],
    }
    assert cells(pod(spec, status))[:3] == ["0/1", "Init:1/2", "0"]


def test_init_container_crash_looping_and_failed() -> None:
    spec = {
        "initContainers": [{"name": "i1", "image": "x"}],
        "containers": [{"name": "app", "image": "y"}],
    }
    waiting = {
        "phase": "Pending",
        "initContainerStatuses": [
            {
                "name": "i1",
                "ready": False,
                "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2025-01-01T11:30:00Z"}},
            }
        ],
    }
    assert cells(pod(spec, waiting))[:3] == ["0/1", "Init:CrashLoopBackOff", "3 (30m ago)"]
    failed = {
        "phase": "Failed",
        "initContainerStatuses": [
            {
                "name": "i1",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 2}},
            }
        ],
    }
    assert cells(pod(spec, failed))[1] == "Init:ExitCode:2"


def test_sidecar_counts_toward_ready_and_restarts() -> None:
    spec = {
        "initContainers": [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
        "containers": [{"name": "app", "image": "y"}],
    }
    status = {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "True"},
        ],
        "initContainerStatuses": [
            {
                "name": "proxy",
                "ready": True,
                "started": True,
                "restartCount": 1,
                "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2025-01-01T10:00:00Z"}},
            }
        ],
        "containerStatuses": [running("app")],
    }
    assert cells(pod(spec, status))[:3] == ["2/2", "Running", "1 (120m ago)"]


def test_terminating_and_node_lost() -> None:
    status = {"phase": "Running", "containerStatuses": [running()]}
    deleting = pod(status=status, deletionTimestamp="2025-01-01T11:59:00Z")
    assert cells(deleting)[1] == "Terminating"
    lost = pod(status={**status, "reason": "NodeLost"}, deletionTimestamp="2025-01-01T11:59:00Z")
    assert cells(lost)[1] == "Unknown"
    finished = pod(status={"phase": "Succeeded"}, deletionTimestamp="2025-01-01T11:59:00Z")
    assert cells(finished)[1] == "Succeeded"


def test_scheduling_gated_and_evicted() -> None:
    gated = pod(
        status={
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
            ],
        }
    )
    assert cells(gated)[1] == "SchedulingGated"
    evicted = pod(status={"phase": "Failed", "reason": "Evicted"})
    assert cells(evicted)[1] == "Evicted"


def test_nominated_node_and_readiness_gates() -> None:
    spec = {
        "containers": [{"name": "app", "image": "y"}],
        "readinessGates": [{"conditionType": "www.example.com/lb"}, {"conditionType": "other"}],
    }
    status = {
        "phase": "Pending",
        "nominatedNodeName": "node-b",
        "conditions": [{"type": "www.example.com/lb", "status": "True"}],
    }
    row = cells(pod(spec, status))
    assert row[6:] == ["node-b", "1/2"]


@pytest.mark.parametrize(
    ("created", "age"),
    [("2025-01-01T11:59:30Z", "30s"), ("2024-12-30T12:00:00Z", "2d"), (None, "<unknown>")],
)
def test_age(created: str | None, age: str) -> None:
    obj = pod(status={"phase": "Pending"})
    if created is None:
        del obj["metadata"]["creationTimestamp"]
    else:
        obj["metadata"]["creationTimestamp"] = created
    assert cells(obj)[3] == age
