DROP FUNCTION IF EXISTS amrita_memory.claim_backup_slot_v1(timestamptz, text);
DROP FUNCTION IF EXISTS amrita_memory.reset_identity_v1(text);
DROP FUNCTION IF EXISTS amrita_memory.clear_table_v1(text);
DROP FUNCTION IF EXISTS amrita_memory.import_rows_v1(text, jsonb);
DROP FUNCTION IF EXISTS amrita_memory.export_table_v1(text, text[]);
DROP FUNCTION IF EXISTS amrita_memory.table_digest_v1(text, text[]);
