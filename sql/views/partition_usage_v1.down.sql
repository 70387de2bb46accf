DROP VIEW IF EXISTS amrita_memory.partition_usage;
