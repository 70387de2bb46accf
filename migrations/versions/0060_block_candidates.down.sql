-- 0060_block_candidates's downgrade, frozen with it (never edited): memory_block_v3: the block's candidates read per partition (block_candidates_v1), the first p_limit of each, then merged — the same rows as memory_block_v2; global and the large partitions read through their own block index (ix_memory_top_*, built at run time by maintain_ann_indexes with [injection] enabled) by a statement planned for the partition, since a generic plan cannot see a partial index.

DROP FUNCTION amrita_memory.block_candidates_v1(text[],integer);

DROP FUNCTION amrita_memory.memory_block_v3(text[],text,text[],integer,vector,integer,text,bigint);

