"""The forced exit does not wait for a graceful stop of the embedded server under way: that
stop holds the servers' lock through PostgreSQL's shutdown checkpoint (seconds on a busy
disk), and a bot asked to exit would otherwise wait for it past its deadline."""

from __future__ import annotations

import threading
import time

from amrita_memory_pg.storage.pg import embedded


def _hold_the_lock(held: threading.Event, release: threading.Event) -> None:
    with embedded._THREAD_GUARD:
        held.set()
        release.wait(10)


def test_the_forced_release_gives_up_on_a_lock_held_by_a_stop_under_way() -> None:
    held, release = threading.Event(), threading.Event()
    stopper = threading.Thread(target=_hold_the_lock, args=(held, release))
    stopper.start()
    try:
        assert held.wait(5)
        forced = threading.Thread(target=embedded.release_all, kwargs={"timeout": 1, "wait": False})
        began = time.monotonic()
        forced.start()
        forced.join(5)
        assert not forced.is_alive(), "the forced release waited for the stop's lock"
        assert 0.9 <= time.monotonic() - began < 3
        # the default (at exit) still waits for the lock: a stop under way finishes first
        waiting = threading.Thread(target=embedded.release_all)
        waiting.start()
        waiting.join(1.5)
        assert waiting.is_alive()
    finally:
        release.set()
        stopper.join(5)
    waiting.join(5)
    assert not waiting.is_alive()
