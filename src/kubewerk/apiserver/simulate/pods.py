"""The scheduler and the kubelets of the simulated nodes.

Scheduler: a Pod without ``spec.nodeName`` whose ``schedulerName`` is the default one is
bound to the node with room that holds the fewest Pods (filters in ``fit``); the binding
sets ``spec.nodeName`` and ``PodScheduled=True`` in storage as ``pods/binding`` does. A Pod
no node takes stays Pending with ``PodScheduled=False``, reason ``Unschedulable`` and
kube's message, and is tried again when a node or a Pod changes in a way that may make
room.

Kubelet, for Pods bound to a simulated node that is up:

1. at once: ``Pending``, containers waiting ``ContainerCreating`` (init containers
   first), ``hostIP``, ``startTime``, ``qosClass`` and the five conditions;
2. ``start_seconds`` later: ``Running``, every container running, ready and started,
   ``podIP`` from the node's pod CIDR, all conditions True;
3. Pods whose ``restartPolicy`` is Never or OnFailure: ``run_seconds`` later (or the
   ``simulate.kubewerk.dev/run-seconds`` annotation) ``Succeeded``, containers terminated
   ``Completed`` with exit code 0.

Failures (``simulate.kubewerk.dev/fail`` annotation, or the config's image patterns):
``crash`` — containers exit 1 (``Error``) after running ``run_seconds``; with
restartPolicy Never the Pod fails, otherwise it waits ``CrashLoopBackOff`` (back-off from
``backoff_seconds`` doubling to ``max_backoff_seconds``, as the kubelet's), restarts, and
``restartCount`` grows. ``image-pull`` — containers wait ``ErrImagePull`` and then
``ImagePullBackOff``; the Pod stays Pending.

A Pod being deleted gracefully (``deletionTimestamp`` with ``deletionGracePeriodSeconds``)
is removed ``min(terminate_seconds, its grace period)`` after the kubelet sees it, with a
delete of grace period 0 as the kubelet's (the grace shortened to 0 in storage when the
served kind keeps an object already being deleted), unless its node is down; a Pod never
bound goes at once; a Pod deleted at once is forgotten.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from kubewerk.apiserver.simulate.config import FAIL_ANNOTATION, RUN_SECONDS_ANNOTATION
from kubewerk.apiserver.simulate.engine import (
    KUBELET,
    SCHEDULER,
    Engine,
    changed_copy,
    set_condition,
)
from kubewerk.apiserver.simulate.events import SCHEDULER_INSTANCE, object_ref
from kubewerk.apiserver.simulate.fit import (
    NodeUse,
    filter_node,
    fit_error,
    qos_class,
)
from kubewerk.apiserver.simulate.nodes import NODE_PREFIX, Nodes

JSON = dict[str, Any]

DEFAULT_SCHEDULER = "default-scheduler"
_COMPLETION_POLICIES = ("Never", "OnFailure")


@dataclass
class _Run:
    """The kubelet's memory of one Pod (its uid, what it is waiting for, its restarts)."""

    uid: str
    stage: str
    restarts: int = 0
    started: str = ""
    last_exit: JSON | None = None


def _container_id(uid: str, name: str, restarts: int) -> str:
    return "containerd://" + hashlib.sha256(f"{uid}/{name}/{restarts}".encode()).hexdigest()


def _image_id(image: str) -> str:
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    if "@" in repo:
        return repo
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _names(containers: list[JSON]) -> str:
    return "[" + " ".join(str(c.get("name", "")) for c in containers) + "]"


class Pods:
    """Scheduler and kubelets (see the module docstring)."""

    def __init__(self, engine: Engine, nodes: Nodes) -> None:
        self.engine = engine
        self.nodes = nodes
        self.runs: dict[str, _Run] = {}
        self.images: dict[str, set[str]] = {}
        """node -> the images its kubelet has pulled"""
        self.kubelet_events = engine.events.recorder("kubelet")
        engine.handlers["pod"] = self.reconcile
        engine.handlers["pod-kill"] = self.kill
        engine.handlers["pod-evict"] = nodes.evict

    # -- dispatch ------------------------------------------------------------------

    def reconcile(self, key: str) -> None:
        pod = self.engine.get(key)
        if pod is None:
            self.runs.pop(key, None)
            return
        spec = pod.get("spec") or {}
        if not spec.get("nodeName"):
            if pod["metadata"].get("deletionTimestamp"):
                self.engine.delete(key, {"gracePeriodSeconds": 0})
                return
            if (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER:
                self.schedule(key, pod)
            return
        self.engine.unschedulable.pop(key, None)
        node = spec["nodeName"]
        if node in self.nodes.pools and node not in self.nodes.failed:
            self.kubelet(key, pod, node)

    # -- scheduler ---------------------------------------------------------------------

    def schedule(self, key: str, pod: JSON) -> None:
        engine = self.engine
        nodes = engine.items_under(NODE_PREFIX)
        failures: dict[str, tuple[list[str], bool]] = {}
        best: tuple[int, str] | None = None
        for _node_key, node in nodes:
            name = node["metadata"]["name"]
            use = engine.node_use.get(name) or NodeUse()
            reasons, resolvable = filter_node(pod, node, use)
            if reasons:
                failures[name] = (reasons, resolvable)
            elif best is None or (use.pods, name) < best:
                best = (use.pods, name)
        now = engine.now()
        if best is not None:
            new = changed_copy(pod)
            new["spec"]["nodeName"] = best[1]
            status = new.setdefault("status", {})
            status["conditions"] = set_condition(
                list(status.get("conditions") or []),
                "PodScheduled",
                "True",
                None,
                None,
                now,
                probe_times=True,
            )
            status.setdefault("phase", "Pending")
            if engine.write_back(key, new):
                engine.unschedulable.pop(key, None)
                meta = pod["metadata"]
                self._scheduler_event(
                    pod,
                    "Normal",
                    "Scheduled",
                    "Binding",
                    f"Successfully assigned {meta.get('namespace', '')}/{meta['name']} "
                    f"to {best[1]}",
                )
            return
        message = fit_error(failures, len(nodes))
        if key not in engine.unschedulable or key in engine.retried:
            # an attempt (the first, or a retry when something changed), not the Pod's
            # own status write coming back
            self._scheduler_event(pod, "Warning", "FailedScheduling", "Scheduling", message)
        engine.retried.discard(key)
        engine.unschedulable[key] = None
        status = dict(pod.get("status") or {})
        conditions = set_condition(
            list(status.get("conditions") or []),
            "PodScheduled",
            "False",
            "Unschedulable",
            message,
            now,
            probe_times=True,
        )
        if conditions is not status.get("conditions") or status.get("phase") != "Pending":
            new = changed_copy(pod)
            new["status"] = {**status, "phase": "Pending", "conditions": conditions}
            engine.update(key, new, status=True, manager=SCHEDULER)

    def _scheduler_event(self, pod: JSON, etype: str, reason: str, action: str, note: str) -> None:
        """kube-scheduler's events.k8s.io/v1 event about ``pod``."""
        self.engine.events.emit_series(
            object_ref(pod), etype, reason, action, note, DEFAULT_SCHEDULER, SCHEDULER_INSTANCE
        )

    # -- kubelet events --------------------------------------------------------------------

    def _containers(self, pod: JSON) -> list[tuple[JSON, str]]:
        """Each container with its ``fieldPath`` (init containers first)."""
        spec = pod.get("spec") or {}
        return [
            (c, f"spec.initContainers{{{c.get('name', '')}}}")
            for c in spec.get("initContainers") or []
        ] + [(c, f"spec.containers{{{c.get('name', '')}}}") for c in spec.get("containers") or []]

    def _pulling(self, pod: JSON, node: str) -> None:
        """Pulling, for the images the node must pull (``EnsureImageExists``)."""
        events = self.kubelet_events.on(node)
        have = self.images.get(node, set())
        for c, path in self._containers(pod):
            image = str(c.get("image", ""))
            if _must_pull(c, image in have):
                events.normal(pod, "Pulling", f'Pulling image "{image}"', path)

    def _started(self, pod: JSON, node: str, pulled: bool) -> None:
        """Pulled (or already present), Created and Started, container by container."""
        events = self.kubelet_events.on(node)
        have = self.images.setdefault(node, set())
        took = _go_duration(self.engine.config.start_seconds)
        for c, path in self._containers(pod):
            image = str(c.get("image", ""))
            name = str(c.get("name", ""))
            if pulled and _must_pull(c, image in have):
                events.normal(
                    pod,
                    "Pulled",
                    f'Successfully pulled image "{image}" in {took} ({took} including waiting). '
                    f"Image size: {_image_size(image)} bytes.",
                    path,
                )
            else:
                events.normal(
                    pod, "Pulled", f'Container image "{image}" already present on machine', path
                )
            have.add(image)
            events.normal(pod, "Created", f"Created container: {name}", path)
            events.normal(pod, "Started", f"Started container {name}", path)

    def _pull_failed(self, pod: JSON, node: str, backoff: bool) -> None:
        """ErrImagePull (Failed twice), or ImagePullBackOff (BackOff, Failed)."""
        events = self.kubelet_events.on(node)
        for c, path in self._containers(pod):
            image = str(c.get("image", ""))
            if backoff:
                events.normal(pod, "BackOff", f'Back-off pulling image "{image}"', path)
                events.warning(pod, "Failed", "Error: ImagePullBackOff", path)
            else:
                events.warning(
                    pod,
                    "Failed",
                    f'Failed to pull image "{image}": simulated pull failure (kubewerk)',
                    path,
                )
                events.warning(pod, "Failed", "Error: ErrImagePull", path)

    def _crash_backoff(self, pod: JSON, node: str) -> None:
        events = self.kubelet_events.on(node)
        meta = pod["metadata"]
        who = f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"
        for c, path in self._containers(pod):
            if path.startswith("spec.containers"):
                events.warning(
                    pod,
                    "BackOff",
                    f"Back-off restarting failed container {c.get('name', '')} in pod {who}",
                    path,
                )

    def _killing(self, pod: JSON, node: str) -> None:
        """Killing, for each container of a Pod being deleted (``killContainer``)."""
        events = self.kubelet_events.on(node)
        for c, path in self._containers(pod):
            if path.startswith("spec.containers"):
                events.normal(pod, "Killing", f"Stopping container {c.get('name', '')}", path)

    # -- kubelet ---------------------------------------------------------------------------

    def _failure(self, pod: JSON) -> str | None:
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        mode = annotations.get(FAIL_ANNOTATION)
        if mode in ("crash", "image-pull"):
            return str(mode)
        for container in (pod.get("spec") or {}).get("containers") or []:
            found = self.engine.config.image_fails(str(container.get("image", "")))
            if found:
                return found
        return None

    def _run_seconds(self, pod: JSON) -> float:
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        try:
            return max(0.0, float(annotations[RUN_SECONDS_ANNOTATION]))
        except (KeyError, TypeError, ValueError):
            return self.engine.config.run_seconds

    def kubelet(self, key: str, pod: JSON, node: str) -> None:
        engine = self.engine
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            if not engine.has_timer("pod-kill", key):
                run = self.runs.get(key)
                if run is not None and run.stage in ("running", "backoff"):
                    self._killing(pod, node)
                grace = meta.get("deletionGracePeriodSeconds")
                delay = engine.config.terminate_seconds
                if isinstance(grace, int):
                    delay = min(delay, float(grace))
                engine.after(delay, "pod-kill", key)
            return
        phase = (pod.get("status") or {}).get("phase")
        run = self.runs.get(key)
        if run is None or run.uid != meta.get("uid"):
            if phase in ("Succeeded", "Failed"):
                return
            if phase == "Running":  # restarted server over a durable store: carry on
                run = _Run(str(meta.get("uid")), "running", started=engine.now())
                self.runs[key] = run
                self._after_start(key, pod, run)
                return
            run = _Run(str(meta.get("uid")), "creating")
            self.runs[key] = run
            self._pulling(pod, node)
            self._write(key, pod, self._pending_status(pod, node, run, "ContainerCreating"))
            engine.after(engine.config.start_seconds, "pod", key)
            return
        if engine.has_timer("pod", key):
            return  # waiting for the next step
        failure = self._failure(pod)
        if run.stage == "creating":
            if failure == "image-pull":
                run.stage = "pull-failed"
                self._pull_failed(pod, node, backoff=False)
                self._write(key, pod, self._pending_status(pod, node, run, "ErrImagePull"))
                engine.after(engine.config.backoff_seconds, "pod", key)
                return
            self._start(key, pod, node, run)
            return
        if run.stage in ("pull-failed", "pull-backoff"):
            if run.stage == "pull-failed":
                run.stage = "pull-backoff"
                self._pull_failed(pod, node, backoff=True)
            self._write(key, pod, self._pending_status(pod, node, run, "ImagePullBackOff"))
            return
        if run.stage == "running":
            policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
            if failure == "crash":
                run.last_exit = {
                    "exitCode": 1,
                    "reason": "Error",
                    "startedAt": run.started,
                    "finishedAt": engine.now(),
                    "containerID": "",
                }
                if policy == "Never":
                    run.stage = "done"
                    self._write(key, pod, self._finished_status(pod, node, run, succeeded=False))
                    return
                run.stage = "backoff"
                delay = min(
                    engine.config.backoff_seconds * (2**run.restarts),
                    engine.config.max_backoff_seconds,
                )
                self._write(key, pod, self._backoff_status(pod, node, run, delay))
                self._crash_backoff(pod, node)
                engine.after(delay, "pod", key)
                return
            if policy in _COMPLETION_POLICIES:
                run.stage = "done"
                self._write(key, pod, self._finished_status(pod, node, run, succeeded=True))
            return
        if run.stage == "backoff":
            run.restarts += 1
            self._start(key, pod, node, run)

    def _start(self, key: str, pod: JSON, node: str, run: _Run) -> None:
        self._started(pod, node, pulled=run.stage == "creating")
        run.stage = "running"
        run.started = self.engine.now()
        self._write(key, pod, self._running_status(pod, node, run))
        self._after_start(key, pod, run)

    def _after_start(self, key: str, pod: JSON, run: _Run) -> None:
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        if self._failure(pod) == "crash" or policy in _COMPLETION_POLICIES:
            self.engine.after(self._run_seconds(pod), "pod", key)

    def kill(self, key: str) -> None:
        """Timer: a deleting Pod's containers have stopped; remove it."""
        pod = self.engine.get(key)
        if pod is None or not pod["metadata"].get("deletionTimestamp"):
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node in self.nodes.failed:
            return
        self.runs.pop(key, None)
        engine = self.engine
        engine.delete(key, {"gracePeriodSeconds": 0})
        left = engine.get(key)
        if (
            left is not None
            and left["metadata"].get("uid") == pod["metadata"].get("uid")
            and left["metadata"].get("deletionGracePeriodSeconds")
        ):
            # a delete of an object already being deleted records only finalizer changes
            # here; kube-apiserver shortens the grace period to the 0 asked for, which
            # completes the deletion unless finalizers hold it: do that in storage
            new = changed_copy(left)
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            engine.write_back(key, new)

    # -- statuses ------------------------------------------------------------------------------

    def _write(self, key: str, pod: JSON, status: JSON) -> None:
        new = changed_copy(pod)
        new["status"] = status
        self.engine.update(key, new, status=True, manager=KUBELET)

    def _base(self, pod: JSON, node: str) -> JSON:
        status = dict(pod.get("status") or {})
        host_ip = self.nodes.host_ip(node)
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}]
        status.setdefault("startTime", self.engine.now())
        status["qosClass"] = qos_class(pod)
        return status

    def _conditions(
        self, pod: JSON, ready: bool, init_done: bool, sandbox: bool, reason: str | None
    ) -> list[JSON]:
        """The five Pod conditions in the kubelet's order (PodScheduled kept as bound)."""
        now = self.engine.now()
        old = list((pod.get("status") or {}).get("conditions") or [])
        spec = pod.get("spec") or {}
        containers = spec.get("containers") or []
        inits = spec.get("initContainers") or []

        def cond(ctype: str, ok: bool, why: str | None, message: str | None) -> JSON:
            prev = next((c for c in old if c.get("type") == ctype), None)
            value = "True" if ok else "False"
            out: JSON = {"type": ctype, "status": value, "lastProbeTime": None}
            out["lastTransitionTime"] = (
                prev["lastTransitionTime"]
                if prev is not None
                and prev.get("status") == value
                and prev.get("lastTransitionTime")
                else now
            )
            if not ok and why:
                out["reason"] = why
            if not ok and message:
                out["message"] = message
            return out

        not_ready: str | None = f"containers with unready status: {_names(containers)}"
        if reason in ("PodCompleted", "PodFailed"):
            not_ready = None
        scheduled = next((c for c in old if c.get("type") == "PodScheduled"), None) or {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now,
        }
        return [
            cond("PodReadyToStartContainers", sandbox, None, None),
            cond(
                "Initialized",
                init_done,
                "ContainersNotInitialized",
                f"containers with incomplete status: {_names(inits)}",
            ),
            cond("Ready", ready, reason or "ContainersNotReady", not_ready),
            cond("ContainersReady", ready, reason or "ContainersNotReady", not_ready),
            scheduled,
        ]

    def _pending_status(self, pod: JSON, node: str, run: _Run, waiting: str) -> JSON:
        spec = pod.get("spec") or {}
        status = self._base(pod, node)
        status["phase"] = "Pending"
        inits = spec.get("initContainers") or []
        pulling = waiting in ("ErrImagePull", "ImagePullBackOff")
        status["conditions"] = self._conditions(pod, False, not inits, pulling, None)
        if pulling:
            status["podIP"] = status.get("podIP") or self.nodes.pod_ip(node)
            status["podIPs"] = [{"ip": status["podIP"]}]
        state: JSON = {"reason": waiting}
        out = []
        for c in spec.get("containers") or []:
            image = str(c.get("image", ""))
            if waiting == "ErrImagePull":
                state = {
                    "reason": "ErrImagePull",
                    "message": f'failed to pull image "{image}": simulated pull failure (kubewerk)',
                }
            elif waiting == "ImagePullBackOff":
                state = {
                    "reason": "ImagePullBackOff",
                    "message": f'Back-off pulling image "{image}"',
                }
            elif inits:
                state = {"reason": "PodInitializing"}
            out.append(
                {
                    "image": image,
                    "imageID": "",
                    "lastState": {},
                    "name": c.get("name", ""),
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"waiting": dict(state)},
                }
            )
        status["containerStatuses"] = out
        if inits:
            status["initContainerStatuses"] = [
                {
                    "image": str(c.get("image", "")),
                    "imageID": "",
                    "lastState": {},
                    "name": c.get("name", ""),
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"waiting": {"reason": "PodInitializing"}},
                }
                for c in inits
            ]
        return status

    def _ips(self, status: JSON, pod: JSON, node: str) -> None:
        if (pod.get("spec") or {}).get("hostNetwork"):
            ip = status["hostIP"]
        else:
            ip = status.get("podIP") or self.nodes.pod_ip(node)
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]

    def _init_statuses(self, pod: JSON, run: _Run) -> list[JSON]:
        now = run.started
        return [
            {
                "containerID": _container_id(run.uid, str(c.get("name")), 0),
                "image": str(c.get("image", "")),
                "imageID": _image_id(str(c.get("image", ""))),
                "lastState": {},
                "name": c.get("name", ""),
                "ready": True,
                "restartCount": 0,
                "started": False,
                "state": {
                    "terminated": {
                        "containerID": _container_id(run.uid, str(c.get("name")), 0),
                        "exitCode": 0,
                        "finishedAt": now,
                        "reason": "Completed",
                        "startedAt": now,
                    }
                },
            }
            for c in (pod.get("spec") or {}).get("initContainers") or []
        ]

    def _container(self, c: JSON, run: _Run, state: JSON, ready: bool, started: bool) -> JSON:
        name = str(c.get("name", ""))
        last: JSON = {}
        if run.last_exit is not None and run.restarts:
            last = {
                "terminated": {
                    **run.last_exit,
                    "containerID": _container_id(run.uid, name, run.restarts - 1),
                }
            }
        out: JSON = {
            "containerID": _container_id(run.uid, name, run.restarts),
            "image": str(c.get("image", "")),
            "imageID": _image_id(str(c.get("image", ""))),
            "lastState": last,
            "name": name,
            "ready": ready,
            "restartCount": run.restarts,
            "started": started,
            "state": state,
        }
        return out

    def _running_status(self, pod: JSON, node: str, run: _Run) -> JSON:
        spec = pod.get("spec") or {}
        status = self._base(pod, node)
        status["phase"] = "Running"
        self._ips(status, pod, node)
        status["conditions"] = self._conditions(pod, True, True, True, None)
        status["containerStatuses"] = [
            self._container(c, run, {"running": {"startedAt": run.started}}, True, True)
            for c in spec.get("containers") or []
        ]
        if spec.get("initContainers"):
            status["initContainerStatuses"] = self._init_statuses(pod, run)
        return status

    def _backoff_status(self, pod: JSON, node: str, run: _Run, delay: float) -> JSON:
        spec = pod.get("spec") or {}
        meta = pod["metadata"]
        status = self._base(pod, node)
        status["phase"] = "Running"
        self._ips(status, pod, node)
        status["conditions"] = self._conditions(pod, False, True, True, None)
        # the exit just seen is the last state shown while waiting to restart
        crashed = _Run(run.uid, run.stage, run.restarts + 1, run.started, run.last_exit)
        status["containerStatuses"] = [
            {
                **self._container(
                    c,
                    crashed,
                    {
                        "waiting": {
                            "reason": "CrashLoopBackOff",
                            "message": f"back-off {_go_duration(delay)} restarting failed "
                            f"container={c.get('name', '')} pod={meta.get('name', '')}_"
                            f"{meta.get('namespace', '')}({meta.get('uid', '')})",
                        }
                    },
                    False,
                    False,
                ),
                "containerID": _container_id(run.uid, str(c.get("name", "")), run.restarts),
                "restartCount": run.restarts,
            }
            for c in spec.get("containers") or []
        ]
        return status

    def _finished_status(self, pod: JSON, node: str, run: _Run, succeeded: bool) -> JSON:
        spec = pod.get("spec") or {}
        status = self._base(pod, node)
        status["phase"] = "Succeeded" if succeeded else "Failed"
        self._ips(status, pod, node)
        status["conditions"] = self._conditions(
            pod, False, True, False, "PodCompleted" if succeeded else "PodFailed"
        )
        now = self.engine.now()
        status["containerStatuses"] = [
            self._container(
                c,
                run,
                {
                    "terminated": {
                        "containerID": _container_id(run.uid, str(c.get("name", "")), run.restarts),
                        "exitCode": 0 if succeeded else 1,
                        "finishedAt": now,
                        "reason": "Completed" if succeeded else "Error",
                        "startedAt": run.started,
                    }
                },
                False,
                False,
            )
            for c in spec.get("containers") or []
        ]
        if spec.get("initContainers"):
            status["initContainerStatuses"] = self._init_statuses(pod, run)
        return status


def _go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` for the back-off (``10s``, ``1m20s``, ``5m0s``,
    ``10ms``)."""
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:g}ms"
    whole = int(seconds)
    frac = seconds - whole
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    sec_text = f"{secs + frac:g}s"
    if hours:
        return f"{hours}h{minutes}m{sec_text}"
    if minutes:
        return f"{minutes}m{sec_text}"
    return sec_text


def _must_pull(container: JSON, present: bool) -> bool:
    """``shouldPullImage``: Always pulls, Never does not, IfNotPresent when absent."""
    policy = container.get("imagePullPolicy") or "IfNotPresent"
    if policy == "Always":
        return True
    if policy == "Never":
        return False
    return not present


def _image_size(image: str) -> int:
    """A stable made-up size for ``image`` (tens of megabytes)."""
    return 10_000_000 + int(hashlib.sha256(image.encode()).hexdigest()[:7], 16) % 90_000_000
