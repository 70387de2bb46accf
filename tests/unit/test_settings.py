"""Settings: defaults, TOML + environment, and one clear sentence for every bad key."""

from __future__ import annotations

from pathlib import Path

import pytest

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.settings import load_settings, render_reference

REPO = Path(__file__).resolve().parents[2]


def test_defaults_match_the_reference_plugin() -> None:
    s = load_settings(env={}, read_default_files=False)
    assert s.per_session_memory_limit == 100
    assert s.memo_max_chars == 1000
    assert (s.decay.short_term_days, s.decay.long_term_days, s.decay.half_life_days) == (
        7,
        90,
        30.0,
    )
    assert (s.decay.importance_boost, s.decay.overfetch, s.decay.score_floor) == (1.0, 3, 0.05)
    assert (s.decay.sweep_interval_hours, s.decay.sweep_batch_limit) == (24, 5000)
    assert s.subconscious.enabled is False
    assert s.subconscious.idle_timezone == "Asia/Shanghai"
    assert s.subconscious.idle_target_hour == 3
    assert s.embedding.mismatch_policy == "ask"
    assert s.embedding.reembed_batch_size == 64
    assert s.embedding.reembed_backup_keep == 3
    assert s.vector_backend == "pgvector"
    assert s.database.url == ""


def test_reference_toml_and_env_names_are_read(tmp_path: Path) -> None:
    toml = tmp_path / "config.toml"
    toml.write_text(
        "per_session_memory_limit = 50\n"
        "[decay]\nhalf_life_days = 10.5\nsweep_enabled = false\n"
        '[subconscious]\nenabled = true\ntarget_user_id = "10001"\nidle_target_hour = 4\n',
        encoding="utf-8",
    )
    env = {
        "EMBEDDING_PROCTOL": "openai",
        "EMBEDDING_MODEL_NAME": "text-embedding-3-small",
        "EMBED_MISMATCH_POLICY": "never",
        "REEMBED_BATCH_SIZE": "128",
        "VECTOR_DB_REMOTE_HEADERS": '{"X-Token": "t"}',
        "DATABASE_URL": "postgresql://u@db/x",
        "AMRITA_MEMORY_DECAY__OVERFETCH": "5",
        "AMRITA_MEMORY_VECTOR_BACKEND": "chroma",
        "AMRITA_MEMORY_SUBCONSCIOUS__ALLOWED_TOOLS": '["web_search"]',
    }
    s = load_settings(toml, env=env)
    assert s.per_session_memory_limit == 50
    assert s.decay.half_life_days == 10.5
    assert s.decay.sweep_enabled is False
    assert s.decay.overfetch == 5
    assert s.subconscious.target_user_id == "10001"
    assert s.subconscious.allowed_tools == ["web_search"]
    assert s.embedding.protocol == "openai"
    assert s.embedding.mismatch_policy == "never"
    assert s.embedding.reembed_batch_size == 128
    assert s.vector_db.remote_headers == {"X-Token": "t"}
    assert s.database.url == "postgresql://u@db/x"
    assert s.vector_backend == "chroma"


def test_environment_wins_over_the_file(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[decay]\noverfetch = 2\n", encoding="utf-8")
    s = load_settings(toml, env={"AMRITA_MEMORY_DECAY__OVERFETCH": "7"})
    assert s.decay.overfetch == 7


def test_unknown_toml_key_names_the_key_and_the_allowed_ones(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[decay]\nhalflife_days = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings(toml, env={})
    message = str(err.value)
    assert "`decay.halflife_days`" in message
    assert str(toml) in message
    assert "half_life_days" in message  # the allowed keys are listed


def test_unknown_section_is_refused(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[decai]\nenabled = true\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown config key `decai`"):
        load_settings(toml, env={})


def test_invalid_value_names_key_value_source_and_bound() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={"AMRITA_MEMORY_DECAY__HALF_LIFE_DAYS": "0.5"}, read_default_files=False)
    message = str(err.value)
    assert "`decay.half_life_days`" in message
    assert "'0.5'" in message
    assert "AMRITA_MEMORY_DECAY__HALF_LIFE_DAYS" in message
    assert "greater than or equal to 1" in message


def test_invalid_enum_lists_the_allowed_values() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={"EMBEDDING_PROCTOL": "bert"}, read_default_files=False)
    message = str(err.value)
    assert "`embedding.protocol` = 'bert'" in message
    assert "environment EMBEDDING_PROCTOL" in message
    assert "'ollama-embed'" in message
    assert "'openai'" in message


def test_unknown_prefixed_environment_variable_is_refused() -> None:
    with pytest.raises(ConfigError, match="AMRITA_MEMORY_DECAY__HALFLIFE"):
        load_settings(env={"AMRITA_MEMORY_DECAY__HALFLIFE": "3"}, read_default_files=False)


def test_bad_database_url_scheme() -> None:
    with pytest.raises(ConfigError, match="postgresql://"):
        load_settings(env={"DATABASE_URL": "mysql://x"}, read_default_files=False)


def test_invalid_toml_is_one_sentence(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[decay\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_settings(toml, env={})


def test_configuration_reference_is_in_sync_with_the_model() -> None:
    """docs/configuration.md is generated; regenerate with `amrita-memory config docs`."""
    assert (REPO / "docs" / "configuration.md").read_text(encoding="utf-8") == render_reference()


def test_reference_documents_every_reference_key() -> None:
    doc = render_reference()
    for key in (
        "idle_noise_gap_minutes",
        "knowledge_collection_name",
        "sweep_batch_limit",
        "EMBEDDING_PROCTOL",
        "REEMBED_BACKUP_KEEP",
        "VECTOR_DB_REMOTE_HEADERS",
        "EMBED_CHECK_ON_STARTUP",
        "DATABASE_URL",
    ):
        assert key in doc
