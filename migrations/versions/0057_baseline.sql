-- The schema of amrita-memory-pg 0.14.0 and 0.14.1, alembic revision 0057_retire_release12:
-- what the baseline migration (0057_baseline.py) creates on an empty database. Frozen: it
-- is the state every supported database upgrades from, so it is never edited.
--
-- Written by `.venv/bin/python -m tests.support.schema_dump DSN` (pg_dump --schema-only of
-- schema amrita_memory, without alembic's table and session settings) from a database that
-- the 57 migrations of 0.14.1 built. The present definitions live in sql/; the migrations
-- after this one change them, and tests/migration/test_present_schema.py proves that this
-- file plus those migrations equals a fresh install of the present.
--
-- Three expressions are written as their migrations wrote them, not as pg_dump printed
-- them: ck_knowledge_title_length (BETWEEN) and the WHEN of the triggers
-- memory_person_takes_over and trail_memory_update (a row IS DISTINCT FROM). PostgreSQL
-- stores those as nested ANDs / ORs, and the printed text, parsed again, flattens them: the
-- same test, but not the catalogue those databases hold.

--
-- PostgreSQL database dump
--

--
-- Name: activity_touch_v1(text, integer, integer, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.activity_touch_v1(p_user_key text, p_weekday integer, p_slot integer, p_now timestamp with time zone) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO amrita_memory.activity_heatmap AS h (user_key, weekday, slot, hits, last_seen_at)
    VALUES (p_user_key, p_weekday::smallint, p_slot::smallint, 1, p_now)
    ON CONFLICT (user_key, weekday, slot) DO UPDATE
        SET hits = h.hits + 1,
            last_seen_at = greatest(h.last_seen_at, excluded.last_seen_at)
$$;

--
-- Name: FUNCTION activity_touch_v1(p_user_key text, p_weekday integer, p_slot integer, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.activity_touch_v1(p_user_key text, p_weekday integer, p_slot integer, p_now timestamp with time zone) IS 'Count one user message in its heatmap cell (weekday 0 = Monday, slot = local hour / 2); one upsert.';

--
-- Name: actor_origin_v1(); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.actor_origin_v1() RETURNS text
    LANGUAGE sql STABLE
    AS $$
    SELECT a.kind FROM amrita_memory.current_actor_v1() a
$$;

--
-- Name: FUNCTION actor_origin_v1(); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.actor_origin_v1() IS 'Origin of a memory inserted in this transaction: the kind of the transaction setting amrita_memory.actor (person, llm, extraction, l3, import, system), system when unset. The DEFAULT of memory.origin.';

--
-- Name: age_days_v1(timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.age_days_v1(p_created timestamp with time zone, p_now timestamp with time zone) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT greatest(extract(epoch FROM (p_now - p_created))::float8 / 86400.0, 0.0)
$$;

--
-- Name: FUNCTION age_days_v1(p_created timestamp with time zone, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.age_days_v1(p_created timestamp with time zone, p_now timestamp with time zone) IS 'Days (float8) from p_created to p_now; a future timestamp counts as 0.';

--
-- Name: chat_log_append_v1(text, text, text, text, text, timestamp with time zone, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.chat_log_append_v1(p_session_key text, p_user_id text, p_group_id text, p_role text, p_text text, p_now timestamp with time zone, p_keep integer) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_id bigint;
    v_cut bigint;
BEGIN
    INSERT INTO amrita_memory.chat_log (session_key, user_id, group_id, role, text, created_at)
    VALUES (p_session_key, p_user_id, p_group_id, p_role, p_text, p_now)
    RETURNING id INTO v_id;

    -- The (p_keep + 1)-th newest line and everything older go (the line just written
    -- always stays); walks the (session_key, id) index backwards, so the cost is
    -- O(p_keep), not O(table).
    SELECT c.id INTO v_cut
    FROM amrita_memory.chat_log AS c
    WHERE c.session_key = p_session_key
    ORDER BY c.id DESC
    OFFSET greatest(p_keep, 1) LIMIT 1;
    IF v_cut IS NOT NULL THEN
        DELETE FROM amrita_memory.chat_log AS c
        WHERE c.session_key = p_session_key AND c.id <= v_cut;
    END IF;
    RETURN v_id;
END
$$;

--
-- Name: FUNCTION chat_log_append_v1(p_session_key text, p_user_id text, p_group_id text, p_role text, p_text text, p_now timestamp with time zone, p_keep integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.chat_log_append_v1(p_session_key text, p_user_id text, p_group_id text, p_role text, p_text text, p_now timestamp with time zone, p_keep integer) IS 'Append one chat line to its session and keep only the newest p_keep lines (by id); returns the new id.';

--
-- Name: claim_backup_slot_v1(timestamp with time zone, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.claim_backup_slot_v1(p_slot timestamp with time zone, p_by text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_done integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended('amrita_memory.backup_schedule', 0)) THEN
        RETURN false;
    END IF;
    INSERT INTO amrita_memory.backup_schedule (id) VALUES (1) ON CONFLICT (id) DO NOTHING;
    UPDATE amrita_memory.backup_schedule
       SET last_slot = p_slot, claimed_by = p_by, claimed_at = now(),
           finished_at = NULL, stem = NULL, ok = NULL, error = NULL
     WHERE id = 1 AND (last_slot IS NULL OR last_slot < p_slot);
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done = 1;
END
$$;

--
-- Name: FUNCTION claim_backup_slot_v1(p_slot timestamp with time zone, p_by text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.claim_backup_slot_v1(p_slot timestamp with time zone, p_by text) IS 'Scheduled backups: claim the slot p_slot for p_by (advisory xact try-lock, then move backup_schedule.last_slot forward); true for exactly one caller per slot.';

--
-- Name: clear_table_v1(text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.clear_table_v1(p_table text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_done bigint;
BEGIN
    EXECUTE format('DELETE FROM amrita_memory.%I', p_table);
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done;
END
$$;

--
-- Name: FUNCTION clear_table_v1(p_table text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.clear_table_v1(p_table text) IS 'Restore: delete every row of one table of the schema in the caller''s transaction (DELETE, not TRUNCATE: no lock beyond the rows). Returns rows deleted.';

--
-- Name: current_actor_v1(); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.current_actor_v1(OUT kind text, OUT id text) RETURNS record
    LANGUAGE sql STABLE
    AS $$
    SELECT CASE WHEN split_part(a, ':', 1) IN ('person', 'llm', 'extraction', 'l3', 'import', 'system')
                THEN split_part(a, ':', 1) ELSE 'system' END,
           nullif(substr(a, length(split_part(a, ':', 1)) + 2), '')
      FROM (SELECT coalesce(nullif(current_setting('amrita_memory.actor', true), ''), 'system') AS a) s
$$;

--
-- Name: FUNCTION current_actor_v1(OUT kind text, OUT id text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.current_actor_v1(OUT kind text, OUT id text) IS 'Who is writing in this transaction: the transaction-local setting amrita_memory.actor (''kind:id'') split, (system, NULL) when unset or of an unknown kind.';

--
-- Name: decay_factor_v1(double precision, double precision, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.decay_factor_v1(p_age_days double precision, p_half_life double precision, p_floor double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN p_half_life <= 0 THEN 1.0::float8
        -- below a femtoday the factor is 1 to 1e-9 for any half-life ≥ 1e-6 days, and
        -- the division cannot underflow
        WHEN p_age_days < 1e-15 THEN greatest(1.0::float8, p_floor)
        WHEN p_age_days >= 1000.0 * p_half_life
            THEN greatest(power(0.5::float8, 1000.0::float8), p_floor)
        ELSE greatest(power(0.5::float8, p_age_days / p_half_life), p_floor)
    END
$$;

--
-- Name: FUNCTION decay_factor_v1(p_age_days double precision, p_half_life double precision, p_floor double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.decay_factor_v1(p_age_days double precision, p_half_life double precision, p_floor double precision) IS 'max(0.5^(age_days/half_life_days), floor); 1 when half_life <= 0; exponent clamped at 1000 halvings (float8 underflow).';

--
-- Name: decay_score_v1(double precision, double precision, integer, double precision, double precision, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.decay_score_v1(p_distance double precision, p_age_days double precision, p_importance integer, p_base_days double precision, p_boost double precision, p_floor double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT amrita_memory.similarity_v1(p_distance)
         * amrita_memory.decay_factor_v1(
               p_age_days,
               amrita_memory.half_life_days_v1(p_base_days, p_importance, p_boost),
               p_floor)
$$;

--
-- Name: FUNCTION decay_score_v1(p_distance double precision, p_age_days double precision, p_importance integer, p_base_days double precision, p_boost double precision, p_floor double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.decay_score_v1(p_distance double precision, p_age_days double precision, p_importance integer, p_base_days double precision, p_boost double precision, p_floor double precision) IS 'Retrieval score = similarity_v1(distance) x decay_factor_v1(age_days, half_life_days_v1(base, importance, boost), floor).';

--
-- Name: delete_memory_v1(text, text, boolean); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.delete_memory_v1(p_partition text, p_id text, p_protect_user boolean) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_source text;
BEGIN
    SELECT m.source INTO v_source
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = p_id
       FOR UPDATE;
    IF v_source IS NULL THEN
        RETURN NULL;
    END IF;
    IF p_protect_user AND v_source = 'user' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMP01',
            MESSAGE = 'memory ' || p_id || ' was added by a person (source=user): '
                      || 'automatic processes may not delete it',
            HINT = 'delete it with /memory or the amrita-memory CLI';
    END IF;
    DELETE FROM amrita_memory.memory m WHERE m.partition_key = p_partition AND m.id = p_id;
    RETURN p_id;
END
$$;

--
-- Name: FUNCTION delete_memory_v1(p_partition text, p_id text, p_protect_user boolean); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.delete_memory_v1(p_partition text, p_id text, p_protect_user boolean) IS 'Delete one memory of one partition (NULL when absent); with p_protect_user a source=user memory is refused (SQLSTATE AMP01) and kept.';

--
-- Name: demoted_importance_v1(integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.demoted_importance_v1(p_importance integer) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE amrita_memory.importance_rank_v1(p_importance)
        WHEN 2 THEN 5::smallint
        WHEN 1 THEN 3::smallint
        ELSE NULL::smallint
    END
$$;

--
-- Name: FUNCTION demoted_importance_v1(p_importance integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.demoted_importance_v1(p_importance integer) IS 'Importance one tier down: high -> 5, medium -> 3, low -> NULL (a low memory is purged, not demoted).';

--
-- Name: duplicate_pairs_v1(text, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.duplicate_pairs_v1(p_partition_key text, p_min_similarity double precision) RETURNS TABLE(a_id text, b_id text, similarity double precision)
    LANGUAGE sql STABLE
    AS $$
    SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding)
      FROM amrita_memory.memory AS a
      JOIN amrita_memory.memory AS b
        ON b.partition_key = a.partition_key AND b.id > a.id
     WHERE a.partition_key = p_partition_key
       AND (a.embedding <=> b.embedding) <= 1 - p_min_similarity
     ORDER BY a.id, b.id
$$;

--
-- Name: FUNCTION duplicate_pairs_v1(p_partition_key text, p_min_similarity double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.duplicate_pairs_v1(p_partition_key text, p_min_similarity double precision) IS 'L3 pre-pass: pairs of memories of one partition with cosine similarity >= p_min_similarity (a.id < b.id); the caller unions them into near-duplicate clusters.';

--
-- Name: export_table_v1(text, text[]); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.export_table_v1(p_table text, p_skip text[]) RETURNS SETOF text
    LANGUAGE plpgsql STABLE
    SET "TimeZone" TO 'UTC'
    SET extra_float_digits TO '1'
    AS $_$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT (to_jsonb(t) - $1)::text FROM amrita_memory.%I t', p_table)
    USING coalesce(p_skip, '{}'::text[]);
END
$_$;

--
-- Name: FUNCTION export_table_v1(p_table text, p_skip text[]); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.export_table_v1(p_table text, p_skip text[]) IS 'Every row of one table of the schema as jsonb text without the columns p_skip (timestamps in UTC): the JSONL backup''s rows of the tables exported generically.';

--
-- Name: half_life_days_v1(double precision, integer, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.half_life_days_v1(p_base_days double precision, p_importance integer, p_boost double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT p_base_days * (1.0 + p_boost * amrita_memory.importance_rank_v1(p_importance))
$$;

--
-- Name: FUNCTION half_life_days_v1(p_base_days double precision, p_importance integer, p_boost double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.half_life_days_v1(p_base_days double precision, p_importance integer, p_boost double precision) IS 'Half-life in days = base x (1 + boost x importance_rank). Defaults: low 30, medium 60, high 90.';

--
-- Name: import_memory_v1(text, text, text, text, text[], integer, timestamp with time zone, public.vector, text, timestamp with time zone, integer, boolean, text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.import_memory_v1(p_id text, p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_created_at timestamp with time zone, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_replace boolean, p_protocol text DEFAULT NULL::text, p_model text DEFAULT NULL::text, p_base_url text DEFAULT NULL::text) RETURNS TABLE(outcome text, rows_before integer)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_count integer;
    v_row amrita_memory.memory%ROWTYPE;
BEGIN
    -- The same key as insert_memory_v2's cap lock.
    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    SELECT count(*)::integer INTO v_count
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition;
    SELECT * INTO v_row
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = p_id;
    IF FOUND THEN
        IF NOT p_replace THEN
            RETURN QUERY SELECT 'present'::text, v_count;
            RETURN;
        END IF;
        IF v_row.scope = p_scope AND v_row.content = p_content
           AND v_row.tags = coalesce(p_tags, '{}') AND v_row.importance = p_importance
           AND v_row.created_at = p_created_at THEN
            RETURN QUERY SELECT 'unchanged'::text, v_count;
            RETURN;
        END IF;
        IF v_row.content <> p_content AND p_embedding IS NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = '22023',
                MESSAGE = 'import_memory_v1: new content needs its new embedding';
        END IF;
        IF p_embedding IS NOT NULL THEN
            PERFORM amrita_memory.require_store_model_v1(
                p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
        END IF;
        UPDATE amrita_memory.memory m
           SET scope = p_scope,
               content = p_content,
               tags = coalesce(p_tags, '{}'),
               importance = p_importance,
               tier_since = CASE WHEN m.importance = p_importance THEN m.tier_since
                                 ELSE p_created_at END,
               created_at = p_created_at,
               updated_at = p_now,
               embedding = coalesce(p_embedding, m.embedding),
               embed_fingerprint = CASE WHEN p_embedding IS NULL THEN m.embed_fingerprint
                                        ELSE p_fingerprint END
         WHERE m.partition_key = p_partition AND m.id = p_id;
        IF p_embedding IS NOT NULL THEN
            PERFORM amrita_memory.require_store_model_v1(
                p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
        END IF;
        RETURN QUERY SELECT 'replaced'::text, v_count;
        RETURN;
    END IF;
    IF v_count >= p_cap THEN
        RETURN QUERY SELECT 'full'::text, v_count;
        RETURN;
    END IF;
    IF p_embedding IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'import_memory_v1: a new memory needs its embedding';
    END IF;
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    INSERT INTO amrita_memory.memory
           (id, partition_key, scope, content, tags, importance, category, source, author,
            created_at, updated_at, tier_since, embedding, embed_fingerprint)
    VALUES (p_id, p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, NULL,
            'auto', NULL, p_created_at, p_now, p_created_at, p_embedding, p_fingerprint);
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    RETURN QUERY SELECT 'inserted'::text, v_count;
END
$$;

--
-- Name: FUNCTION import_memory_v1(p_id text, p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_created_at timestamp with time zone, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_replace boolean, p_protocol text, p_model text, p_base_url text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.import_memory_v1(p_id text, p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_created_at timestamp with time zone, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_replace boolean, p_protocol text, p_model text, p_base_url text) IS 'Merge one memory of another installation into a live store under the partition''s cap lock, keeping its id, created_at and vector: outcome inserted | present (kept) | unchanged | replaced (p_replace) | full (cap reached, nothing written); vectors model-checked (AMF01/AMF03). Idempotent: a second import writes nothing.';

--
-- Name: import_rows_v1(text, jsonb); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.import_rows_v1(p_table text, p_rows jsonb) RETURNS integer
    LANGUAGE plpgsql
    SET "TimeZone" TO 'UTC'
    AS $_$
DECLARE
    v_cols text;
    v_done integer;
BEGIN
    IF jsonb_typeof(p_rows) <> 'array' OR jsonb_array_length(p_rows) = 0 THEN
        RETURN 0;
    END IF;
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
      FROM pg_attribute a
     WHERE a.attrelid = format('amrita_memory.%I', p_table)::regclass
       AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
       AND p_rows -> 0 ? a.attname;
    IF v_cols IS NULL THEN
        RETURN 0;
    END IF;
    EXECUTE format(
        'INSERT INTO amrita_memory.%I (%s) OVERRIDING SYSTEM VALUE
         SELECT %s FROM jsonb_populate_recordset(NULL::amrita_memory.%I, $1)',
        p_table, v_cols, v_cols, p_table)
    USING p_rows;
    GET DIAGNOSTICS v_done = ROW_COUNT;
    RETURN v_done;
END
$_$;

--
-- Name: FUNCTION import_rows_v1(p_table text, p_rows jsonb); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.import_rows_v1(p_table text, p_rows jsonb) IS 'Restore: insert a jsonb array of rows (export_table_v1''s objects) into one table of the schema, identity values as given; columns the rows lack take their defaults. Returns rows inserted.';

--
-- Name: importance_rank_v1(integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.importance_rank_v1(p_importance integer) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN p_importance BETWEEN 1 AND 3 THEN 0
        WHEN p_importance BETWEEN 8 AND 10 THEN 2
        ELSE 1
    END
$$;

--
-- Name: FUNCTION importance_rank_v1(p_importance integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.importance_rank_v1(p_importance integer) IS 'Tier rank of a 1-10 importance: 1-3 -> 0 (low), 4-7 -> 1 (medium), 8-10 -> 2 (high); out of range counts as medium.';

--
-- Name: insert_memory_v5(text, text, text, text[], integer, text, text, text, public.vector, text, timestamp with time zone, integer, text[], text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.insert_memory_v5(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_tokens text[], p_protocol text DEFAULT NULL::text, p_model text DEFAULT NULL::text, p_base_url text DEFAULT NULL::text) RETURNS TABLE(id text, rows_before integer)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_dim integer := vector_dims(p_embedding);
    -- the actor as current_actor_v1 reads it ('kind:id'; system when unset or unknown)
    v_actor text := coalesce(nullif(current_setting('amrita_memory.actor', true), ''), 'system');
    v_kind text := split_part(v_actor, ':', 1);
    v_actor_id text := nullif(substr(v_actor, length(split_part(v_actor, ':', 1)) + 2), '');
    v_fingerprint text;
    v_store_dim integer;
BEGIN
    IF v_kind NOT IN ('person', 'llm', 'extraction', 'l3', 'import', 'system') THEN
        v_kind := 'system';
    END IF;
    -- The model, once: under the table lock a re-embed switch cannot commit until this
    -- transaction ends, and one committed before is seen (see above).
    LOCK TABLE amrita_memory.memory IN ROW EXCLUSIVE MODE;
    SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_store_dim
      FROM amrita_memory.store_meta s WHERE s.id = 1;
    IF v_fingerprint IS DISTINCT FROM p_fingerprint OR v_store_dim IS DISTINCT FROM v_dim THEN
        PERFORM amrita_memory.require_store_model_v1(
            p_fingerprint, v_dim, p_now, p_protocol, p_model, p_base_url);
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    SELECT count(*)::integer INTO rows_before
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition;
    IF rows_before >= p_cap THEN
        RETURN NEXT;  -- id NULL: full
        RETURN;
    END IF;

    -- the trail trigger's refusal (trail_v1.sql): automatic processes leave a paused scope be
    IF v_kind IN ('llm', 'extraction', 'l3') THEN
        IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p
                    WHERE p.partition_key = p_partition) THEN
            RAISE EXCEPTION USING
                ERRCODE = 'AMZ01',
                MESSAGE = 'the memory of ' || p_partition || ' is paused: automatic processes may not change it',
                HINT = 'resume it with `amrita-memory resume` or /memory resume';
        END IF;
    END IF;

    PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    WITH m AS (
        INSERT INTO amrita_memory.memory AS m
               (partition_key, scope, content, tags, importance, category, source, author,
                created_at, updated_at, tier_since, embedding, embed_fingerprint, search_tokens,
                origin)
        VALUES (p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, p_category,
                p_source, p_author, p_now, p_now, p_now, p_embedding, p_fingerprint,
                array_to_tsvector(p_tokens), v_kind)
        RETURNING m.partition_key, m.id, m.content, m.tags, m.importance, m.category, m.scope,
                  m.source
    ), history AS (
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        SELECT m.partition_key, m.id, now(), v_kind, v_actor_id, 'create', NULL,
               amrita_memory.memory_fields_v2(m.content, m.tags, m.importance, m.category,
                                              m.scope, m.source),
               nullif(current_setting('amrita_memory.note', true), '')
          FROM m
    )
    SELECT m.id INTO id FROM m;
    PERFORM set_config('amrita_memory.history_by_writer', '', true);
    RETURN NEXT;
END
$$;

--
-- Name: FUNCTION insert_memory_v5(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_tokens text[], p_protocol text, p_model text, p_base_url text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.insert_memory_v5(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_tokens text[], p_protocol text, p_model text, p_base_url text) IS 'insert_memory_v4 (cap under an advisory lock, model check AMF01/AMF03 before the cap, search tokens, its create history row and origin in the same statement; id NULL when full) checking the model once, under the table lock a re-embed switch waits for.';

--
-- Name: insert_memory_v6(text, text, text, text[], integer, text, text, text, public.vector, text, timestamp with time zone, integer, text[], text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.insert_memory_v6(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_tokens text[], p_protocol text DEFAULT NULL::text, p_model text DEFAULT NULL::text, p_base_url text DEFAULT NULL::text) RETURNS TABLE(id text, rows_before integer)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_dim integer := vector_dims(p_embedding);
    -- the actor as current_actor_v1 reads it ('kind:id'; system when unset or unknown)
    v_actor text := coalesce(nullif(current_setting('amrita_memory.actor', true), ''), 'system');
    v_kind text := split_part(v_actor, ':', 1);
    v_actor_id text := nullif(substr(v_actor, length(split_part(v_actor, ':', 1)) + 2), '');
    v_fingerprint text;
    v_store_dim integer;
BEGIN
    IF v_kind NOT IN ('person', 'llm', 'extraction', 'l3', 'import', 'system') THEN
        v_kind := 'system';
    END IF;
    -- The model, once: under the table lock a re-embed switch cannot commit until this
    -- transaction ends, and one committed before is seen (see above).
    LOCK TABLE amrita_memory.memory IN ROW EXCLUSIVE MODE;
    SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_store_dim
      FROM amrita_memory.store_meta s WHERE s.id = 1;
    IF v_fingerprint IS DISTINCT FROM p_fingerprint OR v_store_dim IS DISTINCT FROM v_dim THEN
        PERFORM amrita_memory.require_store_model_v1(
            p_fingerprint, v_dim, p_now, p_protocol, p_model, p_base_url);
    END IF;

    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    SELECT count(*)::integer INTO rows_before
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition;
    IF rows_before >= p_cap THEN
        RETURN NEXT;  -- id NULL: full
        RETURN;
    END IF;

    -- the trail trigger's refusal (trail_v1.sql): automatic processes leave a paused scope be
    IF v_kind IN ('llm', 'extraction', 'l3') THEN
        IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p
                    WHERE p.partition_key = p_partition) THEN
            RAISE EXCEPTION USING
                ERRCODE = 'AMZ01',
                MESSAGE = 'the memory of ' || p_partition || ' is paused: automatic processes may not change it',
                HINT = 'resume it with `amrita-memory resume` or /memory resume';
        END IF;
    END IF;

    PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    INSERT INTO amrita_memory.memory AS m
           (partition_key, scope, content, tags, importance, category, source, author,
            created_at, updated_at, tier_since, embedding, embed_fingerprint, search_tokens,
            origin)
    VALUES (p_partition, p_scope, p_content, coalesce(p_tags, '{}'), p_importance, p_category,
            p_source, p_author, p_now, p_now, p_now, p_embedding, p_fingerprint,
            array_to_tsvector(p_tokens), v_kind)
    RETURNING m.id INTO id;
    -- The create row from the arguments: they are the row's shown fields (no BEFORE INSERT
    -- trigger on memory changes them), so the memory need not be read back through a CTE.
    INSERT INTO amrita_memory.memory_change
           (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
    VALUES (p_partition, id, now(), v_kind, v_actor_id, 'create', NULL,
            amrita_memory.memory_fields_v2(p_content, coalesce(p_tags, '{}'),
                                           p_importance::smallint, p_category, p_scope,
                                           p_source),
            nullif(current_setting('amrita_memory.note', true), ''));
    PERFORM set_config('amrita_memory.history_by_writer', '', true);
    RETURN NEXT;
END
$$;

--
-- Name: FUNCTION insert_memory_v6(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_tokens text[], p_protocol text, p_model text, p_base_url text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.insert_memory_v6(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_tokens text[], p_protocol text, p_model text, p_base_url text) IS 'insert_memory_v5 (cap under an advisory lock, one model check AMF01/AMF03 before the cap under the table lock a re-embed switch waits for, search tokens, origin, its create history row; id NULL when full) writing the history row as its own INSERT from the arguments instead of a second data-modifying CTE over the inserted row.';

--
-- Name: job_beat_v1(text, text, text, bigint, bigint, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.job_beat_v1(p_id text, p_owner text, p_phase text, p_done bigint, p_total bigint, p_now timestamp with time zone) RETURNS boolean
    LANGUAGE sql
    AS $$
    UPDATE amrita_memory.job j
       SET phase = p_phase, done = p_done, total = p_total,
           heartbeat_at = coalesce(p_now, clock_timestamp())
     WHERE j.id = p_id AND j.owner = p_owner AND j.state = 'running'
    RETURNING j.cancel_requested;
$$;

--
-- Name: FUNCTION job_beat_v1(p_id text, p_owner text, p_phase text, p_done bigint, p_total bigint, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.job_beat_v1(p_id text, p_owner text, p_phase text, p_done bigint, p_total bigint, p_now timestamp with time zone) IS 'The owner''s heartbeat with the job''s progress; returns whether a cancel was requested (NULL: not its running job).';

--
-- Name: job_cancel_v1(text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.job_cancel_v1(p_id text, p_by text) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_state text;
BEGIN
    UPDATE amrita_memory.job j
       SET cancel_requested = true, cancelled_by = p_by
     WHERE j.id = p_id AND j.state = 'running'
    RETURNING j.state INTO v_state;
    IF v_state IS NULL THEN
        SELECT j.state INTO v_state FROM amrita_memory.job j WHERE j.id = p_id;
    END IF;
    RETURN v_state;
END;
$$;

--
-- Name: FUNCTION job_cancel_v1(p_id text, p_by text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.job_cancel_v1(p_id text, p_by text) IS 'Ask the owner of a running job to stop it (seen at its next heartbeat); returns the job''s state.';

--
-- Name: job_finish_v1(text, text, text, text, bigint, bigint, text, text, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.job_finish_v1(p_id text, p_owner text, p_state text, p_phase text, p_done bigint, p_total bigint, p_result text, p_error text, p_now timestamp with time zone) RETURNS boolean
    LANGUAGE sql
    AS $$
    WITH ended AS (
        UPDATE amrita_memory.job j
           SET state = p_state, phase = p_phase, done = p_done, total = p_total,
               result = p_result, error = p_error,
               finished_at = coalesce(p_now, clock_timestamp()),
               heartbeat_at = coalesce(p_now, clock_timestamp())
         WHERE j.id = p_id AND j.owner = p_owner AND j.state = 'running'
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM ended);
$$;

--
-- Name: FUNCTION job_finish_v1(p_id text, p_owner text, p_state text, p_phase text, p_done bigint, p_total bigint, p_result text, p_error text, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.job_finish_v1(p_id text, p_owner text, p_state text, p_phase text, p_done bigint, p_total bigint, p_result text, p_error text, p_now timestamp with time zone) IS 'The owner records the job''s end: done, failed or cancelled.';

--
-- Name: job_start_v1(text, text, text, text, double precision, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.job_start_v1(p_id text, p_kind text, p_started_by text, p_owner text, p_stale_seconds double precision, p_now timestamp with time zone) RETURNS TABLE(started boolean, id text, owner text, started_by text, started_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_live amrita_memory.job%ROWTYPE;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.job:' || p_kind, 0));
    -- the dead first: a running row whose process stopped heartbeating
    UPDATE amrita_memory.job j
       SET state = 'lost', finished_at = v_now,
           error = format('its process %s stopped (no heartbeat since %s)',
                          j.owner, j.heartbeat_at)
     WHERE j.id IN (SELECT s.id FROM amrita_memory.job s
                     WHERE s.kind = p_kind AND s.state = 'running'
                       AND s.heartbeat_at < v_now - make_interval(secs => p_stale_seconds)
                       FOR UPDATE SKIP LOCKED);
    SELECT * INTO v_live FROM amrita_memory.job j
     WHERE j.kind = p_kind AND j.state = 'running';
    IF FOUND THEN
        RETURN QUERY SELECT false, v_live.id, v_live.owner, v_live.started_by,
                            v_live.started_at;
        RETURN;
    END IF;
    -- the table stays small: the newest 50 finished jobs are kept, the rest go
    DELETE FROM amrita_memory.job j
     WHERE j.state <> 'running'
       AND j.id NOT IN (SELECT k.id FROM amrita_memory.job k WHERE k.state <> 'running'
                         ORDER BY k.started_at DESC LIMIT 50);
    INSERT INTO amrita_memory.job (id, kind, state, phase, done, total, started_by,
                                   started_at, owner, heartbeat_at)
    VALUES (p_id, p_kind, 'running', 'starting', 0, 0, p_started_by, v_now, p_owner, v_now);
    RETURN QUERY SELECT true, p_id, p_owner, p_started_by, v_now;
END;
$$;

--
-- Name: FUNCTION job_start_v1(p_id text, p_kind text, p_started_by text, p_owner text, p_stale_seconds double precision, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.job_start_v1(p_id text, p_kind text, p_started_by text, p_owner text, p_stale_seconds double precision, p_now timestamp with time zone) IS 'Start an admin-page job: one running job per kind across the fleet (advisory lock per kind); running rows without a heartbeat are marked lost first (FOR UPDATE SKIP LOCKED). See sql/functions/job_v1.sql.';

--
-- Name: knowledge_candidates_v1(text, double precision, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_candidates_v1(p_partition_key text, p_min_similarity double precision, p_min_partitions integer) RETURNS TABLE(id text, content text, importance smallint, category text, partitions integer)
    LANGUAGE sql STABLE
    AS $$
    WITH reviewed AS (
        SELECT c.started_at
          FROM amrita_memory.consolidation_cycle AS c
         WHERE c.target_key = p_partition_key AND c.ok AND NOT c.dry_run
         ORDER BY c.id DESC
         LIMIT 1
    ), fresh AS MATERIALIZED (
        SELECT t.id, t.content, t.importance, t.category, t.created_at, t.embedding
          FROM amrita_memory.memory AS t
         WHERE t.partition_key = p_partition_key
           AND t.updated_at > coalesce((SELECT started_at FROM reviewed), '-infinity')
           AND NOT EXISTS (
                SELECT 1
                  FROM amrita_memory.knowledge AS k
                 WHERE vector_dims(k.embedding) = vector_dims(t.embedding)
                   AND (k.embedding <=> t.embedding) <= 1 - p_min_similarity)
    ), others AS MATERIALIZED (
        -- read once (the partial index), then compared in memory with every fresh row
        SELECT o.partition_key, o.embedding
          FROM amrita_memory.memory AS o
         WHERE o.category = 'knowledge' AND o.partition_key <> p_partition_key
           AND EXISTS (SELECT 1 FROM fresh)
    ), counted AS (
        SELECT f.id, count(DISTINCT o.partition_key)::integer AS partitions
          FROM fresh AS f
          JOIN others AS o
            ON vector_dims(o.embedding) = vector_dims(f.embedding)
           AND (o.embedding <=> f.embedding) <= 1 - p_min_similarity
         GROUP BY f.id
    )
    SELECT f.id, f.content, f.importance, f.category, coalesce(c.partitions, 0)
      FROM fresh AS f
      LEFT JOIN counted AS c ON c.id = f.id
     WHERE f.category = 'knowledge' OR coalesce(c.partitions, 0) >= p_min_partitions
     ORDER BY coalesce(c.partitions, 0) DESC, f.importance DESC, f.created_at, f.id
$$;

--
-- Name: FUNCTION knowledge_candidates_v1(p_partition_key text, p_min_similarity double precision, p_min_partitions integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_candidates_v1(p_partition_key text, p_min_similarity double precision, p_min_partitions integer) IS 'L3 pre-pass: memories of one partition to consider for the global knowledge base (category knowledge, or a knowledge fact of >= p_min_partitions other partitions), not in the knowledge base yet, changed since the last successful cycle.';

--
-- Name: knowledge_claim_suggestions_v1(bigint, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_claim_suggestions_v1(p_cycle_id bigint, p_now timestamp with time zone, p_stale_before timestamp with time zone) RETURNS TABLE(id bigint, action text, kid text, title text, summary text, body text, reason text, author_id text, created_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
    UPDATE amrita_memory.knowledge_suggestion s
       SET status = 'claimed', claimed_by_cycle = p_cycle_id, claimed_at = p_now
     WHERE s.id IN (SELECT t.id FROM amrita_memory.knowledge_suggestion t
                     WHERE t.status = 'pending'
                        OR (t.status = 'claimed' AND t.claimed_at < p_stale_before
                            AND t.claimed_by_cycle <> p_cycle_id)
                       FOR UPDATE SKIP LOCKED);
    RETURN QUERY
        SELECT s.id, s.action, s.kid, s.title, s.summary, s.body, s.reason, s.author_id, s.created_at
          FROM amrita_memory.knowledge_suggestion s
         WHERE s.status = 'claimed' AND s.claimed_by_cycle = p_cycle_id
         ORDER BY s.id;
END
$$;

--
-- Name: FUNCTION knowledge_claim_suggestions_v1(p_cycle_id bigint, p_now timestamp with time zone, p_stale_before timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_claim_suggestions_v1(p_cycle_id bigint, p_now timestamp with time zone, p_stale_before timestamp with time zone) IS 'Claim the pending knowledge suggestions (and stale claims) for an L3 cycle; returns every suggestion the cycle holds.';

--
-- Name: knowledge_complete_suggestions_v1(bigint, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_complete_suggestions_v1(p_cycle_id bigint, p_now timestamp with time zone, p_prune_before timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_done integer;
BEGIN
    UPDATE amrita_memory.knowledge_suggestion s
       SET status = 'done', claimed_by_cycle = NULL, handled_at = p_now
     WHERE s.status = 'claimed' AND s.claimed_by_cycle = p_cycle_id;
    GET DIAGNOSTICS v_done = ROW_COUNT;
    DELETE FROM amrita_memory.knowledge_suggestion s
     WHERE s.status = 'done' AND s.handled_at < p_prune_before;
    RETURN v_done;
END
$$;

--
-- Name: FUNCTION knowledge_complete_suggestions_v1(p_cycle_id bigint, p_now timestamp with time zone, p_prune_before timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_complete_suggestions_v1(p_cycle_id bigint, p_now timestamp with time zone, p_prune_before timestamp with time zone) IS 'A cycle succeeded: mark its claimed suggestions done and prune old done rows; returns how many were marked.';

--
-- Name: knowledge_create_v2(text, text, text, text, public.vector, text, integer, timestamp with time zone, text[], text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_create_v2(p_kid text, p_title text, p_summary text, p_body text, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_tokens text[], p_protocol text DEFAULT NULL::text, p_model text DEFAULT NULL::text, p_base_url text DEFAULT NULL::text) RETURNS TABLE(status text, kid text, total_lines integer, char_count integer)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
BEGIN
    IF char_length(p_body) > p_max_chars THEN
        RETURN QUERY SELECT 'too_long'::text, p_kid, 0, char_length(p_body);
        RETURN;
    END IF;
    PERFORM amrita_memory.require_store_model_v1(
        p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    INSERT INTO amrita_memory.knowledge AS k
           (kid, title, summary, body, embedding, embed_fingerprint, created_at, updated_at,
            search_tokens)
    VALUES (p_kid, p_title, p_summary, p_body, p_embedding, p_fingerprint, p_now, p_now,
            array_to_tsvector(p_tokens))
    ON CONFLICT (kid) DO NOTHING;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'exists'::text, p_kid, 0, 0;
        RETURN;
    END IF;
    RETURN QUERY SELECT 'created'::text, p_kid,
                        cardinality(amrita_memory.knowledge_lines_v1(p_body)), char_length(p_body);
END
$$;

--
-- Name: FUNCTION knowledge_create_v2(p_kid text, p_title text, p_summary text, p_body text, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_tokens text[], p_protocol text, p_model text, p_base_url text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_create_v2(p_kid text, p_title text, p_summary text, p_body text, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_tokens text[], p_protocol text, p_model text, p_base_url text) IS 'knowledge_create_v1 that also stores the search tokens of title + summary + body; status created | too_long | exists.';

--
-- Name: knowledge_delete_v1(text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_delete_v1(p_kid text) RETURNS boolean
    LANGUAGE sql
    AS $$
    WITH gone AS (DELETE FROM amrita_memory.knowledge k WHERE k.kid = p_kid RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM gone)
$$;

--
-- Name: FUNCTION knowledge_delete_v1(p_kid text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_delete_v1(p_kid text) IS 'Delete a knowledge entry; false when there was none.';

--
-- Name: knowledge_line_count_v1(text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_line_count_v1(p_body text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT CASE WHEN p_body = '' THEN 0
                ELSE char_length(p_body) - char_length(replace(p_body, E'\n', '')) + 1 END
$$;

--
-- Name: FUNCTION knowledge_line_count_v1(p_body text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_line_count_v1(p_body text) IS 'The number of lines of a knowledge body without splitting it (= cardinality(knowledge_lines_v1(body))).';

--
-- Name: knowledge_lines_v1(text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_lines_v1(p_body text) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT
    AS $$
    SELECT CASE WHEN p_body = '' THEN '{}'::text[] ELSE string_to_array(p_body, E'\n') END
$$;

--
-- Name: FUNCTION knowledge_lines_v1(p_body text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_lines_v1(p_body text) IS 'The lines of a knowledge body: split on newline; the empty body has none. The one numbering of read, list and update.';

--
-- Name: knowledge_list_v1(); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_list_v1() RETURNS TABLE(kid text, title text, summary text, total_lines integer, char_count integer, created_at timestamp with time zone, updated_at timestamp with time zone)
    LANGUAGE sql STABLE
    AS $$
    SELECT k.kid, k.title, k.summary, amrita_memory.knowledge_line_count_v1(k.body),
           char_length(k.body), k.created_at, k.updated_at
      FROM amrita_memory.knowledge k
     ORDER BY k.created_at, k.kid
$$;

--
-- Name: FUNCTION knowledge_list_v1(); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_list_v1() IS 'Every knowledge entry, oldest first, with line and character counts (no bodies).';

--
-- Name: knowledge_read_v1(text, integer, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_read_v1(p_kid text, p_start integer, p_end integer) RETURNS TABLE(kid text, title text, summary text, body_lines text[], total_lines integer, range_start integer, range_end integer, created_at timestamp with time zone, updated_at timestamp with time zone)
    LANGUAGE sql STABLE
    AS $$
    SELECT w.kid, w.title, w.summary, w.lines[w.s + 1:w.e], w.total, w.s, w.e,
           w.created_at, w.updated_at
      FROM (SELECT x.*, greatest(x.s, least(x.total, coalesce(p_end, x.total))) AS e
              FROM (SELECT k.kid, k.title, k.summary, k.created_at, k.updated_at,
                           amrita_memory.knowledge_lines_v1(k.body) AS lines,
                           cardinality(amrita_memory.knowledge_lines_v1(k.body)) AS total,
                           greatest(0, coalesce(p_start, 0)) AS s
                      FROM amrita_memory.knowledge k
                     WHERE k.kid = p_kid) x) w
$$;

--
-- Name: FUNCTION knowledge_read_v1(p_kid text, p_start integer, p_end integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_read_v1(p_kid text, p_start integer, p_end integer) IS 'A window [start, end) of a knowledge entry''s lines, clamped like the reference; no row for an unknown kid.';

--
-- Name: knowledge_release_suggestions_v1(bigint); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_release_suggestions_v1(p_cycle_id bigint) RETURNS integer
    LANGUAGE sql
    AS $$
    WITH released AS (
        UPDATE amrita_memory.knowledge_suggestion s
           SET status = 'pending', claimed_by_cycle = NULL, claimed_at = NULL
         WHERE s.status = 'claimed' AND s.claimed_by_cycle = p_cycle_id
        RETURNING 1)
    SELECT count(*)::integer FROM released
$$;

--
-- Name: FUNCTION knowledge_release_suggestions_v1(p_cycle_id bigint); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_release_suggestions_v1(p_cycle_id bigint) IS 'A cycle failed: its claimed suggestions are pending again; returns how many.';

--
-- Name: knowledge_search_v2(public.vector, text[], text, integer, text, double precision, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_search_v2(p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_fusion text DEFAULT 'weighted'::text, p_rrf_k double precision DEFAULT 60, p_weight double precision DEFAULT 0.5) RETURNS TABLE(kid text, title text, summary text, distance double precision, keyword_score double precision, score double precision)
    LANGUAGE plpgsql STABLE
    AS $$
#variable_conflict use_column
DECLARE
    v_dim integer := vector_dims(p_query);
    v_tsq tsquery;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('vector', 'keyword', 'hybrid') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('knowledge_search_v2: unknown mode %L (vector, keyword or hybrid)', p_mode);
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('knowledge_search_v2: unknown fusion %L (rrf or weighted)', p_fusion);
    END IF;
    IF p_mode <> 'keyword' AND p_query IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('knowledge_search_v2: mode %s needs the query vector', p_mode);
    END IF;
    IF p_mode <> 'vector' THEN
        v_tsq := amrita_memory.tokens_tsquery_v1(p_tokens);
    END IF;
    RETURN QUERY
    WITH stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(k.search_len), 1), 1)::float8 AS avglen
          FROM amrita_memory.knowledge k
    ),
    -- the entries sharing a token with the query (GIN), then their (entry, query token)
    -- pairs: one tsvector lookup per query token, not an unnest of every entry's tokens
    -- (a body gives hundreds: 1000 matching entries took 140 ms unnested, bench_knowledge.py)
    terms AS MATERIALIZED (
        SELECT t AS lexeme, amrita_memory.tokens_tsquery_v1(ARRAY[t]) AS tsq
          FROM (SELECT DISTINCT t FROM unnest(p_tokens) t WHERE t <> '') d
    ),
    matched AS MATERIALIZED (
        SELECT k.kid, k.search_len, k.search_tokens
          FROM amrita_memory.knowledge k
         WHERE v_tsq IS NOT NULL AND k.search_tokens @@ v_tsq
    ),
    hit AS MATERIALIZED (
        SELECT m.kid, m.search_len AS len, q.lexeme
          FROM matched m
          CROSS JOIN terms q
         WHERE m.search_tokens @@ q.tsq
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.kid, sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.kid
    ),
    c AS (
        SELECT k.kid, k.title, k.summary, kw.bm25,
               CASE WHEN p_mode <> 'keyword' AND vector_dims(k.embedding) = v_dim
                    THEN k.embedding <-> p_query END AS distance
          FROM amrita_memory.knowledge k
          LEFT JOIN kw ON kw.kid = k.kid
         WHERE p_mode <> 'keyword' OR kw.bm25 IS NOT NULL
    ),
    ranked AS (
        SELECT c.*,
               CASE WHEN c.distance IS NOT NULL THEN 1.0 / (1.0 + c.distance * c.distance) END
                   AS similarity,
               CASE WHEN c.distance IS NOT NULL
                    THEN row_number() OVER (ORDER BY c.distance NULLS LAST, c.kid) END AS vrank,
               CASE WHEN c.bm25 IS NOT NULL
                    THEN row_number() OVER (ORDER BY c.bm25 DESC NULLS LAST, c.kid) END AS krank
          FROM c
         WHERE CASE p_mode WHEN 'vector' THEN c.distance IS NOT NULL
                           WHEN 'hybrid' THEN c.distance IS NOT NULL OR c.bm25 IS NOT NULL
                           ELSE true END
    ),
    fused AS (
        SELECT r.*,
               CASE p_mode
                   WHEN 'vector' THEN r.similarity
                   WHEN 'keyword' THEN r.bm25
                   ELSE CASE p_fusion
                       WHEN 'rrf' THEN coalesce(1.0 / (p_rrf_k + r.vrank), 0)
                                       + coalesce(1.0 / (p_rrf_k + r.krank), 0)
                       ELSE (1 - p_weight)
                                * coalesce(CASE WHEN max(r.similarity) OVER () - min(r.similarity) OVER () > 1e-6
                                                THEN (r.similarity - min(r.similarity) OVER ())
                                                     / (max(r.similarity) OVER () - min(r.similarity) OVER ())
                                                WHEN r.similarity IS NOT NULL THEN 1 END, 0)
                            + p_weight * coalesce(r.bm25 / nullif(max(r.bm25) OVER (), 0), 0)
                   END
               END::float8 AS score
          FROM ranked r
    )
    SELECT f.kid, f.title, f.summary, f.distance::float8, coalesce(f.bm25, 0)::float8, f.score
      FROM fused f
     ORDER BY f.score DESC, f.distance NULLS LAST, f.kid
     LIMIT greatest(p_top_k, 0);
END
$$;

--
-- Name: FUNCTION knowledge_search_v2(p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_fusion text, p_rrf_k double precision, p_weight double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_search_v2(p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_fusion text, p_rrf_k double precision, p_weight double precision) IS 'Knowledge search in one statement: mode vector (summary vector L2, = knowledge_search_v1''s order), keyword (BM25 over title + summary + body tokens) or hybrid (rrf or weighted fusion, as the memories''; no decay). SQLSTATE 22023 for a bad mode or fusion.';

--
-- Name: knowledge_set_tokens_v1(text, text, text, text, text[], boolean); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_set_tokens_v1(p_kid text, p_title text, p_summary text, p_body text, p_tokens text[], p_replace boolean) RETURNS boolean
    LANGUAGE sql
    AS $$
    WITH changed AS (
        UPDATE amrita_memory.knowledge k
           SET search_tokens = array_to_tsvector(coalesce(p_tokens, '{}'))
         WHERE k.kid = p_kid
           AND k.title = p_title AND k.summary = p_summary AND k.body = p_body
           AND (p_replace OR k.search_tokens IS NULL)
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM changed)
$$;

--
-- Name: FUNCTION knowledge_set_tokens_v1(p_kid text, p_title text, p_summary text, p_body text, p_tokens text[], p_replace boolean); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_set_tokens_v1(p_kid text, p_title text, p_summary text, p_body text, p_tokens text[], p_replace boolean) IS 'Store a knowledge entry''s search tokens unless its text changed since they were made; p_replace false = fill in missing tokens only. True when stored.';

--
-- Name: knowledge_suggest_v1(text, text, text, text, text, text, text, integer, integer, integer, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_suggest_v1(p_action text, p_kid text, p_title text, p_summary text, p_body text, p_reason text, p_author_id text, p_max_pending integer, p_rate_limit integer, p_rate_window_seconds integer, p_now timestamp with time zone) RETURNS TABLE(status text, id bigint, pending integer)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_pending integer;
    v_recent integer;
    v_id bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('amrita_memory.knowledge_suggestion'));
    SELECT count(*) INTO v_pending
      FROM amrita_memory.knowledge_suggestion s WHERE s.status IN ('pending', 'claimed');
    IF p_rate_limit > 0 THEN
        SELECT count(*) INTO v_recent
          FROM amrita_memory.knowledge_suggestion s
         WHERE s.author_id = p_author_id
           AND s.created_at > p_now - make_interval(secs => p_rate_window_seconds);
        IF v_recent >= p_rate_limit THEN
            RETURN QUERY SELECT 'rate_limited'::text, NULL::bigint, v_pending;
            RETURN;
        END IF;
    END IF;
    IF p_action = 'update' AND NOT EXISTS (
           SELECT 1 FROM amrita_memory.knowledge k WHERE k.kid = p_kid) THEN
        RETURN QUERY SELECT 'unknown_kid'::text, NULL::bigint, v_pending;
        RETURN;
    END IF;
    IF v_pending >= p_max_pending THEN
        RETURN QUERY SELECT 'full'::text, NULL::bigint, v_pending;
        RETURN;
    END IF;
    INSERT INTO amrita_memory.knowledge_suggestion
           (action, kid, title, summary, body, reason, author_id, created_at)
    VALUES (p_action, CASE WHEN p_action = 'update' THEN p_kid END, p_title, p_summary, p_body,
            coalesce(p_reason, ''), p_author_id, p_now)
    RETURNING knowledge_suggestion.id INTO v_id;
    RETURN QUERY SELECT 'queued'::text, v_id, v_pending + 1;
END
$$;

--
-- Name: FUNCTION knowledge_suggest_v1(p_action text, p_kid text, p_title text, p_summary text, p_body text, p_reason text, p_author_id text, p_max_pending integer, p_rate_limit integer, p_rate_window_seconds integer, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_suggest_v1(p_action text, p_kid text, p_title text, p_summary text, p_body text, p_reason text, p_author_id text, p_max_pending integer, p_rate_limit integer, p_rate_window_seconds integer, p_now timestamp with time zone) IS 'Queue a knowledge suggestion unless the queue is full, the author is over the rate limit or the kid to update is unknown; status queued | full | rate_limited | unknown_kid.';

--
-- Name: knowledge_update_v1(text, text, text, text, integer, integer, public.vector, text, integer, timestamp with time zone, text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_update_v1(p_kid text, p_title text, p_summary text, p_body text, p_start integer, p_end integer, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_protocol text DEFAULT NULL::text, p_model text DEFAULT NULL::text, p_base_url text DEFAULT NULL::text) RETURNS TABLE(status text, kid text, total_lines integer, char_count integer)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_row amrita_memory.knowledge%ROWTYPE;
    v_lines text[];
    v_total integer;
    v_end integer;
    v_body text;
BEGIN
    SELECT * INTO v_row FROM amrita_memory.knowledge k WHERE k.kid = p_kid FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, p_kid, 0, 0;
        RETURN;
    END IF;
    v_lines := amrita_memory.knowledge_lines_v1(v_row.body);
    v_total := cardinality(v_lines);
    v_body := v_row.body;
    IF p_start IS NOT NULL THEN
        v_end := coalesce(p_end, v_total);
        IF p_start < 0 OR v_end < p_start OR v_end > v_total THEN
            RETURN QUERY SELECT 'range'::text, p_kid, v_total, char_length(v_row.body);
            RETURN;
        END IF;
        -- PostgreSQL arrays are 1-based: [1:s] = the s lines before the range,
        -- [e+1:total] = the lines after it (both empty when out of bounds).
        v_body := array_to_string(
            v_lines[1:p_start]
            || amrita_memory.knowledge_lines_v1(coalesce(p_body, ''))
            || v_lines[v_end + 1:v_total],
            E'\n');
    ELSIF p_body IS NOT NULL THEN
        v_body := p_body;
    END IF;
    IF char_length(v_body) > p_max_chars THEN
        RETURN QUERY SELECT 'too_long'::text, p_kid, v_total, char_length(v_body);
        RETURN;
    END IF;
    IF p_summary IS NOT NULL AND p_summary IS DISTINCT FROM v_row.summary AND p_embedding IS NULL THEN
        RETURN QUERY SELECT 'needs_embedding'::text, p_kid, v_total, char_length(v_row.body);
        RETURN;
    END IF;
    IF p_embedding IS NOT NULL THEN
        PERFORM amrita_memory.require_store_model_v1(
            p_fingerprint, vector_dims(p_embedding), p_now, p_protocol, p_model, p_base_url);
    END IF;
    UPDATE amrita_memory.knowledge k
       SET title = coalesce(p_title, k.title),
           summary = coalesce(p_summary, k.summary),
           body = v_body,
           embedding = coalesce(p_embedding, k.embedding),
           embed_fingerprint = CASE WHEN p_embedding IS NULL THEN k.embed_fingerprint
                                    ELSE p_fingerprint END,
           updated_at = p_now
     WHERE k.kid = p_kid;
    RETURN QUERY SELECT 'updated'::text, p_kid,
                        cardinality(amrita_memory.knowledge_lines_v1(v_body)), char_length(v_body);
END
$$;

--
-- Name: FUNCTION knowledge_update_v1(p_kid text, p_title text, p_summary text, p_body text, p_start integer, p_end integer, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_protocol text, p_model text, p_base_url text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_update_v1(p_kid text, p_title text, p_summary text, p_body text, p_start integer, p_end integer, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_protocol text, p_model text, p_base_url text) IS 'Update a knowledge entry: NULL keeps a field; with p_start the body replaces lines [p_start, p_end); status updated | not_found | too_long | range | needs_embedding.';

--
-- Name: knowledge_update_v2(text, text, text, text, integer, integer, public.vector, text, integer, timestamp with time zone, text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.knowledge_update_v2(p_kid text, p_title text, p_summary text, p_body text, p_start integer, p_end integer, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_protocol text DEFAULT NULL::text, p_model text DEFAULT NULL::text, p_base_url text DEFAULT NULL::text) RETURNS TABLE(status text, kid text, total_lines integer, char_count integer, title text, summary text, body text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_status text;
    v_total integer;
    v_chars integer;
BEGIN
    SELECT u.status, u.total_lines, u.char_count INTO v_status, v_total, v_chars
      FROM amrita_memory.knowledge_update_v1(
               p_kid, p_title, p_summary, p_body, p_start, p_end, p_embedding, p_fingerprint,
               p_max_chars, p_now, p_protocol, p_model, p_base_url) u;
    IF v_status <> 'updated' THEN
        RETURN QUERY SELECT v_status, p_kid, v_total, v_chars, NULL::text, NULL::text, NULL::text;
        RETURN;
    END IF;
    IF p_title IS NOT NULL OR p_summary IS NOT NULL OR p_body IS NOT NULL THEN
        UPDATE amrita_memory.knowledge k SET search_tokens = NULL WHERE k.kid = p_kid;
    END IF;
    RETURN QUERY SELECT v_status, k.kid, v_total, v_chars, k.title, k.summary, k.body
                   FROM amrita_memory.knowledge k WHERE k.kid = p_kid;
END
$$;

--
-- Name: FUNCTION knowledge_update_v2(p_kid text, p_title text, p_summary text, p_body text, p_start integer, p_end integer, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_protocol text, p_model text, p_base_url text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.knowledge_update_v2(p_kid text, p_title text, p_summary text, p_body text, p_start integer, p_end integer, p_embedding public.vector, p_fingerprint text, p_max_chars integer, p_now timestamp with time zone, p_protocol text, p_model text, p_base_url text) IS 'knowledge_update_v1 that clears the search tokens of a changed text and returns the text after the update (the caller stores its tokens with knowledge_set_tokens_v1).';

--
-- Name: lease_acquire_v1(text, text, text, text, double precision, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.lease_acquire_v1(p_kind text, p_key text, p_owner text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone) RETURNS TABLE(acquired boolean, owner text, token text, expires_at timestamp with time zone, previous_owner text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_held amrita_memory.lease%ROWTYPE;
BEGIN
    IF p_ttl_seconds IS NULL OR p_ttl_seconds <= 0 THEN
        RAISE EXCEPTION 'lease TTL must be positive, got %', p_ttl_seconds
            USING ERRCODE = '22023';
    END IF;
    -- one claim of this key at a time; released at commit (never session-level)
    PERFORM pg_advisory_xact_lock(
        hashtextextended('amrita_memory.lease:' || p_kind || ':' || p_key, 0));
    SELECT * INTO v_held FROM amrita_memory.lease l
     WHERE l.kind = p_kind AND l.lease_key = p_key;
    IF FOUND AND v_held.expires_at > v_now THEN
        RETURN QUERY SELECT false, v_held.owner, v_held.token, v_held.expires_at,
                            NULL::text;
        RETURN;
    END IF;
    INSERT INTO amrita_memory.lease AS l
           (kind, lease_key, owner, token, acquired_at, renewed_at, expires_at,
            previous_owner)
    VALUES (p_kind, p_key, p_owner, p_token, v_now, v_now,
            v_now + make_interval(secs => p_ttl_seconds),
            CASE WHEN v_held.owner IS NOT NULL THEN v_held.owner END)
    ON CONFLICT (kind, lease_key) DO UPDATE
       SET owner = EXCLUDED.owner, token = EXCLUDED.token,
           acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at,
           expires_at = EXCLUDED.expires_at, previous_owner = EXCLUDED.previous_owner;
    RETURN QUERY SELECT true, p_owner, p_token,
                        v_now + make_interval(secs => p_ttl_seconds), v_held.owner;
END;
$$;

--
-- Name: FUNCTION lease_acquire_v1(p_kind text, p_key text, p_owner text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.lease_acquire_v1(p_kind text, p_key text, p_owner text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone) IS 'Claim a lease of long work (kind, key) under a transaction-level advisory lock; a live lease of another claim is refused with its holder, an expired one taken over. See sql/functions/lease_v1.sql.';

--
-- Name: lease_release_v1(text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.lease_release_v1(p_kind text, p_key text, p_token text) RETURNS boolean
    LANGUAGE sql
    AS $$
    WITH released AS (
        DELETE FROM amrita_memory.lease l
         WHERE l.kind = p_kind AND l.lease_key = p_key AND l.token = p_token
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM released);
$$;

--
-- Name: FUNCTION lease_release_v1(p_kind text, p_key text, p_token text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.lease_release_v1(p_kind text, p_key text, p_token text) IS 'The end of the work: the claim''s lease row goes (another claim''s stays).';

--
-- Name: lease_renew_v1(text, text, text, double precision, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.lease_renew_v1(p_kind text, p_key text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone) RETURNS boolean
    LANGUAGE sql
    AS $$
    WITH renewed AS (
        UPDATE amrita_memory.lease l
           SET renewed_at = coalesce(p_now, clock_timestamp()),
               expires_at = coalesce(p_now, clock_timestamp())
                            + make_interval(secs => p_ttl_seconds)
         WHERE l.kind = p_kind AND l.lease_key = p_key AND l.token = p_token
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM renewed);
$$;

--
-- Name: FUNCTION lease_renew_v1(p_kind text, p_key text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.lease_renew_v1(p_kind text, p_key text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone) IS 'The heartbeat of a lease claim: its expiry pushed to now + TTL; false when the claim lost the lease.';

--
-- Name: lease_take_over_v1(text, text, text, text, text, double precision, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.lease_take_over_v1(p_kind text, p_key text, p_dead_token text, p_owner text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone) RETURNS boolean
    LANGUAGE sql
    AS $$
    WITH taken AS (
        UPDATE amrita_memory.lease l
           SET previous_owner = l.owner, owner = p_owner, token = p_token,
               acquired_at = coalesce(p_now, clock_timestamp()),
               renewed_at = coalesce(p_now, clock_timestamp()),
               expires_at = coalesce(p_now, clock_timestamp())
                            + make_interval(secs => p_ttl_seconds)
         WHERE l.kind = p_kind AND l.lease_key = p_key AND l.token = p_dead_token
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM taken);
$$;

--
-- Name: FUNCTION lease_take_over_v1(p_kind text, p_key text, p_dead_token text, p_owner text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.lease_take_over_v1(p_kind text, p_key text, p_dead_token text, p_owner text, p_token text, p_ttl_seconds double precision, p_now timestamp with time zone) IS 'Replace a claim whose process is known dead (same host, pid gone) before its expiry, if the row is still that claim''s.';

--
-- Name: log_access_v1(text[], text[], double precision[], timestamp with time zone, text, text, text, text, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.log_access_v1(p_partitions text[], p_ids text[], p_scores double precision[], p_at timestamp with time zone, p_chat text, p_who text, p_query text, p_surface text, p_keep integer) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_written integer;
    v_inject boolean := p_surface = 'inject';
    v_key text;
    v_id text;
    v_cut bigint;
BEGIN
    -- A log, not data: its transaction commits without waiting for the WAL flush (a
    -- crash may lose the last recalls, never a memory). The fsync was most of a logged
    -- read's cost (measured: 6 ms of 6.5 on a busy disk). Call it in its own statement
    -- (the storage layer does): the setting holds for the caller's whole transaction.
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO amrita_memory.memory_access
           (partition_key, memory_id, at, chat_key, who, query, score, surface)
    SELECT r.partition_key, r.memory_id, p_at, p_chat, p_who, p_query, r.score, p_surface
      FROM unnest(p_partitions, p_ids, coalesce(p_scores, '{}'::float8[]))
           AS r(partition_key, memory_id, score)
     WHERE r.memory_id IS NOT NULL
       AND EXISTS (SELECT 1 FROM amrita_memory.memory m
                    WHERE m.partition_key = r.partition_key AND m.id = r.memory_id);
    GET DIAGNOSTICS v_written = ROW_COUNT;

    -- The trim, one memory at a time: the cut is the (p_keep + 1)-th newest row of the
    -- logged surface's class, found walking the primary key (partition_key, memory_id,
    -- seq) backwards; the delete is a range of that key. Plan-proof (a set-based join
    -- let the planner loop the cut over every row: 30x slower), cost ~ ids × p_keep.
    FOR v_key, v_id IN SELECT DISTINCT u.partition_key, u.memory_id
                         FROM unnest(p_partitions, p_ids) AS u(partition_key, memory_id)
    LOOP
        SELECT l.seq INTO v_cut
          FROM amrita_memory.memory_access l
         WHERE l.partition_key = v_key AND l.memory_id = v_id
           AND (l.surface = 'inject') = v_inject
         ORDER BY l.seq DESC
        OFFSET greatest(p_keep, 1) LIMIT 1;
        IF v_cut IS NOT NULL THEN
            DELETE FROM amrita_memory.memory_access a
             WHERE a.partition_key = v_key AND a.memory_id = v_id AND a.seq <= v_cut
               AND (a.surface = 'inject') = v_inject;
        END IF;
    END LOOP;
    RETURN v_written;
END
$$;

--
-- Name: FUNCTION log_access_v1(p_partitions text[], p_ids text[], p_scores double precision[], p_at timestamp with time zone, p_chat text, p_who text, p_query text, p_surface text, p_keep integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.log_access_v1(p_partitions text[], p_ids text[], p_scores double precision[], p_at timestamp with time zone, p_chat text, p_who text, p_query text, p_surface text, p_keep integer) IS 'Log one recall of memories (surface tool|command|cli|web|l3|inject|relevant, chat, speaker, redacted query, scores), skipping ids gone, and keep per memory the newest p_keep injections and p_keep other recalls. Returns rows written.';

--
-- Name: memo_append_v1(text, text, integer, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.memo_append_v1(p_partition_key text, p_addition text, p_max_chars integer, p_now timestamp with time zone) RETURNS TABLE(applied boolean, chars integer, current_chars integer, version integer)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_chars integer;
    v_version integer;
    v_current text;
BEGIN
    -- One statement: the INSERT proposes nothing when the addition alone is too long;
    -- the conflict branch re-checks the length against the latest committed row.
    INSERT INTO amrita_memory.memo AS m (partition_key, content, version, updated_at)
    SELECT p_partition_key, p_addition, 1, p_now
    WHERE char_length(p_addition) <= p_max_chars
    ON CONFLICT (partition_key) DO UPDATE
        SET content = CASE WHEN m.content = '' THEN excluded.content
                           ELSE m.content || E'\n' || excluded.content END,
            version = m.version + 1,
            updated_at = excluded.updated_at
        WHERE char_length(m.content)
              + CASE WHEN m.content = '' THEN 0 ELSE 1 END
              + char_length(excluded.content) <= p_max_chars
    RETURNING char_length(m.content), m.version INTO v_chars, v_version;

    IF FOUND THEN
        RETURN QUERY SELECT true, v_chars, v_chars, v_version;
        RETURN;
    END IF;

    -- Refused: report what the text would have been and what it is (for the message only).
    SELECT m.content, m.version INTO v_current, v_version
    FROM amrita_memory.memo AS m
    WHERE m.partition_key = p_partition_key;
    v_current := coalesce(v_current, '');
    RETURN QUERY SELECT
        false,
        char_length(v_current)
            + CASE WHEN v_current = '' THEN 0 ELSE 1 END
            + char_length(p_addition),
        char_length(v_current),
        coalesce(v_version, 0);
END
$$;

--
-- Name: FUNCTION memo_append_v1(p_partition_key text, p_addition text, p_max_chars integer, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.memo_append_v1(p_partition_key text, p_addition text, p_max_chars integer, p_now timestamp with time zone) IS 'Append a line to a partition''s memo unless it would exceed p_max_chars characters (checked under the row lock); returns applied, chars, current_chars, version.';

--
-- Name: memo_write_v1(text, text, integer, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.memo_write_v1(p_partition_key text, p_content text, p_max_chars integer, p_now timestamp with time zone) RETURNS TABLE(applied boolean, chars integer, current_chars integer, version integer)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_chars integer;
    v_version integer;
BEGIN
    IF char_length(p_content) <= p_max_chars THEN
        INSERT INTO amrita_memory.memo AS m (partition_key, content, version, updated_at)
        VALUES (p_partition_key, p_content, 1, p_now)
        ON CONFLICT (partition_key) DO UPDATE
            SET content = excluded.content,
                version = m.version + 1,
                updated_at = excluded.updated_at
        RETURNING char_length(m.content), m.version INTO v_chars, v_version;
        RETURN QUERY SELECT true, v_chars, v_chars, v_version;
        RETURN;
    END IF;

    SELECT char_length(m.content), m.version INTO v_chars, v_version
    FROM amrita_memory.memo AS m
    WHERE m.partition_key = p_partition_key;
    RETURN QUERY SELECT false, char_length(p_content), coalesce(v_chars, 0), coalesce(v_version, 0);
END
$$;

--
-- Name: FUNCTION memo_write_v1(p_partition_key text, p_content text, p_max_chars integer, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.memo_write_v1(p_partition_key text, p_content text, p_max_chars integer, p_now timestamp with time zone) IS 'Replace a partition''s whole memo ('''' clears it) unless it exceeds p_max_chars characters; returns applied, chars, current_chars, version.';

--
-- Name: memory_block_v2(text[], text, text[], integer, public.vector, integer, text, bigint); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.memory_block_v2(p_memo_keys text[], p_chat_key text, p_scope_keys text[], p_limit integer, p_query public.vector, p_top_k integer, p_profile_key text, p_known bigint) RETURNS TABLE(kind text, partition_key text, content text, id text, importance smallint, category text, updated_at timestamp with time zone)
    LANGUAGE sql STABLE
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
WITH loaded AS (
    SELECT l.scope_key, l.loaded_at
      FROM amrita_memory.loaded_scope l
     WHERE l.chat_key = p_chat_key
), asked AS (
    SELECT array_cat(array_cat(p_memo_keys, p_scope_keys),
                     array_cat(coalesce((SELECT array_agg(loaded.scope_key) FROM loaded),
                                        '{}'::text[]),
                               CASE WHEN p_profile_key IS NULL THEN '{}'::text[]
                                    ELSE ARRAY[p_profile_key] END)) AS k
), paused AS (
    SELECT DISTINCT pp.partition_key
      FROM amrita_memory.paused_partition pp
     WHERE pp.partition_key = ANY((SELECT asked.k FROM asked)::text[])
), keys AS (
    SELECT coalesce(array_agg(DISTINCT u.k), '{}'::text[]) AS k
      FROM (SELECT unnest(p_scope_keys) AS k
            UNION ALL
            SELECT loaded.scope_key FROM loaded) u
     WHERE NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = u.k)
), cand AS (
    SELECT m.partition_key, m.content, m.id, m.importance, m.category, m.updated_at
      FROM amrita_memory.memory m
     WHERE m.partition_key = ANY((SELECT keys.k FROM keys)::text[])
     ORDER BY m.importance DESC, m.updated_at DESC, m.id
     LIMIT p_limit
), ver AS (
    SELECT coalesce(bit_xor(hashtextextended(
               c.id || ':' || c.importance || ':' || coalesce(c.category, '') || ':'
               || extract(epoch FROM c.updated_at) || ':' || c.content, 0)), 0)
           # hashtextextended(array_to_string((SELECT keys.k FROM keys), ','), count(*)) AS v
      FROM cand c
)
SELECT 'paused'::text, paused.partition_key, NULL::text, NULL::text, NULL::smallint,
       NULL::text, NULL::timestamptz
  FROM paused
UNION ALL
SELECT 'memo', o.partition_key, o.content, NULL, NULL, NULL, o.updated_at
  FROM amrita_memory.memo o
 WHERE o.partition_key = ANY(p_memo_keys) AND o.content <> ''
   AND NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = o.partition_key)
UNION ALL
SELECT 'loaded', l.scope_key, NULL, NULL, NULL, NULL, l.loaded_at
  FROM loaded l
 WHERE NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = l.scope_key)
UNION ALL
SELECT 'version', NULL, NULL, (SELECT ver.v FROM ver)::text, NULL, NULL, NULL
UNION ALL
SELECT 'memory', c.partition_key, c.content, c.id, c.importance, c.category, c.updated_at
  FROM cand c
 WHERE p_known IS DISTINCT FROM (SELECT ver.v FROM ver)
UNION ALL
(SELECT 'relevant', m.partition_key, m.content, m.id, m.importance, m.category, m.updated_at
   FROM amrita_memory.memory m
  WHERE p_top_k > 0 AND p_query IS NOT NULL
    AND m.partition_key = ANY((SELECT keys.k FROM keys)::text[])
    AND vector_dims(m.embedding) = vector_dims(p_query)
  ORDER BY vector_l2_squared_distance(m.embedding, p_query), m.id
  LIMIT p_top_k)
UNION ALL
SELECT 'profile', p.partition_key, p.summary, NULL, NULL, NULL, p.updated_at
  FROM amrita_memory.profile p
 WHERE p.partition_key = p_profile_key AND p.summary <> ''
   AND NOT EXISTS (SELECT 1 FROM paused WHERE paused.partition_key = p.partition_key)
$$;

--
-- Name: FUNCTION memory_block_v2(p_memo_keys text[], p_chat_key text, p_scope_keys text[], p_limit integer, p_query public.vector, p_top_k integer, p_profile_key text, p_known bigint); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.memory_block_v2(p_memo_keys text[], p_chat_key text, p_scope_keys text[], p_limit integer, p_query public.vector, p_top_k integer, p_profile_key text, p_known bigint) IS 'memory_block_v1 without paused partitions (no memo, memories, profile or loaded scope of a paused partition), plus one row of kind paused per paused partition asked for, and a version row: the candidates are sent only when p_known differs from it. Generic plan.';

--
-- Name: memory_fields_v2(text, text[], smallint, text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.memory_fields_v2(p_content text, p_tags text[], p_importance smallint, p_category text, p_scope text, p_source text) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT jsonb_build_object('content', p_content, 'tags', to_jsonb(p_tags),
                              'importance', p_importance, 'category', p_category,
                              'scope', p_scope, 'source', p_source)
$$;

--
-- Name: FUNCTION memory_fields_v2(p_content text, p_tags text[], p_importance smallint, p_category text, p_scope text, p_source text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.memory_fields_v2(p_content text, p_tags text[], p_importance smallint, p_category text, p_scope text, p_source text) IS 'memory_fields_v1 (the fields a change history records, as jsonb) declared STABLE, so that it is inlined into the writing statement instead of called per row.';

--
-- Name: memory_history_v1(text, text, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.memory_history_v1(p_partition text, p_memory text, p_limit integer) RETURNS TABLE(partition_key text, memory_id text, seq bigint, at timestamp with time zone, actor_kind text, actor_id text, op text, before jsonb, after jsonb, note text)
    LANGUAGE sql STABLE
    SET enable_seqscan TO 'off'
    AS $$
    SELECT h.partition_key, h.memory_id, h.seq, h.at, h.actor_kind, h.actor_id, h.op,
           h.before, h.after, h.note
      FROM (
            SELECT c.partition_key, c.memory_id, c.seq, c.at, c.actor_kind, c.actor_id, c.op,
                   c.before, c.after, c.note
              FROM amrita_memory.memory_change c
             WHERE c.partition_key = p_partition AND c.memory_id = p_memory
            UNION ALL
            SELECT e.partition_key, e.memory_id, e.seq, e.at, e.actor_kind, e.actor_id, e.op,
                   e.before, e.after, e.note
              FROM amrita_memory.sweep_change_entry e
             WHERE e.memory_ids @> ARRAY[p_memory]
               AND e.partition_key = p_partition AND e.memory_id = p_memory
           ) h
     ORDER BY h.seq DESC
     LIMIT p_limit
$$;

--
-- Name: FUNCTION memory_history_v1(p_partition text, p_memory text, p_limit integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.memory_history_v1(p_partition text, p_memory text, p_limit integer) IS 'A memory''s history, newest first (at most p_limit changes): its memory_change rows and its entries in the sweep''s batch rows (sweep_change_entry, over the GIN index on memory_ids), as memory_change rows.';

--
-- Name: memory_matches_v2(smallint, text, text[], text, integer, integer, text, text[], text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.memory_matches_v2(p_importance smallint, p_scope text, p_tags text[], p_category text, p_min integer, p_max integer, p_want_scope text, p_any_tags text[], p_want_category text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT (p_min IS NULL OR p_importance >= p_min)
       AND (p_max IS NULL OR p_importance <= p_max)
       AND (p_want_scope IS NULL OR p_scope = p_want_scope)
       AND (p_any_tags IS NULL OR p_tags && p_any_tags)
       AND (p_want_category IS NULL OR p_category = p_want_category)
$$;

--
-- Name: FUNCTION memory_matches_v2(p_importance smallint, p_scope text, p_tags text[], p_category text, p_min integer, p_max integer, p_want_scope text, p_any_tags text[], p_want_category text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.memory_matches_v2(p_importance smallint, p_scope text, p_tags text[], p_category text, p_min integer, p_max integer, p_want_scope text, p_any_tags text[], p_want_category text) IS 'Search filter on top of the partition: memory_matches_v1 (importance range, scope, any tag) and category = p_want_category (NULL = any). Inlined by the planner.';

--
-- Name: person_takes_over_v1(); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.person_takes_over_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.source := 'user';
    RETURN NEW;
END
$$;

--
-- Name: FUNCTION person_takes_over_v1(); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.person_takes_over_v1() IS 'BEFORE UPDATE row trigger on memory: a person''s edit of an automatic memory sets source = user (the row is theirs now; extraction replaces only origin = extraction AND source = auto).';

--
-- Name: profile_save_v1(text, integer, text, text[], text, text, text, bigint, integer, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.profile_save_v1(p_partition_key text, p_expected_version integer, p_summary text, p_lines text[], p_operation text, p_actor_kind text, p_actor text, p_cycle_id bigint, p_keep integer, p_now timestamp with time zone) RETURNS TABLE(saved boolean, new_version integer)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_old_summary text;
    v_old_lines text[];
    v_version integer;
BEGIN
    SELECT p.summary, p.lines, p.version
      INTO v_old_summary, v_old_lines, v_version
      FROM amrita_memory.profile AS p
     WHERE p.partition_key = p_partition_key
       FOR UPDATE;

    IF NOT FOUND THEN
        IF p_expected_version <> 0 THEN
            RETURN QUERY SELECT false, 0;
            RETURN;
        END IF;
        INSERT INTO amrita_memory.profile AS p (partition_key, summary, lines, version, updated_at)
        VALUES (p_partition_key, p_summary, p_lines, 1, p_now)
        ON CONFLICT (partition_key) DO NOTHING;
        IF NOT FOUND THEN  -- a concurrent first write committed first
            RETURN QUERY SELECT false, NULL::integer;
            RETURN;
        END IF;
        v_old_summary := '';
        v_old_lines := '{}';
        v_version := 1;
    ELSIF v_version <> p_expected_version THEN
        RETURN QUERY SELECT false, v_version;
        RETURN;
    ELSE
        v_version := v_version + 1;
        UPDATE amrita_memory.profile AS p
           SET summary = p_summary, lines = p_lines, version = v_version, updated_at = p_now
         WHERE p.partition_key = p_partition_key;
    END IF;

    INSERT INTO amrita_memory.profile_history AS h
        (partition_key, version, operation, actor_kind, actor, cycle_id,
         old_summary, old_lines, new_summary, new_lines, changed_at)
    VALUES (p_partition_key, v_version, p_operation, p_actor_kind, p_actor, p_cycle_id,
            v_old_summary, v_old_lines, p_summary, p_lines, p_now);
    -- Keep the newest p_keep changes of this profile (the primary key's prefix).
    DELETE FROM amrita_memory.profile_history AS h
     WHERE h.partition_key = p_partition_key AND h.version <= v_version - greatest(p_keep, 1);

    RETURN QUERY SELECT true, v_version;
END
$$;

--
-- Name: FUNCTION profile_save_v1(p_partition_key text, p_expected_version integer, p_summary text, p_lines text[], p_operation text, p_actor_kind text, p_actor text, p_cycle_id bigint, p_keep integer, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.profile_save_v1(p_partition_key text, p_expected_version integer, p_summary text, p_lines text[], p_operation text, p_actor_kind text, p_actor text, p_cycle_id bigint, p_keep integer, p_now timestamp with time zone) IS 'Store a profile''s new summary and lines if its version is still p_expected_version (0 = no profile yet): row-locked compare-and-set, one profile_history row (old and new content, who, cycle), history trimmed to the newest p_keep. Returns saved, new_version.';

--
-- Name: recall_memories_v4(text, public.vector, text[], text, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, integer, text, double precision, double precision, text, text, text, text, integer, boolean); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.recall_memories_v4(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer DEFAULT NULL::integer, p_importance_max integer DEFAULT NULL::integer, p_scope text DEFAULT NULL::text, p_tags text[] DEFAULT NULL::text[], p_category text DEFAULT NULL::text, p_candidates integer DEFAULT 200, p_fusion text DEFAULT 'rrf'::text, p_rrf_k double precision DEFAULT 60, p_weight double precision DEFAULT 0.5, p_chat text DEFAULT NULL::text, p_who text DEFAULT NULL::text, p_query_text text DEFAULT NULL::text, p_surface text DEFAULT 'tool'::text, p_keep integer DEFAULT 20, p_log boolean DEFAULT true) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision, paused boolean, log_error text)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    r record;
    v_ids text[] := '{}';
    v_scores float8[] := '{}';
BEGIN
    IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = p_partition) THEN
        paused := true;
        RETURN NEXT;
        RETURN;
    END IF;
    paused := false;
    FOR r IN SELECT * FROM amrita_memory.search_memories_v8(
                 p_partition, p_query, p_tokens, p_mode, p_top_k, p_now, p_decay, p_base_days,
                 p_boost, p_floor, p_importance_min, p_importance_max, p_scope, p_tags,
                 p_category, p_candidates, p_fusion, p_rrf_k, p_weight)
    LOOP
        id := r.id; partition_key := r.partition_key; scope := r.scope; content := r.content;
        tags := r.tags; importance := r.importance; category := r.category;
        source := r.source; author := r.author; created_at := r.created_at;
        updated_at := r.updated_at; distance := r.distance; decay_score := r.decay_score;
        age_days := r.age_days; keyword_score := r.keyword_score;
        v_ids := v_ids || r.id;
        v_scores := v_scores || r.decay_score;
        RETURN NEXT;
    END LOOP;
    IF p_log AND cardinality(v_ids) > 0 THEN
        BEGIN
            PERFORM amrita_memory.log_access_v1(
                array_fill(p_partition, ARRAY[cardinality(v_ids)]), v_ids, v_scores, p_now,
                p_chat, p_who, p_query_text, p_surface, p_keep);
        EXCEPTION WHEN OTHERS THEN
            id := NULL; partition_key := NULL; scope := NULL; content := NULL; tags := NULL;
            importance := NULL; category := NULL; source := NULL; author := NULL;
            created_at := NULL; updated_at := NULL; distance := NULL; decay_score := NULL;
            age_days := NULL; keyword_score := NULL;
            log_error := SQLERRM;
            RETURN NEXT;
        END;
    END IF;
END
$$;

--
-- Name: FUNCTION recall_memories_v4(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer, p_fusion text, p_rrf_k double precision, p_weight double precision, p_chat text, p_who text, p_query_text text, p_surface text, p_keep integer, p_log boolean); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.recall_memories_v4(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer, p_fusion text, p_rrf_k double precision, p_weight double precision, p_chat text, p_who text, p_query_text text, p_surface text, p_keep integer, p_log boolean) IS 'recall_memories_v3 over search_memories_v8: read_memory in one round trip, plans made once per connection (the access log''s too): paused partition first (one status row, paused = true, nothing searched), else the hits, then their access log (log_access_v1) in a sub-block that never fails the read (a status row with log_error).';

--
-- Name: recall_v1(text, text[], double precision[], timestamp with time zone, text, text, text, text, integer, boolean); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.recall_v1(p_partition text, p_ids text[], p_scores double precision[], p_at timestamp with time zone, p_chat text, p_who text, p_query text, p_surface text, p_keep integer, p_log boolean) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = p_partition) THEN
        RETURN true;
    END IF;
    IF p_log AND coalesce(cardinality(p_ids), 0) > 0 THEN
        PERFORM amrita_memory.log_access_v1(
            array_fill(p_partition, ARRAY[cardinality(p_ids)]), p_ids, p_scores, p_at, p_chat,
            p_who, p_query, p_surface, p_keep);
    END IF;
    RETURN false;
END
$$;

--
-- Name: FUNCTION recall_v1(p_partition text, p_ids text[], p_scores double precision[], p_at timestamp with time zone, p_chat text, p_who text, p_query text, p_surface text, p_keep integer, p_log boolean); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.recall_v1(p_partition text, p_ids text[], p_scores double precision[], p_at timestamp with time zone, p_chat text, p_who text, p_query text, p_surface text, p_keep integer, p_log boolean) IS 'After a search of one partition: true when the partition is paused (nothing logged; the caller withholds the hits), else false after logging the hits with log_access_v1 when p_log.';

--
-- Name: record_memory_change_row_v1(); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.record_memory_change_row_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_kind text;
    v_id text;
    v_op text := nullif(current_setting('amrita_memory.op', true), '');
    v_note text := nullif(current_setting('amrita_memory.note', true), '');
    v_keep integer;
    v_days integer;
    v_key text;
    v_mark text;
    v_done text;
BEGIN
    IF v_op IS NOT NULL AND v_op NOT IN ('merge') THEN
        v_op := NULL;
    END IF;
    -- A move alone (no shown field changed: a key migration) records nothing, as in v2;
    -- the access log follows its memory to the new partition.
    IF TG_OP = 'UPDATE'
       AND (OLD.content, OLD.tags, OLD.importance, OLD.category, OLD.scope)
           IS NOT DISTINCT FROM (NEW.content, NEW.tags, NEW.importance, NEW.category, NEW.scope)
    THEN
        UPDATE amrita_memory.memory_access a
           SET partition_key = NEW.partition_key
         WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
           AND OLD.partition_key <> NEW.partition_key;
        RETURN NULL;
    END IF;

    SELECT a.kind, a.id INTO v_kind, v_id FROM amrita_memory.current_actor_v1() a;
    v_key := CASE WHEN TG_OP = 'DELETE' THEN OLD.partition_key ELSE NEW.partition_key END;
    IF v_kind IN ('llm', 'extraction', 'l3')
       AND EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = v_key)
    THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMZ01',
            MESSAGE = 'the memory of ' || v_key || ' is paused: automatic processes may not change it',
            HINT = 'resume it with `amrita-memory resume` or /memory resume';
    END IF;

    -- One statement per row: the history row, the bound (the newest v_keep changes of
    -- the memory stay: with the row being added, the existing ones up to the v_keep-th
    -- newest go) and the access-log follow-up (a deleted memory's rows go, a moved one's
    -- follow it).
    v_keep := greatest(amrita_memory.trail_setting_v1('amrita_memory.history_keep', 20), 1);
    IF TG_OP = 'INSERT' THEN
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = NEW.partition_key AND c.memory_id = NEW.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = NEW.partition_key AND h.memory_id = NEW.id
               AND h.seq <= cut.seq
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (NEW.partition_key, NEW.id, now(), v_kind, v_id, 'create', NULL,
                amrita_memory.memory_fields_v2(NEW.content, NEW.tags, NEW.importance,
                                               NEW.category, NEW.scope, NEW.source),
                v_note);
    ELSIF TG_OP = 'UPDATE' THEN
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = NEW.partition_key AND c.memory_id = NEW.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = NEW.partition_key AND h.memory_id = NEW.id
               AND h.seq <= cut.seq
        ), moved AS (
            UPDATE amrita_memory.memory_access a
               SET partition_key = NEW.partition_key
             WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
               AND OLD.partition_key <> NEW.partition_key
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (NEW.partition_key, NEW.id, now(), v_kind, v_id,
                coalesce(v_op,
                         CASE WHEN OLD.content = NEW.content AND OLD.importance = NEW.importance
                                   AND OLD.category IS NOT DISTINCT FROM NEW.category
                                   AND OLD.scope = NEW.scope
                              THEN 'tag' ELSE 'update' END),
                amrita_memory.memory_fields_v2(OLD.content, OLD.tags, OLD.importance,
                                               OLD.category, OLD.scope, OLD.source),
                amrita_memory.memory_fields_v2(NEW.content, NEW.tags, NEW.importance,
                                               NEW.category, NEW.scope, NEW.source),
                v_note);
    ELSE
        WITH cut AS (
            SELECT c.seq FROM amrita_memory.memory_change c
             WHERE c.partition_key = OLD.partition_key AND c.memory_id = OLD.id
             ORDER BY c.seq DESC
            OFFSET v_keep - 1 LIMIT 1
        ), trimmed AS (
            DELETE FROM amrita_memory.memory_change h USING cut
             WHERE h.partition_key = OLD.partition_key AND h.memory_id = OLD.id
               AND h.seq <= cut.seq
        ), gone AS (
            DELETE FROM amrita_memory.memory_access a
             WHERE a.partition_key = OLD.partition_key AND a.memory_id = OLD.id
        )
        INSERT INTO amrita_memory.memory_change
               (partition_key, memory_id, at, actor_kind, actor_id, op, before, after, note)
        VALUES (OLD.partition_key, OLD.id, now(), v_kind, v_id, coalesce(v_op, 'delete'),
                amrita_memory.memory_fields_v2(OLD.content, OLD.tags, OLD.importance,
                                               OLD.category, OLD.scope, OLD.source),
                NULL, v_note);

        -- The history of memories deleted more than v_days ago, in the partition deleting
        -- now: once per partition and statement (v2 ran it once per statement over the
        -- partitions deleting; it finds the same rows for every row of one statement,
        -- which all run after the statement's deletes). The partitions done are kept in a
        -- transaction setting, under the statement's start time.
        v_days := amrita_memory.trail_setting_v1('amrita_memory.history_keep_deleted_days', 30);
        v_mark := statement_timestamp()::text || '/' || v_days;
        v_done := current_setting('amrita_memory.trail_retained', true);
        IF v_done IS NULL OR split_part(v_done, chr(31), 1) <> v_mark THEN
            v_done := v_mark;
        END IF;
        IF position(chr(31) || OLD.partition_key || chr(31) IN v_done || chr(31)) > 0 THEN
            RETURN NULL;
        END IF;
        PERFORM set_config('amrita_memory.trail_retained', v_done || chr(31) || OLD.partition_key, true);
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT d.partition_key, d.memory_id
                  FROM amrita_memory.memory_change d
                 WHERE d.partition_key = OLD.partition_key
                   AND d.after IS NULL
                   AND d.at < now() - make_interval(days => v_days)) gone
         WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
    END IF;
    RETURN NULL;
END
$$;

--
-- Name: FUNCTION record_memory_change_row_v1(); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.record_memory_change_row_v1() IS 'Row-level record_memory_change_v2: the history row of one changed memory, its access-log follow-up, the pause refusal AMZ01 and the bounds; the triggers'' WHEN skips it under amrita_memory.history_by_writer = on.';

--
-- Name: reembed_pending_count_v1(text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.reembed_pending_count_v1(p_fingerprint text) RETURNS integer
    LANGUAGE sql STABLE
    AS $$
    SELECT (SELECT count(*) FROM amrita_memory.memory m
             WHERE NOT EXISTS (
                   SELECT 1 FROM amrita_memory.reembed_staging s
                    WHERE s.kind = 'memory' AND s.row_id = m.id
                      AND s.fingerprint = p_fingerprint AND s.source_updated_at = m.updated_at))::integer
         + (SELECT count(*) FROM amrita_memory.knowledge k
             WHERE NOT EXISTS (
                   SELECT 1 FROM amrita_memory.reembed_staging s
                    WHERE s.kind = 'knowledge' AND s.row_id = k.kid
                      AND s.fingerprint = p_fingerprint AND s.source_updated_at = k.updated_at))::integer
$$;

--
-- Name: FUNCTION reembed_pending_count_v1(p_fingerprint text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.reembed_pending_count_v1(p_fingerprint text) IS 'How many memory and knowledge rows still lack a valid staged vector of p_fingerprint.';

--
-- Name: reembed_pending_knowledge_v2(text, text, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.reembed_pending_knowledge_v2(p_fingerprint text, p_after text, p_limit integer) RETURNS TABLE(row_id text, body text, updated_at timestamp with time zone)
    LANGUAGE sql STABLE
    AS $$
    SELECT k.kid, k.summary, k.updated_at
      FROM amrita_memory.knowledge k
     WHERE k.kid > p_after
       AND NOT EXISTS (
             SELECT 1 FROM amrita_memory.reembed_staging s
              WHERE s.kind = 'knowledge' AND s.row_id = k.kid
                AND s.fingerprint = p_fingerprint AND s.source_updated_at = k.updated_at)
     ORDER BY k.kid
     LIMIT p_limit
$$;

--
-- Name: FUNCTION reembed_pending_knowledge_v2(p_fingerprint text, p_after text, p_limit integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.reembed_pending_knowledge_v2(p_fingerprint text, p_after text, p_limit integer) IS 'Knowledge rows still to re-embed, with their summary (the text a write embeds); supersedes reembed_pending_knowledge_v1.';

--
-- Name: reembed_pending_memories_v1(text, text, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.reembed_pending_memories_v1(p_fingerprint text, p_after text, p_limit integer) RETURNS TABLE(row_id text, body text, updated_at timestamp with time zone, next_after text)
    LANGUAGE sql STABLE
    AS $$
    SELECT m.id, m.content, m.updated_at, m.partition_key || '/' || m.id
      FROM amrita_memory.memory m
     WHERE (m.partition_key, m.id) > (left(p_after, greatest(length(p_after) - 33, 0)),
                                      right(p_after, 32))
       AND NOT EXISTS (
             SELECT 1 FROM amrita_memory.reembed_staging s
              WHERE s.kind = 'memory' AND s.row_id = m.id
                AND s.fingerprint = p_fingerprint AND s.source_updated_at = m.updated_at)
     ORDER BY m.partition_key, m.id
     LIMIT p_limit
$$;

--
-- Name: FUNCTION reembed_pending_memories_v1(p_fingerprint text, p_after text, p_limit integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.reembed_pending_memories_v1(p_fingerprint text, p_after text, p_limit integer) IS 'The re-embed''s next memories without a valid staged vector, in primary key order after position p_after (''partition_key/id'', '''' = the start); each row''s next_after is its position.';

--
-- Name: reembed_switch_v2(text, text, text, text, integer, timestamp with time zone); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.reembed_switch_v2(p_fingerprint text, p_protocol text, p_model text, p_base_url text, p_dim integer, p_now timestamp with time zone) RETURNS TABLE(switched boolean, pending integer, memories integer, knowledge integer, dim integer)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_pending integer;
    v_mem integer := 0;
    v_kn integer := 0;
    v_dim integer;
    v_dims integer;
    r record;
BEGIN
    -- Staged vectors are written by this job only: their dimension, read before any lock,
    -- says whether an index will be dropped (checked again under the lock below).
    SELECT min(vector_dims(s.embedding)) INTO v_dim
      FROM amrita_memory.reembed_staging s
     WHERE s.fingerprint = p_fingerprint;
    IF EXISTS (SELECT 1 FROM amrita_memory.ann_index a
                WHERE a.dim IS DISTINCT FROM coalesce(v_dim, p_dim)) THEN
        LOCK TABLE amrita_memory.memory, amrita_memory.knowledge IN ACCESS EXCLUSIVE MODE;
    ELSE
        LOCK TABLE amrita_memory.memory, amrita_memory.knowledge IN EXCLUSIVE MODE;
    END IF;
    v_pending := amrita_memory.reembed_pending_count_v1(p_fingerprint);
    IF v_pending > 0 THEN
        RETURN QUERY SELECT false, v_pending, 0, 0, NULL::integer;
        RETURN;
    END IF;

    SELECT min(vector_dims(s.embedding)), count(DISTINCT vector_dims(s.embedding))
      INTO v_dim, v_dims
      FROM amrita_memory.reembed_staging s
     WHERE s.fingerprint = p_fingerprint;
    IF v_dims > 1 THEN
        RAISE EXCEPTION 'staged vectors of fingerprint % have % different dimensions', p_fingerprint, v_dims
            USING ERRCODE = 'AMF02';
    END IF;
    v_dim := coalesce(v_dim, p_dim);

    UPDATE amrita_memory.memory m
       SET embedding = s.embedding, embed_fingerprint = p_fingerprint
      FROM amrita_memory.reembed_staging s
     WHERE s.kind = 'memory' AND s.row_id = m.id AND s.fingerprint = p_fingerprint;
    GET DIAGNOSTICS v_mem = ROW_COUNT;
    UPDATE amrita_memory.knowledge k
       SET embedding = s.embedding, embed_fingerprint = p_fingerprint
      FROM amrita_memory.reembed_staging s
     WHERE s.kind = 'knowledge' AND s.row_id = k.kid AND s.fingerprint = p_fingerprint;
    GET DIAGNOSTICS v_kn = ROW_COUNT;

    FOR r IN SELECT a.index_name FROM amrita_memory.ann_index a WHERE a.dim IS DISTINCT FROM v_dim LOOP
        EXECUTE format('DROP INDEX IF EXISTS amrita_memory.%I', r.index_name);
    END LOOP;
    DELETE FROM amrita_memory.ann_index a WHERE a.dim IS DISTINCT FROM v_dim;

    UPDATE amrita_memory.store_meta s
       SET embed_fingerprint = p_fingerprint, embed_protocol = p_protocol, embed_model = p_model,
           embed_base_url = p_base_url, embed_dim = v_dim, updated_at = p_now
     WHERE s.id = 1;
    DELETE FROM amrita_memory.reembed_staging;
    DELETE FROM amrita_memory.reembed_job;
    RETURN QUERY SELECT true, 0, v_mem, v_kn, v_dim;
END
$$;

--
-- Name: FUNCTION reembed_switch_v2(p_fingerprint text, p_protocol text, p_model text, p_base_url text, p_dim integer, p_now timestamp with time zone); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.reembed_switch_v2(p_fingerprint text, p_protocol text, p_model text, p_base_url text, p_dim integer, p_now timestamp with time zone) IS 'reembed_switch_v1 with a deadlock-free lock order: memory and knowledge locked first IN EXCLUSIVE MODE (also against FOR UPDATE row lockers), ACCESS EXCLUSIVE when an ANN index of another dimension is dropped. See sql/functions/reembed_v2.sql.';

--
-- Name: refuse_paused_write_v1(); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.refuse_paused_write_v1() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_key text;
BEGIN
    IF (SELECT kind FROM amrita_memory.current_actor_v1()) IN ('llm', 'extraction', 'l3') THEN
        v_key := CASE WHEN TG_OP = 'DELETE' THEN OLD.partition_key ELSE NEW.partition_key END;
        IF EXISTS (SELECT 1 FROM amrita_memory.paused_partition p WHERE p.partition_key = v_key) THEN
            RAISE EXCEPTION USING
                ERRCODE = 'AMZ01',
                MESSAGE = 'the memory of ' || v_key || ' is paused: automatic processes may not change its '
                          || TG_TABLE_NAME,
                HINT = 'resume it with `amrita-memory resume` or /memory resume';
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$$;

--
-- Name: FUNCTION refuse_paused_write_v1(); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.refuse_paused_write_v1() IS 'Row trigger on memo and profile: refuses a write by an automatic actor (amrita_memory.actor kind llm, extraction, l3) to a paused partition with SQLSTATE AMZ01, as trail_v1 does for memories.';

--
-- Name: require_store_model_v1(text, integer, timestamp with time zone, text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.require_store_model_v1(p_fingerprint text, p_dim integer, p_now timestamp with time zone, p_protocol text DEFAULT NULL::text, p_model text DEFAULT NULL::text, p_base_url text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_fingerprint text;
    v_dim integer;
BEGIN
    SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_dim
      FROM amrita_memory.store_meta s WHERE s.id = 1;
    IF v_fingerprint IS NULL OR v_dim IS NULL THEN
        LOCK TABLE amrita_memory.memory IN ROW EXCLUSIVE MODE;
        SELECT s.embed_fingerprint, s.embed_dim INTO v_fingerprint, v_dim
          FROM amrita_memory.store_meta s WHERE s.id = 1 FOR UPDATE;
        IF v_dim IS NULL THEN
            IF EXISTS (SELECT 1 FROM amrita_memory.memory m WHERE vector_dims(m.embedding) = p_dim)
               OR EXISTS (SELECT 1 FROM amrita_memory.knowledge k WHERE vector_dims(k.embedding) = p_dim)
               OR NOT (EXISTS (SELECT 1 FROM amrita_memory.memory)
                       OR EXISTS (SELECT 1 FROM amrita_memory.knowledge)) THEN
                v_dim := p_dim;
            ELSE
                SELECT vector_dims(x.embedding) INTO v_dim
                  FROM (SELECT m.embedding FROM amrita_memory.memory m LIMIT 1) x;
                IF v_dim IS NULL THEN
                    SELECT vector_dims(k.embedding) INTO v_dim FROM amrita_memory.knowledge k LIMIT 1;
                END IF;
            END IF;
        END IF;
        IF v_fingerprint IS NULL THEN
            UPDATE amrita_memory.store_meta s
               SET embed_fingerprint = p_fingerprint, embed_protocol = p_protocol,
                   embed_model = p_model, embed_base_url = p_base_url,
                   embed_dim = v_dim, updated_at = p_now
             WHERE s.id = 1;
            v_fingerprint := p_fingerprint;
        ELSE
            UPDATE amrita_memory.store_meta s SET embed_dim = v_dim, updated_at = p_now
             WHERE s.id = 1;
        END IF;
    END IF;
    IF v_fingerprint IS DISTINCT FROM p_fingerprint THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF01',
            MESSAGE = 'embedding model mismatch: the store holds vectors of fingerprint '
                      || v_fingerprint || ', this writer uses ' || coalesce(p_fingerprint, '?'),
            HINT = 'run `amrita-memory reindex`, or configure the model the store was built with';
    END IF;
    IF v_dim IS DISTINCT FROM p_dim THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF03',
            MESSAGE = format('embedding dimension mismatch: the store holds %s-dimensional vectors '
                             'of fingerprint %s, this writer''s vector has %s dimensions',
                             v_dim, v_fingerprint, coalesce(p_dim::text, '?')),
            HINT = 'the model changed under its name: run `amrita-memory reindex`, '
                   'or configure the model the store was built with';
    END IF;
END
$$;

--
-- Name: FUNCTION require_store_model_v1(p_fingerprint text, p_dim integer, p_now timestamp with time zone, p_protocol text, p_model text, p_base_url text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.require_store_model_v1(p_fingerprint text, p_dim integer, p_now timestamp with time zone, p_protocol text, p_model text, p_base_url text) IS 'Model check of every vector write: fingerprint must equal store_meta.embed_fingerprint (else SQLSTATE AMF01) and dimension store_meta.embed_dim (else AMF03); records either when still NULL.';

--
-- Name: reset_identity_v1(text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.reset_identity_v1(p_table text) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_col text;
    v_seq text;
    v_max bigint;
BEGIN
    FOR v_col IN SELECT a.attname FROM pg_attribute a
                  WHERE a.attrelid = format('amrita_memory.%I', p_table)::regclass
                    AND a.attidentity <> '' AND NOT a.attisdropped
    LOOP
        v_seq := pg_get_serial_sequence(format('amrita_memory.%I', p_table), v_col);
        EXECUTE format('SELECT max(%I) FROM amrita_memory.%I', v_col, p_table) INTO v_max;
        IF v_max IS NOT NULL THEN
            PERFORM setval(v_seq, v_max, true);
        END IF;
    END LOOP;
END
$$;

--
-- Name: FUNCTION reset_identity_v1(p_table text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.reset_identity_v1(p_table text) IS 'Restore: set each identity sequence of one table of the schema to its largest value, so new rows never collide with restored ones.';

--
-- Name: score_hybrid_rrf_v6(text, public.vector, text[], tsquery, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, double precision, text[]); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.score_hybrid_rrf_v6(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_rrf_k double precision, p_ids text[]) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE sql STABLE
    AS $$
    WITH c AS MATERIALIZED (
        SELECT m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq THEN m.search_tokens END AS matched,
               length(m.search_tokens) AS len,
               vector_l2_squared_distance(m.embedding, p_query) AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM (SELECT r.id, r.created_at, r.importance, r.scope, r.tags, r.category,
                       r.search_tokens, r.embedding
                  FROM amrita_memory.memory r
                 WHERE p_ids IS NULL AND r.partition_key = p_partition
                UNION ALL
                SELECT y.id, y.created_at, y.importance, y.scope, y.tags, y.category,
                       y.search_tokens, y.embedding
                  FROM (SELECT DISTINCT x.id FROM unnest(p_ids) AS x(id)) x
                  JOIN amrita_memory.memory y
                    ON y.partition_key = p_partition AND y.id = x.id) m
         WHERE amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    hit AS MATERIALIZED (
        SELECT c.id, c.created_at, c.len, u.lexeme
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) u
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen
          FROM c
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.id, h.created_at,
               sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.id, h.created_at
    ),
    kr AS (
        SELECT k.id, k.bm25,
               row_number() OVER (ORDER BY k.bm25 DESC NULLS LAST, k.created_at, k.id) AS krank
          FROM kw k
    ),
    top AS (
        SELECT v.id, v.created_at, v.distance, v.age, k.bm25, x.score
          FROM (SELECT c.id, c.created_at, c.distance, c.age, c.half_life,
                       row_number() OVER (ORDER BY c.distance, c.created_at, c.id) AS vrank
                  FROM c) v
          LEFT JOIN kr k ON k.id = v.id
         CROSS JOIN LATERAL (
                SELECT 1.0 / (p_rrf_k + v.vrank) + coalesce(1.0 / (p_rrf_k + k.krank), 0)
                       AS relevance) f
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN f.relevance * amrita_memory.decay_factor_v1(v.age, v.half_life, p_floor)
                            ELSE f.relevance END AS score) x
         ORDER BY x.score DESC, v.distance, v.created_at, v.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, t.distance, t.score, t.age,
           coalesce(t.bm25, 0)
      FROM top t
      JOIN amrita_memory.memory m ON m.partition_key = p_partition AND m.id = t.id
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;

--
-- Name: FUNCTION score_hybrid_rrf_v6(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_rrf_k double precision, p_ids text[]); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v6(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_rrf_k double precision, p_ids text[]) IS 'Hybrid mode, rrf fusion, of search_memories_v6 (score_memories_v2''s numbers): reciprocal ranks of the vector and keyword sides times the decay factor, on narrow rows; the top k joined back for their content.';

--
-- Name: score_hybrid_rrf_v8(text, public.vector, text[], tsquery, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.score_hybrid_rrf_v8(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_rrf_k double precision) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE sql STABLE
    AS $$
    WITH c AS MATERIALIZED (
        SELECT m.ctid AS tid, m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq
                    THEN tsvector_to_array(ts_delete(m.search_tokens, tsvector_to_array(
                             ts_delete(m.search_tokens, p_tokens)))) END AS matched,
               length(m.search_tokens) AS len,
               vector_l2_squared_distance(m.embedding, p_query) AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen
          FROM c
    ),
    hit AS (
        SELECT c.id, c.created_at, c.len, count(*) OVER (PARTITION BY u.lexeme) AS df
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) AS u(lexeme)
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    kw AS (
        SELECT h.id, h.created_at,
               sum(ln(1 + (s.n - h.df + 0.5) / (h.df + 0.5))
                   * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h CROSS JOIN stats s
         GROUP BY h.id, h.created_at
    ),
    kr AS (
        SELECT k.id, k.bm25,
               row_number() OVER (ORDER BY k.bm25 DESC NULLS LAST, k.created_at, k.id) AS krank
          FROM kw k
    ),
    top AS (
        SELECT v.tid, v.id, v.created_at, v.distance, v.age, k.bm25, x.score
          FROM (SELECT c.tid, c.id, c.created_at, c.distance, c.age, c.half_life,
                       row_number() OVER (ORDER BY c.distance, c.created_at, c.id) AS vrank
                  FROM c) v
          LEFT JOIN kr k ON k.id = v.id
         CROSS JOIN LATERAL (
                SELECT 1.0 / (p_rrf_k + v.vrank) + coalesce(1.0 / (p_rrf_k + k.krank), 0)
                       AS relevance) f
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN f.relevance * amrita_memory.decay_factor_v1(v.age, v.half_life, p_floor)
                            ELSE f.relevance END AS score) x
         ORDER BY x.score DESC, v.distance, v.created_at, v.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, t.distance, t.score, t.age,
           coalesce(t.bm25, 0)
      FROM top t
      JOIN amrita_memory.memory m ON m.ctid = t.tid
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;

--
-- Name: FUNCTION score_hybrid_rrf_v8(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_rrf_k double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.score_hybrid_rrf_v8(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_rrf_k double precision) IS 'Hybrid mode, rrf fusion, of search_memories_v8 at the exact path (score_hybrid_rrf_v7''s numbers, bit for bit): reciprocal ranks of the vector and keyword sides times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

--
-- Name: score_hybrid_weighted_v6(text, public.vector, text[], tsquery, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, double precision, text[]); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.score_hybrid_weighted_v6(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_weight double precision, p_ids text[]) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE sql STABLE
    AS $$
    WITH c AS MATERIALIZED (
        SELECT m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq THEN m.search_tokens END AS matched,
               length(m.search_tokens) AS len,
               vector_l2_squared_distance(m.embedding, p_query) AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM (SELECT r.id, r.created_at, r.importance, r.scope, r.tags, r.category,
                       r.search_tokens, r.embedding
                  FROM amrita_memory.memory r
                 WHERE p_ids IS NULL AND r.partition_key = p_partition
                UNION ALL
                SELECT y.id, y.created_at, y.importance, y.scope, y.tags, y.category,
                       y.search_tokens, y.embedding
                  FROM (SELECT DISTINCT x.id FROM unnest(p_ids) AS x(id)) x
                  JOIN amrita_memory.memory y
                    ON y.partition_key = p_partition AND y.id = x.id) m
         WHERE amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    hit AS MATERIALIZED (
        SELECT c.id, c.len, u.lexeme
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) u
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen,
               max(amrita_memory.similarity_v1(c.distance)) AS smax,
               min(amrita_memory.similarity_v1(c.distance)) AS smin
          FROM c
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.id, sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.id
    ),
    kmax AS (
        SELECT max(k.bm25) AS bmax FROM kw k
    ),
    top AS (
        SELECT c.id, c.created_at, c.distance, c.age, k.bm25, x.score
          FROM c
          LEFT JOIN kw k ON k.id = c.id
         CROSS JOIN stats s
         CROSS JOIN kmax b
         CROSS JOIN LATERAL (
                SELECT (1 - p_weight)
                           * CASE WHEN s.smax - s.smin > 1e-6
                                  THEN (amrita_memory.similarity_v1(c.distance) - s.smin)
                                       / (s.smax - s.smin)
                                  ELSE 1 END
                       + p_weight * coalesce(k.bm25 / nullif(b.bmax, 0), 0) AS relevance) f
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN f.relevance * amrita_memory.decay_factor_v1(c.age, c.half_life, p_floor)
                            ELSE f.relevance END AS score) x
         ORDER BY x.score DESC, c.distance, c.created_at, c.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, t.distance, t.score, t.age,
           coalesce(t.bm25, 0)
      FROM top t
      JOIN amrita_memory.memory m ON m.partition_key = p_partition AND m.id = t.id
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;

--
-- Name: FUNCTION score_hybrid_weighted_v6(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_weight double precision, p_ids text[]); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v6(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_weight double precision, p_ids text[]) IS 'Hybrid mode, weighted fusion, of search_memories_v6 (score_memories_v2''s numbers): normalised similarity and bm25 / max bm25, weighted, times the decay factor, on narrow rows; the top k joined back for their content.';

--
-- Name: score_hybrid_weighted_v8(text, public.vector, text[], tsquery, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.score_hybrid_weighted_v8(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_weight double precision) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE sql STABLE
    AS $$
    WITH c AS MATERIALIZED (
        SELECT m.ctid AS tid, m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq
                    THEN tsvector_to_array(ts_delete(m.search_tokens, tsvector_to_array(
                             ts_delete(m.search_tokens, p_tokens)))) END AS matched,
               length(m.search_tokens) AS len,
               vector_l2_squared_distance(m.embedding, p_query) AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen,
               max(amrita_memory.similarity_v1(c.distance)) AS smax,
               min(amrita_memory.similarity_v1(c.distance)) AS smin
          FROM c
    ),
    hit AS (
        SELECT c.id, c.len, count(*) OVER (PARTITION BY u.lexeme) AS df
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) AS u(lexeme)
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    kw AS (
        SELECT h.id,
               sum(ln(1 + (s.n - h.df + 0.5) / (h.df + 0.5))
                   * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h CROSS JOIN stats s
         GROUP BY h.id
    ),
    kmax AS MATERIALIZED (  -- one row, computed once (inlined, it was re-aggregated per row)
        SELECT max(k.bm25) AS bmax FROM kw k
    ),
    top AS (
        SELECT c.tid, c.id, c.created_at, c.distance, c.age, k.bm25, x.score
          FROM c
          LEFT JOIN kw k ON k.id = c.id
         CROSS JOIN stats s
         CROSS JOIN kmax b
         CROSS JOIN LATERAL (
                SELECT (1 - p_weight)
                           * CASE WHEN s.smax - s.smin > 1e-6
                                  THEN (amrita_memory.similarity_v1(c.distance) - s.smin)
                                       / (s.smax - s.smin)
                                  ELSE 1 END
                       + p_weight * coalesce(k.bm25 / nullif(b.bmax, 0), 0) AS relevance) f
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN f.relevance * amrita_memory.decay_factor_v1(c.age, c.half_life, p_floor)
                            ELSE f.relevance END AS score) x
         ORDER BY x.score DESC, c.distance, c.created_at, c.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, t.distance, t.score, t.age,
           coalesce(t.bm25, 0)
      FROM top t
      JOIN amrita_memory.memory m ON m.ctid = t.tid
     ORDER BY t.score DESC, t.distance, t.created_at, t.id
$$;

--
-- Name: FUNCTION score_hybrid_weighted_v8(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_weight double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.score_hybrid_weighted_v8(p_partition text, p_query public.vector, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_weight double precision) IS 'Hybrid mode, weighted fusion, of search_memories_v8 at the exact path (score_hybrid_weighted_v7''s numbers, bit for bit): normalised similarity and bm25 / max bm25, weighted, times the decay factor; a row''s matching lexemes by two ts_delete, document frequency by a window count, the top k fetched by ctid.';

--
-- Name: score_keyword_v6(text, text[], tsquery, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, text[]); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.score_keyword_v6(p_partition text, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_ids text[]) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE sql STABLE
    AS $$
    WITH c AS MATERIALIZED (
        SELECT m.id, m.created_at,
               CASE WHEN m.search_tokens @@ p_tsq THEN m.search_tokens END AS matched,
               length(m.search_tokens) AS len,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM (SELECT r.id, r.created_at, r.importance, r.scope, r.tags, r.category,
                       r.search_tokens
                  FROM amrita_memory.memory r
                 WHERE p_ids IS NULL AND r.partition_key = p_partition
                UNION ALL
                SELECT y.id, y.created_at, y.importance, y.scope, y.tags, y.category,
                       y.search_tokens
                  FROM (SELECT DISTINCT x.id FROM unnest(p_ids) AS x(id)) x
                  JOIN amrita_memory.memory y
                    ON y.partition_key = p_partition AND y.id = x.id) m
         WHERE amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    hit AS MATERIALIZED (
        SELECT c.id, c.created_at, c.age, c.half_life, c.len, u.lexeme
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) u
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen
          FROM c
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.id, h.created_at, h.age, h.half_life,
               sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.id, h.created_at, h.age, h.half_life
    ),
    top AS (
        SELECT k.id, k.created_at, k.age, k.bm25, x.score
          FROM kw k
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN k.bm25 * amrita_memory.decay_factor_v1(k.age, k.half_life, p_floor)
                            ELSE k.bm25 END AS score) x
         ORDER BY x.score DESC, k.created_at, k.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, NULL::float8, t.score, t.age,
           t.bm25
      FROM top t
      JOIN amrita_memory.memory m ON m.partition_key = p_partition AND m.id = t.id
     ORDER BY t.score DESC, t.created_at, t.id
$$;

--
-- Name: FUNCTION score_keyword_v6(p_partition text, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_ids text[]); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.score_keyword_v6(p_partition text, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_ids text[]) IS 'Keyword mode of search_memories_v6 (score_memories_v2''s numbers): BM25 of the rows sharing a token with the query times the decay factor, on narrow rows; the top k joined back for their content.';

--
-- Name: score_keyword_v8(text, text[], tsquery, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.score_keyword_v8(p_partition text, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE sql STABLE
    AS $$
    WITH c AS MATERIALIZED (
        SELECT m.ctid AS tid, m.id, m.created_at, m.importance,
               CASE WHEN m.search_tokens @@ p_tsq
                    THEN tsvector_to_array(ts_delete(m.search_tokens, tsvector_to_array(
                             ts_delete(m.search_tokens, p_tokens)))) END AS matched,
               length(m.search_tokens) AS len
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(c.len), 1), 1)::float8 AS avglen
          FROM c
    ),
    hit AS (
        SELECT c.tid, c.id, c.created_at, c.importance, c.len,
               count(*) OVER (PARTITION BY u.lexeme) AS df
          FROM c
          CROSS JOIN LATERAL unnest(c.matched) AS u(lexeme)
         WHERE c.matched IS NOT NULL
           AND u.lexeme = ANY (p_tokens)
    ),
    kw AS (
        SELECT h.tid, h.id, h.created_at,
               amrita_memory.age_days_v1(h.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, h.importance, p_boost) AS half_life,
               sum(ln(1 + (s.n - h.df + 0.5) / (h.df + 0.5))
                   * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h CROSS JOIN stats s
         GROUP BY h.tid, h.id, h.created_at, h.importance
    ),
    top AS (
        SELECT k.tid, k.id, k.created_at, k.age, k.bm25, x.score
          FROM kw k
         CROSS JOIN LATERAL (
                SELECT CASE WHEN p_decay
                            THEN k.bm25 * amrita_memory.decay_factor_v1(k.age, k.half_life, p_floor)
                            ELSE k.bm25 END AS score) x
         ORDER BY x.score DESC, k.created_at, k.id
         LIMIT p_top_k
    )
    SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
           m.source, m.author, m.created_at, m.updated_at, NULL::float8, t.score, t.age,
           t.bm25
      FROM top t
      JOIN amrita_memory.memory m ON m.ctid = t.tid
     ORDER BY t.score DESC, t.created_at, t.id
$$;

--
-- Name: FUNCTION score_keyword_v8(p_partition text, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.score_keyword_v8(p_partition text, p_tokens text[], p_tsq tsquery, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text) IS 'Keyword mode of search_memories_v8 at the exact path (score_keyword_v7''s numbers, bit for bit): BM25 of the rows sharing a token with the query times the decay factor; a row''s matching lexemes by two ts_delete (no unnest of its whole tsvector), document frequency by a window count, age only for the matching rows, the top k fetched by ctid.';

--
-- Name: score_memories_v1(text, public.vector, text[], text, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, text, double precision, double precision, text[]); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.score_memories_v1(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_fusion text, p_rrf_k double precision, p_weight double precision, p_ids text[]) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE sql STABLE
    AS $$
    WITH c AS MATERIALIZED (
        SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
               m.source, m.author, m.created_at, m.updated_at, m.search_tokens,
               CASE WHEN p_mode = 'keyword' THEN NULL
                    ELSE vector_l2_squared_distance(m.embedding, p_query) END AS distance,
               amrita_memory.age_days_v1(m.created_at, p_now) AS age,
               amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND (p_ids IS NULL OR m.id = ANY (p_ids))
           AND amrita_memory.memory_matches_v2(
                   m.importance, m.scope, m.tags, m.category,
                   p_importance_min, p_importance_max, p_scope, p_tags, p_category)
    ),
    -- (row, query token) pairs. The rows are already in hand (c), so no index and no
    -- tsquery: unnesting a memory's few dozen tokens is cheaper than building a tsquery
    -- in a function call per search (measured: 2x the whole search at 100 rows).
    hit AS MATERIALIZED (
        SELECT c.id, length(c.search_tokens) AS len, u.lexeme
          FROM c
          CROSS JOIN LATERAL unnest(c.search_tokens) u
         WHERE p_mode <> 'vector'
           AND u.lexeme = ANY (p_tokens)
    ),
    stats AS (
        SELECT count(*)::float8 AS n,
               greatest(coalesce(avg(length(c.search_tokens)), 1), 1)::float8 AS avglen
          FROM c
    ),
    df AS (
        SELECT h.lexeme, ln(1 + (s.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
          FROM hit h CROSS JOIN stats s
         GROUP BY h.lexeme, s.n
    ),
    kw AS (
        SELECT h.id, sum(d.idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * h.len / s.avglen))) AS bm25
          FROM hit h JOIN df d USING (lexeme) CROSS JOIN stats s
         GROUP BY h.id
    ),
    ranked AS (
        SELECT c.*, kw.bm25,
               amrita_memory.similarity_v1(c.distance) AS similarity,
               row_number() OVER (ORDER BY c.distance, c.created_at, c.id) AS vrank,
               CASE WHEN kw.bm25 IS NOT NULL
                    THEN row_number() OVER (ORDER BY kw.bm25 DESC NULLS LAST, c.created_at, c.id)
               END AS krank
          FROM c LEFT JOIN kw ON kw.id = c.id
         WHERE p_mode <> 'keyword' OR kw.bm25 IS NOT NULL
    ),
    fused AS (
        SELECT r.*,
               CASE p_mode
                   WHEN 'vector' THEN r.similarity
                   WHEN 'keyword' THEN r.bm25
                   ELSE CASE p_fusion
                       WHEN 'rrf' THEN 1.0 / (p_rrf_k + r.vrank)
                                       + coalesce(1.0 / (p_rrf_k + r.krank), 0)
                       ELSE (1 - p_weight)
                                * CASE WHEN max(r.similarity) OVER () - min(r.similarity) OVER () > 1e-6
                                       THEN (r.similarity - min(r.similarity) OVER ())
                                            / (max(r.similarity) OVER () - min(r.similarity) OVER ())
                                       ELSE 1 END
                            + p_weight * coalesce(r.bm25 / nullif(max(r.bm25) OVER (), 0), 0)
                   END
               END AS relevance
          FROM ranked r
    )
    SELECT f.id, f.partition_key, f.scope, f.content, f.tags, f.importance, f.category,
           f.source, f.author, f.created_at, f.updated_at, f.distance, x.score, f.age,
           coalesce(f.bm25, 0)
      FROM fused f
     CROSS JOIN LATERAL (
            SELECT CASE WHEN p_decay
                        THEN f.relevance * amrita_memory.decay_factor_v1(f.age, f.half_life, p_floor)
                        ELSE f.relevance END AS score) x
     ORDER BY x.score DESC, f.distance, f.created_at, f.id
     LIMIT p_top_k
$$;

--
-- Name: FUNCTION score_memories_v1(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_fusion text, p_rrf_k double precision, p_weight double precision, p_ids text[]); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.score_memories_v1(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_fusion text, p_rrf_k double precision, p_weight double precision, p_ids text[]) IS 'Score the rows of one partition (all, or the candidate ids p_ids) for search_memories_v4: vector similarity, BM25 over the search tokens, fusion by mode (vector | keyword | hybrid; rrf or weighted), times the decay factor.';

--
-- Name: search_memories_v6(text, public.vector, text[], text, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, integer, text, double precision, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.search_memories_v6(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer DEFAULT NULL::integer, p_importance_max integer DEFAULT NULL::integer, p_scope text DEFAULT NULL::text, p_tags text[] DEFAULT NULL::text[], p_category text DEFAULT NULL::text, p_candidates integer DEFAULT 200, p_fusion text DEFAULT 'rrf'::text, p_rrf_k double precision DEFAULT 60, p_weight double precision DEFAULT 0.5) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'
    AS $_$
DECLARE
    v_dim integer := vector_dims(p_query);
    v_store_dim integer;
    v_ann boolean;
    v_ids text[];
    v_near text[] := '{}';
    v_words text[] := '{}';
    v_tsq tsquery;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('vector', 'keyword', 'hybrid') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v6: unknown mode %L (vector, keyword or hybrid)', p_mode);
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v6: unknown fusion %L (rrf or weighted)', p_fusion);
    END IF;
    IF p_mode <> 'keyword' AND p_query IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v6: mode %s needs the query vector', p_mode);
    END IF;
    SELECT s.embed_dim,
           EXISTS (SELECT 1 FROM amrita_memory.ann_index a
                    WHERE a.partition_key = p_partition
                      AND (a.dim = v_dim OR (v_dim IS NULL AND a.dim = s.embed_dim)))
      INTO v_store_dim, v_ann
      FROM amrita_memory.store_meta s
     WHERE s.id = 1;
    IF v_dim IS NOT NULL AND v_store_dim IS DISTINCT FROM v_dim AND v_store_dim IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF03',
            MESSAGE = format('embedding dimension mismatch: the store holds %s-dimensional vectors, '
                             'this query has %s dimensions', v_store_dim, v_dim),
            HINT = 'run `amrita-memory reindex`, or configure the model the store was built with';
    END IF;

    IF p_mode = 'vector' THEN
        IF v_ann THEN
            RETURN QUERY
            SELECT * FROM amrita_memory.search_vector_ann_v5(
                p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
                p_importance_min, p_importance_max, p_scope, p_tags, p_category, p_candidates);
        ELSE
            RETURN QUERY
            SELECT * FROM amrita_memory.search_vector_exact_v5(
                p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
                p_importance_min, p_importance_max, p_scope, p_tags, p_category);
        END IF;
        RETURN;
    END IF;

    v_tsq := amrita_memory.tokens_tsquery_v1(p_tokens);
    IF v_ann THEN
        IF p_mode <> 'keyword' THEN
            SELECT coalesce(array_agg(a.id), '{}') INTO v_near
              FROM amrita_memory.search_vector_ann_v5(
                       p_partition, p_query, greatest(p_candidates, p_top_k), p_now, false,
                       p_base_days, p_boost, p_floor, p_importance_min, p_importance_max,
                       p_scope, p_tags, p_category, greatest(p_candidates, p_top_k)) a;
        END IF;
        IF v_tsq IS NOT NULL THEN
            -- dynamic: planned for this (large) partition, not once for every one
            EXECUTE $q$
                SELECT coalesce(array_agg(k.id), '{}')
                  FROM (SELECT m.id
                          FROM amrita_memory.memory m
                         WHERE m.partition_key = $1
                           AND m.search_tokens @@ $2
                         ORDER BY ts_rank(m.search_tokens, $2) DESC, m.created_at DESC, m.id
                         LIMIT $3) k
            $q$ INTO v_words USING p_partition, v_tsq, greatest(p_candidates, p_top_k);
        END IF;
        v_ids := v_near || v_words;
    END IF;
    IF p_mode = 'keyword' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.score_keyword_v6(
            p_partition, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, v_ids);
    ELSIF p_fusion = 'rrf' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.score_hybrid_rrf_v6(
            p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, p_rrf_k, v_ids);
    ELSE
        RETURN QUERY
        SELECT * FROM amrita_memory.score_hybrid_weighted_v6(
            p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, p_weight, v_ids);
    END IF;
END
$_$;

--
-- Name: FUNCTION search_memories_v6(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer, p_fusion text, p_rrf_k double precision, p_weight double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.search_memories_v6(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer, p_fusion text, p_rrf_k double precision, p_weight double precision) IS 'Decay-scored retrieval in one partition (the runtime entry point of release 6): search_memories_v5''s arguments and results, generic plans, one plain body per mode and fusion. SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';

--
-- Name: search_memories_v8(text, public.vector, text[], text, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, integer, text, double precision, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.search_memories_v8(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer DEFAULT NULL::integer, p_importance_max integer DEFAULT NULL::integer, p_scope text DEFAULT NULL::text, p_tags text[] DEFAULT NULL::text[], p_category text DEFAULT NULL::text, p_candidates integer DEFAULT 200, p_fusion text DEFAULT 'rrf'::text, p_rrf_k double precision DEFAULT 60, p_weight double precision DEFAULT 0.5) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_bitmapscan TO 'off'
    AS $$
DECLARE
    v_dim integer := vector_dims(p_query);
    v_store_dim integer;
    v_ann boolean;
    v_tsq tsquery;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('vector', 'keyword', 'hybrid') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v8: unknown mode %L (vector, keyword or hybrid)', p_mode);
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v8: unknown fusion %L (rrf or weighted)', p_fusion);
    END IF;
    IF p_mode <> 'keyword' AND p_query IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('search_memories_v8: mode %s needs the query vector', p_mode);
    END IF;
    SELECT s.embed_dim,
           EXISTS (SELECT 1 FROM amrita_memory.ann_index a
                    WHERE a.partition_key = p_partition
                      AND (a.dim = v_dim OR (v_dim IS NULL AND a.dim = s.embed_dim)))
      INTO v_store_dim, v_ann
      FROM amrita_memory.store_meta s
     WHERE s.id = 1;
    IF v_dim IS NOT NULL AND v_store_dim IS DISTINCT FROM v_dim AND v_store_dim IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMF03',
            MESSAGE = format('embedding dimension mismatch: the store holds %s-dimensional vectors, '
                             'this query has %s dimensions', v_store_dim, v_dim),
            HINT = 'run `amrita-memory reindex`, or configure the model the store was built with';
    END IF;

    IF v_ann THEN
        -- its own HNSW index: v6, whose GIN statement needs bitmap scans (this function's
        -- setting is inherited by the statements v6 plans; local: undone when it returns)
        PERFORM set_config('enable_bitmapscan', 'on', true);
        RETURN QUERY
        SELECT * FROM amrita_memory.search_memories_v6(
            p_partition, p_query, p_tokens, p_mode, p_top_k, p_now, p_decay, p_base_days,
            p_boost, p_floor, p_importance_min, p_importance_max, p_scope, p_tags,
            p_category, p_candidates, p_fusion, p_rrf_k, p_weight);
        RETURN;
    ELSIF p_mode = 'vector' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.search_vector_exact_v5(
            p_partition, p_query, p_top_k, p_now, p_decay, p_base_days, p_boost, p_floor,
            p_importance_min, p_importance_max, p_scope, p_tags, p_category);
        RETURN;
    END IF;

    v_tsq := amrita_memory.tokens_tsquery_v1(p_tokens);  -- once, not per row
    IF p_mode = 'keyword' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.score_keyword_v8(
            p_partition, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category);
    ELSIF p_fusion = 'rrf' THEN
        RETURN QUERY
        SELECT * FROM amrita_memory.score_hybrid_rrf_v8(
            p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, p_rrf_k);
    ELSE
        RETURN QUERY
        SELECT * FROM amrita_memory.score_hybrid_weighted_v8(
            p_partition, p_query, coalesce(p_tokens, '{}'), v_tsq, p_top_k, p_now, p_decay,
            p_base_days, p_boost, p_floor, p_importance_min, p_importance_max, p_scope,
            p_tags, p_category, p_weight);
    END IF;
END
$$;

--
-- Name: FUNCTION search_memories_v8(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer, p_fusion text, p_rrf_k double precision, p_weight double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.search_memories_v8(p_partition text, p_query public.vector, p_tokens text[], p_mode text, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer, p_fusion text, p_rrf_k double precision, p_weight double precision) IS 'Decay-scored retrieval in one partition (the runtime entry point of release 9): search_memories_v7 on the v8 bodies (matching lexemes by intersection); search_memories_v6''s arguments and results, generic plans without bitmap scans, plain v8 bodies for keyword and hybrid over a partition without its own HNSW index (v6 for one with). SQLSTATE AMF03 for a query of another dimension, 22023 for a bad mode.';

--
-- Name: search_vector_ann_v5(text, public.vector, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.search_vector_ann_v5(p_partition text, p_query public.vector, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE plpgsql STABLE
    AS $_$
DECLARE
    v_dim integer := vector_dims(p_query);
BEGIN
    IF (SELECT string_to_array(e.extversion, '.')::int[] >= '{0,8,0}'
          FROM pg_extension e WHERE e.extname = 'vector') THEN
        PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true);
    END IF;
    PERFORM set_config('hnsw.ef_search', greatest(40, least(1000, p_candidates))::text, true);
    RETURN QUERY EXECUTE format(
        $q$
        SELECT c.id, c.partition_key, c.scope, c.content, c.tags, c.importance, c.category,
               c.source, c.author, c.created_at, c.updated_at, c.distance, c.score, c.age,
               0::float8
          FROM (
                SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance,
                       m.category, m.source, m.author, m.created_at, m.updated_at,
                       d.distance, d.age,
                       CASE WHEN $5 THEN amrita_memory.decay_score_v1(
                                d.distance, d.age, m.importance, $6, $7, $8)
                            ELSE amrita_memory.similarity_v1(d.distance) END AS score
                  FROM amrita_memory.memory m
                  CROSS JOIN LATERAL (
                        SELECT vector_l2_squared_distance(m.embedding, $1) AS distance,
                               amrita_memory.age_days_v1(m.created_at, $4) AS age) d
                 WHERE m.partition_key = %L AND vector_dims(m.embedding) = %s
                   AND amrita_memory.memory_matches_v2(m.importance, m.scope, m.tags, m.category,
                                                       $9, $10, $11, $12, $13)
                 ORDER BY (m.embedding::vector(%s)) <-> ($1::vector(%s))
                 LIMIT $3
               ) c
         ORDER BY c.score DESC, c.distance, c.created_at, c.id
         LIMIT $2
        $q$, p_partition, v_dim, v_dim, v_dim)
    USING p_query, p_top_k, greatest(p_candidates, p_top_k), p_now, p_decay, p_base_days,
          p_boost, p_floor, p_importance_min, p_importance_max, p_scope, p_tags, p_category;
END
$_$;

--
-- Name: FUNCTION search_vector_ann_v5(p_partition text, p_query public.vector, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.search_vector_ann_v5(p_partition text, p_query public.vector, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text, p_candidates integer) IS 'Vector mode, HNSW path of search_memories_v5: the p_candidates nearest filtered rows by the partition''s own index, re-ranked by decay score (release 3''s scores).';

--
-- Name: search_vector_exact_v5(text, public.vector, integer, timestamp with time zone, boolean, double precision, double precision, double precision, integer, integer, text, text[], text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.search_vector_exact_v5(p_partition text, p_query public.vector, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, distance double precision, decay_score double precision, age_days double precision, keyword_score double precision)
    LANGUAGE sql STABLE
    AS $$
    SELECT c.id, c.partition_key, c.scope, c.content, c.tags, c.importance, c.category,
           c.source, c.author, c.created_at, c.updated_at, c.distance, x.score, c.age,
           0::float8
      FROM (SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance,
                   m.category, m.source, m.author, m.created_at, m.updated_at,
                   vector_l2_squared_distance(m.embedding, p_query) AS distance,
                   amrita_memory.age_days_v1(m.created_at, p_now) AS age,
                   amrita_memory.half_life_days_v1(p_base_days, m.importance, p_boost) AS half_life
              FROM amrita_memory.memory m
             WHERE m.partition_key = p_partition
               AND amrita_memory.memory_matches_v2(
                       m.importance, m.scope, m.tags, m.category,
                       p_importance_min, p_importance_max, p_scope, p_tags, p_category)
            OFFSET 0) c
      CROSS JOIN LATERAL (
            SELECT CASE WHEN p_decay
                        THEN amrita_memory.similarity_v1(c.distance)
                             * amrita_memory.decay_factor_v1(c.age, c.half_life, p_floor)
                        ELSE amrita_memory.similarity_v1(c.distance) END AS score) x
     ORDER BY x.score DESC, c.distance, c.created_at, c.id
     LIMIT p_top_k
$$;

--
-- Name: FUNCTION search_vector_exact_v5(p_partition text, p_query public.vector, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.search_vector_exact_v5(p_partition text, p_query public.vector, p_top_k integer, p_now timestamp with time zone, p_decay boolean, p_base_days double precision, p_boost double precision, p_floor double precision, p_importance_min integer, p_importance_max integer, p_scope text, p_tags text[], p_category text) IS 'Vector mode, exact path of search_memories_v5: every row of the partition scored 1/(1+squared L2) x max(0.5^(age/half_life), floor), top_k (release 3''s scores, bit for bit).';

--
-- Name: similarity_v1(double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.similarity_v1(p_distance double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT 1.0 / (1.0 + greatest(coalesce(p_distance, 0.0), 0.0))
$$;

--
-- Name: FUNCTION similarity_v1(p_distance double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.similarity_v1(p_distance double precision) IS '1 / (1 + max(squared L2 distance, 0)); a NULL distance counts as 0 (the reference''s quirk).';

--
-- Name: sweep_batch_v8(timestamp with time zone, double precision, double precision, integer, boolean, boolean, boolean, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.sweep_batch_v8(p_now timestamp with time zone, p_short_days double precision, p_long_days double precision, p_batch integer, p_restart_clock boolean, p_protect_user boolean, p_dry_run boolean DEFAULT false, p_cursor text DEFAULT NULL::text, p_until text DEFAULT NULL::text) RETURNS TABLE(scanned integer, demoted integer, purged integer, kept integer, next_cursor text, wrapped boolean, purged_ids text[])
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_cursor text := p_cursor;
    v_last text;
    -- the walk's position: the (partition_key, id) after which the batch starts, and the
    -- one it stops at (p_until); '' is before every row
    v_after_pk text;
    v_after_id text;
    v_until_pk text := left(p_until, greatest(length(p_until) - 33, 0));
    v_until_id text := right(p_until, 32);
    -- the actor as current_actor_v1 reads it ('kind:id'; system when unset or unknown)
    v_actor text := coalesce(nullif(current_setting('amrita_memory.actor', true), ''), 'system');
    v_kind text := split_part(v_actor, ':', 1);
    v_actor_id text := nullif(substr(v_actor, length(split_part(v_actor, ':', 1)) + 2), '');
    v_op text := nullif(current_setting('amrita_memory.op', true), '');
    v_note text := nullif(current_setting('amrita_memory.note', true), '');
    v_parts text[];
    v_paused text;
    -- a memory is kept while its clock is at or after its tier's cutoff (importance 1-3
    -- low, 8-10 high, anything else medium, as importance_rank_v1)
    v_cut_low timestamptz := amrita_memory.sweep_cutoff_v1(
        p_now, amrita_memory.tier_days_v1(1, p_short_days, p_long_days));
    v_cut_mid timestamptz := amrita_memory.sweep_cutoff_v1(
        p_now, amrita_memory.tier_days_v1(5, p_short_days, p_long_days));
    v_cut_high timestamptz := amrita_memory.sweep_cutoff_v1(
        p_now, amrita_memory.tier_days_v1(9, p_short_days, p_long_days));
BEGIN
    IF v_kind NOT IN ('person', 'llm', 'extraction', 'l3', 'import', 'system') THEN
        v_kind := 'system';
    END IF;
    IF v_op IS NOT NULL AND v_op NOT IN ('merge') THEN
        v_op := NULL;
    END IF;
    IF v_cursor IS NULL THEN
        -- The row lock also keeps two sweeps from working the same batch at once.
        SELECT s.cursor_key INTO v_cursor FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
        v_cursor := coalesce(v_cursor, '');
    END IF;
    v_after_pk := left(v_cursor, greatest(length(v_cursor) - 33, 0));
    v_after_id := right(v_cursor, 32);

    IF NOT p_dry_run THEN
        PERFORM set_config('amrita_memory.history_by_writer', 'on', true);
    END IF;
    -- One statement: read the batch, lock and change what is due (by tid), record the history.
    WITH batch AS (
        SELECT m.ctid AS tid, m.partition_key, m.id,
               CASE WHEN p_protect_user AND m.source = 'user' THEN 'keep'
                    WHEN EXISTS (SELECT 1 FROM amrita_memory.paused_partition pp
                                  WHERE pp.partition_key = m.partition_key) THEN 'keep'
                    WHEN (CASE WHEN p_restart_clock THEN m.tier_since ELSE m.created_at END)
                         >= CASE WHEN m.importance BETWEEN 1 AND 3 THEN v_cut_low
                                 WHEN m.importance BETWEEN 8 AND 10 THEN v_cut_high
                                 ELSE v_cut_mid END THEN 'keep'
                    WHEN m.importance BETWEEN 1 AND 3 THEN 'purge'
                    ELSE 'demote'
               END AS action
          FROM amrita_memory.memory m
         WHERE (m.partition_key, m.id) > (v_after_pk, v_after_id)
           AND (p_until IS NULL OR (m.partition_key, m.id) <= (v_until_pk, v_until_id))
         ORDER BY m.partition_key, m.id
         LIMIT p_batch
    ), due AS (
        -- only what changes is locked, by its tid; the action again on the locked row
        SELECT m.ctid AS tid, m.partition_key, m.id, m.content, m.tags, m.importance,
               m.category, m.scope, m.source,
               CASE WHEN p_protect_user AND m.source = 'user' THEN 'keep'
                    WHEN EXISTS (SELECT 1 FROM amrita_memory.paused_partition pp
                                  WHERE pp.partition_key = m.partition_key) THEN 'keep'
                    WHEN (CASE WHEN p_restart_clock THEN m.tier_since ELSE m.created_at END)
                         >= CASE WHEN m.importance BETWEEN 1 AND 3 THEN v_cut_low
                                 WHEN m.importance BETWEEN 8 AND 10 THEN v_cut_high
                                 ELSE v_cut_mid END THEN 'keep'
                    WHEN m.importance BETWEEN 1 AND 3 THEN 'purge'
                    ELSE 'demote'
               END AS action
          FROM batch b
          JOIN amrita_memory.memory m ON m.ctid = b.tid
         WHERE b.action <> 'keep' AND NOT p_dry_run
           FOR UPDATE OF m SKIP LOCKED
    ), demote AS (
        UPDATE amrita_memory.memory m
           SET importance = amrita_memory.demoted_importance_v1(d.importance),
               tier_since = CASE WHEN p_restart_clock THEN p_now ELSE m.tier_since END
          FROM due d
         WHERE m.ctid = d.tid AND d.action = 'demote'
        RETURNING m.partition_key, m.id,
                  d.content AS old_content, d.tags AS old_tags, d.importance AS old_importance,
                  d.category AS old_category, d.scope AS old_scope, d.source AS old_source,
                  m.content, m.tags, m.importance, m.category, m.scope, m.source
    ), purge AS (
        DELETE FROM amrita_memory.memory m
         USING due d
         WHERE m.ctid = d.tid AND d.action = 'purge'
        RETURNING m.partition_key, m.id, m.content, m.tags, m.importance, m.category, m.scope,
                  m.source
    ), changed AS (
        -- what each changed memory was; a demotion changes the importance only
        SELECT n.partition_key, n.id,
               coalesce(v_op,
                        CASE WHEN n.old_content = n.content AND n.old_importance = n.importance
                                  AND n.old_category IS NOT DISTINCT FROM n.category
                                  AND n.old_scope = n.scope
                             THEN 'tag' ELSE 'update' END) AS op,
               n.old_content AS content, n.old_tags AS tags, n.old_importance AS importance,
               n.old_category AS category, n.old_scope AS scope, n.old_source AS source,
               n.importance AS new_importance, n.source AS new_source
          FROM demote n
         WHERE (n.old_content, n.old_tags, n.old_importance, n.old_category, n.old_scope)
               IS DISTINCT FROM (n.content, n.tags, n.importance, n.category, n.scope)
        UNION ALL
        SELECT o.partition_key, o.id, coalesce(v_op, 'delete'), o.content, o.tags, o.importance,
               o.category, o.scope, o.source, NULL::smallint, NULL::text
          FROM purge o
    ), history AS (
        -- ONE row for the batch: its changes as parallel arrays (element i is one memory)
        INSERT INTO amrita_memory.sweep_change
               (seq, at, actor_kind, actor_id, note, partition_keys, memory_ids, ops, contents,
                tags, importances, categories, scopes, sources, new_importances, new_sources)
        SELECT nextval(pg_get_serial_sequence('amrita_memory.memory_change', 'seq')),
               now(), v_kind, v_actor_id, v_note,
               array_agg(c.partition_key), array_agg(c.id), array_agg(c.op), array_agg(c.content),
               array_agg(c.tags::text), array_agg(c.importance), array_agg(c.category),
               array_agg(c.scope), array_agg(c.source), array_agg(c.new_importance),
               array_agg(c.new_source)
          FROM changed c
        HAVING count(*) > 0
        RETURNING seq
    ), access AS (
        -- the access log follows its memory: gone with it
        DELETE FROM amrita_memory.memory_access a
         USING purge g
         WHERE a.partition_key = g.partition_key AND a.memory_id = g.id
    )
    SELECT (SELECT count(*)::integer FROM batch),
           (SELECT b.partition_key || '/' || b.id FROM batch b
             ORDER BY b.partition_key DESC, b.id DESC LIMIT 1),
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'demote')
                ELSE (SELECT count(*)::integer FROM demote) END,
           CASE WHEN p_dry_run THEN (SELECT count(*)::integer FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT count(*)::integer FROM purge) END,
           CASE WHEN p_dry_run
                THEN (SELECT coalesce(array_agg(b.id ORDER BY b.id), '{}') FROM batch b WHERE b.action = 'purge')
                ELSE (SELECT coalesce(array_agg(g.id ORDER BY g.id), '{}') FROM purge g) END,
           (SELECT array_agg(DISTINCT c.partition_key) FROM changed c
             WHERE EXISTS (SELECT 1 FROM history))
      INTO scanned, v_last, demoted, purged, purged_ids, v_parts;
    IF NOT p_dry_run THEN
        PERFORM set_config('amrita_memory.history_by_writer', '', true);
    END IF;

    IF v_parts IS NOT NULL AND v_kind IN ('llm', 'extraction', 'l3') THEN
        SELECT p.partition_key INTO v_paused
          FROM amrita_memory.paused_partition p
         WHERE p.partition_key = ANY (v_parts)
         LIMIT 1;
        IF v_paused IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = 'AMZ01',
                MESSAGE = 'the memory of ' || v_paused || ' is paused: automatic processes may not change it',
                HINT = 'resume it with `amrita-memory resume` or /memory resume';
        END IF;
    END IF;
    -- The history bounds are not kept here: trim_history_v2 runs once per sweep run.

    kept := scanned - demoted - purged;
    -- Fewer rows than asked: the end of the table (or p_until) is reached. At the end the
    -- cursor wraps to the start; at p_until it stays there (the rest was swept already).
    wrapped := scanned < p_batch;
    next_cursor := CASE WHEN wrapped THEN coalesce(p_until, '') ELSE v_last END;
    IF NOT p_dry_run AND p_cursor IS NULL THEN
        UPDATE amrita_memory.sweep_state s
           SET cursor_key = next_cursor, updated_at = p_now,
               passes = s.passes + CASE WHEN wrapped AND p_until IS NULL THEN 1 ELSE 0 END
         WHERE s.id = 1;
    END IF;
    RETURN NEXT;
END
$$;

--
-- Name: FUNCTION sweep_batch_v8(p_now timestamp with time zone, p_short_days double precision, p_long_days double precision, p_batch integer, p_restart_clock boolean, p_protect_user boolean, p_dry_run boolean, p_cursor text, p_until text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.sweep_batch_v8(p_now timestamp with time zone, p_short_days double precision, p_long_days double precision, p_batch integer, p_restart_clock boolean, p_protect_user boolean, p_dry_run boolean, p_cursor text, p_until text) IS 'sweep_batch_v7 (one batch from the persisted cursor; demote or purge what outlived its tier by three cutoffs, locking only those rows by tid, SKIP LOCKED; one sweep_change row per batch) walking the primary key''s (partition_key, id) order, so the table needs no index on id alone; its cursor is ''partition_key/id'' (sweep_state.cursor_key).';

--
-- Name: sweep_cutoff_v1(timestamp with time zone, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.sweep_cutoff_v1(p_now timestamp with time zone, p_days double precision) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    AS $$
DECLARE
    v_us bigint;
BEGIN
    IF p_days < 0 THEN
        RETURN 'infinity'::timestamptz;
    END IF;
    IF p_days * 86400.0 > 1e11 THEN  -- NaN compares above every number
        RETURN '-infinity'::timestamptz;
    END IF;
    v_us := floor(p_days * 86400e6)::bigint;
    WHILE amrita_memory.age_days_v1(
              p_now - make_interval(hours => ((v_us + 1) / 3600000000)::integer,
                                    secs => ((v_us + 1) % 3600000000) / 1e6),
              p_now) <= p_days LOOP
        v_us := v_us + 1;
    END LOOP;
    WHILE v_us > 0 AND NOT amrita_memory.age_days_v1(
              p_now - make_interval(hours => (v_us / 3600000000)::integer,
                                    secs => (v_us % 3600000000) / 1e6),
              p_now) <= p_days LOOP
        v_us := v_us - 1;
    END LOOP;
    RETURN p_now - make_interval(hours => (v_us / 3600000000)::integer,
                                 secs => (v_us % 3600000000) / 1e6);
END
$$;

--
-- Name: FUNCTION sweep_cutoff_v1(p_now timestamp with time zone, p_days double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.sweep_cutoff_v1(p_now timestamp with time zone, p_days double precision) IS 'The earliest tier clock kept with p_days of lifetime at p_now: exactly where age_days_v1 <= p_days stops holding, to the microsecond. Computed once per sweep batch.';

--
-- Name: table_digest_v1(text, text[]); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.table_digest_v1(p_table text, p_skip text[]) RETURNS TABLE(row_count bigint, digest text)
    LANGUAGE plpgsql STABLE
    SET "TimeZone" TO 'UTC'
    SET extra_float_digits TO '1'
    AS $_$
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT count(*), md5(coalesce(string_agg(h, '''' ORDER BY h), ''''))
           FROM (SELECT md5((to_jsonb(t) - $1)::text) AS h FROM amrita_memory.%I t) s',
        p_table)
    USING coalesce(p_skip, '{}'::text[]);
END
$_$;

--
-- Name: FUNCTION table_digest_v1(p_table text, p_skip text[]); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.table_digest_v1(p_table text, p_skip text[]) IS 'Row count and content digest of one table of the schema (md5 of the sorted md5s of each row''s to_jsonb minus p_skip, in UTC): what a backup records and backup verify compares.';

--
-- Name: tier_days_v1(integer, double precision, double precision); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.tier_days_v1(p_importance integer, p_short_days double precision, p_long_days double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE amrita_memory.importance_rank_v1(p_importance)
        WHEN 0 THEN least(p_short_days, p_long_days)
        WHEN 2 THEN greatest(p_short_days, p_long_days)
        ELSE CASE
            WHEN greatest(p_short_days, p_long_days) > least(p_short_days, p_long_days)
                THEN sqrt(p_short_days * p_long_days)
            ELSE least(p_short_days, p_long_days)
        END
    END
$$;

--
-- Name: FUNCTION tier_days_v1(p_importance integer, p_short_days double precision, p_long_days double precision); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.tier_days_v1(p_importance integer, p_short_days double precision, p_long_days double precision) IS 'Lifetime in days of an importance tier: low = the shorter bound, high = the longer, medium = their geometric mean.';

--
-- Name: tokens_tsquery_v1(text[]); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.tokens_tsquery_v1(p_tokens text[]) RETURNS tsquery
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT string_agg('''' || replace(replace(t, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery
      FROM unnest(p_tokens) t
     WHERE t <> ''
$$;

--
-- Name: FUNCTION tokens_tsquery_v1(p_tokens text[]); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.tokens_tsquery_v1(p_tokens text[]) IS 'The OR of the tokens as a tsquery (quoted lexemes, no parsing); NULL for none. The keyword side of search_memories_v4.';

--
-- Name: trail_setting_v1(text, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.trail_setting_v1(p_name text, p_default integer) RETURNS integer
    LANGUAGE sql STABLE
    AS $_$
    SELECT CASE WHEN v ~ '^[0-9]{1,9}$' THEN v::integer ELSE p_default END
      FROM (SELECT current_setting(p_name, true) AS v) s
$_$;

--
-- Name: FUNCTION trail_setting_v1(p_name text, p_default integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.trail_setting_v1(p_name text, p_default integer) IS 'Integer value of a transaction setting (amrita_memory.history_keep, amrita_memory.history_keep_deleted_days); p_default when unset or not a number.';

--
-- Name: trim_history_v1(integer, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.trim_history_v1(p_keep integer, p_days integer) RETURNS TABLE(trimmed integer, expired integer)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_keep integer := greatest(p_keep, 1);
    v_key text;
    v_mid text;
    v_cut bigint;
    v_rows integer;
BEGIN
    trimmed := 0;
    FOR v_key, v_mid IN SELECT c.partition_key, c.memory_id
                          FROM amrita_memory.memory_change c
                         GROUP BY c.partition_key, c.memory_id
                        HAVING count(*) > v_keep
    LOOP
        SELECT c.seq INTO v_cut
          FROM amrita_memory.memory_change c
         WHERE c.partition_key = v_key AND c.memory_id = v_mid
         ORDER BY c.seq DESC
        OFFSET v_keep LIMIT 1;
        IF v_cut IS NOT NULL THEN
            DELETE FROM amrita_memory.memory_change h
             WHERE h.partition_key = v_key AND h.memory_id = v_mid AND h.seq <= v_cut;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            trimmed := trimmed + v_rows;
        END IF;
    END LOOP;

    DELETE FROM amrita_memory.memory_change h
     USING (SELECT DISTINCT d.partition_key, d.memory_id
              FROM amrita_memory.memory_change d
             WHERE d.after IS NULL
               AND d.at < now() - make_interval(days => p_days)) gone
     WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
       AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                        WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
    GET DIAGNOSTICS expired = ROW_COUNT;
    RETURN NEXT;
END
$$;

--
-- Name: FUNCTION trim_history_v1(p_keep integer, p_days integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.trim_history_v1(p_keep integer, p_days integer) IS 'The trail''s history bounds over the whole table: per memory the newest p_keep changes stay (trimmed = rows cut), and the history of memories deleted more than p_days ago goes (expired = rows removed). The sweep runs it once per run.';

--
-- Name: trim_history_v2(integer, integer); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.trim_history_v2(p_keep integer, p_days integer) RETURNS TABLE(trimmed integer, expired integer)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_keep integer := greatest(p_keep, 1);
    v_seq regclass := pg_get_serial_sequence('amrita_memory.memory_change', 'seq')::regclass;
    v_top bigint := coalesce(pg_sequence_last_value(v_seq), 0);
    v_from bigint;
    v_keep_before integer;
    v_rows integer;
BEGIN
    -- the watermark: one trim at a time (the row lock), the next one starts past it
    SELECT s.trimmed_seq, s.trimmed_keep INTO v_from, v_keep_before
      FROM amrita_memory.sweep_state s WHERE s.id = 1 FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO amrita_memory.sweep_state (id) VALUES (1) ON CONFLICT (id) DO NOTHING;
        v_from := 0;
    END IF;
    IF v_keep_before IS NULL OR v_keep < v_keep_before OR v_top < v_from THEN
        -- never trimmed, a smaller bound than last time, or the sequence moved back (a
        -- restore): the whole table, as trim_history_v1 walks it
        SELECT t.trimmed, t.expired INTO trimmed, expired
          FROM amrita_memory.trim_history_v1(v_keep, p_days) t;
    ELSE
        -- only the memories changed since: the newest v_keep rows of each stay
        WITH touched AS (
            SELECT DISTINCT c.partition_key, c.memory_id
              FROM amrita_memory.memory_change c
             WHERE c.seq > v_from
        ), cut AS (
            SELECT t.partition_key, t.memory_id,
                   (SELECT c.seq FROM amrita_memory.memory_change c
                     WHERE c.partition_key = t.partition_key AND c.memory_id = t.memory_id
                     ORDER BY c.seq DESC OFFSET v_keep LIMIT 1) AS seq
              FROM touched t
        ), gone AS (
            DELETE FROM amrita_memory.memory_change h
             USING cut
             WHERE cut.seq IS NOT NULL
               AND h.partition_key = cut.partition_key AND h.memory_id = cut.memory_id
               AND h.seq <= cut.seq
            RETURNING 1
        )
        SELECT count(*)::integer INTO trimmed FROM gone;
        -- the history of memories deleted more than p_days ago (trim_history_v1's)
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT d.partition_key, d.memory_id
                  FROM amrita_memory.memory_change d
                 WHERE d.after IS NULL
                   AND d.at < now() - make_interval(days => p_days)) gone
         WHERE h.partition_key = gone.partition_key AND h.memory_id = gone.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = gone.partition_key AND m.id = gone.memory_id);
        GET DIAGNOSTICS expired = ROW_COUNT;
    END IF;

    -- the batch rows past the retention, and the earlier history of what they purged
    -- (a memory purged more than p_days ago that has not come back)
    WITH old AS (
        DELETE FROM amrita_memory.sweep_change s
         WHERE s.at < now() - make_interval(days => p_days)
        RETURNING s.partition_keys, s.memory_ids, s.new_importances
    ), entries AS (
        SELECT u.partition_key, u.memory_id, u.new_importance
          FROM old o
         CROSS JOIN LATERAL unnest(o.partition_keys, o.memory_ids, o.new_importances)
               AS u(partition_key, memory_id, new_importance)
    ), gone AS (
        DELETE FROM amrita_memory.memory_change h
         USING (SELECT DISTINCT e.partition_key, e.memory_id FROM entries e
                 WHERE e.new_importance IS NULL) g
         WHERE h.partition_key = g.partition_key AND h.memory_id = g.memory_id
           AND NOT EXISTS (SELECT 1 FROM amrita_memory.memory m
                            WHERE m.partition_key = g.partition_key AND m.id = g.memory_id)
        RETURNING 1
    )
    SELECT (SELECT count(*)::integer FROM entries) + (SELECT count(*)::integer FROM gone)
      INTO v_rows;
    expired := expired + v_rows;

    UPDATE amrita_memory.sweep_state s
       SET trimmed_seq = v_top, trimmed_keep = v_keep
     WHERE s.id = 1;
    RETURN NEXT;
END
$$;

--
-- Name: FUNCTION trim_history_v2(p_keep integer, p_days integer); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.trim_history_v2(p_keep integer, p_days integer) IS 'trim_history_v1''s bounds (per memory the newest p_keep memory_change rows; no history of a memory deleted more than p_days ago) walking only the memories with rows past the last trim''s watermark (sweep_state.trimmed_seq; the whole table when never trimmed, the bound got smaller or the sequence moved back), and the sweep''s batch rows older than p_days with the earlier history of the memories they purged (expired counts their entries and those rows). The sweep runs it once per run.';

--
-- Name: update_memory_v3(text, text, text, text[], integer, boolean, text, public.vector, text, timestamp with time zone, text[], boolean); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.update_memory_v3(p_partition text, p_id text, p_content text, p_tags text[], p_importance integer, p_set_category boolean, p_category text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_tokens text[], p_protect_user boolean) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_source text;
BEGIN
    SELECT m.source INTO v_source
      FROM amrita_memory.memory m
     WHERE m.partition_key = p_partition AND m.id = p_id
       FOR UPDATE;
    IF p_protect_user AND v_source = 'user' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'AMP01',
            MESSAGE = 'memory ' || p_id || ' was added by a person (source=user): '
                      || 'automatic processes may not change it',
            HINT = 'change it with /memory or the amrita-memory CLI';
    END IF;
    IF p_content IS NOT NULL AND p_embedding IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'update_memory_v3: new content needs its new embedding (pass NULL content to keep the text)';
    END IF;
    IF p_embedding IS NOT NULL THEN
        PERFORM amrita_memory.require_store_model_v1(p_fingerprint, vector_dims(p_embedding), p_now);
    END IF;

    RETURN QUERY
    WITH changed AS (
        UPDATE amrita_memory.memory m
           SET content = coalesce(p_content, m.content),
               tags = coalesce(p_tags, m.tags),
               importance = coalesce(p_importance, m.importance),
               category = CASE WHEN p_set_category THEN p_category ELSE m.category END,
               embedding = coalesce(p_embedding, m.embedding),
               embed_fingerprint = CASE WHEN p_embedding IS NULL THEN m.embed_fingerprint
                                        ELSE p_fingerprint END,
               search_tokens = CASE WHEN p_content IS NULL THEN m.search_tokens
                                    ELSE array_to_tsvector(p_tokens) END,
               tier_since = CASE
                   WHEN p_importance IS NOT NULL AND amrita_memory.importance_rank_v1(p_importance)
                        <> amrita_memory.importance_rank_v1(m.importance) THEN p_now
                   ELSE m.tier_since END,
               updated_at = p_now
         WHERE m.partition_key = p_partition AND m.id = p_id
        RETURNING m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
                  m.source, m.author, m.created_at, m.updated_at)
    SELECT * FROM changed;

    IF FOUND AND p_embedding IS NOT NULL THEN
        PERFORM amrita_memory.require_store_model_v1(p_fingerprint, vector_dims(p_embedding), p_now);
    END IF;
END
$$;

--
-- Name: FUNCTION update_memory_v3(p_partition text, p_id text, p_content text, p_tags text[], p_importance integer, p_set_category boolean, p_category text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_tokens text[], p_protect_user boolean); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.update_memory_v3(p_partition text, p_id text, p_content text, p_tags text[], p_importance integer, p_set_category boolean, p_category text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_tokens text[], p_protect_user boolean) IS 'update_memory_v2 (manual-entry guard: with p_protect_user a source=user memory is refused, SQLSTATE AMP01) that also replaces the search tokens with the new content''s (NULL = keep a field; model check AMF01/AMF03; content without its embedding refused with 22023).';

--
-- Name: write_memory_v5(text, text, text, text[], integer, text, text, text, public.vector, text, timestamp with time zone, integer, double precision, text[], text, text, text); Type: FUNCTION; Schema: amrita_memory; Owner: -
--

CREATE FUNCTION amrita_memory.write_memory_v5(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_dedup_seconds double precision, p_tokens text[], p_protocol text DEFAULT NULL::text, p_model text DEFAULT NULL::text, p_base_url text DEFAULT NULL::text) RETURNS TABLE(id text, partition_key text, scope text, content text, tags text[], importance smallint, category text, source text, author text, created_at timestamp with time zone, updated_at timestamp with time zone, rows_before integer, duplicate boolean)
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_id text;
    v_before integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('amrita_memory.partition:' || p_partition, 0));
    IF p_dedup_seconds > 0 THEN
        SELECT m.id INTO v_id
          FROM amrita_memory.memory m
         WHERE m.partition_key = p_partition
           AND m.created_at >= p_now - make_interval(secs => p_dedup_seconds)
           AND m.scope = p_scope
           AND m.content = p_content
           AND m.author IS NOT DISTINCT FROM p_author
           AND m.source = p_source
           AND m.embed_fingerprint = p_fingerprint
         ORDER BY m.created_at DESC, m.id DESC
         LIMIT 1;
        IF v_id IS NOT NULL THEN
            RETURN QUERY
            SELECT m.id, m.partition_key, m.scope, m.content, m.tags, m.importance, m.category,
                   m.source, m.author, m.created_at, m.updated_at,
                   (SELECT count(*)::integer FROM amrita_memory.memory c
                     WHERE c.partition_key = p_partition),
                   true
              FROM amrita_memory.memory m
             WHERE m.partition_key = p_partition AND m.id = v_id;
            RETURN;
        END IF;
    END IF;

    SELECT i.id, i.rows_before INTO v_id, v_before
      FROM amrita_memory.insert_memory_v6(
               p_partition, p_scope, p_content, p_tags, p_importance, p_category, p_source,
               p_author, p_embedding, p_fingerprint, p_now, p_cap, p_tokens, p_protocol,
               p_model, p_base_url) i;
    -- The row as written (v3 read it back by id): its columns are these arguments.
    RETURN QUERY SELECT v_id, p_partition, p_scope, p_content,
                        CASE WHEN v_id IS NULL THEN p_tags ELSE coalesce(p_tags, '{}') END,
                        p_importance::smallint, p_category, p_source, p_author,
                        p_now, p_now, v_before, false;
END
$$;

--
-- Name: FUNCTION write_memory_v5(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_dedup_seconds double precision, p_tokens text[], p_protocol text, p_model text, p_base_url text); Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON FUNCTION amrita_memory.write_memory_v5(p_partition text, p_scope text, p_content text, p_tags text[], p_importance integer, p_category text, p_source text, p_author text, p_embedding public.vector, p_fingerprint text, p_now timestamp with time zone, p_cap integer, p_dedup_seconds double precision, p_tokens text[], p_protocol text, p_model text, p_base_url text) IS 'write_memory_v4 on insert_memory_v6: an identical memory written less than p_dedup_seconds before p_now is returned (duplicate = true), else inserted with its search tokens and history row (cap, model check AMF01/AMF03).';

--
-- Name: activity_heatmap; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.activity_heatmap (
    user_key text NOT NULL,
    weekday smallint NOT NULL,
    slot smallint NOT NULL,
    hits integer DEFAULT 0 NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_activity_heatmap_hits CHECK ((hits >= 0)),
    CONSTRAINT ck_activity_heatmap_slot CHECK (((slot >= 0) AND (slot <= 11))),
    CONSTRAINT ck_activity_heatmap_weekday CHECK (((weekday >= 0) AND (weekday <= 6)))
);

--
-- Name: TABLE activity_heatmap; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.activity_heatmap IS 'Messages per user in a 7 x 12 (weekday x 2-hour slot) grid, in idle_timezone';

--
-- Name: COLUMN activity_heatmap.user_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.activity_heatmap.user_key IS 'the user''s personal partition key';

--
-- Name: COLUMN activity_heatmap.weekday; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.activity_heatmap.weekday IS 'local weekday, 0 = Monday';

--
-- Name: COLUMN activity_heatmap.slot; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.activity_heatmap.slot IS 'local 2-hour slot, 0 = 00:00-02:00';

--
-- Name: admin_audit; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.admin_audit (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    actor text NOT NULL,
    role text NOT NULL,
    client text,
    action text NOT NULL,
    partition_key text,
    target_id text,
    detail jsonb DEFAULT '{}'::jsonb NOT NULL,
    ok boolean NOT NULL,
    CONSTRAINT ck_admin_audit_role CHECK ((role = ANY (ARRAY['admin'::text, 'superuser'::text])))
);

--
-- Name: TABLE admin_audit; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.admin_audit IS 'Writes made through the admin web page: who, what, when, and whether it took';

--
-- Name: COLUMN admin_audit.actor; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.admin_audit.actor IS 'the name given at login';

--
-- Name: COLUMN admin_audit.role; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.admin_audit.role IS 'admin | superuser';

--
-- Name: COLUMN admin_audit.client; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.admin_audit.client IS 'the client address the request came from';

--
-- Name: COLUMN admin_audit.action; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.admin_audit.action IS 'what was done, e.g. memory.add, memo.edit';

--
-- Name: COLUMN admin_audit.partition_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.admin_audit.partition_key IS 'the partition written to';

--
-- Name: COLUMN admin_audit.target_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.admin_audit.target_id IS 'the memory id / kid / job id';

--
-- Name: COLUMN admin_audit.detail; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.admin_audit.detail IS 'the write''s arguments and outcome (secrets redacted)';

--
-- Name: COLUMN admin_audit.ok; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.admin_audit.ok IS 'false = refused or failed, nothing written';

--
-- Name: admin_audit_id_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.admin_audit ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.admin_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: ann_index; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.ann_index (
    partition_key text NOT NULL,
    dim integer NOT NULL,
    index_name text NOT NULL,
    rows_at_build integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: TABLE ann_index; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.ann_index IS 'Large partitions with their own partial HNSW index (built by maintenance, not migrations)';

--
-- Name: backup_schedule; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.backup_schedule (
    id smallint DEFAULT 1 NOT NULL,
    last_slot timestamp with time zone,
    claimed_by text,
    claimed_at timestamp with time zone,
    finished_at timestamp with time zone,
    stem text,
    ok boolean,
    error text,
    CONSTRAINT ck_backup_schedule_one_row CHECK ((id = 1))
);

--
-- Name: TABLE backup_schedule; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.backup_schedule IS 'One row: the last scheduled backup slot claimed (claim_backup_slot_v1)';

--
-- Name: COLUMN backup_schedule.last_slot; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.backup_schedule.last_slot IS 'the newest slot of [backup] schedule a process claimed';

--
-- Name: COLUMN backup_schedule.claimed_by; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.backup_schedule.claimed_by IS 'host:pid of the claimer';

--
-- Name: COLUMN backup_schedule.stem; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.backup_schedule.stem IS 'the backup the slot produced';

--
-- Name: COLUMN backup_schedule.ok; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.backup_schedule.ok IS 'backup and verify succeeded';

--
-- Name: chat_log; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.chat_log (
    id bigint NOT NULL,
    session_key text NOT NULL,
    user_id text NOT NULL,
    group_id text,
    role text NOT NULL,
    text text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_chat_log_role CHECK ((role = ANY (ARRAY['user'::text, 'bot'::text])))
);

--
-- Name: TABLE chat_log; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.chat_log IS 'Recent chat lines per session (bounded: chat_log_keep newest), read by L3';

--
-- Name: COLUMN chat_log.session_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.chat_log.session_key IS 'the chat''s partition: the group key in a group, else the personal key';

--
-- Name: COLUMN chat_log.user_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.chat_log.user_id IS 'the speaker (the bot''s own id for role bot)';

--
-- Name: COLUMN chat_log.role; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.chat_log.role IS 'user | bot';

--
-- Name: chat_log_id_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.chat_log ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.chat_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: consolidation_cycle; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.consolidation_cycle (
    target_key text NOT NULL,
    id bigint NOT NULL,
    trigger text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    ok boolean,
    error text,
    iterations integer DEFAULT 0 NOT NULL,
    tool_calls integer DEFAULT 0 NOT NULL,
    memories_changed integer DEFAULT 0 NOT NULL,
    prompt_tokens integer DEFAULT 0 NOT NULL,
    completion_tokens integer DEFAULT 0 NOT NULL,
    summary text,
    dry_run boolean DEFAULT false NOT NULL,
    CONSTRAINT ck_consolidation_cycle_trigger CHECK ((trigger = ANY (ARRAY['manual'::text, 'scheduled'::text, 'cli'::text, 'test'::text])))
);

--
-- Name: TABLE consolidation_cycle; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.consolidation_cycle IS 'L3 consolidation cycles: one row per run, with its outcome and token totals';

--
-- Name: COLUMN consolidation_cycle.target_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.consolidation_cycle.target_key IS 'the partition the cycle consolidated';

--
-- Name: COLUMN consolidation_cycle.trigger; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.consolidation_cycle.trigger IS 'manual | scheduled | cli | test';

--
-- Name: COLUMN consolidation_cycle.ended_at; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.consolidation_cycle.ended_at IS 'NULL while running';

--
-- Name: COLUMN consolidation_cycle.ok; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.consolidation_cycle.ok IS 'NULL while running';

--
-- Name: COLUMN consolidation_cycle.error; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.consolidation_cycle.error IS 'why it failed (one redacted sentence)';

--
-- Name: COLUMN consolidation_cycle.summary; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.consolidation_cycle.summary IS 'the model''s subconscious_iter_stop summary';

--
-- Name: consolidation_cycle_id_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.consolidation_cycle ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.consolidation_cycle_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: extraction_run; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.extraction_run (
    session_key text NOT NULL,
    id bigint NOT NULL,
    partition_key text NOT NULL,
    trigger text NOT NULL,
    status text NOT NULL,
    reason text,
    entries integer DEFAULT 0 NOT NULL,
    chat_until_id bigint,
    model text,
    prompt_tokens integer DEFAULT 0 NOT NULL,
    completion_tokens integer DEFAULT 0 NOT NULL,
    total_tokens integer DEFAULT 0 NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone NOT NULL,
    CONSTRAINT ck_extraction_run_status CHECK ((status = ANY (ARRAY['ok'::text, 'rejected'::text, 'failed'::text]))),
    CONSTRAINT ck_extraction_run_trigger CHECK ((trigger = ANY (ARRAY['expiry'::text, 'command'::text, 'cli'::text])))
);

--
-- Name: TABLE extraction_run; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.extraction_run IS 'Automatic extraction runs: outcome, token usage, and how far each read the chat log';

--
-- Name: COLUMN extraction_run.session_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.extraction_run.session_key IS 'the chat whose log was read (chat_log.session_key)';

--
-- Name: COLUMN extraction_run.partition_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.extraction_run.partition_key IS 'the partition whose source=auto memories were replaced';

--
-- Name: COLUMN extraction_run.trigger; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.extraction_run.trigger IS 'expiry | command | cli';

--
-- Name: COLUMN extraction_run.status; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.extraction_run.status IS 'ok | rejected | failed';

--
-- Name: COLUMN extraction_run.reason; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.extraction_run.reason IS 'why rejected or failed';

--
-- Name: COLUMN extraction_run.chat_until_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.extraction_run.chat_until_id IS 'the newest chat_log id the run read; the next run starts after it';

--
-- Name: extraction_run_id_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.extraction_run ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.extraction_run_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: job; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.job (
    id text NOT NULL,
    kind text NOT NULL,
    state text NOT NULL,
    phase text NOT NULL,
    done bigint NOT NULL,
    total bigint NOT NULL,
    started_by text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone,
    owner text NOT NULL,
    heartbeat_at timestamp with time zone NOT NULL,
    cancel_requested boolean DEFAULT false NOT NULL,
    cancelled_by text,
    result text,
    error text,
    CONSTRAINT ck_job_kind CHECK ((kind = ANY (ARRAY['backup'::text, 'sweep'::text, 'reembed'::text, 'restore'::text]))),
    CONSTRAINT ck_job_state CHECK ((state = ANY (ARRAY['running'::text, 'done'::text, 'failed'::text, 'cancelled'::text, 'lost'::text])))
);

--
-- Name: TABLE job; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.job IS 'The admin page''s background jobs of every process (job_start_v1)';

--
-- Name: COLUMN job.kind; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.job.kind IS 'backup | sweep | reembed';

--
-- Name: COLUMN job.state; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.job.state IS 'running | done | failed | cancelled | lost (its process died)';

--
-- Name: COLUMN job.started_by; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.job.started_by IS 'the operator';

--
-- Name: COLUMN job.owner; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.job.owner IS 'host:pid:start of the running process';

--
-- Name: COLUMN job.result; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.job.result IS 'what it did, one line';

--
-- Name: COLUMN job.error; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.job.error IS 'why it failed (redacted)';

--
-- Name: knowledge; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.knowledge (
    kid text NOT NULL,
    title text NOT NULL,
    summary text DEFAULT ''::text NOT NULL,
    body text DEFAULT ''::text NOT NULL,
    embedding public.vector NOT NULL,
    embed_fingerprint text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    search_tokens tsvector,
    search_len integer GENERATED ALWAYS AS (length(search_tokens)) STORED,
    CONSTRAINT ck_knowledge_body_ceiling CHECK ((char_length(body) <= 100000)),
    CONSTRAINT ck_knowledge_kid_format CHECK ((kid ~ '^[0-9a-f]{8,32}$'::text)),
    CONSTRAINT ck_knowledge_kid_nonempty CHECK ((kid <> ''::text)),
    CONSTRAINT ck_knowledge_summary_length CHECK ((char_length(summary) <= 1000)),
    CONSTRAINT ck_knowledge_title_length CHECK (char_length(title) BETWEEN 1 AND 200 AND strpos(title, E'\n') = 0)
)
WITH (toast_tuple_target='8160');
ALTER TABLE ONLY amrita_memory.knowledge ALTER COLUMN embedding SET STORAGE MAIN;

--
-- Name: TABLE knowledge; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.knowledge IS 'Global knowledge base (L3); its vectors are re-embedded and backed up with the memories';

--
-- Name: COLUMN knowledge.body; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.knowledge.body IS 'the body as one text; its lines (split on \n, '''' = no lines) are derived';

--
-- Name: COLUMN knowledge.embedding; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.knowledge.embedding IS 'vector of the summary (what a knowledge search matches, as in the reference)';

--
-- Name: COLUMN knowledge.search_tokens; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.knowledge.search_tokens IS 'keyword-search tokens of title + summary + body made in Python (domain/tokens.py); NULL = not tokenized yet';

--
-- Name: COLUMN knowledge.search_len; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.knowledge.search_len IS 'number of search tokens (BM25 length normalisation without reading the tsvector)';

--
-- Name: knowledge_suggestion; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.knowledge_suggestion (
    id bigint NOT NULL,
    action text NOT NULL,
    kid text,
    title text NOT NULL,
    summary text NOT NULL,
    body text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    author_id text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    claimed_by_cycle bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    claimed_at timestamp with time zone,
    handled_at timestamp with time zone,
    CONSTRAINT ck_knowledge_suggestion_action CHECK ((action = ANY (ARRAY['create'::text, 'update'::text]))),
    CONSTRAINT ck_knowledge_suggestion_claim CHECK (((status = 'claimed'::text) = (claimed_by_cycle IS NOT NULL))),
    CONSTRAINT ck_knowledge_suggestion_sizes CHECK (((char_length(title) <= 200) AND (char_length(summary) <= 1000) AND (char_length(body) <= 100000) AND (char_length(reason) <= 1000))),
    CONSTRAINT ck_knowledge_suggestion_status CHECK ((status = ANY (ARRAY['pending'::text, 'claimed'::text, 'done'::text])))
);

--
-- Name: TABLE knowledge_suggestion; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.knowledge_suggestion IS 'Knowledge suggestions from the chat, bounded, claimed by an L3 cycle, marked done only when that cycle succeeds';

--
-- Name: COLUMN knowledge_suggestion.action; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.knowledge_suggestion.action IS 'create | update';

--
-- Name: COLUMN knowledge_suggestion.kid; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.knowledge_suggestion.kid IS 'the entry to update (update only)';

--
-- Name: COLUMN knowledge_suggestion.author_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.knowledge_suggestion.author_id IS 'user id of the suggester';

--
-- Name: COLUMN knowledge_suggestion.status; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.knowledge_suggestion.status IS 'pending | claimed (by a running cycle) | done';

--
-- Name: knowledge_suggestion_id_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.knowledge_suggestion ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.knowledge_suggestion_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: l3_state; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.l3_state (
    target_key text NOT NULL,
    penalty integer DEFAULT 0 NOT NULL,
    penalty_at_start integer,
    runs integer DEFAULT 0 NOT NULL,
    failures integer DEFAULT 0 NOT NULL,
    failures_in_row integer DEFAULT 0 NOT NULL,
    running_since timestamp with time zone,
    last_run_end timestamp with time zone,
    last_success_at timestamp with time zone,
    last_failure_at timestamp with time zone,
    last_error text,
    last_summary text,
    next_run_at timestamp with time zone,
    plan jsonb,
    heat jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_l3_state_penalty CHECK ((penalty >= 0))
);

--
-- Name: TABLE l3_state; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.l3_state IS 'L3 scheduler state per target: penalty, run counters, next planned run';

--
-- Name: COLUMN l3_state.target_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.l3_state.target_key IS 'the target''s partition key';

--
-- Name: COLUMN l3_state.penalty; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.l3_state.penalty IS 'target messages since the last successful cycle';

--
-- Name: COLUMN l3_state.penalty_at_start; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.l3_state.penalty_at_start IS 'the penalty when the running cycle started; success subtracts it';

--
-- Name: COLUMN l3_state.failures_in_row; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.l3_state.failures_in_row IS 'failed cycles since the last success (the retry back-off)';

--
-- Name: COLUMN l3_state.plan; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.l3_state.plan IS 'the planned window (domain.planner.Plan)';

--
-- Name: COLUMN l3_state.heat; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.l3_state.heat IS 'the planner''s decayed heatmap layers (domain.planner.HeatState)';

--
-- Name: lease; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.lease (
    kind text NOT NULL,
    lease_key text NOT NULL,
    owner text NOT NULL,
    token text NOT NULL,
    acquired_at timestamp with time zone NOT NULL,
    renewed_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    previous_owner text,
    CONSTRAINT ck_lease_expiry_after_claim CHECK ((expires_at > acquired_at)),
    CONSTRAINT ck_lease_kind CHECK ((kind = ANY (ARRAY['l3'::text, 'extraction'::text, 'sweep'::text, 'reembed'::text, 'backup'::text, 'restore'::text, 'ann'::text])))
);

--
-- Name: TABLE lease; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.lease IS 'Who in the fleet runs which long work (lease_acquire_v1); expired = free';

--
-- Name: COLUMN lease.kind; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.lease.kind IS 'l3 | extraction | sweep | reembed | backup';

--
-- Name: COLUMN lease.lease_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.lease.lease_key IS 'the target / session key, '''' for the fleet''s one job of the kind';

--
-- Name: COLUMN lease.owner; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.lease.owner IS 'host:pid:start of the holder';

--
-- Name: COLUMN lease.token; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.lease.token IS 'random per claim';

--
-- Name: COLUMN lease.expires_at; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.lease.expires_at IS 'free for anyone after this (the heartbeat pushes it)';

--
-- Name: COLUMN lease.previous_owner; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.lease.previous_owner IS 'whose expired lease this claim took over';

--
-- Name: loaded_scope; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.loaded_scope (
    chat_key text NOT NULL,
    scope_key text NOT NULL,
    loaded_by text NOT NULL,
    loaded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_loaded_scope_not_self CHECK ((chat_key <> scope_key))
);

--
-- Name: TABLE loaded_scope; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.loaded_scope IS 'Scopes loaded read-only into a chat (memory_load_context) until unloaded or the session expires';

--
-- Name: COLUMN loaded_scope.chat_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.loaded_scope.chat_key IS 'the chat that loaded it (ToolContext.session_key)';

--
-- Name: COLUMN loaded_scope.scope_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.loaded_scope.scope_key IS 'the loaded partition';

--
-- Name: COLUMN loaded_scope.loaded_by; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.loaded_scope.loaded_by IS 'user id of the speaker';

--
-- Name: memo; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.memo (
    partition_key text NOT NULL,
    content text DEFAULT ''::text NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_memo_content_ceiling CHECK ((char_length(content) <= 10000))
);

--
-- Name: TABLE memo; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.memo IS 'L1 memo: one declarative note per partition, injected into every turn';

--
-- Name: memory; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.memory (
    id text DEFAULT replace((gen_random_uuid())::text, '-'::text, ''::text) NOT NULL,
    partition_key text NOT NULL,
    scope text NOT NULL,
    content text NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    importance smallint NOT NULL,
    category text,
    source text DEFAULT 'auto'::text NOT NULL,
    author text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    tier_since timestamp with time zone DEFAULT now() NOT NULL,
    embedding public.vector NOT NULL,
    embed_fingerprint text NOT NULL,
    search_tokens tsvector,
    origin text DEFAULT amrita_memory.actor_origin_v1() NOT NULL,
    CONSTRAINT ck_memory_category CHECK (((category IS NULL) OR (category = ANY (ARRAY['preference'::text, 'rule'::text, 'event'::text, 'knowledge'::text])))),
    CONSTRAINT ck_memory_content_nonempty CHECK ((content <> ''::text)),
    CONSTRAINT ck_memory_id_hex CHECK ((id ~ '^[0-9a-f]{32}$'::text)),
    CONSTRAINT ck_memory_importance CHECK (((importance >= 1) AND (importance <= 10))),
    CONSTRAINT ck_memory_origin CHECK ((origin = ANY (ARRAY['person'::text, 'llm'::text, 'extraction'::text, 'l3'::text, 'import'::text, 'system'::text, 'unknown'::text]))),
    CONSTRAINT ck_memory_partition_nonempty CHECK ((partition_key <> ''::text)),
    CONSTRAINT ck_memory_scope CHECK ((scope = ANY (ARRAY['user'::text, 'group'::text, 'global'::text]))),
    CONSTRAINT ck_memory_source CHECK ((source = ANY (ARRAY['user'::text, 'auto'::text, 'system'::text])))
)
WITH (fillfactor='90', toast_tuple_target='8160');
ALTER TABLE ONLY amrita_memory.memory ALTER COLUMN embedding SET STORAGE MAIN;

--
-- Name: TABLE memory; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.memory IS 'L2 memories: one row per long-tail fact, with its vector';

--
-- Name: COLUMN memory.id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.id IS '32 lowercase hex characters, like the reference''s uuid4().hex';

--
-- Name: COLUMN memory.partition_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.partition_key IS 'uni_id: QQPlatform_Private_{qq} / QQPlatform_Group_{gid} / global';

--
-- Name: COLUMN memory.scope; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.scope IS 'user | group | global';

--
-- Name: COLUMN memory.importance; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.importance IS '1–10; tiers 1–3 low, 4–7 medium, 8–10 high';

--
-- Name: COLUMN memory.category; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.category IS 'preference | rule | event | knowledge';

--
-- Name: COLUMN memory.source; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.source IS 'user | auto | system';

--
-- Name: COLUMN memory.author; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.author IS 'user id of whoever wrote it (group edit rights)';

--
-- Name: COLUMN memory.tier_since; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.tier_since IS 'when the memory entered its current importance tier; the sweep''s clock';

--
-- Name: COLUMN memory.embedding; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.embedding IS 'dimension = store_meta.embed_dim';

--
-- Name: COLUMN memory.search_tokens; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.search_tokens IS 'keyword-search tokens made in Python (domain/tokens.py); NULL = not tokenized yet';

--
-- Name: COLUMN memory.origin; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory.origin IS 'who made it: person | llm | extraction | l3 | import | system | unknown (before origins were recorded); extraction replaces only its own rows';

--
-- Name: memory_access; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.memory_access (
    partition_key text NOT NULL,
    memory_id text NOT NULL,
    seq bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    surface text NOT NULL,
    chat_key text,
    who text,
    query text,
    score double precision,
    CONSTRAINT ck_memory_access_surface CHECK ((surface = ANY (ARRAY['tool'::text, 'command'::text, 'cli'::text, 'web'::text, 'l3'::text, 'inject'::text, 'relevant'::text])))
);

--
-- Name: TABLE memory_access; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.memory_access IS 'Recalls of a memory (searches and injections), newest N per memory (log_access_v1)';

--
-- Name: COLUMN memory_access.surface; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_access.surface IS 'tool | command | cli | web | l3 | inject | relevant';

--
-- Name: COLUMN memory_access.chat_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_access.chat_key IS 'the chat that recalled it (session key)';

--
-- Name: COLUMN memory_access.who; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_access.who IS 'the speaker''s user id, or the operator';

--
-- Name: COLUMN memory_access.query; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_access.query IS 'the search text, redacted and cut';

--
-- Name: COLUMN memory_access.score; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_access.score IS 'the hit''s decay score (NULL: injected)';

--
-- Name: memory_access_seq_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.memory_access ALTER COLUMN seq ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.memory_access_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: memory_change; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.memory_change (
    partition_key text NOT NULL,
    memory_id text NOT NULL,
    seq bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    actor_kind text NOT NULL,
    actor_id text,
    op text NOT NULL,
    before jsonb,
    after jsonb,
    note text,
    CONSTRAINT ck_memory_change_actor_kind CHECK ((actor_kind = ANY (ARRAY['person'::text, 'llm'::text, 'extraction'::text, 'l3'::text, 'import'::text, 'system'::text]))),
    CONSTRAINT ck_memory_change_op CHECK ((op = ANY (ARRAY['create'::text, 'update'::text, 'delete'::text, 'merge'::text, 'tag'::text])))
);

--
-- Name: TABLE memory_change; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.memory_change IS 'Change history per memory (the hot writers and row triggers on memory), newest N per memory';

--
-- Name: COLUMN memory_change.actor_kind; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_change.actor_kind IS 'person | llm | extraction | l3 | import | system';

--
-- Name: COLUMN memory_change.actor_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_change.actor_id IS 'the person, chat, session or cycle';

--
-- Name: COLUMN memory_change.op; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_change.op IS 'create | update | delete | merge | tag';

--
-- Name: COLUMN memory_change.before; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_change.before IS 'the shown fields before (NULL: created)';

--
-- Name: COLUMN memory_change.after; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_change.after IS 'the shown fields after (NULL: deleted)';

--
-- Name: COLUMN memory_change.note; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.memory_change.note IS 'e.g. the id a merge kept';

--
-- Name: memory_change_seq_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.memory_change ALTER COLUMN seq ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.memory_change_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: partition_usage; Type: VIEW; Schema: amrita_memory; Owner: -
--

CREATE VIEW amrita_memory.partition_usage AS
 WITH m AS (
         SELECT memory.partition_key,
            count(*) AS memories,
            count(*) FILTER (WHERE (memory.importance >= 8)) AS high,
            count(*) FILTER (WHERE ((memory.importance >= 4) AND (memory.importance <= 7))) AS medium,
            count(*) FILTER (WHERE (memory.importance <= 3)) AS low,
            count(*) FILTER (WHERE (memory.scope = 'user'::text)) AS scope_user,
            count(*) FILTER (WHERE (memory.scope = 'group'::text)) AS scope_group,
            count(*) FILTER (WHERE (memory.scope = 'global'::text)) AS scope_global,
            min(memory.created_at) AS oldest,
            max(memory.created_at) AS newest,
            sum(octet_length(memory.content)) AS content_bytes
           FROM amrita_memory.memory
          GROUP BY memory.partition_key
        )
 SELECT COALESCE(m.partition_key, n.partition_key) AS partition_key,
    COALESCE(m.memories, (0)::bigint) AS memories,
    COALESCE(m.high, (0)::bigint) AS high,
    COALESCE(m.medium, (0)::bigint) AS medium,
    COALESCE(m.low, (0)::bigint) AS low,
    COALESCE(m.scope_user, (0)::bigint) AS scope_user,
    COALESCE(m.scope_group, (0)::bigint) AS scope_group,
    COALESCE(m.scope_global, (0)::bigint) AS scope_global,
    m.oldest,
    m.newest,
    COALESCE(m.content_bytes, (0)::bigint) AS content_bytes,
    COALESCE(char_length(n.content), 0) AS memo_chars
   FROM (m
     FULL JOIN amrita_memory.memo n ON ((n.partition_key = m.partition_key)));

--
-- Name: VIEW partition_usage; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON VIEW amrita_memory.partition_usage IS 'Per partition: memory counts by tier and scope, age range, content bytes, and the L1 memo length. One row per partition with memories or a memo.';

--
-- Name: paused_partition; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.paused_partition (
    partition_key text NOT NULL,
    paused_at timestamp with time zone NOT NULL,
    paused_by text NOT NULL,
    reason text,
    CONSTRAINT ck_paused_partition_partition_nonempty CHECK ((partition_key <> ''::text))
);

--
-- Name: TABLE paused_partition; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.paused_partition IS 'Partitions whose memory is paused: kept, not injected, not recalled, not written by automatic processes';

--
-- Name: COLUMN paused_partition.paused_by; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.paused_partition.paused_by IS 'who paused it (person id / operator)';

--
-- Name: pending_message; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.pending_message (
    target_key text NOT NULL,
    id bigint NOT NULL,
    cycle_id bigint,
    content text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    delivered_at timestamp with time zone,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    CONSTRAINT ck_pending_message_content_nonempty CHECK ((content <> ''::text))
);

--
-- Name: TABLE pending_message; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.pending_message IS 'Proactive messages of the L3 loop (subconscious_send_to_user), delivered once';

--
-- Name: COLUMN pending_message.target_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.pending_message.target_key IS 'the personal partition it is for';

--
-- Name: COLUMN pending_message.cycle_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.pending_message.cycle_id IS 'the cycle that wrote it';

--
-- Name: COLUMN pending_message.delivered_at; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.pending_message.delivered_at IS 'set once, by the delivery that took it (NULL = still pending)';

--
-- Name: COLUMN pending_message.attempts; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.pending_message.attempts IS 'sends tried (a failed one clears delivered_at: the row waits for a retry)';

--
-- Name: COLUMN pending_message.last_error; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.pending_message.last_error IS 'why the last send failed';

--
-- Name: pending_message_id_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.pending_message ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.pending_message_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: permission_grant; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.permission_grant (
    user_id text NOT NULL,
    node text NOT NULL,
    granted_by text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_permission_grant_node CHECK ((node = 'memory.knowledge'::text)),
    CONSTRAINT ck_permission_grant_user_nonempty CHECK ((user_id <> ''::text))
);

--
-- Name: TABLE permission_grant; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.permission_grant IS 'Permission nodes granted to users from the CLI or /memory (LitePerm''s, when absent)';

--
-- Name: COLUMN permission_grant.user_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.permission_grant.user_id IS 'the user''s id (QQ number)';

--
-- Name: COLUMN permission_grant.node; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.permission_grant.node IS 'memory.knowledge';

--
-- Name: COLUMN permission_grant.granted_by; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.permission_grant.granted_by IS 'cli, or the granting user';

--
-- Name: profile; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.profile (
    partition_key text NOT NULL,
    summary text DEFAULT ''::text NOT NULL,
    lines text[] DEFAULT '{}'::text[] NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_profile_lines_ceiling CHECK ((cardinality(lines) <= 5000)),
    CONSTRAINT ck_profile_partition_nonempty CHECK ((partition_key <> ''::text)),
    CONSTRAINT ck_profile_summary_ceiling CHECK ((char_length(summary) <= 10000))
);

--
-- Name: TABLE profile; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.profile IS 'User profiles: a summary plus numbered body lines per personal partition';

--
-- Name: COLUMN profile.partition_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.profile.partition_key IS 'the user''s personal partition key';

--
-- Name: COLUMN profile.lines; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.profile.lines IS 'the body, one element per line; element i is line i (0-based) everywhere';

--
-- Name: COLUMN profile.version; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.profile.version IS '+1 per write; the compare-and-set of profile_save_v1';

--
-- Name: profile_history; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.profile_history (
    partition_key text NOT NULL,
    version integer NOT NULL,
    operation text NOT NULL,
    actor_kind text NOT NULL,
    actor text,
    cycle_id bigint,
    old_summary text NOT NULL,
    old_lines text[] NOT NULL,
    new_summary text NOT NULL,
    new_lines text[] NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_profile_history_actor_kind CHECK ((actor_kind = ANY (ARRAY['cli'::text, 'chat'::text, 'loop'::text]))),
    CONSTRAINT ck_profile_history_loop_cycle CHECK (((actor_kind <> 'loop'::text) OR (cycle_id IS NOT NULL)))
);

--
-- Name: TABLE profile_history; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.profile_history IS 'Profile changes, newest [profile] history_keep per profile, for revert';

--
-- Name: COLUMN profile_history.version; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.profile_history.version IS 'the profile''s version after it';

--
-- Name: COLUMN profile_history.operation; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.profile_history.operation IS 'what changed, e.g. append 2 lines / replace [0:1] -> [0:2] / revert to v3';

--
-- Name: COLUMN profile_history.actor_kind; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.profile_history.actor_kind IS 'cli | chat | loop';

--
-- Name: COLUMN profile_history.actor; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.profile_history.actor IS 'the operator (cli) or user id (chat) who made it';

--
-- Name: COLUMN profile_history.cycle_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.profile_history.cycle_id IS 'the L3 cycle (actor_kind loop)';

--
-- Name: reembed_job; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.reembed_job (
    id smallint DEFAULT 1 NOT NULL,
    target_fingerprint text NOT NULL,
    protocol text,
    model text,
    base_url text,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_reembed_job_single_row CHECK ((id = 1))
);

--
-- Name: TABLE reembed_job; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.reembed_job IS 'The re-embed in progress, if any: new vectors are staged beside the old ones';

--
-- Name: reembed_staging; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.reembed_staging (
    kind text NOT NULL,
    row_id text NOT NULL,
    fingerprint text NOT NULL,
    embedding public.vector NOT NULL,
    source_updated_at timestamp with time zone NOT NULL,
    CONSTRAINT ck_reembed_staging_kind CHECK ((kind = ANY (ARRAY['memory'::text, 'knowledge'::text])))
);

--
-- Name: TABLE reembed_staging; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.reembed_staging IS 'New vectors of an online re-embed, written in batches, switched in one transaction';

--
-- Name: COLUMN reembed_staging.kind; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.reembed_staging.kind IS 'memory | knowledge';

--
-- Name: COLUMN reembed_staging.source_updated_at; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.reembed_staging.source_updated_at IS 'updated_at of the row when its text was embedded; a later edit invalidates it';

--
-- Name: store_meta; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.store_meta (
    id smallint DEFAULT 1 NOT NULL,
    embed_fingerprint text,
    embed_protocol text,
    embed_model text,
    embed_base_url text,
    embed_dim integer,
    key_format_version integer,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_store_meta_single_row CHECK ((id = 1))
);

--
-- Name: TABLE store_meta; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.store_meta IS 'One row: which embedding model the vectors belong to, and the key format';

--
-- Name: COLUMN store_meta.embed_fingerprint; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.store_meta.embed_fingerprint IS 'sha256(protocol|model|base_url) of the stored vectors';

--
-- Name: COLUMN store_meta.key_format_version; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.store_meta.key_format_version IS '2 = uni_id keys (reference §2.5)';

--
-- Name: sweep_change; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.sweep_change (
    seq bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    actor_kind text NOT NULL,
    actor_id text,
    note text,
    partition_keys text[] NOT NULL,
    memory_ids text[] NOT NULL,
    ops text[] NOT NULL,
    contents text[] NOT NULL,
    tags text[] NOT NULL,
    importances smallint[] NOT NULL,
    categories text[] NOT NULL,
    scopes text[] NOT NULL,
    sources text[] NOT NULL,
    new_importances smallint[] NOT NULL,
    new_sources text[] NOT NULL,
    CONSTRAINT ck_sweep_change_actor_kind CHECK ((actor_kind = ANY (ARRAY['person'::text, 'llm'::text, 'extraction'::text, 'l3'::text, 'import'::text, 'system'::text]))),
    CONSTRAINT ck_sweep_change_ops CHECK ((ops <@ ARRAY['update'::text, 'delete'::text, 'merge'::text, 'tag'::text]))
);
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN partition_keys SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN memory_ids SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN ops SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN contents SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN tags SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN importances SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN categories SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN scopes SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN sources SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN new_importances SET STORAGE EXTERNAL;
ALTER TABLE ONLY amrita_memory.sweep_change ALTER COLUMN new_sources SET STORAGE EXTERNAL;

--
-- Name: TABLE sweep_change; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.sweep_change IS 'The sweep''s change history: one row per batch, one array element per memory';

--
-- Name: COLUMN sweep_change.actor_kind; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_change.actor_kind IS 'system | person | ... as memory_change';

--
-- Name: COLUMN sweep_change.ops; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_change.ops IS 'update | tag | delete | merge each';

--
-- Name: COLUMN sweep_change.tags; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_change.tags IS 'each the text of a memory''s text[]';

--
-- Name: COLUMN sweep_change.new_importances; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_change.new_importances IS 'each the importance after (NULL: purged)';

--
-- Name: COLUMN sweep_change.new_sources; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_change.new_sources IS 'each the source after (NULL: purged)';

--
-- Name: sweep_change_entry; Type: VIEW; Schema: amrita_memory; Owner: -
--

CREATE VIEW amrita_memory.sweep_change_entry AS
 SELECT u.partition_key,
    u.memory_id,
    s.seq,
    s.at,
    s.actor_kind,
    s.actor_id,
    u.op,
    amrita_memory.memory_fields_v2(u.content, (u.tags)::text[], u.importance, u.category, u.scope, u.source) AS before,
        CASE
            WHEN (u.new_importance IS NOT NULL) THEN amrita_memory.memory_fields_v2(u.content, (u.tags)::text[], u.new_importance, u.category, u.scope, u.new_source)
            ELSE NULL::jsonb
        END AS after,
    s.note,
    s.memory_ids
   FROM (amrita_memory.sweep_change s
     CROSS JOIN LATERAL UNNEST(s.partition_keys, s.memory_ids, s.ops, s.contents, s.tags, s.importances, s.categories, s.scopes, s.sources, s.new_importances, s.new_sources) u(partition_key, memory_id, op, content, tags, importance, category, scope, source, new_importance, new_source));

--
-- Name: VIEW sweep_change_entry; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON VIEW amrita_memory.sweep_change_entry IS 'The sweep''s batch rows (sweep_change), one row per memory changed, as memory_change rows (before / after jsonb); filter on memory_ids to use the GIN index.';

--
-- Name: sweep_state; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.sweep_state (
    id smallint DEFAULT 1 NOT NULL,
    cursor_id text DEFAULT ''::text NOT NULL,
    passes integer DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    trimmed_seq bigint DEFAULT 0 NOT NULL,
    trimmed_keep integer,
    cursor_key text DEFAULT ''::text NOT NULL,
    CONSTRAINT ck_sweep_state_single_row CHECK ((id = 1))
);

--
-- Name: TABLE sweep_state; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.sweep_state IS 'The sweep''s persisted keyset cursor, so every row is visited over successive runs';

--
-- Name: COLUMN sweep_state.cursor_id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_state.cursor_id IS 'unused since 0057_retire_release12 (the retired id-order sweep''s cursor); kept while the previous release''s restore resets it';

--
-- Name: COLUMN sweep_state.passes; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_state.passes IS 'completed full passes';

--
-- Name: COLUMN sweep_state.trimmed_seq; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_state.trimmed_seq IS 'the history''s last seq when trim_history_v2 last ran (it walks past it)';

--
-- Name: COLUMN sweep_state.trimmed_keep; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_state.trimmed_keep IS 'the changes per memory it kept then (NULL: never ran)';

--
-- Name: COLUMN sweep_state.cursor_key; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.sweep_state.cursor_key IS 'partition_key/id of the last memory swept (sweep_batch_v8, primary key order); '''' = start';

--
-- Name: token_usage; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.token_usage (
    target_key text NOT NULL,
    id bigint NOT NULL,
    cycle_id bigint NOT NULL,
    purpose text NOT NULL,
    model text DEFAULT ''::text NOT NULL,
    prompt_tokens integer DEFAULT 0 NOT NULL,
    completion_tokens integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_token_usage_purpose CHECK ((purpose = ANY (ARRAY['step'::text, 'send'::text, 'summary'::text])))
);

--
-- Name: TABLE token_usage; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.token_usage IS 'Tokens of every LLM call an L3 cycle made (ReAct steps, proactive messages, session summaries), as the endpoint reported them';

--
-- Name: COLUMN token_usage.purpose; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.token_usage.purpose IS 'step | send | summary';

--
-- Name: token_usage_id_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.token_usage ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.token_usage_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: web_login_failure; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.web_login_failure (
    id bigint NOT NULL,
    client text NOT NULL,
    at timestamp with time zone NOT NULL
);

--
-- Name: TABLE web_login_failure; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.web_login_failure IS 'Failed admin page logins, counted by every process for the rate limit';

--
-- Name: COLUMN web_login_failure.client; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.web_login_failure.client IS 'the client address';

--
-- Name: web_login_failure_id_seq; Type: SEQUENCE; Schema: amrita_memory; Owner: -
--

ALTER TABLE amrita_memory.web_login_failure ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME amrita_memory.web_login_failure_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: web_session; Type: TABLE; Schema: amrita_memory; Owner: -
--

CREATE TABLE amrita_memory.web_session (
    id text NOT NULL,
    role text NOT NULL,
    name text NOT NULL,
    password_fp text NOT NULL,
    client text,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT ck_web_session_role CHECK ((role = ANY (ARRAY['admin'::text, 'superuser'::text])))
);

--
-- Name: TABLE web_session; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON TABLE amrita_memory.web_session IS 'Logged-in admin page sessions: revocable server-side';

--
-- Name: COLUMN web_session.id; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.web_session.id IS 'the random id the cookie carries';

--
-- Name: COLUMN web_session.role; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.web_session.role IS 'admin | superuser';

--
-- Name: COLUMN web_session.name; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.web_session.name IS 'the name given at login';

--
-- Name: COLUMN web_session.password_fp; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.web_session.password_fp IS 'fingerprint of the password hash logged in with (a change ends the session)';

--
-- Name: COLUMN web_session.client; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.web_session.client IS 'the client address at login';

--
-- Name: COLUMN web_session.revoked_at; Type: COMMENT; Schema: amrita_memory; Owner: -
--

COMMENT ON COLUMN amrita_memory.web_session.revoked_at IS 'set by logout or log out everywhere';

--
-- Name: activity_heatmap pk_activity_heatmap; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.activity_heatmap
    ADD CONSTRAINT pk_activity_heatmap PRIMARY KEY (user_key, weekday, slot);

--
-- Name: admin_audit pk_admin_audit; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.admin_audit
    ADD CONSTRAINT pk_admin_audit PRIMARY KEY (id);

--
-- Name: ann_index pk_ann_index; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.ann_index
    ADD CONSTRAINT pk_ann_index PRIMARY KEY (partition_key, dim);

--
-- Name: backup_schedule pk_backup_schedule; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.backup_schedule
    ADD CONSTRAINT pk_backup_schedule PRIMARY KEY (id);

--
-- Name: chat_log pk_chat_log; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.chat_log
    ADD CONSTRAINT pk_chat_log PRIMARY KEY (session_key, id);

--
-- Name: consolidation_cycle pk_consolidation_cycle; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.consolidation_cycle
    ADD CONSTRAINT pk_consolidation_cycle PRIMARY KEY (target_key, id);

--
-- Name: extraction_run pk_extraction_run; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.extraction_run
    ADD CONSTRAINT pk_extraction_run PRIMARY KEY (session_key, id);

--
-- Name: job pk_job; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.job
    ADD CONSTRAINT pk_job PRIMARY KEY (id);

--
-- Name: knowledge pk_knowledge; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.knowledge
    ADD CONSTRAINT pk_knowledge PRIMARY KEY (kid);

--
-- Name: knowledge_suggestion pk_knowledge_suggestion; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.knowledge_suggestion
    ADD CONSTRAINT pk_knowledge_suggestion PRIMARY KEY (id);

--
-- Name: l3_state pk_l3_state; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.l3_state
    ADD CONSTRAINT pk_l3_state PRIMARY KEY (target_key);

--
-- Name: lease pk_lease; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.lease
    ADD CONSTRAINT pk_lease PRIMARY KEY (kind, lease_key);

--
-- Name: loaded_scope pk_loaded_scope; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.loaded_scope
    ADD CONSTRAINT pk_loaded_scope PRIMARY KEY (chat_key, scope_key);

--
-- Name: memo pk_memo; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.memo
    ADD CONSTRAINT pk_memo PRIMARY KEY (partition_key);

--
-- Name: memory pk_memory; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.memory
    ADD CONSTRAINT pk_memory PRIMARY KEY (partition_key, id);

--
-- Name: memory_access pk_memory_access; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.memory_access
    ADD CONSTRAINT pk_memory_access PRIMARY KEY (partition_key, memory_id, seq);

--
-- Name: memory_change pk_memory_change; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.memory_change
    ADD CONSTRAINT pk_memory_change PRIMARY KEY (partition_key, memory_id, seq);

--
-- Name: paused_partition pk_paused_partition; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.paused_partition
    ADD CONSTRAINT pk_paused_partition PRIMARY KEY (partition_key);

--
-- Name: pending_message pk_pending_message; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.pending_message
    ADD CONSTRAINT pk_pending_message PRIMARY KEY (target_key, id);

--
-- Name: permission_grant pk_permission_grant; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.permission_grant
    ADD CONSTRAINT pk_permission_grant PRIMARY KEY (user_id, node);

--
-- Name: profile pk_profile; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.profile
    ADD CONSTRAINT pk_profile PRIMARY KEY (partition_key);

--
-- Name: profile_history pk_profile_history; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.profile_history
    ADD CONSTRAINT pk_profile_history PRIMARY KEY (partition_key, version);

--
-- Name: reembed_job pk_reembed_job; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.reembed_job
    ADD CONSTRAINT pk_reembed_job PRIMARY KEY (id);

--
-- Name: reembed_staging pk_reembed_staging; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.reembed_staging
    ADD CONSTRAINT pk_reembed_staging PRIMARY KEY (kind, row_id);

--
-- Name: store_meta pk_store_meta; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.store_meta
    ADD CONSTRAINT pk_store_meta PRIMARY KEY (id);

--
-- Name: sweep_change pk_sweep_change; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.sweep_change
    ADD CONSTRAINT pk_sweep_change PRIMARY KEY (seq);

--
-- Name: sweep_state pk_sweep_state; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.sweep_state
    ADD CONSTRAINT pk_sweep_state PRIMARY KEY (id);

--
-- Name: token_usage pk_token_usage; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.token_usage
    ADD CONSTRAINT pk_token_usage PRIMARY KEY (target_key, id);

--
-- Name: web_login_failure pk_web_login_failure; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.web_login_failure
    ADD CONSTRAINT pk_web_login_failure PRIMARY KEY (id);

--
-- Name: web_session pk_web_session; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.web_session
    ADD CONSTRAINT pk_web_session PRIMARY KEY (id);

--
-- Name: ann_index uq_ann_index_index_name; Type: CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.ann_index
    ADD CONSTRAINT uq_ann_index_index_name UNIQUE (index_name);

--
-- Name: ix_admin_audit_at; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_admin_audit_at ON amrita_memory.admin_audit USING btree (at);

--
-- Name: ix_admin_audit_partition_key_at; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_admin_audit_partition_key_at ON amrita_memory.admin_audit USING btree (partition_key, at);

--
-- Name: ix_job_started_at; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_job_started_at ON amrita_memory.job USING btree (started_at);

--
-- Name: ix_knowledge_kid_untokenized; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_knowledge_kid_untokenized ON amrita_memory.knowledge USING btree (kid) WHERE (search_tokens IS NULL);

--
-- Name: ix_knowledge_search_tokens; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_knowledge_search_tokens ON amrita_memory.knowledge USING gin (search_tokens);

--
-- Name: ix_knowledge_suggestion_author_id_created_at; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_knowledge_suggestion_author_id_created_at ON amrita_memory.knowledge_suggestion USING btree (author_id, created_at);

--
-- Name: ix_knowledge_suggestion_status_id; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_knowledge_suggestion_status_id ON amrita_memory.knowledge_suggestion USING btree (status, id);

--
-- Name: ix_memory_change_partition_key_at; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_memory_change_partition_key_at ON amrita_memory.memory_change USING btree (partition_key, at) WHERE (after IS NULL);

--
-- Name: ix_memory_id_untokenized; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_memory_id_untokenized ON amrita_memory.memory USING btree (id) WHERE (search_tokens IS NULL);

--
-- Name: ix_memory_knowledge; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_memory_knowledge ON amrita_memory.memory USING btree (partition_key) WHERE (category = 'knowledge'::text);

--
-- Name: ix_memory_partition_key_created_at_id; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_memory_partition_key_created_at_id ON amrita_memory.memory USING btree (partition_key, created_at, id);

--
-- Name: ix_sweep_change_memory_ids; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_sweep_change_memory_ids ON amrita_memory.sweep_change USING gin (memory_ids);

--
-- Name: ix_token_usage_target_key_cycle_id; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_token_usage_target_key_cycle_id ON amrita_memory.token_usage USING btree (target_key, cycle_id);

--
-- Name: ix_web_login_failure_client_at; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_web_login_failure_client_at ON amrita_memory.web_login_failure USING btree (client, at);

--
-- Name: ix_web_session_expires_at; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE INDEX ix_web_session_expires_at ON amrita_memory.web_session USING btree (expires_at);

--
-- Name: ux_job_one_running_per_kind; Type: INDEX; Schema: amrita_memory; Owner: -
--

CREATE UNIQUE INDEX ux_job_one_running_per_kind ON amrita_memory.job USING btree (kind) WHERE (state = 'running'::text);

--
-- Name: memory memory_person_takes_over; Type: TRIGGER; Schema: amrita_memory; Owner: -
--

CREATE TRIGGER memory_person_takes_over BEFORE UPDATE ON amrita_memory.memory FOR EACH ROW WHEN (old.source = 'auto'::text AND current_setting('amrita_memory.actor'::text, true) ~~ 'person:%'::text AND (old.content, old.tags, old.importance, old.category, old.scope) IS DISTINCT FROM (new.content, new.tags, new.importance, new.category, new.scope)) EXECUTE FUNCTION amrita_memory.person_takes_over_v1();

--
-- Name: memo pause_memo; Type: TRIGGER; Schema: amrita_memory; Owner: -
--

CREATE TRIGGER pause_memo BEFORE INSERT OR DELETE OR UPDATE ON amrita_memory.memo FOR EACH ROW EXECUTE FUNCTION amrita_memory.refuse_paused_write_v1();

--
-- Name: profile pause_profile; Type: TRIGGER; Schema: amrita_memory; Owner: -
--

CREATE TRIGGER pause_profile BEFORE INSERT OR DELETE OR UPDATE ON amrita_memory.profile FOR EACH ROW EXECUTE FUNCTION amrita_memory.refuse_paused_write_v1();

--
-- Name: memory trail_memory_delete; Type: TRIGGER; Schema: amrita_memory; Owner: -
--

CREATE TRIGGER trail_memory_delete AFTER DELETE ON amrita_memory.memory FOR EACH ROW WHEN ((current_setting('amrita_memory.history_by_writer'::text, true) IS DISTINCT FROM 'on'::text)) EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();

--
-- Name: memory trail_memory_insert; Type: TRIGGER; Schema: amrita_memory; Owner: -
--

CREATE TRIGGER trail_memory_insert AFTER INSERT ON amrita_memory.memory FOR EACH ROW WHEN ((current_setting('amrita_memory.history_by_writer'::text, true) IS DISTINCT FROM 'on'::text)) EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();

--
-- Name: memory trail_memory_update; Type: TRIGGER; Schema: amrita_memory; Owner: -
--

CREATE TRIGGER trail_memory_update AFTER UPDATE ON amrita_memory.memory FOR EACH ROW WHEN (current_setting('amrita_memory.history_by_writer'::text, true) IS DISTINCT FROM 'on'::text AND (old.content, old.tags, old.importance, old.category, old.scope, old.partition_key) IS DISTINCT FROM (new.content, new.tags, new.importance, new.category, new.scope, new.partition_key)) EXECUTE FUNCTION amrita_memory.record_memory_change_row_v1();

--
-- Name: token_usage fk_token_usage_target_key_consolidation_cycle; Type: FK CONSTRAINT; Schema: amrita_memory; Owner: -
--

ALTER TABLE ONLY amrita_memory.token_usage
    ADD CONSTRAINT fk_token_usage_target_key_consolidation_cycle FOREIGN KEY (target_key, cycle_id) REFERENCES amrita_memory.consolidation_cycle(target_key, id) ON DELETE CASCADE;

--
-- PostgreSQL database dump complete
--
