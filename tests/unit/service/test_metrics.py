"""The service's metrics after a known sequence: names, labels, and limit hits
counted once per kind from the final message (its status and its limits)."""

from __future__ import annotations

from prometheus_client import generate_latest

from lmc_runtime.service.metrics import ServiceMetrics, limit_kinds


def _value(metrics: ServiceMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_metric_names_and_labels_after_a_known_sequence() -> None:
    states = ["idle", "busy", "pooled", "idle"]
    metrics = ServiceMetrics(lambda: states)
    metrics.session_created()
    metrics.session_created()
    metrics.execution_finished("python", "ok", 0.02)
    metrics.execution_finished("python", "memory_limit", 1.5, limits=["memory_limit"])
    metrics.execution_finished(
        "python", "process_limit", 2.0, limits=["process_limit", "memory_limit"]
    )
    metrics.execution_finished("shell", "ok", 0.3, truncated=True)
    metrics.execution_finished("r", "timeout", 3.0)
    metrics.execution_finished("r", None, 0.1)

    assert _value(metrics, "lmc_sessions_created_total") == 2
    assert _value(metrics, "lmc_sessions", state="idle") == 2
    assert _value(metrics, "lmc_sessions", state="closing") == 0
    assert _value(metrics, "lmc_executions_total", language="python", status="ok") == 1
    assert _value(metrics, "lmc_executions_total", language="r", status="unknown") == 1
    assert _value(metrics, "lmc_execution_seconds_count", language="python") == 3
    assert _value(metrics, "lmc_limit_hits_total", kind="memory") == 2
    assert _value(metrics, "lmc_limit_hits_total", kind="processes") == 1
    assert _value(metrics, "lmc_limit_hits_total", kind="output") == 1
    assert _value(metrics, "lmc_limit_hits_total", kind="wall") == 1
    assert _value(metrics, "lmc_limit_hits_total", kind="cpu") is None
    text = generate_latest(metrics.registry).decode()
    for name in ("lmc_sessions", "lmc_executions_total", "lmc_execution_seconds_bucket"):
        assert f"\n{name}{{" in text


def test_each_kind_of_limit_counts_once_per_execution() -> None:
    assert limit_kinds("memory_limit", ["memory_limit"]) == ["memory"]
    assert limit_kinds("ok") == []
    assert limit_kinds("error", ["disk_limit", "file_size_limit"]) == ["disk", "file_size"]
    assert limit_kinds("ok", truncated=True) == ["output"]
