"""The README's main job: the console bot starts and answers ``/memory`` commands."""

from __future__ import annotations

from pathlib import Path

from tests.nonebot.console_process import ConsoleBotProcess


async def test_console_bot_starts_and_answers_memo_and_usage(db_dsn: str, tmp_path: Path) -> None:
    bot = ConsoleBotProcess(
        cwd=tmp_path,
        env={"DATABASE_URL": db_dsn, "EMBEDDING_PROCTOL": "hash"},
    )
    try:
        bot.wait_for("Nonebot", timeout=90)
        bot.wait_for("Send Message")
        bot.pump(2)
        bot.focus_input()
        bot.type_line("/memory memo")
        bot.wait_for("当前作用域还没有备忘录")
        bot.type_line("/memory")
        screen = bot.wait_for("添加群共享记忆")
        assert "用法:" in screen
    finally:
        bot.stop()
    assert (tmp_path / "data").exists() is False  # the external test database was used
