-- The knowledge base, its suggestion queue and permission grants
-- (amrita_memory_pg/storage/knowledge.py, one typed wrapper each). Entries are read and
-- written through the functions of sql/functions/knowledge.sql, which check the
-- configured limits in the write itself and report refusals in a status column.

-- name: knowledge_create
-- Create entry $1 (title $2, summary $3, body $4, summary vector $5 of fingerprint $6)
-- unless the body exceeds $7 characters; $8 = now; $9 = the search tokens of title +
-- summary + body (domain/tokens.py); $10-$12 = the embedder's protocol, model and base
-- URL (recorded by the store's first write). status created | too_long | exists.
SELECT status, kid, total_lines, char_count
  FROM amrita_memory.knowledge_create_v2($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12);

-- name: knowledge_update
-- Update entry $1: title $2, summary $3, body $4 (NULL = keep); $5/$6 = the line range
-- the body replaces (NULL start = the whole body); $7/$8 = the new summary's vector and
-- fingerprint; $9 = max body characters; $10 = now; $11-$13 = the embedder's protocol,
-- model and base URL. The entry's text after the update comes back (title, summary,
-- body; NULL when refused) and its search tokens are cleared: the caller stores the new
-- ones with knowledge_set_tokens in the same transaction.
SELECT status, kid, total_lines, char_count, title, summary, body
  FROM amrita_memory.knowledge_update_v2($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);

-- name: knowledge_set_tokens
-- Store the search tokens $5 of entry $1 made from title $2, summary $3, body $4, unless
-- its text changed since; $6 true = replace existing tokens, false = fill in missing ones.
SELECT amrita_memory.knowledge_set_tokens_v1($1, $2, $3, $4, $5, $6) AS stored;

-- name: knowledge_delete
-- Delete entry $1; false when there was none.
SELECT amrita_memory.knowledge_delete_v1($1) AS deleted;

-- name: knowledge_list
-- Every entry, oldest first, with line and character counts (no bodies).
SELECT kid, title, summary, total_lines, char_count, created_at, updated_at
  FROM amrita_memory.knowledge_list_v1();

-- name: knowledge_read
-- Lines [$2, $3) of entry $1 (NULL = from the start / to the end), clamped; no row when
-- the kid is unknown.
SELECT kid, title, summary, body_lines, total_lines, range_start, range_end, created_at, updated_at
  FROM amrita_memory.knowledge_read_v1($1, $2, $3);

-- name: knowledge_body
-- The whole body of entry $1 (Markdown export and `knowledge show`).
SELECT kid, title, summary, body, created_at, updated_at
  FROM amrita_memory.knowledge
 WHERE kid = $1;

-- name: knowledge_search
-- The $4 best entries for query vector $1 (NULL in keyword mode) and search tokens $2 by
-- mode $3 (vector | keyword | hybrid); $5 fusion rrf | weighted, $6 the RRF k, $7 the
-- keyword weight. distance = L2 of the summary vector (NULL: keyword mode or another
-- dimension), keyword_score = BM25, score = what the mode ranks by. SQLSTATE 22023 for a
-- bad mode.
SELECT kid, title, summary, distance, keyword_score, score
  FROM amrita_memory.knowledge_search_v2($1, $2, $3, $4, $5, $6, $7);

-- name: backfill_knowledge_tokens
-- The token backfill's write (maintenance/tokens.py): knowledge_set_tokens' arguments; $6
-- false = fill in missing tokens only, true = a re-tokenization (--all).
SELECT amrita_memory.knowledge_set_tokens_v1($1, $2, $3, $4, $5, $6) AS stored;

-- name: untokenized_knowledge
-- The token backfill (maintenance/tokens.py): up to $2 entries without search tokens
-- after kid $1, in kid order (keyset on the partial index ix_knowledge_kid_untokenized).
SELECT kid, title, summary, body
  FROM amrita_memory.knowledge
 WHERE kid > $1 AND search_tokens IS NULL
 ORDER BY kid
 LIMIT $2;

-- name: knowledge_page_for_tokens
-- A re-tokenization of every entry: up to $2 entries after kid $1, in kid order.
SELECT kid, title, summary, body
  FROM amrita_memory.knowledge
 WHERE kid > $1
 ORDER BY kid
 LIMIT $2;

-- name: count_untokenized_knowledge
-- Entries still without search tokens (0 once the backfill is done).
SELECT count(*)::integer AS n
  FROM amrita_memory.knowledge
 WHERE search_tokens IS NULL;

-- name: knowledge_exists
-- Whether entry $1 exists (a suggestion to update it must name a real entry).
SELECT EXISTS (SELECT 1 FROM amrita_memory.knowledge WHERE kid = $1) AS found;

-- name: knowledge_suggest
-- Queue a suggestion ($1 action, $2 kid, $3 title, $4 summary, $5 body, $6 reason, $7
-- author) under the bound $8 and the rate limit $9 per $10 seconds; $11 = now.
SELECT status, id, pending
  FROM amrita_memory.knowledge_suggest_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- name: knowledge_claim_suggestions
-- Claim the pending suggestions (and claims older than $3) for cycle $1 at $2; every
-- suggestion the cycle holds, oldest first.
SELECT id, action, kid, title, summary, body, reason, author_id, created_at
  FROM amrita_memory.knowledge_claim_suggestions_v1($1, $2, $3);

-- name: knowledge_complete_suggestions
-- Cycle $1 succeeded at $2: its claims are done; done rows handled before $3 are pruned.
SELECT amrita_memory.knowledge_complete_suggestions_v1($1, $2, $3) AS done;

-- name: knowledge_release_suggestions
-- Cycle $1 failed: its claims are pending again.
SELECT amrita_memory.knowledge_release_suggestions_v1($1) AS released;

-- name: knowledge_pending_suggestions
-- Unhandled suggestions (pending or claimed), oldest first, up to $1 (the loop's
-- context shows the count and the first ids; `status` and the CLI list them).
SELECT id, action, kid, title, summary, reason, author_id, status, claimed_by_cycle, created_at,
       count(*) OVER ()::integer AS total
  FROM amrita_memory.knowledge_suggestion
 WHERE status IN ('pending', 'claimed')
 ORDER BY id
 LIMIT $1;

-- name: knowledge_suggestion_get
-- One suggestion by id $1 with its body and queue status (the admin page's detail and
-- what an accept writes); no row when it was pruned or never existed.
SELECT id, action, kid, title, summary, body, reason, author_id, status, claimed_by_cycle,
       created_at
  FROM amrita_memory.knowledge_suggestion
 WHERE id = $1;

-- name: knowledge_suggestion_take
-- An operator handles pending suggestion $1 at $2 (accepted or rejected on the admin
-- page): it leaves the queue as done, and stays counted by the rate limit until pruned.
-- Only a pending one: a suggestion claimed by a running L3 cycle is the cycle's. true when taken.
WITH taken AS (
    UPDATE amrita_memory.knowledge_suggestion
       SET status = 'done', handled_at = $2
     WHERE id = $1 AND status = 'pending'
    RETURNING 1)
SELECT EXISTS (SELECT 1 FROM taken) AS taken;

-- name: knowledge_suggestion_untake
-- Put suggestion $1 back in the queue after an accept whose write failed (the embedder
-- was down, the entry to update was deleted meanwhile): pending again, as before.
UPDATE amrita_memory.knowledge_suggestion
   SET status = 'pending', handled_at = NULL
 WHERE id = $1 AND status = 'done';

-- name: knowledge_counts
-- Entries, unhandled suggestions and grants, for `status`.
SELECT (SELECT count(*) FROM amrita_memory.knowledge)::integer AS entries,
       (SELECT count(*) FROM amrita_memory.knowledge_suggestion
         WHERE status IN ('pending', 'claimed'))::integer AS suggestions,
       (SELECT count(*) FROM amrita_memory.permission_grant)::integer AS grants;

-- name: grant_permission
-- Grant node $2 to user $1 (by $3, at $4); true when it was not granted before.
WITH added AS (
    INSERT INTO amrita_memory.permission_grant (user_id, node, granted_by, created_at)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (user_id, node) DO NOTHING
    RETURNING 1)
SELECT EXISTS (SELECT 1 FROM added) AS added;

-- name: revoke_permission
-- Revoke node $2 from user $1; true when it was granted.
WITH gone AS (
    DELETE FROM amrita_memory.permission_grant WHERE user_id = $1 AND node = $2 RETURNING 1)
SELECT EXISTS (SELECT 1 FROM gone) AS removed;

-- name: has_permission
-- Whether user $1 holds node $2 (a primary-key probe on every knowledge read).
SELECT EXISTS (
    SELECT 1 FROM amrita_memory.permission_grant WHERE user_id = $1 AND node = $2) AS granted;

-- name: list_permissions
-- Every grant, by user.
SELECT user_id, node, granted_by, created_at
  FROM amrita_memory.permission_grant
 ORDER BY user_id, node;
