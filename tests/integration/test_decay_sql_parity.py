"""The SQL decay functions and their Python twin agree to 1e-9 on random inputs.

The sweep's per-row decision is :data:`SWEEP_RULE`, written with the SQL functions the sweep
decides by (its cutoffs restate it to the microsecond: test_sweep_sql.py holds
sweep_batch_v8 to it); here it is held to its Python twin, domain.decay.sweep_action."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amrita_memory_pg.domain import decay
from amrita_memory_pg.domain.decay import DecayPolicy
from tests.support.pg import PgServer, SyncConnection

TOL = 1e-9
#: keep while the age (days) is within the tier's lifetime, then purge a low memory and
#: demote the others: {imp} importance, {age} age in days, {short}/{long} the bounds
SWEEP_RULE = (
    "CASE WHEN {age} <= amrita_memory.tier_days_v1({imp}, {short}, {long}) THEN 'keep'"
    " WHEN amrita_memory.importance_rank_v1({imp}) = 0 THEN 'purge' ELSE 'demote' END"
)


@pytest.fixture(scope="module")
def sql(pg_server: PgServer, template_db: str) -> Iterator[SyncConnection]:
    name = asyncio.run(pg_server.create_database(template=template_db))
    connection = SyncConnection(pg_server.dsn(name))
    try:
        yield connection
    finally:
        connection.close()
        asyncio.run(pg_server.drop_database(name))


DET = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
distances = st.floats(min_value=-5, max_value=50, allow_nan=False)
ages = st.floats(min_value=0, max_value=5000, allow_nan=False)
importances = st.integers(min_value=-2, max_value=12)
bases = st.floats(min_value=0, max_value=365, allow_nan=False)
boosts = st.floats(min_value=0, max_value=5, allow_nan=False)
floors = st.floats(min_value=0, max_value=1, allow_nan=False)
days = st.floats(min_value=1, max_value=400, allow_nan=False)
instants = st.datetimes(
    min_value=datetime(2000, 1, 1),  # noqa: DTZ001 (hypothesis wants naive bounds)
    max_value=datetime(2100, 1, 1),  # noqa: DTZ001
    timezones=st.just(UTC),
)


@DET
@given(d=distances, age=ages, imp=importances, base=bases, boost=boosts, floor=floors)
def test_decay_score_matches(
    sql: SyncConnection, d: float, age: float, imp: int, base: float, boost: float, floor: float
) -> None:
    got = sql.fetchval(
        "SELECT amrita_memory.decay_score_v1($1, $2, $3, $4, $5, $6)",
        d,
        age,
        imp,
        base,
        boost,
        floor,
    )
    policy = DecayPolicy(half_life_days=base, importance_boost=boost, score_floor=floor)
    assert abs(got - decay.decay_score(d, age, imp, policy)) <= TOL


@DET
@given(created=instants, now=instants)
def test_age_days_matches(sql: SyncConnection, created: datetime, now: datetime) -> None:
    got = sql.fetchval("SELECT amrita_memory.age_days_v1($1, $2)", created, now)
    assert abs(got - decay.age_days(created, now)) <= TOL


@DET
@given(imp=importances, short=days, long=days, age=ages)
def test_tier_and_sweep_action_match(
    sql: SyncConnection, imp: int, short: float, long: float, age: float
) -> None:
    row = sql.fetchrow(
        "SELECT amrita_memory.tier_days_v1($1, $2, $3) AS tier,"
        f"       {SWEEP_RULE.format(imp='$1', age='$4', short='$2', long='$3')} AS action,"
        "       amrita_memory.demoted_importance_v1($1) AS demoted",
        imp,
        short,
        long,
        age,
    )
    assert abs(row["tier"] - decay.tier_days(imp, short, long)) <= TOL
    assert row["action"] == decay.sweep_action(imp, age, short, long)
    assert row["demoted"] == decay.demoted_importance(imp)


@DET
@given(age=ages, hl=st.floats(min_value=-10, max_value=1000, allow_nan=False), floor=floors)
def test_decay_factor_matches_including_underflow(
    sql: SyncConnection, age: float, hl: float, floor: float
) -> None:
    got = sql.fetchval("SELECT amrita_memory.decay_factor_v1($1, $2, $3)", age, hl, floor)
    assert abs(got - decay.decay_factor(age, hl, floor)) <= TOL


def test_sql_reproduces_reference_vectors(sql: SyncConnection) -> None:
    row = sql.fetchrow(
        """
        SELECT amrita_memory.tier_days_v1(5, 7, 90)                        AS medium_tier,
               amrita_memory.tier_days_v1(5, 90, 7)                        AS medium_swapped,
               amrita_memory.tier_days_v1(5, 7, 7)                         AS medium_equal,
               amrita_memory.half_life_days_v1(30, 3, 1)                   AS hl_low,
               amrita_memory.half_life_days_v1(30, 5, 1)                   AS hl_medium,
               amrita_memory.half_life_days_v1(30, 8, 1)                   AS hl_high,
               amrita_memory.decay_score_v1(0.5, 30, 3, 30, 1, 0.05)       AS s1,
               amrita_memory.decay_score_v1(0.5, 60, 5, 30, 1, 0.05)       AS s2,
               amrita_memory.decay_score_v1(0.5, 1000, 3, 30, 1, 0.05)     AS s3,
               amrita_memory.similarity_v1(NULL)                           AS sim_null,
               amrita_memory.similarity_v1(-3)                             AS sim_negative
        """
    )
    assert abs(row["medium_tier"] - 25.099800796022265) < 1e-12
    assert abs(row["medium_swapped"] - 25.099800796022265) < 1e-12
    assert row["medium_equal"] == 7.0
    assert (row["hl_low"], row["hl_medium"], row["hl_high"]) == (30, 60, 90)
    assert abs(row["s1"] - 1 / 3) < 1e-12
    assert abs(row["s2"] - 1 / 3) < 1e-12
    assert abs(row["s3"] - 0.05 / 1.5) < 1e-12
    assert row["sim_null"] == 1.0
    assert row["sim_negative"] == 1.0


def test_sweep_boundaries_in_sql(sql: SyncConnection) -> None:
    now = datetime(2026, 1, 31, tzinfo=UTC)

    def action(imp: int, delta: timedelta) -> str:
        return str(
            sql.fetchval(
                "SELECT "
                + SWEEP_RULE.format(
                    imp="$1::integer", age="amrita_memory.age_days_v1($2, $3)", short=7, long=90
                ),
                imp,
                now - delta,
                now,
            )
        )

    assert action(3, timedelta(days=7)) == "keep"
    assert action(3, timedelta(days=7, seconds=1)) == "purge"
    assert action(5, timedelta(days=26)) == "demote"
    assert action(8, timedelta(days=91)) == "demote"
