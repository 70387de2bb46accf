-- Catalogue comments on the functions and the view released before migration 0006, so
-- that psql's \df+ / \dv+ and obj_description() explain every object of the schema.
-- Released function files are never edited, so their comments are added here; objects
-- released from 0006 on carry their COMMENT ON in their own file. A test
-- (tests/integration/test_catalogue_comments.py) fails on any function or view of the
-- schema without a comment. Formulas and units are those of the files' headers.

-- decay_v1.sql: the decay math (twin of amrita_memory_pg/domain/decay.py; days, squared L2)
COMMENT ON FUNCTION amrita_memory.importance_rank_v1(integer) IS
'Tier rank of a 1-10 importance: 1-3 -> 0 (low), 4-7 -> 1 (medium), 8-10 -> 2 (high); out of range counts as medium.';
COMMENT ON FUNCTION amrita_memory.age_days_v1(timestamptz, timestamptz) IS
'Days (float8) from p_created to p_now; a future timestamp counts as 0.';
COMMENT ON FUNCTION amrita_memory.half_life_days_v1(float8, integer, float8) IS
'Half-life in days = base x (1 + boost x importance_rank). Defaults: low 30, medium 60, high 90.';
COMMENT ON FUNCTION amrita_memory.decay_factor_v1(float8, float8, float8) IS
'max(0.5^(age_days/half_life_days), floor); 1 when half_life <= 0; exponent clamped at 1000 halvings (float8 underflow).';
COMMENT ON FUNCTION amrita_memory.similarity_v1(float8) IS
'1 / (1 + max(squared L2 distance, 0)); a NULL distance counts as 0 (the reference''s quirk).';
COMMENT ON FUNCTION amrita_memory.decay_score_v1(float8, float8, integer, float8, float8, float8) IS
'Retrieval score = similarity_v1(distance) x decay_factor_v1(age_days, half_life_days_v1(base, importance, boost), floor).';
COMMENT ON FUNCTION amrita_memory.tier_days_v1(integer, float8, float8) IS
'Lifetime in days of an importance tier: low = the shorter bound, high = the longer, medium = their geometric mean.';
COMMENT ON FUNCTION amrita_memory.demoted_importance_v1(integer) IS
'Importance one tier down: high -> 5, medium -> 3, low -> NULL (a low memory is purged, not demoted).';
COMMENT ON FUNCTION amrita_memory.sweep_action_v1(integer, float8, float8, float8) IS
'Sweep decision for one memory: keep while age_days <= tier lifetime, then demote, or purge when low.';

-- memory_v1.sql: L2 writes, retrieval and the sweep
COMMENT ON FUNCTION amrita_memory.insert_memory_v1(text, text, text, text[], integer, text, text, text, vector, text, timestamptz, integer, text, text, text) IS
'Superseded by insert_memory_v2 (which also checks the dimension). Insert one memory under the per-partition cap; refuses another fingerprint with SQLSTATE AMF01.';
COMMENT ON FUNCTION amrita_memory.search_memories_v1(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], integer) IS
'Superseded by search_memories_v3 (same results). Decay-scored top_k of one partition: exact scan, or the HNSW path for partitions in ann_index.';
COMMENT ON FUNCTION amrita_memory.sweep_batch_v1(timestamptz, float8, float8, integer, boolean, boolean, text, text) IS
'One batch of the tiered sweep in id order from the persisted cursor (sweep_state): demote or purge what outlived its tier, FOR UPDATE SKIP LOCKED; returns counts and purged ids.';

-- memory_v2.sql: faster exact retrieval
COMMENT ON FUNCTION amrita_memory.search_memories_exact_v2(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[]) IS
'Superseded by search_memories_exact_v3 (same results). Exact decay-scored top_k of one partition.';
COMMENT ON FUNCTION amrita_memory.search_memories_v2(text, vector, integer, timestamptz, boolean, float8, float8, float8, integer, integer, text, text[], integer) IS
'Superseded by search_memories_v3 (same results, plus the AMF03 dimension check). Exact path, or v1''s HNSW path for partitions in ann_index.';

-- memo_v1.sql: L1 memo writes under the cap (characters)
COMMENT ON FUNCTION amrita_memory.memo_append_v1(text, text, integer, timestamptz) IS
'Append a line to a partition''s memo unless it would exceed p_max_chars characters (checked under the row lock); returns applied, chars, current_chars, version.';
COMMENT ON FUNCTION amrita_memory.memo_write_v1(text, text, integer, timestamptz) IS
'Replace a partition''s whole memo ('''' clears it) unless it exceeds p_max_chars characters; returns applied, chars, current_chars, version.';

-- chat_activity_v1.sql: inputs of the L3 loop
COMMENT ON FUNCTION amrita_memory.chat_log_append_v1(text, text, text, text, text, timestamptz, integer) IS
'Append one chat line to its session and keep only the newest p_keep lines (by id); returns the new id.';
COMMENT ON FUNCTION amrita_memory.activity_touch_v1(text, integer, integer, timestamptz) IS
'Count one user message in its heatmap cell (weekday 0 = Monday, slot = local hour / 2); one upsert.';

-- reembed_v1.sql: online re-embedding
COMMENT ON FUNCTION amrita_memory.reembed_pending_v1(text, text, text, integer) IS
'Up to p_limit memory rows after p_after (id order) without a valid staged vector of p_fingerprint: the next re-embed batch.';
COMMENT ON FUNCTION amrita_memory.reembed_pending_knowledge_v1(text, text, integer) IS
'Up to p_limit knowledge rows after p_after (kid order) without a valid staged vector; the text embedded is title + summary.';
COMMENT ON FUNCTION amrita_memory.reembed_pending_count_v1(text) IS
'How many memory and knowledge rows still lack a valid staged vector of p_fingerprint.';
COMMENT ON FUNCTION amrita_memory.reembed_switch_v1(text, text, text, text, integer, timestamptz) IS
'The re-embed switch: in one transaction swap every staged vector in and record the model (fingerprint, dimension) in store_meta; nothing when rows are pending. AMF02: staged vectors of mixed dimensions.';

-- partition_usage_v1.sql
COMMENT ON VIEW amrita_memory.partition_usage IS
'Per partition: memory counts by tier and scope, age range, content bytes, and the L1 memo length. One row per partition with memories or a memo.';
