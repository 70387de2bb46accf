-- 0059_lineage's downgrade, frozen with it (never edited): lineage of derived rows, forgetting that reaches them, an erasure ledger.

DROP FUNCTION amrita_memory.erase_partition_v1(text,text,timestamp with time zone,boolean,boolean);

DROP FUNCTION amrita_memory.erasure_ledger_apply_v1(timestamp with time zone);

DROP FUNCTION amrita_memory.erasure_subject_v1(text);

DROP FUNCTION amrita_memory.forget_cascade_v1(jsonb,text,boolean,text,jsonb,timestamp with time zone,boolean);

DROP FUNCTION amrita_memory.forget_memories_v1(text,text[],text[],bigint[],text,timestamp with time zone,boolean);

DROP FUNCTION amrita_memory.json_mentions_v1(jsonb,text[]);

DROP FUNCTION amrita_memory.lineage_made_from_v1(text,text,text);

DROP FUNCTION amrita_memory.lineage_text_v1(text,text,text);

DROP FUNCTION amrita_memory.lineage_used_by_v1(text,text,text);

DROP FUNCTION amrita_memory.memo_sentences_v1(text);

DROP FUNCTION amrita_memory.sweep_change_forget_v1(text[],text[]);

DROP FUNCTION amrita_memory.text_id_v1(text);

