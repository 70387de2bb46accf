-- 0062_sweep_blocks's downgrade, frozen with it (never edited): sweep_batch_v9: the decay sweep walks the heap by block ranges, its cursor a tid.

DROP FUNCTION amrita_memory.sweep_batch_v9(timestamp with time zone,double precision,double precision,integer,boolean,boolean,boolean,tid,tid,xid8);

