-- 0058_comments_name_the_present's upgrade, frozen with it (never edited): Function comments say what each function does now.

COMMENT ON FUNCTION amrita_memory.insert_memory_v5(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,text[],text,text,text) IS 'The previous release''s insert: insert_memory_v6 with its create history row written by a data-modifying CTE over the inserted row.';

COMMENT ON FUNCTION amrita_memory.job_start_v1(text,text,text,text,double precision,timestamp with time zone) IS 'Start an admin-page job: one running job per kind across the fleet (advisory lock per kind); running rows without a heartbeat are marked lost first (FOR UPDATE SKIP LOCKED). See sql/functions/job.sql.';

COMMENT ON FUNCTION amrita_memory.knowledge_create_v2(text,text,text,text,vector,text,integer,timestamp with time zone,text[],text,text,text) IS 'Create a knowledge entry with the search tokens of title + summary + body (NULL = to be backfilled); status created | too_long | exists; model check AMF01/AMF03.';

COMMENT ON FUNCTION amrita_memory.knowledge_search_v2(vector,text[],text,integer,text,double precision,double precision) IS 'Knowledge search in one statement: mode vector (the summary vector''s L2 distance, then kid), keyword (BM25 over title + summary + body tokens) or hybrid (rrf or weighted fusion, as the memories''; no decay). SQLSTATE 22023 for a bad mode or fusion.';

COMMENT ON FUNCTION amrita_memory.lease_acquire_v1(text,text,text,text,double precision,timestamp with time zone) IS 'Claim a lease of long work (kind, key) under a transaction-level advisory lock; a live lease of another claim is refused with its holder, an expired one taken over. See sql/functions/lease.sql.';

COMMENT ON FUNCTION amrita_memory.memory_block_v2(text[],text,text[],integer,vector,integer,text,bigint) IS 'The per-turn block in one round trip: the memos, loaded scopes, memories and relevant memories of the chat''s partitions and the profile summary, none of a paused partition (one row of kind paused names each paused partition asked for), and a version row: the candidates are sent only when p_known differs from it. Generic plan.';

COMMENT ON FUNCTION amrita_memory.memory_fields_v2(text,text[],smallint,text,text,text) IS 'The fields a change history records of a memory, as jsonb; STABLE, so that it is inlined into the writing statement instead of called per row.';

COMMENT ON FUNCTION amrita_memory.memory_matches_v2(smallint,text,text[],text,integer,integer,text,text[],text) IS 'Search filter on top of the partition: importance range, scope, any tag and category (NULL = any). Inlined by the planner.';

COMMENT ON FUNCTION amrita_memory.recall_memories_v4(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision,text,text,text,text,integer,boolean) IS 'read_memory in one round trip over search_memories_v8, plans made once per connection (the access log''s too): paused partition first (one status row, paused = true, nothing searched), else the hits, then their access log (log_access_v1) in a sub-block that never fails the read (a status row with log_error).';

COMMENT ON FUNCTION amrita_memory.record_memory_change_row_v1() IS 'Row trigger on memory: the history row of one changed memory, its access-log follow-up, the pause refusal AMZ01 and the bounds; the triggers'' WHEN skips it under amrita_memory.history_by_writer = on.';

COMMENT ON FUNCTION amrita_memory.reembed_pending_knowledge_v2(text,text,integer) IS 'Knowledge rows still to re-embed after p_after (kid order), with their summary (the text a write embeds).';

COMMENT ON FUNCTION amrita_memory.reembed_switch_v2(text,text,text,text,integer,timestamp with time zone) IS 'The re-embed switch: in one transaction swap every staged vector in and record the model; nothing when rows are pending; AMF02 for mixed dimensions. memory and knowledge are locked first IN EXCLUSIVE MODE (also against FOR UPDATE row lockers), ACCESS EXCLUSIVE when an ANN index of another dimension is dropped: no deadlock with a row-locking writer. See sql/functions/reembed.sql.';

COMMENT ON FUNCTION amrita_memory.refuse_paused_write_v1() IS 'Row trigger on memo and profile: refuses a write by an automatic actor (amrita_memory.actor kind llm, extraction, l3) to a paused partition with SQLSTATE AMZ01, as the trail triggers do for memories.';

COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v6(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision,text[]) IS 'Hybrid mode, rrf fusion, of search_memories_v6: reciprocal ranks of the vector and keyword sides times the decay factor, on narrow rows; the top k joined back for their content.';

COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v8(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision) IS 'Hybrid mode, rrf fusion, of search_memories_v8 over every row of the partition: reciprocal ranks of the vector and keyword sides times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v6(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision,text[]) IS 'Hybrid mode, weighted fusion, of search_memories_v6: normalised similarity and bm25 / max bm25, weighted, times the decay factor, on narrow rows; the top k joined back for their content.';

COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v8(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision) IS 'Hybrid mode, weighted fusion, of search_memories_v8 over every row of the partition: normalised similarity and bm25 / max bm25, weighted, times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

COMMENT ON FUNCTION amrita_memory.score_keyword_v6(text,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,text[]) IS 'Keyword mode of search_memories_v6 (a partition''s HNSW and GIN candidates): BM25 of the rows sharing a token with the query times the decay factor, on narrow rows; the top k joined back for their content.';

COMMENT ON FUNCTION amrita_memory.score_keyword_v8(text,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text) IS 'Keyword mode of search_memories_v8 over every row of the partition: BM25 of the rows sharing a token with the query times the decay factor; a row''s matching lexemes by two ts_delete (no unnest of its whole tsvector), document frequency by a window count, age only for the matching rows, the top k fetched by ctid.';

COMMENT ON FUNCTION amrita_memory.score_memories_v1(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,text,double precision,double precision,text[]) IS 'Score the rows of one partition (all, or the candidate ids p_ids), every mode in one body: vector similarity, BM25 over the search tokens, fusion by mode (vector | keyword | hybrid; rrf or weighted), times the decay factor. The Chroma backend''s keyword candidates.';

COMMENT ON FUNCTION amrita_memory.search_memories_v6(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision) IS 'Decay-scored retrieval in a partition with its own HNSW index (search_memories_v8 sends it here): generic plans, one plain body per mode and fusion over the HNSW and GIN candidates. SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';

COMMENT ON FUNCTION amrita_memory.search_memories_v8(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision) IS 'Decay-scored retrieval in one partition, the entry point of every search: generic plans without bitmap scans; plain bodies per mode and fusion over a partition without its own HNSW index, search_memories_v6 for one with. SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';

COMMENT ON FUNCTION amrita_memory.search_vector_ann_v5(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer) IS 'Vector mode on a partition with its own HNSW index: the p_candidates nearest filtered rows by that index, re-ranked by decay score.';

COMMENT ON FUNCTION amrita_memory.search_vector_exact_v5(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text) IS 'Vector mode over every row of the partition: 1/(1+squared L2) x max(0.5^(age/half_life), floor), top_k.';

COMMENT ON FUNCTION amrita_memory.sweep_batch_v8(timestamp with time zone,double precision,double precision,integer,boolean,boolean,boolean,text,text) IS 'One batch of the decay sweep from the persisted cursor, in the primary key''s (partition_key, id) order (cursor ''partition_key/id'', sweep_state.cursor_key): demote or purge what outlived its tier by three cutoffs, locking only those rows by tid, SKIP LOCKED; one sweep_change row per batch.';

COMMENT ON FUNCTION amrita_memory.tokens_tsquery_v1(text[]) IS 'The OR of the tokens as a tsquery (quoted lexemes, no parsing); NULL for none. The keyword side of every search.';

COMMENT ON FUNCTION amrita_memory.update_memory_v3(text,text,text,text[],integer,boolean,text,vector,text,timestamp with time zone,text[],boolean) IS 'Update one memory (NULL = keep a field): new content with its embedding (else 22023) and its search tokens; model check AMF01/AMF03; with p_protect_user a source=user memory is refused, SQLSTATE AMP01.';

COMMENT ON FUNCTION amrita_memory.write_memory_v5(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,double precision,text[],text,text,text) IS 'The chat tool''s write on insert_memory_v6: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens and history row (cap, model check AMF01/AMF03).';

