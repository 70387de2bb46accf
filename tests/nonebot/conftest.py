"""NoneBot under nonebug, with the plugin loaded once against a real (embedded) database.

The plugin is configured the way a user configures it — NoneBot config keys
(``database_url``, ``embedding_proctol``, ``amrita_memory_*``, ``llm_*``) — pointing at
a session database cloned from the migrated template and at a scripted LLM server.
Every test starts from empty tables and an empty LLM script.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nonebug import NONEBOT_INIT_KWARGS

from amrita_memory_pg.testing_llm import ScriptedLLM
from tests.support.pg import PgServer

SUPERUSER_ID = "10000"
ADMIN_PASSWORD = "nb-admin-pass"
#: hash_password(ADMIN_PASSWORD) made once (scrypt at import time would slow every run)
ADMIN_PASSWORD_HASH = (
    "scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$"
    "_xYkb-hLoRucicBRWEknl-nZkgGglOMLf4RAkbxzxtJdg8Dx6Qe_CCaqyf8ctW1eSps8FEDCX0dVykehDd7nzg"
)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[NONEBOT_INIT_KWARGS] = {
        "driver": "~fastapi",
        "superusers": {SUPERUSER_ID},
        "command_start": {"/"},
        "console_headless_mode": True,
        "log_level": "WARNING",
    }


@pytest.fixture(scope="session")
def llm_stub() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as llm:
        yield llm


@pytest.fixture(scope="session")
async def nb_db_dsn(pg_server: PgServer, template_db: str) -> AsyncIterator[str]:
    name = await pg_server.create_database(template=template_db)
    try:
        yield pg_server.dsn(name)
    finally:
        await pg_server.drop_database(name)


@pytest.fixture(scope="session")
def nb_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("nb_data")


@pytest.fixture(scope="session", autouse=True)
async def after_nonebot_init(
    _nonebot_init: None, nb_db_dsn: str, llm_stub: ScriptedLLM, nb_data_dir: Path
) -> None:
    import nonebot
    from nonebot.adapters.console import Adapter as ConsoleAdapter
    from nonebot.adapters.onebot.v11 import Adapter as OneBotV11Adapter

    driver = nonebot.get_driver()
    driver.register_adapter(ConsoleAdapter)
    driver.register_adapter(OneBotV11Adapter)
    config = driver.config
    # what a user writes in .env (NoneBot lower-cases the names and JSON-decodes values)
    config.database_url = nb_db_dsn
    config.embedding_proctol = "hash"
    config.amrita_memory_data_dir = str(nb_data_dir)
    config.amrita_memory_decay = {"sweep_interval_hours": 12}
    # the admin page mounted on the driver (tests/nonebot/test_admin_mount.py)
    config.amrita_memory_web = {"enabled": True, "password_hash": ADMIN_PASSWORD_HASH}
    config.llm_base_url = llm_stub.base_url
    config.llm_model = "stub-model"
    config.llm_api_key = "sk-test"
    nonebot.load_plugin("amrita_memory_pg.integrations.nonebot.amrita_memory_pg")


@pytest.fixture(autouse=True)
async def clean_state(nonebug_init: None, llm_stub: ScriptedLLM) -> None:
    from amrita_memory_pg.integrations.nonebot.amrita_memory_pg import runtime

    memory = runtime.require()
    await memory.database.pool.execute(
        "TRUNCATE amrita_memory.memo, amrita_memory.chat_log, amrita_memory.activity_heatmap, "
        "amrita_memory.memory"
    )
    llm_stub.reset()
