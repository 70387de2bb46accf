DROP FUNCTION IF EXISTS amrita_memory.lease_take_over_v1(text, text, text, text, text, double precision, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.lease_release_v1(text, text, text);
DROP FUNCTION IF EXISTS amrita_memory.lease_renew_v1(text, text, text, double precision, timestamptz);
DROP FUNCTION IF EXISTS amrita_memory.lease_acquire_v1(text, text, text, text, double precision, timestamptz);
