"""Jobs and CronJobs.

Job: keeps ``min(parallelism, completions - succeeded)`` Pods active (``parallelism``
alone without ``completions``, until one succeeds); Indexed Jobs name Pods
``<job>-<index>-`` with the ``batch.kubernetes.io/job-completion-index`` annotation and
label. Status ``active``, ``ready``, ``terminating``, ``succeeded``, ``failed``,
``startTime``, ``completionTime``, ``uncountedTerminatedPods`` and, as Kubernetes 1.31+,
``SuccessCriteriaMet`` then ``Complete`` (reason ``CompletionsReached``, "Reached
expected number of succeeded pods"), or ``FailureTarget`` then ``Failed`` (reason
``BackoffLimitExceeded``, "Job has reached the specified backoff limit"; or
``DeadlineExceeded``, "Job was active longer than specified deadline"). ``suspend``
removes active Pods with the ``Suspended`` condition. Finished Pods are counted where
they stand (no ``batch.kubernetes.io/job-tracking`` finalizer); ``ttlSecondsAfterFinished``
deletes the finished Job.

CronJob: on each scheduled time of ``spec.schedule`` (``cron``, in ``spec.timeZone``), by
the simulation's clock, creates ``<cronjob>-<minutes since epoch>`` from
``jobTemplate`` (annotation ``batch.kubernetes.io/cronjob-scheduled-timestamp``) unless
suspended, past ``startingDeadlineSeconds``, or held back by ``concurrencyPolicy``
(Forbid skips, Replace deletes the running Jobs first). Status ``active``,
``lastScheduleTime``, ``lastSuccessfulTime``; finished Jobs beyond
``successfulJobsHistoryLimit`` (3) and ``failedJobsHistoryLimit`` (1) are deleted,
oldest first.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from kubewerk.apiserver.simulate import naming
from kubewerk.apiserver.simulate.clock import parse_rfc3339, rfc3339
from kubewerk.apiserver.simulate.cron import CronError, parse_schedule, zone_named
from kubewerk.apiserver.simulate.engine import (
    Engine,
    changed_copy,
    get_condition,
    is_pod_ready,
    owner_ref,
    set_condition,
    split_key,
)
from kubewerk.apiserver.simulate.workloads import POD_PREFIX, pod_from_template
from kubewerk.core.jsoncopy import copy_json

JSON = dict[str, Any]

JOB_PREFIX = "/batch/jobs/"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
_MISSED_LIMIT = 100


def _int(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def job_finished(job: JSON) -> str | None:
    """``Complete`` or ``Failed`` when the Job has that condition True."""
    for ctype in ("Complete", "Failed"):
        cond = get_condition(job, ctype)
        if cond is not None and cond.get("status") == "True":
            return ctype
    return None


def want_active(parallelism: int, completions: int | None, succeeded: int, active: int) -> int:
    """How many Pods a Job keeps running (``syncJob``'s wantActive)."""
    if completions is None:
        return active if succeeded > 0 else parallelism
    return max(0, min(parallelism, completions - succeeded))


class Jobs:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.events = engine.events.recorder("job-controller")
        engine.handlers["job"] = self.reconcile

    def _delete_pod(self, job: JSON, ns: str, pod: JSON) -> None:
        name = pod["metadata"]["name"]
        if self.engine.delete(f"{POD_PREFIX}{ns}/{name}"):
            self.events.normal(job, "SuccessfulDelete", f"Deleted pod: {name}")

    def reconcile(self, key: str) -> None:
        engine = self.engine
        job = engine.get(key)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        ns, _name = split_key(key)
        spec = job.get("spec") or {}
        pods = [p for _, p in engine.owned(job, POD_PREFIX)]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        succeeded = [p for p in live if (p.get("status") or {}).get("phase") == "Succeeded"]
        failed = [p for p in pods if (p.get("status") or {}).get("phase") == "Failed"]
        active = [
            p for p in live if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        finished = job_finished(job)
        if finished:
            self._ttl(key, job)
            return
        parallelism = _int(spec.get("parallelism"), 1) or 0
        completions = _int(spec.get("completions"), None)
        backoff_limit = _int(spec.get("backoffLimit"), 6) or 0
        indexed = spec.get("completionMode") == "Indexed"
        now_dt = engine.clock.now()
        now = rfc3339(now_dt)
        status = copy_json(job.get("status") or {})
        conditions = list(status.get("conditions") or [])
        succeeded_indexes = {
            int((p["metadata"].get("annotations") or {}).get(COMPLETION_INDEX, -1))
            for p in succeeded
        }
        done_count = len(succeeded_indexes) if indexed else len(succeeded)
        failure: tuple[str, str] | None = None
        if len(failed) > backoff_limit:
            failure = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        deadline = _int(spec.get("activeDeadlineSeconds"), None)
        started = parse_rfc3339(str(status.get("startTime") or ""))
        if deadline is not None and started is not None:
            if (now_dt - started).total_seconds() >= deadline:
                failure = ("DeadlineExceeded", "Job was active longer than specified deadline")
            else:
                engine.after(deadline - (now_dt - started).total_seconds(), "job", key)
        complete = (
            done_count >= completions
            if completions is not None
            else (bool(succeeded) and not active)
        )
        suspended = bool(spec.get("suspend"))
        if failure is not None or complete or suspended:
            for pod in active:
                self._delete_pod(job, ns, pod)
            active = []
        else:
            want = want_active(parallelism, completions, done_count, len(active))
            if len(active) < want:
                self._start(
                    job, indexed, completions, succeeded_indexes, active, want - len(active)
                )
            elif len(active) > want:
                for pod in active[want:]:
                    self._delete_pod(job, ns, pod)
        pods_now = [p for _, p in engine.owned(job, POD_PREFIX)]
        active_now = [
            p
            for p in pods_now
            if not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        if not suspended and "startTime" not in status:
            status["startTime"] = now
        if suspended:
            conditions = set_condition(
                conditions,
                "Suspended",
                "True",
                "JobSuspended",
                "Job suspended",
                now,
                probe_times=True,
            )
        elif get_condition(job, "Suspended") is not None:
            conditions = set_condition(
                conditions,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                now,
                probe_times=True,
            )
        if failure is not None:
            conditions = set_condition(
                conditions, "FailureTarget", "True", failure[0], failure[1], now, probe_times=True
            )
            conditions = set_condition(
                conditions, "Failed", "True", failure[0], failure[1], now, probe_times=True
            )
        elif complete:
            message = "Reached expected number of succeeded pods"
            conditions = set_condition(
                conditions,
                "SuccessCriteriaMet",
                "True",
                "CompletionsReached",
                message,
                now,
                probe_times=True,
            )
            conditions = set_condition(
                conditions, "Complete", "True", "CompletionsReached", message, now, probe_times=True
            )
            status["completionTime"] = now
        status["active"] = len(active_now)
        status["ready"] = sum(1 for p in active_now if is_pod_ready(p))
        status["terminating"] = sum(
            1
            for p in pods_now
            if p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        )
        status["succeeded"] = done_count
        status["failed"] = len(failed)
        if indexed and succeeded_indexes:
            status["completedIndexes"] = _index_ranges(
                sorted(i for i in succeeded_indexes if i >= 0)
            )
        for field in ("active", "succeeded", "failed"):
            if status[field] == 0:
                del status[field]
        status["uncountedTerminatedPods"] = {}
        if conditions:
            status["conditions"] = conditions
        if status != (job.get("status") or {}):
            new = changed_copy(job)
            new["status"] = status
            if engine.update(key, new, status=True) is not None:
                # the job controller's events for the Job's end
                if failure is not None:
                    self.events.warning(job, failure[0], failure[1])
                elif complete:
                    self.events.normal(job, "Completed", "Job completed")
        if failure is not None or complete:
            refreshed = engine.get(key)
            if refreshed is not None:
                self._ttl(key, refreshed)

    def _start(
        self,
        job: JSON,
        indexed: bool,
        completions: int | None,
        done: set[int],
        active: list[JSON],
        count: int,
    ) -> None:
        engine = self.engine
        ns = job["metadata"].get("namespace", "")
        template = (job.get("spec") or {}).get("template") or {}
        busy = {
            int((p["metadata"].get("annotations") or {}).get(COMPLETION_INDEX, -1)) for p in active
        }
        free = [i for i in range(completions or 0) if i not in done and i not in busy]
        for n in range(count):
            body = pod_from_template(template, job, "Job", "batch/v1")
            if indexed:
                if n >= len(free):
                    break
                index = free[n]
                body["metadata"]["generateName"] = f"{job['metadata']['name']}-{index}-"
                body["metadata"].setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
                body["metadata"].setdefault("labels", {})[COMPLETION_INDEX] = str(index)
                body["spec"]["hostname"] = f"{job['metadata']['name']}-{index}"
            made = engine.create("", "pods", ns, body)
            if made is None:
                break
            self.events.normal(job, "SuccessfulCreate", f"Created pod: {made['metadata']['name']}")

    def _ttl(self, key: str, job: JSON) -> None:
        ttl = _int((job.get("spec") or {}).get("ttlSecondsAfterFinished"), None)
        if ttl is None:
            return
        finished_at = parse_rfc3339(
            str((job.get("status") or {}).get("completionTime") or "")
        ) or parse_rfc3339(
            str((get_condition(job, "Failed") or {}).get("lastTransitionTime") or "")
        )
        if finished_at is None:
            return
        left = ttl - (self.engine.clock.now() - finished_at).total_seconds()
        if left <= 0:
            self.engine.delete(key, {"propagationPolicy": "Foreground"})
        else:
            self.engine.after(left, "job", key)


def _index_ranges(indexes: list[int]) -> str:
    """``completedIndexes``: ``1,3-5,7``."""
    out: list[str] = []
    start = prev = None
    for i in indexes:
        if start is None:
            start = prev = i
        elif prev is not None and i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)


class CronJobs:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.first_seen: dict[str, dt.datetime] = {}
        """CronJob uid -> when the controller first saw it (by its clock)"""
        self.events = engine.events.recorder("cronjob-controller")
        engine.handlers["cronjob"] = self.reconcile

    def _delete_job(self, cj: JSON, ns: str, job: JSON) -> None:
        name = job["metadata"]["name"]
        if self.engine.delete(f"{JOB_PREFIX}{ns}/{name}", {"propagationPolicy": "Background"}):
            self.events.normal(cj, "SuccessfulDelete", f"Deleted job {name}")

    def reconcile(self, key: str) -> None:
        engine = self.engine
        cj = engine.get(key)
        if cj is None or cj["metadata"].get("deletionTimestamp"):
            return
        ns, name = split_key(key)
        spec = cj.get("spec") or {}
        try:
            schedule = parse_schedule(str(spec.get("schedule") or ""))
            zone = zone_named(str(spec["timeZone"])) if spec.get("timeZone") else None
        except CronError:
            return  # refused by validation; nothing to run
        now = engine.clock.now()
        jobs = [j for _, j in engine.owned(cj, JOB_PREFIX)]
        status = copy_json(cj.get("status") or {})
        running = [
            j for j in jobs if not job_finished(j) and not j["metadata"].get("deletionTimestamp")
        ]
        # a Job it listed as active has finished (syncCronJob)
        listed = {
            str(ref.get("name")) for ref in status.get("active") or [] if isinstance(ref, dict)
        }
        for job in jobs:
            finished = job_finished(job)
            if finished and job["metadata"]["name"] in listed:
                self.events.normal(
                    cj,
                    "SawCompletedJob",
                    f"Saw completed job: {job['metadata']['name']}, condition: {finished}",
                )
        # history and last success
        for job in jobs:
            if job_finished(job) == "Complete":
                done = str((job.get("status") or {}).get("completionTime") or "")
                if done and done > str(status.get("lastSuccessfulTime") or ""):
                    status["lastSuccessfulTime"] = done
        self._history(cj, ns, jobs, spec)
        first_seen = self.first_seen.setdefault(str(cj["metadata"].get("uid")), now)
        created = parse_rfc3339(str(cj["metadata"].get("creationTimestamp") or ""))
        if created is None or created > now:
            created = first_seen  # a clock behind the server's (a ManualClock): from first sight
        earliest = parse_rfc3339(str(status.get("lastScheduleTime") or "")) or created
        missed = schedule.times_between(earliest, now, zone, limit=_MISSED_LIMIT + 1)
        if missed and not spec.get("suspend"):
            scheduled = missed[-1]
            deadline = _int(spec.get("startingDeadlineSeconds"), None)
            too_late = deadline is not None and (now - scheduled).total_seconds() > deadline
            policy = spec.get("concurrencyPolicy") or "Allow"
            if not too_late and not (policy == "Forbid" and running):
                if policy == "Replace":
                    for job in running:
                        self._delete_job(cj, ns, job)
                    running = []
                made = self._create_job(cj, scheduled, zone)
                if made is not None:
                    self.events.normal(
                        cj, "SuccessfulCreate", f"Created job {made['metadata']['name']}"
                    )
                    running.append(made)
                    status["lastScheduleTime"] = rfc3339(scheduled)
                elif (
                    engine.get(f"{JOB_PREFIX}{ns}/{naming.cronjob_job_name(name, scheduled)}")
                    is not None
                ):
                    status["lastScheduleTime"] = rfc3339(scheduled)
        active = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": j["metadata"]["name"],
                "namespace": ns,
                "resourceVersion": j["metadata"].get("resourceVersion"),
                "uid": j["metadata"].get("uid"),
            }
            for j in sorted(running, key=lambda j: j["metadata"]["name"])
        ]
        if active:
            status["active"] = active
        else:
            status.pop("active", None)
        if status.get("lastScheduleTime") is None:
            status.pop("lastScheduleTime", None)
        if status != (cj.get("status") or {}):
            new = changed_copy(cj)
            new["status"] = status
            engine.update(key, new, status=True)
        nxt = schedule.next_after(now, zone)
        if nxt is not None:
            engine.after((nxt - now).total_seconds(), "cronjob", key)

    def _create_job(self, cj: JSON, scheduled: dt.datetime, zone: dt.tzinfo | None) -> JSON | None:
        template = (cj.get("spec") or {}).get("jobTemplate") or {}
        tmeta = template.get("metadata") or {}
        ns = cj["metadata"].get("namespace", "")
        meta: JSON = {
            "name": naming.cronjob_job_name(cj["metadata"]["name"], scheduled),
            "namespace": ns,
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": {
                **(tmeta.get("annotations") or {}),
                SCHEDULED_TIMESTAMP: scheduled.astimezone(zone or dt.UTC)
                .isoformat()
                .replace("+00:00", "Z"),
            },
            "ownerReferences": [owner_ref(cj, "batch/v1", "CronJob")],
        }
        if not meta["labels"]:
            del meta["labels"]
        return self.engine.create(
            "batch",
            "jobs",
            ns,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": meta,
                "spec": copy_json(template.get("spec") or {}),
            },
        )

    def _history(self, cj: JSON, ns: str, jobs: list[JSON], spec: JSON) -> None:
        for kind, limit_field, default in (
            ("Complete", "successfulJobsHistoryLimit", 3),
            ("Failed", "failedJobsHistoryLimit", 1),
        ):
            limit = _int(spec.get(limit_field), default) or 0
            finished = sorted(
                (
                    j
                    for j in jobs
                    if job_finished(j) == kind and not j["metadata"].get("deletionTimestamp")
                ),
                key=lambda j: (
                    str((j.get("status") or {}).get("startTime") or ""),
                    j["metadata"]["name"],
                ),
            )
            for job in finished[: max(0, len(finished) - limit)]:
                self._delete_job(cj, ns, job)
