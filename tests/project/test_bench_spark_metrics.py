"""benchmarks/spark_metrics.py: a statement's Spark metrics from the REST API's jobs
and stages, on a sample written by hand in the shape Spark 4's ``/jobs`` and
``/stages`` return (only the fields read, plus a few that must be ignored)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from spark_metrics import StageCost, by_tag, stage_cost, ui_conf

JOBS = json.loads(
    """[
 {"jobId": 3, "status": "SUCCEEDED", "stageIds": [5, 6],
  "jobTags": ["SparkConnect_SessionTag_User__Session_x_Tag_abeval-1M-9-2",
              "SparkConnect_OperationTag_User__Session_x_Operation_y", "spark-session-x"]},
 {"jobId": 2, "status": "SUCCEEDED", "stageIds": [3, 4], "jobTags": ["abeval-1M-9-2"]},
 {"jobId": 1, "status": "SUCCEEDED", "stageIds": [2],
  "jobTags": ["SparkConnect_SessionTag_User__Session_x_Tag_abeval-1M-9-0"]},
 {"jobId": 4, "status": "SUCCEEDED", "stageIds": [1],
  "jobTags": ["SparkConnect_SessionTag_User__Session_x_Tag_abeval-1M-9-22"]},
 {"jobId": 0, "status": "SUCCEEDED", "stageIds": [0, 1], "jobTags": []}
]"""
)
STAGES = json.loads(
    """[
 {"status": "COMPLETE", "stageId": 6, "attemptId": 0, "numCompleteTasks": 4,
  "numFailedTasks": 0, "executorRunTime": 1500, "executorCpuTime": 900000000,
  "inputBytes": 0, "outputBytes": 77, "shuffleReadBytes": 2048, "shuffleWriteBytes": 0,
  "memoryBytesSpilled": 0, "diskBytesSpilled": 0},
 {"status": "SKIPPED", "stageId": 5, "attemptId": 0, "numCompleteTasks": 0,
  "executorRunTime": 0, "shuffleWriteBytes": 0},
 {"status": "COMPLETE", "stageId": 4, "attemptId": 1, "numCompleteTasks": 2,
  "numFailedTasks": 0, "executorRunTime": 250, "executorCpuTime": 100000000,
  "inputBytes": 0, "shuffleReadBytes": 1024, "shuffleWriteBytes": 0,
  "memoryBytesSpilled": 4096, "diskBytesSpilled": 1024},
 {"status": "FAILED", "stageId": 4, "attemptId": 0, "numCompleteTasks": 1,
  "numFailedTasks": 1, "executorRunTime": 100, "executorCpuTime": 50000000,
  "inputBytes": 0, "shuffleReadBytes": 512, "shuffleWriteBytes": 0,
  "memoryBytesSpilled": 0, "diskBytesSpilled": 0},
 {"status": "COMPLETE", "stageId": 3, "attemptId": 0, "numCompleteTasks": 3,
  "numFailedTasks": 0, "executorRunTime": 3000, "executorCpuTime": 2500000000,
  "inputBytes": 10485760, "shuffleReadBytes": 0, "shuffleWriteBytes": 2048,
  "memoryBytesSpilled": 0, "diskBytesSpilled": 0},
 {"status": "COMPLETE", "stageId": 2, "attemptId": 0, "numCompleteTasks": 1,
  "numFailedTasks": 0, "executorRunTime": 40, "executorCpuTime": 30000000,
  "inputBytes": 100, "shuffleReadBytes": 0, "shuffleWriteBytes": 0,
  "memoryBytesSpilled": 0, "diskBytesSpilled": 0},
 {"status": "COMPLETE", "stageId": 1, "attemptId": 0, "numCompleteTasks": 9,
  "executorRunTime": 99999, "shuffleWriteBytes": 99999},
 {"status": "COMPLETE", "stageId": 0, "attemptId": 0, "numCompleteTasks": 9,
  "executorRunTime": 99999, "shuffleWriteBytes": 99999}
]"""
)


def test_a_statements_jobs_and_stage_attempts_are_summed() -> None:
    cost = by_tag(JOBS, STAGES, ["abeval-1M-9-2"])["abeval-1M-9-2"]
    # Jobs 3 and 2; stages 3, 4 (two attempts: the failed one ran too), 6 run, 5 skipped.
    assert cost == StageCost(
        jobs=2,
        stages=4,
        skipped=1,
        tasks=3 + (2 + 0) + (1 + 1) + 4,
        input_bytes=10485760,
        shuffle_write_bytes=2048,
        shuffle_read_bytes=1024 + 512 + 2048,
        spill_memory_bytes=4096,
        spill_disk_bytes=1024,
        task_seconds=3.0 + 0.25 + 0.1 + 1.5,
        cpu_seconds=2.5 + 0.1 + 0.05 + 0.9,
    )


def test_each_tag_counts_only_its_own_jobs() -> None:
    costs = by_tag(JOBS, STAGES, ["abeval-1M-9-0", "abeval-1M-9-1"])
    assert costs["abeval-1M-9-0"] == StageCost(
        jobs=1, stages=1, tasks=1, input_bytes=100, task_seconds=0.04, cpu_seconds=0.03
    )
    # A statement Spark answered without a job (a view, a drop) costs nothing.
    assert costs["abeval-1M-9-1"] == StageCost()


def test_a_stage_listed_by_two_jobs_of_one_tag_counts_once() -> None:
    jobs = [
        {"jobId": 1, "stageIds": [7, 8], "jobTags": ["t"]},
        {"jobId": 2, "stageIds": [8, 9], "jobTags": ["t"]},
    ]
    stages = [
        {"status": "COMPLETE", "stageId": i, "numCompleteTasks": 1, "shuffleWriteBytes": 10 * i}
        for i in (7, 8, 9)
    ]
    cost = by_tag(jobs, stages, ["t"])["t"]
    assert (cost.jobs, cost.stages, cost.shuffle_write_bytes) == (2, 3, 70 + 80 + 90)


def test_a_stage_the_store_no_longer_holds_counts_as_skipped() -> None:
    cost = by_tag([{"stageIds": [42], "jobTags": ["t"]}], [], ["t"])["t"]
    assert (cost.jobs, cost.stages, cost.skipped) == (1, 0, 1)


def test_a_skipped_stage_has_no_metrics() -> None:
    assert stage_cost({"status": "SKIPPED", "shuffleWriteBytes": 5}) == StageCost(skipped=1)


def test_the_ui_options_turn_the_ui_on_at_the_port() -> None:
    conf = ui_conf(4321).split()
    assert conf[::2] == ["--conf"] * (len(conf) // 2)
    options = dict(o.split("=", 1) for o in conf[1::2])
    assert options["spark.ui.enabled"] == "true" and options["spark.ui.port"] == "4321"


def test_the_projection_extends_a_line_and_a_power_law() -> None:
    from spark_projection import linear, power

    assert linear(1e6, 2.0, 3e6, 6.0, 5e6) == 10.0  # slope 2 per million
    assert linear(1e6, 6.0, 3e6, 2.0, 9e6) == 0.0  # never below nothing
    assert power(1.0, 1.0, 2.0, 4.0, 4.0) == pytest.approx(16.0)  # y = x²
    assert power(1.0, 0.0, 2.0, 4.0, 4.0) == 8.0  # no exponent: proportional
