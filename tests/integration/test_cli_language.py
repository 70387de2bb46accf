"""One language per screen: ``amrita-memory`` speaks Chinese by default and English with
the ``language`` setting (or ``--lang en``) — its help, click's own messages, the output
of a command, its column headers and legends — never both on one screen."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.memory import memory_on

KEY = "QQPlatform_Private_10001"
HAN = re.compile(r"[\u4e00-\u9fff]")


def _env(db_dsn: str, tmp_path: Path, lang: str) -> dict[str, str]:
    return {
        "DATABASE_URL": db_dsn,
        "AMRITA_MEMORY_EMBEDDING__PROTOCOL": "hash",
        "AMRITA_MEMORY_DATA_DIR": str(tmp_path / "data"),
        "AMRITA_MEMORY_LANGUAGE": lang,
    }


def test_the_help_is_chinese_by_default_and_english_when_asked(tmp_path: Path) -> None:
    default = run_cli("--help", env={"AMRITA_MEMORY_LANGUAGE": ""}, cwd=tmp_path)
    assert default.returncode == 0, default.stderr
    assert "用法" in default.stdout and "选项" in default.stdout and "命令" in default.stdout
    assert "Show this message" not in default.stdout and "Usage:" not in default.stdout
    english = run_cli("--lang", "en", "memory", "add", "--help", cwd=tmp_path)
    assert "Usage:" in english.stdout and "Add a manual memory" in english.stdout
    assert not HAN.search(english.stdout.replace("偏好|规则|事件|知识", ""))
    missing = run_cli("memory", "search", env={"AMRITA_MEMORY_LANGUAGE": "zh"}, cwd=tmp_path)
    assert missing.returncode == 2
    assert "错误：缺少参数" in missing.stderr and "Missing" not in missing.stderr


async def test_memory_add_list_search_speak_one_language_with_column_headers(
    db_dsn: str, tmp_path: Path
) -> None:
    async with memory_on(db_dsn, tmp_path / "seed") as mem:
        await mem.memories.add(partition_key=KEY, scope="user", content="喜欢爬山", importance=7)
    zh = _env(db_dsn, tmp_path, "zh")
    added = run_cli("memory", "add", KEY, "住在杭州", "-c", "event", env=zh)
    assert added.returncode == 0, added.stderr
    assert (
        "已向 QQPlatform_Private_10001 添加" in added.stdout
        and "（个人，重要度 5）" in added.stdout
    )
    listed = run_cli("memory", "list", KEY, env=zh)
    head, *rows = listed.stdout.splitlines()
    assert head.split() == ["编号", "重要度", "类别", "来源", "内容"]
    assert any("重要事件" in r and "手动" in r and "住在杭州" in r for r in rows)
    assert rows[-1] == "显示 2 条，共 2 条"
    found = run_cli("memory", "search", KEY, "爬山", "--mode", "keyword", env=zh)
    assert found.stdout.splitlines()[0].split()[0] == "衰减分"
    assert "命中 1 条" in found.stdout and "衰减分 = 相似度" in found.stdout
    assert not re.search(r"\b(hits|shown|added|importance|decay score)\b", found.stdout)

    en = _env(db_dsn, tmp_path, "en")
    listed = run_cli("memory", "list", KEY, env=en)
    head, *rows = listed.stdout.splitlines()
    assert head.split() == ["id", "importance", "category", "source", "content"]
    assert any(" event " in r and " manual " in r for r in rows)
    found = run_cli("memory", "search", KEY, "爬山", "--mode", "keyword", env=en)
    assert "1 hits" in found.stdout and "decay score = similarity" in found.stdout
    # the only Chinese on the English screen is what the memories say
    assert not HAN.search(found.stdout.replace("喜欢爬山", ""))


async def test_status_and_health_in_each_language(db_dsn: str, tmp_path: Path) -> None:
    zh = run_cli("status", env=_env(db_dsn, tmp_path, "zh"))
    assert zh.returncode == 0, zh.stderr
    labels = [line.split(":")[0] for line in zh.stdout.splitlines() if ":" in line]
    assert "服务器" in labels and "数据库结构" in labels and "记忆" in labels
    assert not re.search(r"^(server|schema|memories|pgvector version)\b", zh.stdout, re.M)
    en = run_cli("status", env=_env(db_dsn, tmp_path, "en"))
    assert "server:      external PostgreSQL" in en.stdout
    assert not HAN.search(en.stdout)
    healthy = run_cli("health", env=_env(db_dsn, tmp_path, "zh"))
    assert healthy.returncode == 0
    assert "正常 数据库：" in healthy.stdout and "有应答" in healthy.stdout


def test_the_setting_in_the_bots_env_picks_the_language(tmp_path: Path) -> None:
    """The same setting the admin page reads: in the bot's .env (or the config file)."""
    (tmp_path / ".env").write_text("AMRITA_MEMORY_LANGUAGE=en\n", encoding="utf-8")
    result = run_cli("--help", env={"AMRITA_MEMORY_LANGUAGE": ""}, cwd=tmp_path)
    assert "Usage:" in result.stdout, result.stdout


def test_the_shared_validation_refuses_in_the_cli_language(tmp_path: Path) -> None:
    """A refusal of the one validation (a text too long, a partition key that is not one)
    reads in English under ``--lang en`` and in Chinese by default; the CLI refuses them
    before it opens the database."""
    long_text = "长" * 4001
    en = run_cli("--lang", "en", "memory", "add", KEY, long_text, cwd=tmp_path)
    assert en.returncode == 2
    assert "is too long (4001 characters, at most 4000)" in en.stderr, en.stderr
    assert not HAN.search(en.stderr), en.stderr
    zh = run_cli(
        "memory", "add", KEY, long_text, env={"AMRITA_MEMORY_LANGUAGE": "zh"}, cwd=tmp_path
    )
    assert zh.returncode == 2
    assert "过长（4001 字符，上限 4000）" in zh.stderr, zh.stderr
    bad_key = run_cli("--lang", "en", "memory", "list", "qq:private:1", cwd=tmp_path)
    assert bad_key.returncode == 2
    assert "is not a valid partition key: 'qq:private:1'" in bad_key.stderr, bad_key.stderr
    assert not HAN.search(bad_key.stderr), bad_key.stderr
