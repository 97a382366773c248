"""The pool's target size from the arrivals of session creations, on a made-up clock."""

from __future__ import annotations

import pytest

from lmc_runtime.service.demand import Demand


def _demand(floor: int = 1, ceiling: int = 20, cooldown: float = 60.0) -> Demand:
    demand = Demand(floor, ceiling, parallel=2, cooldown=cooldown)
    demand.started(1.0)  # two starts at a time of 1 s each: 2 sessions a second
    return demand


def test_with_no_creations_the_target_is_the_floor() -> None:
    demand = _demand(floor=3)
    assert demand.target(0.0) == 3
    assert demand.falls_at(0.0) is None


def test_a_burst_raises_the_target_to_its_size() -> None:
    demand = _demand()
    for _ in range(12):
        demand.arrived(100.0)
    assert demand.target(100.0) == 12


def test_a_burst_larger_than_the_ceiling_is_capped() -> None:
    demand = _demand(ceiling=5)
    for _ in range(12):
        demand.arrived(100.0)
    assert demand.target(100.0) == 5


def test_creations_slower_than_the_refill_rate_keep_the_floor() -> None:
    demand = _demand(floor=1)
    for second in range(60):  # one a second; the pool refills two a second
        demand.arrived(float(second))
    assert demand.target(60.0) == 1


def test_creations_faster_than_the_refill_rate_pile_up() -> None:
    demand = _demand(floor=0)
    for tick in range(40):  # four a second for ten seconds: two more than refilled
        demand.arrived(tick / 4)
    assert 18 <= demand.target(10.0) <= 21


def test_the_target_holds_through_the_cooldown_then_falls_back() -> None:
    demand = _demand(floor=2, cooldown=60.0)
    for _ in range(10):
        demand.arrived(100.0)
    assert demand.target(159.0) == 10
    assert demand.falls_at(159.0) == pytest.approx(160.0)
    assert demand.target(160.0) == 2
    assert demand.falls_at(160.0) is None


def test_a_new_burst_within_the_cooldown_extends_it() -> None:
    demand = _demand(floor=0, cooldown=60.0)
    for _ in range(10):
        demand.arrived(100.0)
    for _ in range(10):
        demand.arrived(150.0)  # the first has drained by then: the same peak, later
    assert demand.target(200.0) == 10
    assert demand.target(210.0) == 0


def test_a_smaller_later_burst_is_the_target_once_the_larger_expires() -> None:
    demand = _demand(floor=0, cooldown=60.0)
    for _ in range(10):
        demand.arrived(100.0)
    for _ in range(4):
        demand.arrived(130.0)
    assert demand.target(150.0) == 10
    assert demand.falls_at(150.0) == pytest.approx(160.0)
    assert demand.target(170.0) == 4
    assert demand.target(190.0) == 0


def test_slower_starts_mean_a_burst_drains_slower() -> None:
    fast, slow = _demand(floor=0), _demand(floor=0)
    for _ in range(10):
        slow.started(4.0)
    for demand in (fast, slow):
        for _ in range(6):
            demand.arrived(0.0)
        for _ in range(3):
            demand.arrived(2.0)
    assert fast.target(2.0) == 6  # drained at 2/s: 2 of the first were left, then 5
    assert slow.target(2.0) == 8  # drained at about 0.5/s: 5 were left, then 8


def test_a_clock_glitch_does_not_make_the_rate_infinite() -> None:
    demand = _demand()
    demand.started(0.0)
    assert demand.refill_rate < 1000


@pytest.mark.parametrize(
    ("floor", "ceiling", "parallel", "cooldown"),
    [(3, 2, 1, 1.0), (-1, 2, 1, 1.0), (0, 2, 0, 1.0), (0, 2, 1, -1.0)],
)
def test_impossible_settings_are_refused(
    floor: int, ceiling: int, parallel: int, cooldown: float
) -> None:
    with pytest.raises(ValueError):
        Demand(floor, ceiling, parallel=parallel, cooldown=cooldown)
