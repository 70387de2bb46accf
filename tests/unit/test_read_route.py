"""Which pool a read that may lag goes to (storage/reads.py): the replica, unless
this process wrote the partition within the window or the L3 loop / extraction reads."""

from __future__ import annotations

from typing import Any, cast

from amrita_memory_pg.domain.trail import Actor, acting
from amrita_memory_pg.storage import reads
from amrita_memory_pg.storage.reads import ReadRoute

PRIMARY: Any = object()
REPLICA: Any = object()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_without_a_replica_everything_reads_the_primary() -> None:
    route = ReadRoute(PRIMARY, None)
    route.wrote("a")
    assert not route.replicated and route.pool_for("b") is PRIMARY and not route._wrote


def test_a_partition_written_here_reads_the_primary_for_the_window() -> None:
    clock = Clock()
    route = ReadRoute(PRIMARY, REPLICA, fresh_seconds=10, clock=clock)
    assert route.pool_for("a") is REPLICA and route.pool_for(None) is REPLICA
    route.wrote("a")
    assert route.pool_for("a") is PRIMARY and route.pool_for("b") is REPLICA
    clock.now += 10
    assert route.pool_for("a") is PRIMARY  # the window's last instant
    clock.now += 0.001
    assert route.pool_for("a") is REPLICA


def test_the_l3_loop_and_extraction_read_the_primary() -> None:
    route = ReadRoute(PRIMARY, REPLICA)
    for kind in ("l3", "extraction"):
        with acting(Actor(cast(Any, kind), "x")):
            assert route.pool_for("a") is PRIMARY and route.pool_for(None) is PRIMARY
    for kind in ("llm", "person"):
        with acting(Actor(cast(Any, kind), "x")):
            assert route.pool_for("a") is REPLICA


def test_the_marks_are_pruned_as_they_expire() -> None:
    clock = Clock()
    route = ReadRoute(PRIMARY, REPLICA, fresh_seconds=1, clock=clock)
    for n in range(reads.PRUNE_AT):
        route.wrote(f"old{n}")
    clock.now += 5
    route.wrote("new")  # past PRUNE_AT: every expired mark goes
    assert set(route._wrote) == {"new"} and route.pool_for("new") is PRIMARY
