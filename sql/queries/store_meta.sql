-- The one store_meta row (id = 1, inserted by migration 0001): which embedding model made
-- the stored vectors and which format the partition keys are in. Every statement on it
-- is here, wrapped once in amrita_memory_pg/storage/store_meta.py. The model checks of
-- the writes (require_store_model_v1) read and record it inside the database as well.

-- name: read_store_meta
-- The whole row: fingerprint, protocol, model, base URL and dimension of the stored
-- vectors (NULL = never recorded), and the partition-key format version.
SELECT embed_fingerprint, embed_protocol, embed_model, embed_base_url, embed_dim,
       key_format_version
  FROM amrita_memory.store_meta
 WHERE id = 1;

-- name: write_store_model
-- Record $1-$4 (fingerprint, protocol, model, base URL) and dimension $5 as the store's
-- model. $6 keeps a recorded dimension when $5 is NULL (recording a model without having
-- embedded anything); $7 clears key_format_version so that the keys are migrated again
-- (after a restore, whose rows may carry legacy keys).
UPDATE amrita_memory.store_meta
   SET embed_fingerprint = $1, embed_protocol = $2, embed_model = $3, embed_base_url = $4,
       embed_dim = CASE WHEN $6::boolean THEN coalesce($5, embed_dim) ELSE $5 END,
       key_format_version = CASE WHEN $7::boolean THEN NULL ELSE key_format_version END,
       updated_at = now()
 WHERE id = 1;

-- name: write_key_format_version
-- The partition keys are now in format $1 (domain.keys.KEY_FORMAT_VERSION).
UPDATE amrita_memory.store_meta
   SET key_format_version = $1, updated_at = now()
 WHERE id = 1;
