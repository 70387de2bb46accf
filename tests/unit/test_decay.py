"""Decay math against the reference's §16 vectors, plus properties of the formulas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.domain.decay import (
    DecayPolicy,
    age_days,
    decay_factor,
    decay_score,
    demoted_importance,
    half_life_days,
    parse_created_at,
    similarity_from_distance,
    sweep_action,
    tier_days,
)
from amrita_memory_pg.domain.importance import HIGH, LOW, MEDIUM, label_to_level, level_to_label

DEFAULTS = DecayPolicy()
NOW = datetime(2026, 1, 31, tzinfo=UTC)


def test_tier_days_reference_vectors() -> None:
    assert tier_days(MEDIUM, 7, 90) == pytest.approx(25.099800796022265, abs=1e-12)
    assert tier_days(MEDIUM, 90, 7) == pytest.approx(25.099800796022265, abs=1e-12)
    assert tier_days(MEDIUM, 7, 7) == 7.0
    assert tier_days(LOW, 7, 90) == 7.0
    assert tier_days(HIGH, 7, 90) == 90.0


def test_half_lives_by_importance() -> None:
    assert half_life_days(30, LOW, 1.0) == 30
    assert half_life_days(30, MEDIUM, 1.0) == 60
    assert half_life_days(30, HIGH, 1.0) == 90
    # Out of range counts as medium, like the reference's unknown label.
    assert half_life_days(30, 0, 1.0) == 60
    assert half_life_days(30, 42, 1.0) == 60


@pytest.mark.parametrize(
    ("distance", "age", "importance", "expected"),
    [
        (0.5, 30, LOW, 1 / 1.5 * 0.5),
        (0.5, 60, MEDIUM, 1 / 1.5 * 0.5),
        (0.5, 1000, LOW, 1 / 1.5 * 0.05),
    ],
)
def test_decay_score_reference_vectors(
    distance: float, age: float, importance: int, expected: float
) -> None:
    assert decay_score(distance, age, importance, DEFAULTS) == pytest.approx(expected, abs=1e-12)


def test_similarity_quirks() -> None:
    assert similarity_from_distance(None) == 1.0
    assert similarity_from_distance(-3) == 1.0
    assert similarity_from_distance("x") == 1.0
    assert similarity_from_distance(1.0) == 0.5


def test_parse_created_at_reference_vectors() -> None:
    assert parse_created_at("2026-01-01T00:00:00") == datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_created_at("2026-01-01T08:00:00+08:00") == datetime(2026, 1, 1, tzinfo=UTC)
    for bad in ("bad", "", 123, None):
        assert parse_created_at(bad) is None


def _age(delta: timedelta) -> float:
    return age_days(NOW - delta, NOW)


def test_sweep_action_reference_vectors() -> None:
    assert sweep_action(LOW, _age(timedelta(days=7)), 7, 90) == "keep"
    assert sweep_action(LOW, _age(timedelta(days=7, seconds=1)), 7, 90) == "purge"
    assert sweep_action(MEDIUM, _age(timedelta(days=26)), 7, 90) == "demote"
    assert demoted_importance(MEDIUM) == LOW
    assert sweep_action(HIGH, _age(timedelta(days=91)), 7, 90) == "demote"
    assert demoted_importance(HIGH) == MEDIUM
    assert demoted_importance(LOW) is None


def test_rerank_reference_example() -> None:
    """top_k=2 of a (d 0.1, low, 60 d), b (d 0.5, low, 0 d), c (d 0.9, no metadata → medium, age 0)."""
    scored = {
        "a": decay_score(0.1, 60, LOW, DEFAULTS),
        "b": decay_score(0.5, 0, LOW, DEFAULTS),
        "c": decay_score(0.9, 0, MEDIUM, DEFAULTS),
    }
    order = sorted(scored, key=lambda k: -scored[k])[:2]
    assert order == ["b", "c"]
    assert round(scored["b"], 4) == 0.6667
    assert round(scored["c"], 4) == 0.5263
    assert scored["a"] == pytest.approx(0.9091 * 0.25, abs=1e-4)


def test_future_timestamps_count_as_age_zero() -> None:
    assert age_days(NOW + timedelta(days=3), NOW) == 0.0


def test_age_is_independent_of_the_offset_used() -> None:
    shanghai = timezone(timedelta(hours=8))
    created = datetime(2026, 1, 1, 8, tzinfo=shanghai)
    assert age_days(created, NOW) == 30.0


def test_importance_labels_round_trip_by_tier() -> None:
    assert [label_to_level(x) for x in ("low", "medium", "high")] == [3, 5, 8]
    assert [level_to_label(n) for n in range(1, 11)] == ["low"] * 3 + ["medium"] * 4 + ["high"] * 3


ages = st.floats(min_value=0, max_value=10_000, allow_nan=False)
half_lives = st.floats(min_value=0.001, max_value=10_000, allow_nan=False)
floors = st.floats(min_value=0, max_value=1, allow_nan=False)


@given(ages, ages, half_lives, floors)
def test_decay_factor_is_monotone_in_age(a: float, b: float, hl: float, floor: float) -> None:
    young, old = sorted((a, b))
    assert decay_factor(old, hl, floor) <= decay_factor(young, hl, floor)


@given(ages, half_lives, floors)
def test_decay_factor_is_bounded_by_floor_and_one(age: float, hl: float, floor: float) -> None:
    value = decay_factor(age, hl, floor)
    assert floor <= value <= 1.0


@given(half_lives)
def test_decay_factor_is_one_half_at_one_half_life(hl: float) -> None:
    assert decay_factor(hl, hl, 0.0) == pytest.approx(0.5, rel=1e-12)


@given(st.integers(min_value=1, max_value=10), ages)
def test_sweep_never_keeps_past_the_tier_lifetime(importance: int, age: float) -> None:
    action = sweep_action(importance, age, 7, 90)
    assert (action == "keep") == (age <= tier_days(importance, 7, 90))
