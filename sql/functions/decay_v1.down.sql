DROP FUNCTION IF EXISTS amrita_memory.sweep_action_v1(integer, float8, float8, float8);
DROP FUNCTION IF EXISTS amrita_memory.demoted_importance_v1(integer);
DROP FUNCTION IF EXISTS amrita_memory.tier_days_v1(integer, float8, float8);
DROP FUNCTION IF EXISTS amrita_memory.decay_score_v1(float8, float8, integer, float8, float8, float8);
DROP FUNCTION IF EXISTS amrita_memory.similarity_v1(float8);
DROP FUNCTION IF EXISTS amrita_memory.decay_factor_v1(float8, float8, float8);
DROP FUNCTION IF EXISTS amrita_memory.half_life_days_v1(float8, integer, float8);
DROP FUNCTION IF EXISTS amrita_memory.age_days_v1(timestamptz, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.importance_rank_v1(integer);
