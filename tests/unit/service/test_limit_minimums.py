"""Session limits below what an interpreter needs to start are refused up front.

Regression: ``{"limits": {"processes": 12}}`` passed validation, then the
session's kernel could not start and the client got a 503 quoting its
traceback; such limits are now a 400 (``SessionLimits`` refuses them too)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lmc_runtime.sandbox.policy import MINIMUMS, SessionLimits
from lmc_runtime.service.models import CreateSession, LimitsModel

_TOO_LOW = {
    "memory_bytes": 32 << 20,
    "processes": 12,
    "file_size_bytes": 1,
    "disk_bytes": 1000,
    "output_bytes": 10,
}


@pytest.mark.parametrize(("name", "value"), sorted(_TOO_LOW.items()))
def test_a_limit_below_its_minimum_is_refused_by_the_api_and_the_policy(
    name: str, value: int
) -> None:
    with pytest.raises(ValidationError, match=name):
        CreateSession.model_validate({"limits": {name: value}})
    with pytest.raises(ValueError, match=f"{name} must be at least"):
        SessionLimits(**{name: value})  # type: ignore[arg-type]


def test_every_minimum_is_taken_by_both() -> None:
    model = LimitsModel.model_validate(
        {
            name: (int(v) if name != "cpu_quota" and float(v).is_integer() else v)
            for name, v in MINIMUMS.items()
        }
    )
    assert SessionLimits(**model.model_dump())  # type: ignore[arg-type]


def test_the_openapi_schema_states_the_minimums() -> None:
    schema = LimitsModel.model_json_schema()["properties"]["processes"]
    assert {"minimum": MINIMUMS["processes"], "type": "integer"} in schema["anyOf"]
