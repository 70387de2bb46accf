-- L2 memory statements. Vectors are computed by the caller before any of these runs (no
-- lock is ever held across an embedding request); every statement names the partition,
-- the distribution column under Citus (docs/scaling.md), so each stays single-shard.

-- name: insert_memory
-- Insert under the per-partition cap: $1 partition, $2 scope, $3 content, $4 tags,
-- $5 importance (1-10), $6 category, $7 source, $8 author, $9 embedding, $10 the
-- writer's fingerprint, $11 now, $12 cap, $13 the content's search tokens
-- (domain/tokens.py), $14-$16 protocol/model/base_url (recorded only by the store's first
-- write). id is NULL when the partition is full (rows_before = the count). SQLSTATE
-- AMF01: another embedding model; AMF03: another dimension.
-- Bound BY NAME from a NewMemory (storage/memories.py insert_args).
SELECT id, rows_before
  FROM amrita_memory.insert_memory_v7(
           p_partition => $1, p_scope => $2, p_content => $3, p_tags => $4,
           p_importance => $5, p_category => $6, p_source => $7, p_author => $8,
           p_embedding => $9, p_fingerprint => $10, p_now => $11, p_cap => $12,
           p_tokens => $13, p_protocol => $14, p_model => $15, p_base_url => $16);

-- name: write_memory
-- The chat tool's write: insert_memory's arguments ($1-$12 as there), then $13 the dedup
-- window in seconds (0 = off), $14 the search tokens, $15-$17 protocol/model/base_url. An
-- identical memory (same partition, scope, content, author, source, model) written less
-- than $13 seconds before $11 is returned instead of a new row (duplicate = true): a
-- retry after a lost reply never makes a duplicate. id is NULL when the partition is
-- full. SQLSTATE AMF01 / AMF03 as for insert_memory. Bound BY NAME (insert_args).
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, rows_before, duplicate
  FROM amrita_memory.write_memory_v6(
           p_partition => $1, p_scope => $2, p_content => $3, p_tags => $4,
           p_importance => $5, p_category => $6, p_source => $7, p_author => $8,
           p_embedding => $9, p_fingerprint => $10, p_now => $11, p_cap => $12,
           p_dedup_seconds => $13, p_tokens => $14, p_protocol => $15, p_model => $16,
           p_base_url => $17);

-- (update_memory moved to sql/queries/seed.sql as update_memory_guarded: update_memory_v3,
-- with the manual-entry guard and hybrid's search tokens.)

-- name: search_memories
-- The top p_top_k of partition p_partition for query vector p_query (NULL in keyword
-- mode) and search tokens p_tokens, ranked by p_mode (vector | keyword | hybrid) times
-- the decay at p_now (p_decay on, p_base_days half-life base, p_boost importance boost,
-- p_floor score floor; filters p_importance_min/max, p_scope, p_tags (any of), p_category;
-- p_candidates HNSW/GIN candidates for a large partition; p_fusion rrf | weighted,
-- p_rrf_k, p_weight the keyword weight). Bound BY NAME from a MemoryQuery
-- (storage/pgvector.py search_args, through queries.bind). distance = squared L2; vector
-- mode: decay_score = 1/(1+distance) x max(0.5^(age/half_life), floor), release 3's
-- scores bit for bit. search_memories_v8: one plain body per mode, generic plans without bitmap
-- scans, matching lexemes by intersection (search.sql).
-- SQLSTATE AMF03 when the query's dimension is not the store's, 22023 for a bad mode.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, distance, decay_score, age_days, keyword_score
  FROM amrita_memory.search_memories_v8(
           p_partition => $1, p_query => $2, p_tokens => $3, p_mode => $4, p_top_k => $5,
           p_now => $6, p_decay => $7, p_base_days => $8, p_boost => $9, p_floor => $10,
           p_importance_min => $11, p_importance_max => $12, p_scope => $13, p_tags => $14,
           p_category => $15, p_candidates => $16, p_fusion => $17, p_rrf_k => $18,
           p_weight => $19);

-- name: recall_memories
-- read_memory's one round trip: search_memories' arguments (same names) plus the access
-- log's: p_chat, p_who, p_query_text (redacted), p_surface, p_keep per memory, p_log.
-- A paused partition is checked first; rows with id NULL are status rows (paused, or
-- log_error: the log failed and the hits stand). Bound BY NAME (storage/pgvector.py
-- recall_args). recall_memories_v4 (search.sql): its plans and the access log's made once
-- per connection.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, distance, decay_score, age_days, keyword_score, paused,
       log_error
  FROM amrita_memory.recall_memories_v4(
           p_partition => $1, p_query => $2, p_tokens => $3, p_mode => $4, p_top_k => $5,
           p_now => $6, p_decay => $7, p_base_days => $8, p_boost => $9, p_floor => $10,
           p_importance_min => $11, p_importance_max => $12, p_scope => $13, p_tags => $14,
           p_category => $15, p_candidates => $16, p_fusion => $17, p_rrf_k => $18,
           p_weight => $19, p_chat => $20, p_who => $21, p_query_text => $22,
           p_surface => $23, p_keep => $24, p_log => $25);

-- name: get_memory
-- One memory of partition $1 by its full id $2: a primary-key lookup (partition_key, id).
-- No row when the id is unknown or belongs to another partition.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at
  FROM amrita_memory.memory
 WHERE partition_key = $1 AND id = $2;

-- name: count_memories
-- How many memories partition $1 holds (a count over its range of the partition btree).
SELECT count(*)::integer AS n
  FROM amrita_memory.memory
 WHERE partition_key = $1;

-- name: list_memories_page
-- One page of partition $1 in (created_at, id) order, deterministic (reference W6):
-- $2 rows from offset $3, each with the partition's total (count(*) OVER () is computed
-- before LIMIT, in the same scan: one round trip instead of two). No rows past the end.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at, count(*) OVER ()::integer AS total
  FROM amrita_memory.memory
 WHERE partition_key = $1
 ORDER BY created_at, id
 LIMIT $2 OFFSET $3;

-- name: find_memories_by_prefix
-- Every memory of partition $1 whose id starts with $2 (the short ids users type), in
-- (created_at, id) order. left(id, length($2)) = $2 rather than LIKE: a prefix holding
-- '%' or '_' is matched literally.
SELECT id, partition_key, scope, content, tags, importance, category, source, author,
       created_at, updated_at
  FROM amrita_memory.memory
 WHERE partition_key = $1 AND left(id, length($2)) = $2
 ORDER BY created_at, id;

-- (delete_memory moved to sql/queries/seed.sql as delete_memory_guarded: delete_memory_v1.)

-- name: count_all_memories
-- Memories in the whole store (every partition): the guard against restoring an empty
-- backup over a full store, and the PostgreSQL side of the chroma index check.
SELECT count(*)::integer AS n
  FROM amrita_memory.memory;

-- name: sweep_cursor
-- Where the last sweep stopped (the persisted keyset cursor 'partition_key/id' of the
-- last row swept, sweep.sql; '' = the start). A run remembers it to know where its
-- second leg, from the start of the table, ends.
SELECT cursor_key
  FROM amrita_memory.sweep_state
 WHERE id = 1;

-- name: sweep_batch
-- One batch of the sweep (reference §5.2): $1 now, $2 short-term and $3 long-term tier
-- lifetimes in days, $4 rows per batch, $5 whether a demotion restarts the clock,
-- $6 whether source=user rows are spared (protect_manual_memories), $7 dry run,
-- $8 cursor (NULL = the persisted one), $9 stop at this position (NULL = end of the
-- table); positions are 'partition_key/id', walked in primary key order (v8). Rows
-- locked by a concurrent edit are skipped (FOR UPDATE SKIP LOCKED), and so are rows
-- another transaction changed since the batch read them (v7: the due rows are reached by
-- tid; the next run sweeps them); rows of a paused partition are always kept (a pause
-- keeps its memories, v3). Its history is one sweep_change row per batch (v6).
SELECT scanned, demoted, purged, kept, next_cursor, wrapped, purged_ids
  FROM amrita_memory.sweep_batch_v8($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: trim_history
-- The trail's history bounds over the whole table, once per sweep run (trim_history_v2, trail.sql): per
-- memory the newest $1 changes stay; the history of memories deleted more than $2 days
-- ago goes, and the sweep's batch rows older than that. Returns the rows trimmed and expired.
SELECT trimmed, expired FROM amrita_memory.trim_history_v2($1, $2);

-- name: untokenized_memories
-- The token backfill (maintenance/tokens.py): up to $2 memories without search tokens
-- after id $1, in id order (keyset on the partial index ix_memory_id_untokenized, which
-- holds only these rows; resumable: the cursor is the last id done, and a finished row
-- no longer matches).
SELECT partition_key, id, content
  FROM amrita_memory.memory
 WHERE id > $1 AND search_tokens IS NULL
 ORDER BY id
 LIMIT $2;

-- name: set_memory_tokens
-- Store the search tokens $4 of memory $2 of partition $1, unless its content changed
-- since it was read ($3: an edit stored its own tokens meanwhile). $5 true = replace
-- existing tokens (a re-tokenization), false = only fill in missing ones.
UPDATE amrita_memory.memory
   SET search_tokens = array_to_tsvector($4::text[])
 WHERE partition_key = $1 AND id = $2 AND content = $3
   AND ($5 OR search_tokens IS NULL);

-- name: memories_page_for_tokens
-- A re-tokenization of every memory: up to $3 memories after ($1 partition, $2 id), in
-- the primary key's order (keyset on pk_memory: every page costs the same).
SELECT partition_key, id, content
  FROM amrita_memory.memory
 WHERE (partition_key, id) > ($1, $2)
 ORDER BY partition_key, id
 LIMIT $3;

-- name: token_walk_size
-- How many rows a token walk visits (the CLI's progress bar): memories and knowledge
-- entries without search tokens, or all of them with $1 (a re-tokenization).
SELECT (SELECT count(*) FROM amrita_memory.memory
         WHERE $1 OR search_tokens IS NULL)::integer AS memories,
       (SELECT count(*) FROM amrita_memory.knowledge
         WHERE $1 OR search_tokens IS NULL)::integer AS knowledge;

-- name: count_untokenized_memories
-- Memories still without search tokens (0 once the backfill is done).
SELECT count(*)::integer AS n
  FROM amrita_memory.memory
 WHERE search_tokens IS NULL;
