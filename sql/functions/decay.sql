-- Decay math. Twin of amrita_memory_pg/domain/decay.py; a property test checks both
-- agree to 1e-9 (tests/integration/test_decay_sql_parity.py).
--
-- Units: ages and half-lives in days (float8); distances are squared L2 (Chroma's
-- "l2"), so the similarity 1/(1+d) matches the reference plugin's numbers.
-- Every function takes time as an argument (p_now), never now(), so sweeps and
-- retrieval are reproducible and testable. All are IMMUTABLE single-expression SQL
-- functions, which the planner inlines into the retrieval query.


-- Tier rank of a 1–10 importance: 1–3 → 0 (low), 4–7 → 1 (medium), 8–10 → 2 (high).
-- Out-of-range values count as medium, like the reference's unknown label.
CREATE OR REPLACE FUNCTION amrita_memory.importance_rank_v1(p_importance integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_importance BETWEEN 1 AND 3 THEN 0
        WHEN p_importance BETWEEN 8 AND 10 THEN 2
        ELSE 1
    END
$$;
COMMENT ON FUNCTION amrita_memory.importance_rank_v1(integer) IS
'Tier rank of a 1-10 importance: 1-3 -> 0 (low), 4-7 -> 1 (medium), 8-10 -> 2 (high); out of range counts as medium.';


-- Days from p_created to p_now; a future timestamp counts as 0.
CREATE OR REPLACE FUNCTION amrita_memory.age_days_v1(p_created timestamptz, p_now timestamptz)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT greatest(extract(epoch FROM (p_now - p_created))::float8 / 86400.0, 0.0)
$$;
COMMENT ON FUNCTION amrita_memory.age_days_v1(timestamptz, timestamptz) IS
'Days (float8) from p_created to p_now; a future timestamp counts as 0.';


-- Half-life (days) = base × (1 + boost × rank). Defaults: low 30, medium 60, high 90.
CREATE OR REPLACE FUNCTION amrita_memory.half_life_days_v1(
    p_base_days float8, p_importance integer, p_boost float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT p_base_days * (1.0 + p_boost * amrita_memory.importance_rank_v1(p_importance))
$$;
COMMENT ON FUNCTION amrita_memory.half_life_days_v1(float8, integer, float8) IS
'Half-life in days = base x (1 + boost x importance_rank). Defaults: low 30, medium 60, high 90.';


-- max(0.5 ^ (age / half_life), floor); 1 when half_life ≤ 0. The exponent is clamped
-- at 1000 halvings (0.5^1000 ≈ 9e-302) because float8 power() raises on underflow and
-- the division raises on overflow/underflow instead of returning infinity / 0; the
-- comparisons come first so extreme ratios never divide.
CREATE OR REPLACE FUNCTION amrita_memory.decay_factor_v1(
    p_age_days float8, p_half_life float8, p_floor float8)
RETURNS float8
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
COMMENT ON FUNCTION amrita_memory.decay_factor_v1(float8, float8, float8) IS
'max(0.5^(age_days/half_life_days), floor); 1 when half_life <= 0; exponent clamped at 1000 halvings (float8 underflow).';


-- 1 / (1 + max(d, 0)); a NULL distance counts as 0 (the reference's quirk).
CREATE OR REPLACE FUNCTION amrita_memory.similarity_v1(p_distance float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT 1.0 / (1.0 + greatest(coalesce(p_distance, 0.0), 0.0))
$$;
COMMENT ON FUNCTION amrita_memory.similarity_v1(float8) IS
'1 / (1 + max(squared L2 distance, 0)); a NULL distance counts as 0 (the reference''s quirk).';


-- The retrieval score: similarity × decay factor. This is the number results are
-- ordered by and reported as decay_score.
CREATE OR REPLACE FUNCTION amrita_memory.decay_score_v1(
    p_distance float8, p_age_days float8, p_importance integer,
    p_base_days float8, p_boost float8, p_floor float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT amrita_memory.similarity_v1(p_distance)
         * amrita_memory.decay_factor_v1(
               p_age_days,
               amrita_memory.half_life_days_v1(p_base_days, p_importance, p_boost),
               p_floor)
$$;
COMMENT ON FUNCTION amrita_memory.decay_score_v1(float8, float8, integer, float8, float8, float8) IS
'Retrieval score = similarity_v1(distance) x decay_factor_v1(age_days, half_life_days_v1(base, importance, boost), floor).';


-- Lifetime (days) of the importance's tier: low = the shorter bound, high = the longer,
-- medium = their geometric mean (25.0998 d for 7/90). Swapped bounds stay monotone.
CREATE OR REPLACE FUNCTION amrita_memory.tier_days_v1(
    p_importance integer, p_short_days float8, p_long_days float8)
RETURNS float8
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
COMMENT ON FUNCTION amrita_memory.tier_days_v1(integer, float8, float8) IS
'Lifetime in days of an importance tier: low = the shorter bound, high = the longer, medium = their geometric mean.';


-- The importance one tier down: high → 5 (medium), medium → 3 (low), low → NULL.
CREATE OR REPLACE FUNCTION amrita_memory.demoted_importance_v1(p_importance integer)
RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE amrita_memory.importance_rank_v1(p_importance)
        WHEN 2 THEN 5::smallint
        WHEN 1 THEN 3::smallint
        ELSE NULL::smallint
    END
$$;
COMMENT ON FUNCTION amrita_memory.demoted_importance_v1(integer) IS
'Importance one tier down: high -> 5, medium -> 3, low -> NULL (a low memory is purged, not demoted).';
