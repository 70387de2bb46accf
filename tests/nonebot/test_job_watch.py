"""Every bot process watches for a lost re-embed: with the admin page
mounted its job runner does; without it the plugin's runtime starts one of its own."""

from __future__ import annotations


async def test_a_bot_without_the_admin_page_watches_for_a_lost_reembed() -> None:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import admin_mounted, runtime
    from amrita_memory_pg.integrations.nonebot.runtime import Runtime

    # this session's bot mounts the page: the page's runner watches (test_admin_mount.py)
    assert admin_mounted
    assert runtime.watch_jobs is False and runtime.job_watch is None
    # a second bot process of the fleet on the same database, without the page
    other = Runtime(runtime.settings)
    other.watch_jobs = True
    await other.start()
    try:
        assert other.error is None
        runner = other.job_watch
        assert runner is not None
        assert runner._watcher is not None and not runner._watcher.done()
        assert await runner.resume_lost() == []  # nothing was lost
    finally:
        await other.stop()
    assert other.job_watch is None
    assert runner._watcher is None or runner._watcher.done()
