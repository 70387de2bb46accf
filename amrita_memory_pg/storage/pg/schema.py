"""SQLAlchemy table metadata: the schema's source of truth for alembic.

Runtime queries do not go through SQLAlchemy (they use asyncpg and the named SQL in
``sql/``); this module exists so that ``alembic revision --autogenerate`` and the
migration test can compare the migrated database with the declared schema.
"""

from __future__ import annotations

from pgvector.sqlalchemy import HALFVEC  # also registers the "halfvec" type for reflection
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    DateTime,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, DOUBLE_PRECISION, JSONB, TSVECTOR

SCHEMA = "amrita_memory"

metadata = MetaData(
    schema=SCHEMA,
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    },
)

NOW = text("now()")

memory = Table(
    "memory",
    metadata,
    Column(
        "id",
        Text,
        nullable=False,
        server_default=text("replace((gen_random_uuid())::text, '-'::text, ''::text)"),
        comment="32 lowercase hex characters, like the reference's uuid4().hex",
    ),
    Column(
        "partition_key",
        Text,
        nullable=False,
        comment="uni_id: QQPlatform_Private_{qq} / QQPlatform_Group_{gid} / global",
    ),
    Column("scope", Text, nullable=False, comment="user | group | global"),
    Column("content", Text, nullable=False),
    Column("tags", ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")),
    Column(
        "importance",
        SmallInteger,
        nullable=False,
        comment="1–10; tiers 1–3 low, 4–7 medium, 8–10 high",
    ),
    Column("category", Text, nullable=True, comment="preference | rule | event | knowledge"),
    Column(
        "source",
        Text,
        nullable=False,
        server_default=text("'auto'::text"),
        comment="user | auto | system",
    ),
    Column(
        "author", Text, nullable=True, comment="user id of whoever wrote it (group edit rights)"
    ),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    Column(
        "tier_since",
        DateTime(timezone=True),
        nullable=False,
        server_default=NOW,
        comment="when the memory entered its current importance tier; the sweep's clock",
    ),
    # STORAGE MAIN and toast_tuple_target 8160 (sql/tables.sql): the vector
    # stays in the row unless the row cannot fit a page; a search reads no TOAST.
    # halfvec (half precision, 2 bytes a dimension): half the bytes of ``vector`` at the
    # same retrieval results (docs/performance.md); HNSW takes it up to 4,000 dimensions.
    Column("embedding", HALFVEC(), nullable=False, comment="dimension = store_meta.embed_dim"),
    Column("embed_fingerprint", Text, nullable=False),
    Column(
        "search_tokens",
        TSVECTOR(),
        nullable=True,
        comment="keyword-search tokens made in Python (domain/tokens.py); NULL = not tokenized yet",
    ),
    # last: upgraded databases added it after the others, and a fresh install matches them
    Column(
        "origin",
        Text,
        nullable=False,
        server_default=text("amrita_memory.actor_origin_v1()"),
        comment="who made it: person | llm | extraction | l3 | import | system | unknown "
        "(before origins were recorded); extraction replaces only its own rows",
    ),
    CheckConstraint("id ~ '^[0-9a-f]{32}$'", name="id_hex"),
    CheckConstraint("scope IN ('user', 'group', 'global')", name="scope"),
    CheckConstraint("importance BETWEEN 1 AND 10", name="importance"),
    CheckConstraint(
        "category IS NULL OR category IN ('preference', 'rule', 'event', 'knowledge')",
        name="category",
    ),
    CheckConstraint("source IN ('user', 'auto', 'system')", name="source"),
    CheckConstraint(
        "origin IN ('person', 'llm', 'extraction', 'l3', 'import', 'system', 'unknown')",
        name="origin",
    ),
    CheckConstraint("content <> ''", name="content_nonempty"),
    CheckConstraint("partition_key <> ''", name="partition_nonempty"),
    # The partition key first: it is Citus's distribution column (docs/scaling.md), and a
    # unique constraint there must include it. An id is 128 random bits, unique in practice.
    PrimaryKeyConstraint("partition_key", "id"),
    comment="L2 memories: one row per long-tail fact, with its vector",
)
# Partition scans, listing pages and the cap all walk this index in (created_at, id) order.
Index(
    "ix_memory_partition_key_created_at_id",
    memory.c.partition_key,
    memory.c.created_at,
    memory.c.id,
)
# No index on id alone: the walks over the whole table (sweep, re-embed, Chroma rebuild,
# re-tokenizing) go in the primary key's order. No GIN index over the whole table: a large
# partition's keyword candidates come from its own (ix_memory_kw_*, built at run time with
# its HNSW index by maintenance/ann.py), and small partitions use no index.
# The token backfill's work list (maintenance/tokens.py): empty once every row has tokens.
Index(
    "ix_memory_id_untokenized",
    memory.c.id,
    postgresql_where=text("search_tokens IS NULL"),
)
# The other partitions' side of the L3 knowledge candidates (knowledge_candidates_v1):
# only the rows of category knowledge, a small part of the table.
Index(
    "ix_memory_knowledge",
    memory.c.partition_key,
    postgresql_where=text("category = 'knowledge'"),
)

memo = Table(
    "memo",
    metadata,
    Column("partition_key", Text, primary_key=True),
    Column("content", Text, nullable=False, server_default=text("''::text")),
    Column("version", Integer, nullable=False, server_default=text("1")),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    # memo_max_chars may be configured up to 10000; the configured cap is checked by the write itself.
    CheckConstraint("char_length(content) <= 10000", name="content_ceiling"),
    comment="L1 memo: one declarative note per partition, injected into every turn",
)

store_meta = Table(
    "store_meta",
    metadata,
    Column("id", SmallInteger, primary_key=True, server_default=text("1")),
    Column(
        "embed_fingerprint",
        Text,
        nullable=True,
        comment="sha256(protocol|model|base_url) of the stored vectors",
    ),
    Column("embed_protocol", Text, nullable=True),
    Column("embed_model", Text, nullable=True),
    Column("embed_base_url", Text, nullable=True),
    Column("embed_dim", Integer, nullable=True),
    Column(
        "key_format_version", Integer, nullable=True, comment="2 = uni_id keys (reference §2.5)"
    ),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("id = 1", name="single_row"),
    comment="One row: which embedding model the vectors belong to, and the key format",
)

sweep_state = Table(
    "sweep_state",
    metadata,
    Column("id", SmallInteger, primary_key=True, server_default=text("1")),
    Column(
        "cursor_id",
        Text,
        nullable=False,
        server_default=text("''::text"),
        comment="unused since 0057_retire_release12 (the retired id-order sweep's cursor); kept "
        "while the previous release's restore resets it",
    ),
    Column(
        "passes", Integer, nullable=False, server_default=text("0"), comment="completed full passes"
    ),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    Column(
        "trimmed_seq",
        BigInteger,
        nullable=False,
        server_default=text("0"),
        comment="the history's last seq when trim_history_v2 last ran (it walks past it)",
    ),
    Column(
        "trimmed_keep",
        Integer,
        nullable=True,
        comment="the changes per memory it kept then (NULL: never ran)",
    ),
    Column(
        "cursor_key",
        Text,
        nullable=False,
        server_default=text("''::text"),
        comment="partition_key/id of the last memory swept (sweep_batch_v8, primary key "
        "order); '' = start",
    ),
    CheckConstraint("id = 1", name="single_row"),
    comment="The sweep's persisted keyset cursor, so every row is visited over successive runs",
)

ann_index = Table(
    "ann_index",
    metadata,
    Column("partition_key", Text, primary_key=True),
    Column("dim", Integer, primary_key=True),
    Column("index_name", Text, nullable=False, unique=True),
    Column("rows_at_build", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    comment="Large partitions with their own partial HNSW index (built by maintenance, not migrations)",
)

knowledge = Table(
    "knowledge",
    metadata,
    Column("kid", Text, primary_key=True),
    Column("title", Text, nullable=False),
    Column("summary", Text, nullable=False, server_default=text("''::text")),
    Column(
        "body",
        Text,
        nullable=False,
        server_default=text("''::text"),
        comment="the body as one text; its lines (split on \\n, '' = no lines) are derived",
    ),
    # STORAGE MAIN, toast_tuple_target 8160 (sql/tables.sql): a long body is moved
    # out of the row before the vector is.
    Column(
        "embedding",
        HALFVEC(),
        nullable=False,
        comment="vector of the summary (what a knowledge search matches, as in the reference)",
    ),
    Column("embed_fingerprint", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    Column(
        "search_tokens",
        TSVECTOR(),
        nullable=True,
        comment="keyword-search tokens of title + summary + body made in Python "
        "(domain/tokens.py); NULL = not tokenized yet",
    ),
    Column(
        "search_len",
        Integer,
        Computed("length(search_tokens)", persisted=True),
        nullable=True,
        comment="number of search tokens (BM25 length normalisation without reading the tsvector)",
    ),
    CheckConstraint("kid <> ''", name="kid_nonempty"),
    CheckConstraint("kid ~ '^[0-9a-f]{8,32}$'", name="kid_format"),
    CheckConstraint(
        "char_length(title) BETWEEN 1 AND 200 AND strpos(title, E'\\n') = 0", name="title_length"
    ),
    CheckConstraint("char_length(summary) <= 1000", name="summary_length"),
    # knowledge_max_chars may be configured up to 100000; the configured cap is checked
    # by the write functions (sql/functions/knowledge.sql).
    CheckConstraint("char_length(body) <= 100000", name="body_ceiling"),
    comment="Global knowledge base (L3); its vectors are re-embedded and backed up with the memories",
)

# The keyword side of knowledge search (knowledge_search_v2) and the token backfill's work list.
Index("ix_knowledge_search_tokens", knowledge.c.search_tokens, postgresql_using="gin")
Index(
    "ix_knowledge_kid_untokenized",
    knowledge.c.kid,
    postgresql_where=text("search_tokens IS NULL"),
)

knowledge_suggestion = Table(
    "knowledge_suggestion",
    metadata,
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("action", Text, nullable=False, comment="create | update"),
    Column("kid", Text, nullable=True, comment="the entry to update (update only)"),
    Column("title", Text, nullable=False),
    Column("summary", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("reason", Text, nullable=False, server_default=text("''::text")),
    Column("author_id", Text, nullable=False, comment="user id of the suggester"),
    Column(
        "status",
        Text,
        nullable=False,
        server_default=text("'pending'::text"),
        comment="pending | claimed (by a running cycle) | done",
    ),
    Column("claimed_by_cycle", BigInteger, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    Column("claimed_at", DateTime(timezone=True), nullable=True),
    Column("handled_at", DateTime(timezone=True), nullable=True),
    CheckConstraint("action IN ('create', 'update')", name="action"),
    CheckConstraint("status IN ('pending', 'claimed', 'done')", name="status"),
    CheckConstraint("(status = 'claimed') = (claimed_by_cycle IS NOT NULL)", name="claim"),
    CheckConstraint(
        "char_length(title) <= 200 AND char_length(summary) <= 1000 "
        "AND char_length(body) <= 100000 AND char_length(reason) <= 1000",
        name="sizes",
    ),
    PrimaryKeyConstraint("id"),
    comment="Knowledge suggestions from the chat, bounded, claimed by an L3 cycle, "
    "marked done only when that cycle succeeds",
)
Index("ix_knowledge_suggestion_status_id", knowledge_suggestion.c.status, knowledge_suggestion.c.id)
Index(
    "ix_knowledge_suggestion_author_id_created_at",
    knowledge_suggestion.c.author_id,
    knowledge_suggestion.c.created_at,
)

permission_grant = Table(
    "permission_grant",
    metadata,
    Column("user_id", Text, primary_key=True, comment="the user's id (QQ number)"),
    Column("node", Text, primary_key=True, comment="memory.knowledge"),
    Column("granted_by", Text, nullable=False, comment="cli, or the granting user"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("node IN ('memory.knowledge')", name="node"),
    CheckConstraint("user_id <> ''", name="user_nonempty"),
    comment="Permission nodes granted to users from the CLI or /memory (LitePerm's, when absent)",
)

reembed_job = Table(
    "reembed_job",
    metadata,
    Column("id", SmallInteger, primary_key=True, server_default=text("1")),
    Column("target_fingerprint", Text, nullable=False),
    Column("protocol", Text, nullable=True),
    Column("model", Text, nullable=True),
    Column("base_url", Text, nullable=True),
    Column("started_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("id = 1", name="single_row"),
    comment="The re-embed in progress, if any: new vectors are staged beside the old ones",
)

reembed_staging = Table(
    "reembed_staging",
    metadata,
    Column("kind", Text, primary_key=True, comment="memory | knowledge"),
    Column("row_id", Text, primary_key=True),
    Column("fingerprint", Text, nullable=False),
    Column("embedding", HALFVEC(), nullable=False),
    Column(
        "source_updated_at",
        DateTime(timezone=True),
        nullable=False,
        comment="updated_at of the row when its text was embedded; a later edit invalidates it",
    ),
    CheckConstraint("kind IN ('memory', 'knowledge')", name="kind"),
    comment="New vectors of an online re-embed, written in batches, switched in one transaction",
)

chat_log = Table(
    "chat_log",
    metadata,
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column(
        "session_key",
        Text,
        nullable=False,
        comment="the chat's partition: the group key in a group, else the personal key",
    ),
    Column("user_id", Text, nullable=False, comment="the speaker (the bot's own id for role bot)"),
    Column("group_id", Text, nullable=True),
    Column("role", Text, nullable=False, comment="user | bot"),
    Column("text", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("role IN ('user', 'bot')", name="role"),
    # Session first (the distribution column); appends trim and readers page by walking
    # this key backwards from the newest line.
    PrimaryKeyConstraint("session_key", "id"),
    comment="Recent chat lines per session (bounded: chat_log_keep newest), read by L3",
)

activity_heatmap = Table(
    "activity_heatmap",
    metadata,
    Column("user_key", Text, primary_key=True, comment="the user's personal partition key"),
    Column("weekday", SmallInteger, primary_key=True, comment="local weekday, 0 = Monday"),
    Column("slot", SmallInteger, primary_key=True, comment="local 2-hour slot, 0 = 00:00-02:00"),
    Column("hits", Integer, nullable=False, server_default=text("0")),
    Column("last_seen_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("weekday BETWEEN 0 AND 6", name="weekday"),
    CheckConstraint("slot BETWEEN 0 AND 11", name="slot"),
    CheckConstraint("hits >= 0", name="hits"),
    comment="Messages per user in a 7 x 12 (weekday x 2-hour slot) grid, in idle_timezone",
)

l3_state = Table(
    "l3_state",
    metadata,
    Column("target_key", Text, nullable=False, comment="the target's partition key"),
    Column(
        "penalty",
        Integer,
        nullable=False,
        server_default=text("0"),
        comment="target messages since the last successful cycle",
    ),
    Column(
        "penalty_at_start",
        Integer,
        nullable=True,
        comment="the penalty when the running cycle started; success subtracts it",
    ),
    Column("runs", Integer, nullable=False, server_default=text("0")),
    Column("failures", Integer, nullable=False, server_default=text("0")),
    Column(
        "failures_in_row",
        Integer,
        nullable=False,
        server_default=text("0"),
        comment="failed cycles since the last success (the retry back-off)",
    ),
    Column("running_since", DateTime(timezone=True), nullable=True),
    Column("last_run_end", DateTime(timezone=True), nullable=True),
    Column("last_success_at", DateTime(timezone=True), nullable=True),
    Column("last_failure_at", DateTime(timezone=True), nullable=True),
    Column("last_error", Text, nullable=True),
    Column("last_summary", Text, nullable=True),
    Column("next_run_at", DateTime(timezone=True), nullable=True),
    Column("plan", JSONB, nullable=True, comment="the planned window (domain.planner.Plan)"),
    Column(
        "heat",
        JSONB,
        nullable=False,
        server_default=text("'{}'::jsonb"),
        comment="the planner's decayed heatmap layers (domain.planner.HeatState)",
    ),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("penalty >= 0", name="penalty"),
    # One row per target; the target key is the whole key (the distribution column).
    PrimaryKeyConstraint("target_key"),
    comment="L3 scheduler state per target: penalty, run counters, next planned run",
)

consolidation_cycle = Table(
    "consolidation_cycle",
    metadata,
    Column("target_key", Text, nullable=False, comment="the partition the cycle consolidated"),
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("trigger", Text, nullable=False, comment="manual | scheduled | cli | test"),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("ended_at", DateTime(timezone=True), nullable=True, comment="NULL while running"),
    Column("ok", Boolean, nullable=True, comment="NULL while running"),
    Column("error", Text, nullable=True, comment="why it failed (one redacted sentence)"),
    Column("iterations", Integer, nullable=False, server_default=text("0")),
    Column("tool_calls", Integer, nullable=False, server_default=text("0")),
    Column("memories_changed", Integer, nullable=False, server_default=text("0")),
    Column("prompt_tokens", Integer, nullable=False, server_default=text("0")),
    Column("completion_tokens", Integer, nullable=False, server_default=text("0")),
    Column("summary", Text, nullable=True, comment="the model's subconscious_iter_stop summary"),
    Column("dry_run", Boolean, nullable=False, server_default=text("false")),
    CheckConstraint("trigger IN ('manual', 'scheduled', 'cli', 'test')", name="trigger"),
    # The target first: Citus's distribution column, and "the last run of a target" walks
    # this key backwards.
    PrimaryKeyConstraint("target_key", "id"),
    comment="L3 consolidation cycles: one row per run, with its outcome and token totals",
)

token_usage = Table(
    "token_usage",
    metadata,
    Column("target_key", Text, nullable=False),
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("cycle_id", BigInteger, nullable=False),
    Column("purpose", Text, nullable=False, comment="step | send | summary"),
    Column("model", Text, nullable=False, server_default=text("''::text")),
    Column("prompt_tokens", Integer, nullable=False, server_default=text("0")),
    Column("completion_tokens", Integer, nullable=False, server_default=text("0")),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("purpose IN ('step', 'send', 'summary')", name="purpose"),
    PrimaryKeyConstraint("target_key", "id"),
    ForeignKeyConstraint(
        ["target_key", "cycle_id"],
        ["amrita_memory.consolidation_cycle.target_key", "amrita_memory.consolidation_cycle.id"],
        ondelete="CASCADE",
    ),
    comment="Tokens of every LLM call an L3 cycle made (ReAct steps, proactive messages, "
    "session summaries), as the endpoint reported them",
)
Index("ix_token_usage_target_key_cycle_id", token_usage.c.target_key, token_usage.c.cycle_id)

pending_message = Table(
    "pending_message",
    metadata,
    Column("target_key", Text, nullable=False, comment="the personal partition it is for"),
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("cycle_id", BigInteger, nullable=True, comment="the cycle that wrote it"),
    Column("content", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column(
        "delivered_at",
        DateTime(timezone=True),
        nullable=True,
        comment="set once, by the delivery that took it (NULL = still pending)",
    ),
    Column(
        "attempts",
        Integer,
        nullable=False,
        server_default=text("0"),
        comment="sends tried (a failed one clears delivered_at: the row waits for a retry)",
    ),
    Column("last_error", Text, nullable=True, comment="why the last send failed"),
    CheckConstraint("content <> ''", name="content_nonempty"),
    PrimaryKeyConstraint("target_key", "id"),
    comment="Proactive messages of the L3 loop (subconscious_send_to_user), delivered once",
)

profile = Table(
    "profile",
    metadata,
    Column("partition_key", Text, nullable=False, comment="the user's personal partition key"),
    Column("summary", Text, nullable=False, server_default=text("''::text")),
    Column(
        "lines",
        ARRAY(Text),
        nullable=False,
        server_default=text("'{}'::text[]"),
        comment="the body, one element per line; element i is line i (0-based) everywhere",
    ),
    Column(
        "version",
        Integer,
        nullable=False,
        server_default=text("1"),
        comment="+1 per write; the compare-and-set of profile_save_v1",
    ),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("partition_key <> ''", name="partition_nonempty"),
    # The configured caps ([profile]) are checked before the write; these are ceilings.
    CheckConstraint("char_length(summary) <= 10000", name="summary_ceiling"),
    CheckConstraint("cardinality(lines) <= 5000", name="lines_ceiling"),
    PrimaryKeyConstraint("partition_key"),
    comment="User profiles: a summary plus numbered body lines per personal partition",
)

profile_history = Table(
    "profile_history",
    metadata,
    Column("partition_key", Text, nullable=False),
    Column("version", Integer, nullable=False, comment="the profile's version after it"),
    Column(
        "operation",
        Text,
        nullable=False,
        comment="what changed, e.g. append 2 lines / replace [0:1] -> [0:2] / revert to v3",
    ),
    Column("actor_kind", Text, nullable=False, comment="cli | chat | loop"),
    Column(
        "actor", Text, nullable=True, comment="the operator (cli) or user id (chat) who made it"
    ),
    Column("cycle_id", BigInteger, nullable=True, comment="the L3 cycle (actor_kind loop)"),
    Column("old_summary", Text, nullable=False),
    Column("old_lines", ARRAY(Text), nullable=False),
    Column("new_summary", Text, nullable=False),
    Column("new_lines", ARRAY(Text), nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("actor_kind IN ('cli', 'chat', 'loop', 'system')", name="actor_kind"),
    CheckConstraint("actor_kind <> 'loop' OR cycle_id IS NOT NULL", name="loop_cycle"),
    PrimaryKeyConstraint("partition_key", "version"),
    comment="Profile changes, newest [profile] history_keep per profile, for revert",
)

extraction_run = Table(
    "extraction_run",
    metadata,
    Column(
        "session_key",
        Text,
        nullable=False,
        comment="the chat whose log was read (chat_log.session_key)",
    ),
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column(
        "partition_key",
        Text,
        nullable=False,
        comment="the partition whose source=auto memories were replaced",
    ),
    Column("trigger", Text, nullable=False, comment="expiry | command | cli"),
    Column("status", Text, nullable=False, comment="ok | rejected | failed"),
    Column("reason", Text, nullable=True, comment="why rejected or failed"),
    Column("entries", Integer, nullable=False, server_default=text("0")),
    Column(
        "chat_until_id",
        BigInteger,
        nullable=True,
        comment="the newest chat_log id the run read; the next run starts after it",
    ),
    Column("model", Text, nullable=True),
    Column("prompt_tokens", Integer, nullable=False, server_default=text("0")),
    Column("completion_tokens", Integer, nullable=False, server_default=text("0")),
    Column("total_tokens", Integer, nullable=False, server_default=text("0")),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=False),
    CheckConstraint("status IN ('ok', 'rejected', 'failed')", name="status"),
    CheckConstraint("trigger IN ('expiry', 'command', 'cli')", name="trigger"),
    # The session first: the distribution column, and every lookup is per session.
    PrimaryKeyConstraint("session_key", "id"),
    comment="Automatic extraction runs: outcome, token usage, and how far each read the chat log",
)

loaded_scope = Table(
    "loaded_scope",
    metadata,
    Column(
        "chat_key",
        Text,
        nullable=False,
        comment="the chat that loaded it (ToolContext.session_key)",
    ),
    Column("scope_key", Text, nullable=False, comment="the loaded partition"),
    Column("loaded_by", Text, nullable=False, comment="user id of the speaker"),
    Column("loaded_at", DateTime(timezone=True), nullable=False, server_default=NOW),
    CheckConstraint("chat_key <> scope_key", name="not_self"),
    PrimaryKeyConstraint("chat_key", "scope_key"),
    comment="Scopes loaded read-only into a chat (memory_load_context) until unloaded or the session expires",
)

# ------------------------------------------------------------------------ the trail
# Who recalled a memory, who changed it, which partitions are paused (the triggers and
# functions are sql/functions/trail.sql).

memory_access = Table(
    "memory_access",
    metadata,
    Column("partition_key", Text, nullable=False),
    Column("memory_id", Text, nullable=False),
    Column("seq", BigInteger, Identity(always=False), nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column(
        "surface",
        Text,
        nullable=False,
        comment="tool | command | cli | web | l3 | inject | relevant",
    ),
    Column("chat_key", Text, nullable=True, comment="the chat that recalled it (session key)"),
    Column("who", Text, nullable=True, comment="the speaker's user id, or the operator"),
    Column("query", Text, nullable=True, comment="the search text, redacted and cut"),
    Column(
        "score", DOUBLE_PRECISION, nullable=True, comment="the hit's decay score (NULL: injected)"
    ),
    CheckConstraint(
        "surface IN ('tool', 'command', 'cli', 'web', 'l3', 'inject', 'relevant')",
        name="surface",
    ),
    PrimaryKeyConstraint("partition_key", "memory_id", "seq"),
    comment="Recalls of a memory (searches and injections), newest N per memory (log_access_v1)",
)

memory_change = Table(
    "memory_change",
    metadata,
    Column("partition_key", Text, nullable=False),
    Column("memory_id", Text, nullable=False),
    Column("seq", BigInteger, Identity(always=False), nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column(
        "actor_kind",
        Text,
        nullable=False,
        comment="person | llm | extraction | l3 | import | system",
    ),
    Column("actor_id", Text, nullable=True, comment="the person, chat, session or cycle"),
    Column("op", Text, nullable=False, comment="create | update | delete | merge | tag"),
    Column("before", JSONB, nullable=True, comment="the shown fields before (NULL: created)"),
    Column("after", JSONB, nullable=True, comment="the shown fields after (NULL: deleted)"),
    Column("note", Text, nullable=True, comment="e.g. the id a merge kept"),
    CheckConstraint(
        "actor_kind IN ('person', 'llm', 'extraction', 'l3', 'import', 'system')",
        name="actor_kind",
    ),
    CheckConstraint("op IN ('create', 'update', 'delete', 'merge', 'tag')", name="op"),
    PrimaryKeyConstraint("partition_key", "memory_id", "seq"),
    comment="Change history per memory (the hot writers and row triggers on memory), "
    "newest N per memory",
)
# The retention of deleted memories' history walks only the delete rows of a partition.
Index(
    "ix_memory_change_partition_key_at",
    memory_change.c.partition_key,
    memory_change.c.at,
    postgresql_where=text("after IS NULL"),
)

# The sweep's history: one row per batch that changed something (sweep.sql), element i
# of the arrays one memory as it was; read per memory by memory_history_v1 over the GIN index.
sweep_change = Table(
    "sweep_change",
    metadata,
    # from memory_change's sequence (sweep_batch_v6): the two tables order as one history
    Column("seq", BigInteger, nullable=False, autoincrement=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("actor_kind", Text, nullable=False, comment="system | person | ... as memory_change"),
    Column("actor_id", Text, nullable=True),
    Column("note", Text, nullable=True),
    Column("partition_keys", ARRAY(Text), nullable=False),
    Column("memory_ids", ARRAY(Text), nullable=False),
    Column("ops", ARRAY(Text), nullable=False, comment="update | tag | delete | merge each"),
    Column("contents", ARRAY(Text), nullable=False),
    Column("tags", ARRAY(Text), nullable=False, comment="each the text of a memory's text[]"),
    Column("importances", ARRAY(SmallInteger), nullable=False),
    Column("categories", ARRAY(Text), nullable=False),
    Column("scopes", ARRAY(Text), nullable=False),
    Column("sources", ARRAY(Text), nullable=False),
    Column(
        "new_importances",
        ARRAY(SmallInteger),
        nullable=False,
        comment="each the importance after (NULL: purged)",
    ),
    Column(
        "new_sources", ARRAY(Text), nullable=False, comment="each the source after (NULL: purged)"
    ),
    CheckConstraint(
        "actor_kind IN ('person', 'llm', 'extraction', 'l3', 'import', 'system')",
        name="actor_kind",
    ),
    CheckConstraint("ops <@ ARRAY['update', 'delete', 'merge', 'tag']", name="ops"),
    PrimaryKeyConstraint("seq"),
    comment="The sweep's change history: one row per batch, one array element per memory",
)
Index("ix_sweep_change_memory_ids", sweep_change.c.memory_ids, postgresql_using="gin")

partition_count = Table(
    "partition_count",
    metadata,
    Column("partition_key", Text, nullable=False),
    Column(
        "n",
        BigInteger,
        nullable=False,
        comment="the partition's memory rows, kept by the memory table's triggers in the "
        "writing transaction (the partition_count_* triggers)",
    ),
    PrimaryKeyConstraint("partition_key"),
    comment="Memories per partition, what the cap reads instead of counting the rows; "
    "no row = none",
)

paused_partition = Table(
    "paused_partition",
    metadata,
    Column("partition_key", Text, nullable=False),
    Column("paused_at", DateTime(timezone=True), nullable=False),
    Column("paused_by", Text, nullable=False, comment="who paused it (person id / operator)"),
    Column("reason", Text, nullable=True),
    CheckConstraint("partition_key <> ''", name="partition_nonempty"),
    PrimaryKeyConstraint("partition_key"),
    comment="Partitions whose memory is paused: kept, not injected, not recalled, "
    "not written by automatic processes",
)
admin_audit = Table(
    "admin_audit",
    metadata,
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("at", DateTime(timezone=True), nullable=False, server_default=NOW),
    Column("actor", Text, nullable=False, comment="the name given at login"),
    Column("role", Text, nullable=False, comment="admin | superuser"),
    Column("client", Text, nullable=True, comment="the client address the request came from"),
    Column("action", Text, nullable=False, comment="what was done, e.g. memory.add, memo.edit"),
    Column("partition_key", Text, nullable=True, comment="the partition written to"),
    Column("target_id", Text, nullable=True, comment="the memory id / kid / job id"),
    Column(
        "detail",
        JSONB,
        nullable=False,
        server_default=text("'{}'::jsonb"),
        comment="the write's arguments and outcome (secrets redacted)",
    ),
    Column("ok", Boolean, nullable=False, comment="false = refused or failed, nothing written"),
    CheckConstraint("role IN ('admin', 'superuser')", name="role"),
    PrimaryKeyConstraint("id"),
    comment="Writes made through the admin web page: who, what, when, and whether it took",
)
Index("ix_admin_audit_at", admin_audit.c.at)
Index("ix_admin_audit_partition_key_at", admin_audit.c.partition_key, admin_audit.c.at)

# several bot processes on one database: who runs what (sql/functions/lease.sql)
lease = Table(
    "lease",
    metadata,
    Column("kind", Text, nullable=False, comment="l3 | extraction | sweep | reembed | backup"),
    Column(
        "lease_key",
        Text,
        nullable=False,
        comment="the target / session key, '' for the fleet's one job of the kind",
    ),
    Column("owner", Text, nullable=False, comment="host:pid:start of the holder"),
    Column("token", Text, nullable=False, comment="random per claim"),
    Column("acquired_at", DateTime(timezone=True), nullable=False),
    Column("renewed_at", DateTime(timezone=True), nullable=False),
    Column(
        "expires_at",
        DateTime(timezone=True),
        nullable=False,
        comment="free for anyone after this (the heartbeat pushes it)",
    ),
    Column(
        "previous_owner",
        Text,
        nullable=True,
        comment="whose expired lease this claim took over",
    ),
    CheckConstraint(
        "kind IN ('l3', 'extraction', 'sweep', 'reembed', 'backup', 'restore', 'ann')",
        name="kind",
    ),
    CheckConstraint("expires_at > acquired_at", name="expiry_after_claim"),
    PrimaryKeyConstraint("kind", "lease_key"),
    comment="Who in the fleet runs which long work (lease_acquire_v1); expired = free",
)
job = Table(
    "job",
    metadata,
    Column("id", Text, nullable=False),
    Column("kind", Text, nullable=False, comment="backup | sweep | reembed"),
    Column(
        "state",
        Text,
        nullable=False,
        comment="running | done | failed | cancelled | lost (its process died)",
    ),
    Column("phase", Text, nullable=False),
    Column("done", BigInteger, nullable=False),
    Column("total", BigInteger, nullable=False),
    Column("started_by", Text, nullable=False, comment="the operator"),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    Column("owner", Text, nullable=False, comment="host:pid:start of the running process"),
    Column("heartbeat_at", DateTime(timezone=True), nullable=False),
    Column("cancel_requested", Boolean, nullable=False, server_default=text("false")),
    Column("cancelled_by", Text, nullable=True),
    Column("result", Text, nullable=True, comment="what it did, one line"),
    Column("error", Text, nullable=True, comment="why it failed (redacted)"),
    CheckConstraint("kind IN ('backup', 'sweep', 'reembed', 'restore')", name="kind"),
    CheckConstraint("state IN ('running', 'done', 'failed', 'cancelled', 'lost')", name="state"),
    PrimaryKeyConstraint("id"),
    comment="The admin page's background jobs of every process (job_start_v1)",
)
Index(
    "ux_job_one_running_per_kind",
    job.c.kind,
    unique=True,
    postgresql_where=text("state = 'running'"),
)
Index("ix_job_started_at", job.c.started_at)
web_session = Table(
    "web_session",
    metadata,
    Column("id", Text, nullable=False, comment="the random id the cookie carries"),
    Column("role", Text, nullable=False, comment="admin | superuser"),
    Column("name", Text, nullable=False, comment="the name given at login"),
    Column(
        "password_fp",
        Text,
        nullable=False,
        comment="fingerprint of the password hash logged in with (a change ends the session)",
    ),
    Column("client", Text, nullable=True, comment="the client address at login"),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column(
        "revoked_at",
        DateTime(timezone=True),
        nullable=True,
        comment="set by logout or log out everywhere",
    ),
    CheckConstraint("role IN ('admin', 'superuser')", name="role"),
    PrimaryKeyConstraint("id"),
    comment="Logged-in admin page sessions: revocable server-side",
)
Index("ix_web_session_expires_at", web_session.c.expires_at)
web_login_failure = Table(
    "web_login_failure",
    metadata,
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("client", Text, nullable=False, comment="the client address"),
    Column("at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("id"),
    comment="Failed admin page logins, counted by every process for the rate limit",
)
Index("ix_web_login_failure_client_at", web_login_failure.c.client, web_login_failure.c.at)
# scheduled backups, one process of the fleet at a time (sql/functions/backup.sql)
backup_schedule = Table(
    "backup_schedule",
    metadata,
    Column("id", SmallInteger, nullable=False, server_default=text("1")),
    Column(
        "last_slot",
        DateTime(timezone=True),
        nullable=True,
        comment="the newest slot of [backup] schedule a process claimed",
    ),
    Column("claimed_by", Text, nullable=True, comment="host:pid of the claimer"),
    Column("claimed_at", DateTime(timezone=True), nullable=True),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    Column("stem", Text, nullable=True, comment="the backup the slot produced"),
    Column("ok", Boolean, nullable=True, comment="backup and verify succeeded"),
    Column("error", Text, nullable=True),
    CheckConstraint("id = 1", name="one_row"),
    PrimaryKeyConstraint("id"),
    comment="One row: the last scheduled backup slot claimed (claim_backup_slot_v1)",
)

# Lineage, forgetting, erasure (migration 0059_lineage; the functions are
# sql/functions/lineage.sql, whose header says what each row means).
DERIVED_KINDS = "('memory', 'knowledge', 'profile_line', 'profile_summary', 'memo_sentence')"
lineage = Table(
    "lineage",
    metadata,
    Column(
        "derived_kind",
        Text,
        nullable=False,
        comment="memory | knowledge | profile_line | profile_summary | memo_sentence",
    ),
    Column("derived_key", Text, nullable=False, comment="its partition ('' = knowledge)"),
    Column(
        "derived_id",
        Text,
        nullable=False,
        comment="memory id | kid | text_id_v1 of the line, summary or sentence",
    ),
    Column("source_kind", Text, nullable=False, comment="memory | chat_line"),
    Column("source_key", Text, nullable=False, comment="its partition / chat session key"),
    Column("source_id", Text, nullable=False, comment="memory id | chat_log id"),
    Column("made_by", Text, nullable=False, comment="the writer's actor kind"),
    Column("cycle_id", BigInteger, nullable=True, comment="the L3 cycle that made it"),
    Column("made_at", DateTime(timezone=True), nullable=False),
    CheckConstraint(f"derived_kind IN {DERIVED_KINDS}", name="derived_kind"),
    CheckConstraint("source_kind IN ('memory', 'chat_line')", name="source_kind"),
    CheckConstraint(
        "made_by IN ('person', 'llm', 'extraction', 'l3', 'import', 'system')", name="made_by"
    ),
    # Walked down from a source by the index below, up from a derived row by this key.
    PrimaryKeyConstraint(
        "derived_key", "derived_kind", "derived_id", "source_kind", "source_key", "source_id"
    ),
    comment="What each derived row was made from (memories, chat lines); walked both ways "
    "by lineage_made_from_v1 / lineage_used_by_v1",
)
Index(
    "ix_lineage_source_key_source_kind_source_id",
    lineage.c.source_key,
    lineage.c.source_kind,
    lineage.c.source_id,
)

rederive_task = Table(
    "rederive_task",
    metadata,
    Column(
        "partition_key",
        Text,
        nullable=False,
        comment="the partition whose L3 cycle re-derives it",
    ),
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column(
        "kind",
        Text,
        nullable=False,
        comment="memory | knowledge | profile_line | profile_summary | memo_sentence",
    ),
    Column("row_key", Text, nullable=False, comment="the withheld row's partition"),
    Column("row_id", Text, nullable=False, comment="its id as lineage names it"),
    Column(
        "held",
        JSONB,
        nullable=True,
        comment="the row as it was (NULL after an erasure: no content is kept)",
    ),
    Column(
        "sources",
        JSONB,
        nullable=False,
        server_default=text("'[]'::jsonb"),
        comment="the sources left: [{kind, key, id}]",
    ),
    Column(
        "about",
        JSONB,
        nullable=False,
        server_default=text("'[]'::jsonb"),
        comment="what to leave out or take in: [{was, now}]",
    ),
    Column("reason", Text, nullable=False, comment="delete | forget | erase | change"),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("claimed_by_cycle", BigInteger, nullable=True),
    Column("claimed_at", DateTime(timezone=True), nullable=True),
    CheckConstraint(f"kind IN {DERIVED_KINDS}", name="kind"),
    CheckConstraint("reason IN ('delete', 'forget', 'erase', 'change')", name="reason"),
    CheckConstraint("(claimed_by_cycle IS NULL) = (claimed_at IS NULL)", name="claim"),
    PrimaryKeyConstraint("partition_key", "id"),
    comment="Rows a forget or change withheld, waiting for the partition's next L3 cycle "
    "to derive them again (subconscious_rederive)",
)

erasure_ledger = Table(
    "erasure_ledger",
    metadata,
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("kind", Text, nullable=False, comment="forget | erase"),
    Column(
        "subject",
        Text,
        nullable=False,
        comment="sha256 of the partition key (erasure_subject_v1); the key is not kept",
    ),
    Column(
        "memory_ids",
        ARRAY(Text),
        nullable=False,
        server_default=text("'{}'::text[]"),
        comment="forget: the memories removed (random ids, no content)",
    ),
    Column(
        "chat_line_ids",
        ARRAY(BigInteger),
        nullable=False,
        server_default=text("'{}'::bigint[]"),
        comment="forget: the chat lines removed",
    ),
    Column(
        "requested_by",
        Text,
        nullable=False,
        comment="the surface and operator that asked (cli:<os user>, web:<login>, chat)",
    ),
    Column(
        "counts",
        JSONB,
        nullable=False,
        server_default=text("'{}'::jsonb"),
        comment="the receipt: rows removed per table",
    ),
    CheckConstraint("kind IN ('forget', 'erase')", name="kind"),
    CheckConstraint("subject ~ '^[0-9a-f]{64}$'", name="subject"),
    PrimaryKeyConstraint("id"),
    comment="What was forgotten or erased and when, without content; every restore "
    "applies it (erasure_ledger_apply_v1)",
)
