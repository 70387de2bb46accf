"""A migration for a change of the live SQL, written from the difference it makes:

    .venv/bin/python -m tests.support.sql_migration SLUG "what and why"

Two throwaway databases on an embedded server (or on ``AMRITA_MEMORY_TEST_DSN``'s server):
the chain (the baseline and every migration: the previous head) and the present (a fresh
install of ``sql/``). The functions, views and triggers that differ make the migration's
frozen SQL: ``<revision>.sql`` brings the chain to the live files (their text: the
definitions and comments as written), ``<revision>.down.sql`` brings it back (the chain's
definitions, from its catalogue). Tables are not compared here: their ``op.*`` calls go
where the module says (``storage/pg/schema.py``; alembic autogenerate shows them), and
``tests/migration/test_present_schema.py`` checks the whole.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
import textwrap
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from amrita_memory_pg.storage.pg import migrate
from amrita_memory_pg.storage.pg.install import live_files
from amrita_memory_pg.storage.pg.sqlfile import scan
from tests.support.pg import with_database
from tests.support.sql_usage import live_definitions

MODULE = '''\
"""{title}

Revision ID: {revision}
Revises: {down_revision}

{text}
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from amrita_memory_pg.storage.pg.migrate import run_sql_file

revision: str = "{revision}"
down_revision: str | None = "{down_revision}"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HERE = Path(__file__)


def upgrade() -> None:
    # table changes (op.*) go first: the definitions below may use them
    run_sql_file(HERE.with_suffix(".sql"))


def downgrade() -> None:
    run_sql_file(HERE.with_suffix(".down.sql"))
    # then the table changes undone (op.*)
'''

FROZEN = "-- {revision}'s {direction}, frozen with it (never edited): {what}.\n\n"


def next_revision(versions: Path, slug: str) -> tuple[str, str]:
    """(the new revision id, the head it follows): ids are ``NNNN_slug``, one chain."""
    from alembic.script import ScriptDirectory

    cfg = migrate.alembic_config()
    cfg.set_main_option("version_locations", str(versions))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    assert head is not None
    if not re.fullmatch(r"[a-z][a-z0-9_]*", slug):
        raise SystemExit(f"a migration's name is lower_case_with_underscores: {slug!r}")
    return f"{int(head[:4]) + 1:04d}_{slug}", head


def write_migration(
    versions: Path,
    slug: str,
    *,
    title: str,
    why: str,
    upgrade_sql: list[str],
    downgrade_sql: list[str],
    forward: str,
    backward: str,
    tool: str,
) -> Path:
    """The module ``NNNN_slug.py`` and its ``.sql`` / ``.down.sql`` under ``versions``."""
    revision, head = next_revision(versions, slug)
    module = versions / f"{revision}.py"
    for suffix, statements, direction in (
        (".sql", upgrade_sql, "upgrade"),
        (".down.sql", downgrade_sql, "downgrade"),
    ):
        header = FROZEN.format(what=title, revision=revision, direction=direction)
        body = "".join(s.rstrip().rstrip(";") + ";\n\n" for s in statements)
        module.with_suffix(suffix).write_text(header + body, encoding="utf-8")
    paragraphs = [
        why,
        f"{revision}.sql {forward}; {revision}.down.sql {backward}. Both are frozen with "
        f"this migration (written by {tool}).",
    ]
    text = "\n\n".join(textwrap.fill(p, width=90) for p in paragraphs if p)
    module.write_text(
        MODULE.format(
            # a docstring: a backslash of the text (psql's \\df+) stays one
            title=title.replace("\\", "\\\\"),
            revision=revision,
            down_revision=head,
            text=text.replace("\\", "\\\\"),
        ),
        encoding="utf-8",
    )
    return module


# ---------------------------------------------------------------- what differs

_FUNCTIONS = """
SELECT p.oid::regprocedure::text AS key, p.proname AS name, pg_get_functiondef(p.oid) AS sql,
       obj_description(p.oid, 'pg_proc') AS comment
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'amrita_memory'
"""
_VIEWS = """
SELECT c.relname AS key, c.relname AS name,
       'CREATE VIEW amrita_memory.' || quote_ident(c.relname) || ' AS' || E'\\n'
           || pg_get_viewdef(c.oid) AS sql,
       obj_description(c.oid, 'pg_class') AS comment
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'amrita_memory' AND c.relkind = 'v'
"""
_TRIGGERS = """
SELECT t.tgname || ' ON ' || c.relname AS key, t.tgname AS name,
       pg_get_triggerdef(t.oid) AS sql, obj_description(t.oid, 'pg_trigger') AS comment
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'amrita_memory' AND NOT t.tgisinternal
"""

Catalogue = dict[str, dict[str, tuple[str, str, str | None]]]


async def catalogue(dsn: str) -> Catalogue:
    """Functions, views and triggers of our schema: kind -> key -> (name, sql, comment)."""
    conn = await asyncpg.connect(dsn)
    try:
        return {
            kind: {r["key"]: (r["name"], r["sql"], r["comment"]) for r in await conn.fetch(sql)}
            for kind, sql in (("function", _FUNCTIONS), ("view", _VIEWS), ("trigger", _TRIGGERS))
        }
    finally:
        await conn.close()


def _comment(kind: str, key: str, comment: str | None) -> str:
    target = {
        "function": f"FUNCTION amrita_memory.{key.removeprefix('amrita_memory.')}",
        "view": f"VIEW amrita_memory.{key}",
        "trigger": "TRIGGER " + key.replace(" ON ", " ON amrita_memory.", 1),
    }[kind]
    value = "NULL" if comment is None else "'" + comment.replace("'", "''") + "'"
    return f"COMMENT ON {target} IS {value}"


def _drop(kind: str, key: str) -> str:
    if kind == "trigger":
        return "DROP TRIGGER " + key.replace(" ON ", " ON amrita_memory.", 1)
    name = key.removeprefix("amrita_memory.")
    return f"DROP {kind.upper()} amrita_memory.{name}"


def live_text() -> dict[tuple[str, str], str]:
    """The live files' text of each function, view (with their comments) and trigger, by
    (kind, name): what the upgrade runs."""
    texts: dict[tuple[str, str], str] = {}
    for name, d in live_definitions().items():
        text = d.path.read_text(encoding="utf-8")
        texts[(d.kind, name)] = "\n".join(text[a:b].strip("\n") for a, b in d.spans)
    for path in live_files():
        text = path.read_text(encoding="utf-8")
        for statement in scan(text):
            found = re.match(r"CREATE\s+TRIGGER\s+(\w+)", statement.sql, re.IGNORECASE)
            if found:
                texts[("trigger", found.group(1))] = text[statement.start : statement.end]
    return texts


def difference(chain: Catalogue, present: Catalogue) -> tuple[list[str], list[str], list[str]]:
    """(upgrade statements, downgrade statements, what changed) from the chain to the
    present: triggers and views dropped first, then functions dropped, created or
    replaced, then views and triggers created; a changed comment alone is a COMMENT."""
    live = live_text()
    up_drop: list[str] = []
    up_create: list[str] = []
    down_drop: list[str] = []
    down_create: list[str] = []
    changed: list[str] = []
    for kind in ("trigger", "view", "function"):
        old, new = chain[kind], present[kind]
        for key in sorted(set(old) | set(new)):
            if old.get(key) == new.get(key):
                continue
            changed.append(f"{kind} {key}")
            if key in old and key in new and old[key][:2] == new[key][:2]:
                # the comment alone: a COMMENT each way, the definition untouched
                up_create.append(_comment(kind, key, new[key][2]))
                down_create.append(_comment(kind, key, old[key][2]))
                continue
            if key in old and (kind != "function" or key not in new):
                up_drop.append(_drop(kind, key))
            if key in new:
                name = new[key][0]
                statement = live.get((kind, name))
                assert statement is not None, f"{kind} {name} is installed but in no live file"
                up_create.append(statement)
            if key in new and (kind != "function" or key not in old):
                down_drop.append(_drop(kind, key))
            if key in old:
                name, sql, comment = old[key]
                down_create.append(sql.rstrip())
                if kind != "trigger" or comment is not None:
                    down_create.append(_comment(kind, key, comment))
    order = {"function": 0, "view": 1, "trigger": 2}
    up_create.sort(key=lambda s: order[_kind_of(s)])
    down_create.sort(key=lambda s: order[_kind_of(s)])
    return up_drop + up_create, down_drop + down_create, changed


def _kind_of(statement: str) -> str:
    head = re.sub(r"(?m)^\s*--.*\n", "", statement).lstrip().upper()
    if re.match(r"(CREATE\s+(OR\s+REPLACE\s+)?|COMMENT\s+ON\s+)VIEW", head):
        return "view"
    if re.match(r"(CREATE\s+(CONSTRAINT\s+)?|COMMENT\s+ON\s+)TRIGGER", head):
        return "trigger"
    return "function"


# ---------------------------------------------------------------- the two databases


@asynccontextmanager
async def server() -> AsyncIterator[str]:
    """An admin DSN: ``AMRITA_MEMORY_TEST_DSN``'s server, or a throwaway embedded one."""
    if dsn := os.environ.get("AMRITA_MEMORY_TEST_DSN"):
        yield dsn
        return
    from amrita_memory_pg.storage.pg.embedded import start_embedded

    with tempfile.TemporaryDirectory() as tmp:
        embedded = start_embedded(Path(tmp))
        try:
            yield embedded.dsn("postgres")
        finally:
            embedded.stop()


async def build(admin: str, fresh: bool) -> str:
    """A new database: the present (``fresh``) or the chain; its DSN."""
    name = f"amt_mig_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    dsn = with_database(admin, name)
    if not fresh:
        await migrate.upgrade(dsn, migrate.BASELINE)
    await migrate.upgrade(dsn)
    return dsn


async def drop(admin: str, dsn: str) -> None:
    name = dsn.rsplit("/", 1)[1].split("?", 1)[0]
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def main(slug: str, why: str, versions: Path) -> Path | None:
    async with server() as admin:
        chain, present = await build(admin, False), await build(admin, True)
        try:
            up, down, changed = difference(await catalogue(chain), await catalogue(present))
        finally:
            await drop(admin, chain)
            await drop(admin, present)
    if not changed:
        print("the live files define what the migrations install: nothing to write")
        return None
    print("differs:\n  " + "\n  ".join(changed))
    title, _, rest = why.partition(". ")
    return write_migration(
        versions,
        slug,
        title=title.rstrip("."),
        why=rest,
        upgrade_sql=up,
        downgrade_sql=down,
        forward="brings the functions, views and triggers of the previous head to the live "
        "files' (sql/functions)",
        backward="brings them back",
        tool="tests/support/sql_migration.py",
    )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit('usage: python -m tests.support.sql_migration SLUG "what and why"')
    module = asyncio.run(main(sys.argv[1], sys.argv[2], migrate.versions_dir()))
    if module is not None:
        print(f"wrote {module.name} and its .sql / .down.sql: read them, then run")
        print("  .venv/bin/python -m pytest -q tests/migration tests/unit/test_sql_layout.py")
