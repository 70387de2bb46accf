-- What the table declarations cannot say. The tables themselves are declared once, in
-- amrita_memory_pg/storage/pg/schema.py (SQLAlchemy metadata: what alembic autogenerate
-- compares); a fresh install creates them from it and then runs this file.
-- tests/migration/test_present_schema.py fails when this and the migrations disagree.


-- Vectors stay in their row. PostgreSQL starts toasting a row at 2 KB and pgvector's types
-- are EXTERNAL, so a 384-d vector (1.5 KB as vector; 0.8 KB as the halfvec stored now)
-- beside a long memory and its search tokens would be moved out of line and every search
-- would fetch it back through the TOAST index (measured with vector: reads 0.70x, hybrid
-- 0.72x of that). A row
-- is toasted only past 8,160 bytes (a row that fits a page stays whole), and then its text
-- first: the vector (MAIN) goes out of line only if the row still does not fit a page.
-- fillfactor 90: room on each page for HOT updates; the sweep's demotions change only
-- unindexed columns (importance, tier_since), so they touch no index, HNSW included.
ALTER TABLE amrita_memory.memory SET (fillfactor = 90, toast_tuple_target = 8160);
ALTER TABLE amrita_memory.memory ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE amrita_memory.knowledge SET (toast_tuple_target = 8160);
ALTER TABLE amrita_memory.knowledge ALTER COLUMN embedding SET STORAGE MAIN;

-- A partition's count row is rewritten by every write and delete of the partition:
-- fillfactor 50 leaves room on its page for the new version (a HOT update, no index entry).
ALTER TABLE amrita_memory.partition_count SET (fillfactor = 50);

-- The sweep's history arrays are stored uncompressed (EXTERNAL): a batch's row is written
-- once, by the sweep, and read per memory (memory_history_v1), so compressing it would
-- cost the sweep and save little.
ALTER TABLE amrita_memory.sweep_change
    ALTER COLUMN partition_keys SET STORAGE EXTERNAL,
    ALTER COLUMN memory_ids SET STORAGE EXTERNAL,
    ALTER COLUMN ops SET STORAGE EXTERNAL,
    ALTER COLUMN contents SET STORAGE EXTERNAL,
    ALTER COLUMN tags SET STORAGE EXTERNAL,
    ALTER COLUMN importances SET STORAGE EXTERNAL,
    ALTER COLUMN categories SET STORAGE EXTERNAL,
    ALTER COLUMN scopes SET STORAGE EXTERNAL,
    ALTER COLUMN sources SET STORAGE EXTERNAL,
    ALTER COLUMN new_importances SET STORAGE EXTERNAL,
    ALTER COLUMN new_sources SET STORAGE EXTERNAL;

-- The single-row tables start with their row: the code updates it, never inserts it.
INSERT INTO amrita_memory.store_meta (id) VALUES (1);
INSERT INTO amrita_memory.sweep_state (id) VALUES (1);
INSERT INTO amrita_memory.backup_schedule (id) VALUES (1);
