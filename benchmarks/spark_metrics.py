"""Spark's own metrics of each statement a report sends, from the Connect server's UI.

The Spark Connect server is the driver of one long-running application; with its
UI on (``spark.ui.enabled=true`` and a port, :func:`ui_conf`), the monitoring REST
API of that application (``/api/v1/applications/<id>/jobs`` and ``/stages``)
gives every job with its stages and its *job tags*, and every stage attempt with
its task metrics. The profiled report (bench_spark.SPARK_STATEMENTS) adds one tag
per statement to its Spark Connect session (``session.addTag``) while the
statement runs, so each statement's jobs are those carrying its tag and its
stages the stages of those jobs; :func:`by_tag` sums them.

Per statement: jobs, stages run (skipped ones, whose shuffle output is reused,
not counted), tasks, input bytes (files read), shuffle write and read bytes,
spill (memory and disk), and task time (executors' run time summed over tasks)
and its CPU part.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

#: Kept in the UI's status store (the defaults, 1,000 each, drop a long run's first jobs).
RETAINED = 100_000


def ui_conf(port: int) -> str:
    """The Connect server's extra ``--conf`` options (start.sh ``CONNECT_EXTRA_CONF``)."""
    return " ".join(
        f"--conf {k}={v}"
        for k, v in (
            ("spark.ui.enabled", "true"),
            ("spark.ui.port", port),
            ("spark.ui.retainedJobs", RETAINED),
            ("spark.ui.retainedStages", RETAINED),
            ("spark.sql.ui.retainedExecutions", RETAINED),
        )
    )


@dataclass(frozen=True)
class StageCost:
    """What Spark measured for a set of jobs (one statement's, or none)."""

    jobs: int = 0
    stages: int = 0
    skipped: int = 0
    tasks: int = 0
    input_bytes: int = 0
    shuffle_write_bytes: int = 0
    shuffle_read_bytes: int = 0
    spill_memory_bytes: int = 0
    spill_disk_bytes: int = 0
    task_seconds: float = 0.0
    cpu_seconds: float = 0.0

    def __add__(self, other: StageCost) -> StageCost:
        return StageCost(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


def stage_cost(stage: Mapping[str, Any]) -> StageCost:
    """One stage attempt of ``/stages`` (``executorRunTime`` in ms, CPU time in ns)."""
    if stage.get("status") == "SKIPPED":
        return StageCost(skipped=1)
    return StageCost(
        stages=1,
        tasks=int(stage.get("numCompleteTasks", 0)) + int(stage.get("numFailedTasks", 0)),
        input_bytes=int(stage.get("inputBytes", 0)),
        shuffle_write_bytes=int(stage.get("shuffleWriteBytes", 0)),
        shuffle_read_bytes=int(stage.get("shuffleReadBytes", 0)),
        spill_memory_bytes=int(stage.get("memoryBytesSpilled", 0)),
        spill_disk_bytes=int(stage.get("diskBytesSpilled", 0)),
        task_seconds=int(stage.get("executorRunTime", 0)) / 1e3,
        cpu_seconds=int(stage.get("executorCpuTime", 0)) / 1e9,
    )


def by_tag(
    jobs: Iterable[Mapping[str, Any]], stages: Iterable[Mapping[str, Any]], tags: Iterable[str]
) -> dict[str, StageCost]:
    """Each tag's cost: its jobs, and each attempt of their stages counted once.

    A stage listed by two jobs of the same tag (a reused exchange) counts once; a
    stage Spark skipped (its shuffle files reused) counts as skipped, with no
    metrics. A tag with no job (a statement Spark answered without running
    anything: a view, a drop) costs nothing."""
    attempts: dict[int, list[Mapping[str, Any]]] = {}
    for stage in stages:
        attempts.setdefault(int(stage["stageId"]), []).append(stage)
    out: dict[str, StageCost] = {}
    for tag in tags:
        mine = [j for j in jobs if any(carries(t, tag) for t in j.get("jobTags", ()))]
        ids = sorted({int(s) for j in mine for s in j.get("stageIds", ())})
        cost = StageCost(jobs=len(mine))
        for sid in ids:
            for stage in attempts.get(sid, [{"status": "SKIPPED"}]):
                cost = cost + stage_cost(stage)
        out[tag] = cost
    return out


def carries(job_tag: str, tag: str) -> bool:
    """Whether a job's tag is the client's ``tag``: Spark Connect gives a job the
    session's tags as ``SparkConnect_SessionTag_User_<user>_Session_<id>_Tag_<tag>``."""
    return job_tag == tag or job_tag.endswith(f"_Tag_{tag}")


def get_json(url: str, timeout: float = 30.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


class SparkUI:
    """The REST API of the one application a Spark Connect server runs."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/api/v1/applications"

    def app(self) -> str:
        return str(get_json(self.base)[0]["id"])

    def jobs(self) -> list[dict[str, Any]]:
        return list(get_json(f"{self.base}/{self.app()}/jobs"))

    def stages(self) -> list[dict[str, Any]]:
        return list(get_json(f"{self.base}/{self.app()}/stages"))

    def settled(self, timeout: float = 60.0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Jobs and stages once no job is running and two reads agree (the status
        store is filled by a listener, a little after each statement returns)."""
        deadline, last = time.monotonic() + timeout, None
        while True:
            jobs, stages = self.jobs(), self.stages()
            key = (len(jobs), len(stages), sum(s.get("numCompleteTasks", 0) for s in stages))
            running = any(j.get("status") == "RUNNING" for j in jobs)
            if (not running and key == last) or time.monotonic() > deadline:
                return jobs, stages
            last = key
            time.sleep(1.0)


def mib(n: float) -> str:
    """Bytes as MiB for a table (one decimal below 10 MiB)."""
    v = n / 2**20
    return f"{v:,.1f}" if v < 10 else f"{v:,.0f}"
