-- 0058_comments_name_the_present's downgrade, frozen with it (never edited): Function comments say what each function does now.

COMMENT ON FUNCTION amrita_memory.insert_memory_v5(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,text[],text,text,text) IS 'insert_memory_v4 (cap under an advisory lock, model check AMF01/AMF03 before the cap, search tokens, its create history row and origin in the same statement; id NULL when full) checking the model once, under the table lock a re-embed switch waits for.';

COMMENT ON FUNCTION amrita_memory.job_start_v1(text,text,text,text,double precision,timestamp with time zone) IS 'Start an admin-page job: one running job per kind across the fleet (advisory lock per kind); running rows without a heartbeat are marked lost first (FOR UPDATE SKIP LOCKED). See sql/functions/job_v1.sql.';

COMMENT ON FUNCTION amrita_memory.knowledge_create_v2(text,text,text,text,vector,text,integer,timestamp with time zone,text[],text,text,text) IS 'knowledge_create_v1 that also stores the search tokens of title + summary + body; status created | too_long | exists.';

COMMENT ON FUNCTION amrita_memory.knowledge_search_v2(vector,text[],text,integer,text,double precision,double precision) IS 'Knowledge search in one statement: mode vector (summary vector L2, = knowledge_search_v1''s order), keyword (BM25 over title + summary + body tokens) or hybrid (rrf or weighted fusion, as the memories''; no decay). SQLSTATE 22023 for a bad mode or fusion.';

COMMENT ON FUNCTION amrita_memory.lease_acquire_v1(text,text,text,text,double precision,timestamp with time zone) IS 'Claim a lease of long work (kind, key) under a transaction-level advisory lock; a live lease of another claim is refused with its holder, an expired one taken over. See sql/functions/lease_v1.sql.';

COMMENT ON FUNCTION amrita_memory.memory_block_v2(text[],text,text[],integer,vector,integer,text,bigint) IS 'memory_block_v1 without paused partitions (no memo, memories, profile or loaded scope of a paused partition), plus one row of kind paused per paused partition asked for, and a version row: the candidates are sent only when p_known differs from it. Generic plan.';

COMMENT ON FUNCTION amrita_memory.memory_fields_v2(text,text[],smallint,text,text,text) IS 'memory_fields_v1 (the fields a change history records, as jsonb) declared STABLE, so that it is inlined into the writing statement instead of called per row.';

COMMENT ON FUNCTION amrita_memory.memory_matches_v2(smallint,text,text[],text,integer,integer,text,text[],text) IS 'Search filter on top of the partition: memory_matches_v1 (importance range, scope, any tag) and category = p_want_category (NULL = any). Inlined by the planner.';

COMMENT ON FUNCTION amrita_memory.recall_memories_v4(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision,text,text,text,text,integer,boolean) IS 'recall_memories_v3 over search_memories_v8: read_memory in one round trip, plans made once per connection (the access log''s too): paused partition first (one status row, paused = true, nothing searched), else the hits, then their access log (log_access_v1) in a sub-block that never fails the read (a status row with log_error).';

COMMENT ON FUNCTION amrita_memory.record_memory_change_row_v1() IS 'Row-level record_memory_change_v2: the history row of one changed memory, its access-log follow-up, the pause refusal AMZ01 and the bounds; the triggers'' WHEN skips it under amrita_memory.history_by_writer = on.';

COMMENT ON FUNCTION amrita_memory.reembed_pending_knowledge_v2(text,text,integer) IS 'Knowledge rows still to re-embed, with their summary (the text a write embeds); supersedes reembed_pending_knowledge_v1.';

COMMENT ON FUNCTION amrita_memory.reembed_switch_v2(text,text,text,text,integer,timestamp with time zone) IS 'reembed_switch_v1 with a deadlock-free lock order: memory and knowledge locked first IN EXCLUSIVE MODE (also against FOR UPDATE row lockers), ACCESS EXCLUSIVE when an ANN index of another dimension is dropped. See sql/functions/reembed_v2.sql.';

COMMENT ON FUNCTION amrita_memory.refuse_paused_write_v1() IS 'Row trigger on memo and profile: refuses a write by an automatic actor (amrita_memory.actor kind llm, extraction, l3) to a paused partition with SQLSTATE AMZ01, as trail_v1 does for memories.';

COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v6(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision,text[]) IS 'Hybrid mode, rrf fusion, of search_memories_v6 (score_memories_v2''s numbers): reciprocal ranks of the vector and keyword sides times the decay factor, on narrow rows; the top k joined back for their content.';

COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v8(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision) IS 'Hybrid mode, rrf fusion, of search_memories_v8 at the exact path (score_hybrid_rrf_v7''s numbers, bit for bit): reciprocal ranks of the vector and keyword sides times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v6(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision,text[]) IS 'Hybrid mode, weighted fusion, of search_memories_v6 (score_memories_v2''s numbers): normalised similarity and bm25 / max bm25, weighted, times the decay factor, on narrow rows; the top k joined back for their content.';

COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v8(text,vector,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,double precision) IS 'Hybrid mode, weighted fusion, of search_memories_v8 at the exact path (score_hybrid_weighted_v7''s numbers, bit for bit): normalised similarity and bm25 / max bm25, weighted, times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

COMMENT ON FUNCTION amrita_memory.score_keyword_v6(text,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,text[]) IS 'Keyword mode of search_memories_v6 (score_memories_v2''s numbers): BM25 of the rows sharing a token with the query times the decay factor, on narrow rows; the top k joined back for their content.';

COMMENT ON FUNCTION amrita_memory.score_keyword_v8(text,text[],tsquery,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text) IS 'Keyword mode of search_memories_v8 at the exact path (score_keyword_v7''s numbers, bit for bit): BM25 of the rows sharing a token with the query times the decay factor; a row''s matching lexemes by two ts_delete (no unnest of its whole tsvector), document frequency by a window count, age only for the matching rows, the top k fetched by ctid.';

COMMENT ON FUNCTION amrita_memory.score_memories_v1(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,text,double precision,double precision,text[]) IS 'Score the rows of one partition (all, or the candidate ids p_ids) for search_memories_v4: vector similarity, BM25 over the search tokens, fusion by mode (vector | keyword | hybrid; rrf or weighted), times the decay factor.';

COMMENT ON FUNCTION amrita_memory.search_memories_v6(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision) IS 'Decay-scored retrieval in one partition (the runtime entry point of release 6): search_memories_v5''s arguments and results, generic plans, one plain body per mode and fusion. SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';

COMMENT ON FUNCTION amrita_memory.search_memories_v8(text,vector,text[],text,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer,text,double precision,double precision) IS 'Decay-scored retrieval in one partition (the runtime entry point of release 9): search_memories_v7 on the v8 bodies (matching lexemes by intersection); search_memories_v6''s arguments and results, generic plans without bitmap scans, plain v8 bodies for keyword and hybrid over a partition without its own HNSW index (v6 for one with). SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';

COMMENT ON FUNCTION amrita_memory.search_vector_ann_v5(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text,integer) IS 'Vector mode, HNSW path of search_memories_v5: the p_candidates nearest filtered rows by the partition''s own index, re-ranked by decay score (release 3''s scores).';

COMMENT ON FUNCTION amrita_memory.search_vector_exact_v5(text,vector,integer,timestamp with time zone,boolean,double precision,double precision,double precision,integer,integer,text,text[],text) IS 'Vector mode, exact path of search_memories_v5: every row of the partition scored 1/(1+squared L2) x max(0.5^(age/half_life), floor), top_k (release 3''s scores, bit for bit).';

COMMENT ON FUNCTION amrita_memory.sweep_batch_v8(timestamp with time zone,double precision,double precision,integer,boolean,boolean,boolean,text,text) IS 'sweep_batch_v7 (one batch from the persisted cursor; demote or purge what outlived its tier by three cutoffs, locking only those rows by tid, SKIP LOCKED; one sweep_change row per batch) walking the primary key''s (partition_key, id) order, so the table needs no index on id alone; its cursor is ''partition_key/id'' (sweep_state.cursor_key).';

COMMENT ON FUNCTION amrita_memory.tokens_tsquery_v1(text[]) IS 'The OR of the tokens as a tsquery (quoted lexemes, no parsing); NULL for none. The keyword side of search_memories_v4.';

COMMENT ON FUNCTION amrita_memory.update_memory_v3(text,text,text,text[],integer,boolean,text,vector,text,timestamp with time zone,text[],boolean) IS 'update_memory_v2 (manual-entry guard: with p_protect_user a source=user memory is refused, SQLSTATE AMP01) that also replaces the search tokens with the new content''s (NULL = keep a field; model check AMF01/AMF03; content without its embedding refused with 22023).';

COMMENT ON FUNCTION amrita_memory.write_memory_v5(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,double precision,text[],text,text,text) IS 'write_memory_v4 on insert_memory_v6: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens and history row (cap, model check AMF01/AMF03).';

