"""Printers of ``batch/v1``: Job and CronJob (kube's ``printJob``, ``printCronJob``)."""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.printers.core import AGE, CONTAINERS, IMAGES, SELECTOR
from kubewerk.apiserver.printers.format import (
    NONE,
    age,
    bool_ptr,
    container_cells,
    deleting,
    format_label_selector,
    obj_int,
    obj_list,
    obj_map,
    obj_str,
    since,
)
from kubewerk.apiserver.printers.printer import JSON, Printer
from kubewerk.apiserver.strategy import PrinterColumn
from kubewerk.core.meta import human_duration, parse_time

JOB_COLUMNS: Final = (
    PrinterColumn("Status", "string", "", "Status of the job."),
    PrinterColumn("Completions", "string", ""),
    PrinterColumn("Duration", "string", "", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
)


def _job_condition(conditions: Any, type_: str) -> bool:
    """``hasJobCondition``: the first condition of ``type_`` is True."""
    for cond in obj_list(conditions):
        cond = obj_map(cond)
        if cond.get("type") == type_:
            return cond.get("status") == "True"
    return False


def job_status(job: JSON) -> str:
    """The STATUS cell: Complete, Failed, Terminating, Suspended, FailureTarget or
    Running, in that precedence."""
    conditions = obj_map(job.get("status")).get("conditions")
    if _job_condition(conditions, "Complete"):
        return "Complete"
    if _job_condition(conditions, "Failed"):
        return "Failed"
    if deleting(job):
        return "Terminating"
    if _job_condition(conditions, "Suspended"):
        return "Suspended"
    if _job_condition(conditions, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def job_completions(job: JSON) -> str:
    """The COMPLETIONS cell: ``succeeded/completions``; without completions
    ``succeeded/1``, or ``succeeded/1 of parallelism`` when parallelism exceeds one."""
    spec = obj_map(job.get("spec"))
    succeeded = obj_int(obj_map(job.get("status")).get("succeeded"))
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        return f"{succeeded}/{completions}"
    parallelism = obj_int(spec.get("parallelism"))
    if parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def job_duration(job: JSON, now: float) -> str:
    """The DURATION cell: from ``startTime`` to ``completionTime`` (or to now while
    running); empty before the job starts."""
    status = obj_map(job.get("status"))
    start = status.get("startTime")
    start_ts = parse_time(start) if isinstance(start, str) and start else None
    if start_ts is None:
        return ""
    end = status.get("completionTime")
    end_ts = parse_time(end) if isinstance(end, str) and end else None
    return human_duration((now if end_ts is None else end_ts) - start_ts)


def job_cells(job: JSON, now: float) -> list[Any]:
    """``printJob`` (wide): STATUS, COMPLETIONS, DURATION, AGE, CONTAINERS, IMAGES,
    SELECTOR."""
    spec = obj_map(job.get("spec"))
    names, images = container_cells(
        obj_map(obj_map(spec.get("template")).get("spec")).get("containers")
    )
    return [
        job_status(job),
        job_completions(job),
        job_duration(job, now),
        age(job, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


CRON_JOB_COLUMNS: Final = (
    PrinterColumn("Schedule", "string", ""),
    PrinterColumn("Timezone", "string", ""),
    PrinterColumn("Suspend", "boolean", ""),
    PrinterColumn("Active", "integer", ""),
    PrinterColumn("Last Schedule", "string", ""),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
)


def cron_job_cells(cron: JSON, now: float) -> list[Any]:
    """``printCronJob`` (wide): SCHEDULE, TIMEZONE, SUSPEND, ACTIVE, LAST SCHEDULE, AGE,
    CONTAINERS, IMAGES, SELECTOR (of the job template)."""
    spec = obj_map(cron.get("spec"))
    status = obj_map(cron.get("status"))
    last = status.get("lastScheduleTime")
    time_zone = spec.get("timeZone")
    job_spec = obj_map(obj_map(spec.get("jobTemplate")).get("spec"))
    names, images = container_cells(
        obj_map(obj_map(job_spec.get("template")).get("spec")).get("containers")
    )
    return [
        obj_str(spec.get("schedule")),
        time_zone if isinstance(time_zone, str) else NONE,
        bool_ptr(spec.get("suspend")),
        len(obj_list(status.get("active"))),
        since(last, now) if last is not None else NONE,
        age(cron, now),
        names,
        images,
        format_label_selector(job_spec.get("selector")),
    ]


def printers() -> dict[str, Printer]:
    """The ``batch/v1`` kinds' printers."""
    return {
        "batch/v1/Job": Printer.of(JOB_COLUMNS, job_cells),
        "batch/v1/CronJob": Printer.of(CRON_JOB_COLUMNS, cron_job_cells),
    }
