DROP FUNCTION IF EXISTS amrita_memory.job_cancel_v1(text, text);
DROP FUNCTION IF EXISTS amrita_memory.job_finish_v1(text, text, text, text, bigint, bigint, text, text, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.job_beat_v1(text, text, text, bigint, bigint, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.job_start_v1(text, text, text, text, double precision, timestamptz);
