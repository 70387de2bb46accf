-- 0061_partition_count's downgrade, frozen with it (never edited): partition_count: the cap reads a kept per-partition row count instead of count(*).

DROP TRIGGER partition_count_delete ON amrita_memory.memory;

DROP TRIGGER partition_count_insert ON amrita_memory.memory;

DROP TRIGGER partition_count_truncate ON amrita_memory.memory;

DROP TRIGGER partition_count_update ON amrita_memory.memory;

DROP FUNCTION amrita_memory.import_memory_v2(text,text,text,text,text[],integer,timestamp with time zone,vector,text,timestamp with time zone,integer,boolean,text,text,text);

DROP FUNCTION amrita_memory.insert_memory_v7(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,text[],text,text,text);

DROP FUNCTION amrita_memory.partition_count_added_v1();

DROP FUNCTION amrita_memory.partition_count_check_v1(boolean);

DROP FUNCTION amrita_memory.partition_count_moved_v1();

DROP FUNCTION amrita_memory.partition_count_removed_v1();

DROP FUNCTION amrita_memory.partition_count_truncated_v1();

DROP FUNCTION amrita_memory.write_memory_v6(text,text,text,text[],integer,text,text,text,vector,text,timestamp with time zone,integer,double precision,text[],text,text,text);

