"""An AmritaBot project as a user has one, and the two things no package here provides:
the model server (a stub on 127.0.0.1) and QQ (a OneBot v11 connection that records calls).

The project is what ``amctl`` makes (``pyproject.toml`` with ``[tool.amrita] plugins``,
``.env``, ``bot.py``-style start: ``amrita.init(); amrita.load_plugins()``), plus this
plugin in the plugin list and the host's own model preset, persona and chat config files
under ``config/chat/`` — the files AmritaBot reads. Nothing here imports amrita before the
project is written: the host reads the working directory at import and init.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections import deque
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from amrita_memory_pg.integrations.nonebot import PLUGIN
from amrita_memory_pg.testing_llm import ScriptedLLM

BOT_QQ = 42
SUPERUSER = 10000
TARGET_QQ = 10001
TARGET = f"QQPlatform_Private_{TARGET_QQ}"
#: AmritaBot's private persona file (``config/chat/private_prompts/default.txt``)
PERSONA = "你是 Amrita，一只说话带喵的猫娘。"
#: the host's preset: its name, model and key (its base URL is the stub's)
PRESET_NAME = "stub-host"
HOST_MODEL = "host-model"
HOST_KEY = "sk-host-preset"
#: another plugin's read-only tool, lent to the loop through [subconscious] allowed_tools
OTHER_TOOL = "other_weather"
#: AmritaBot's chat system prompt carries this tag; the loop's prompts do not
HOST_PROMPT_MARK = "<SYSTEM_INSTRUCTIONS>"
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}

_message_ids = count(1)


class HostLLM(ScriptedLLM):
    """The host preset's model server, with one script for AmritaBot's chat turns and one
    for the L3 loop (told apart by AmritaBot's system prompt), so a chat turn during a
    cycle takes its own answers. ``requests`` holds both; a chat turn without a script
    gets ``reply``."""

    def __init__(self) -> None:
        super().__init__()
        self.chat_script: deque[dict[str, Any]] = deque()
        self.chat_requests: list[dict[str, Any]] = []
        self.loop_requests: list[dict[str, Any]] = []
        #: the headers of each of ``loop_requests``
        self.loop_headers: list[dict[str, str]] = []
        self.reply = "好的喵"

    def chat_call(self, name: str, arguments: dict[str, Any]) -> None:
        """Queue one chat-turn answer that calls a tool."""
        self.call(name, arguments)
        self.chat_script.append(self.script.pop())

    def _next(self, body: dict[str, Any], headers: dict[str, str], raw: bytes) -> Any:
        messages = body.get("messages") or [{}]
        if HOST_PROMPT_MARK not in str(messages[0].get("content") or ""):
            self.loop_requests.append(body)
            self.loop_headers.append(headers)
            return super()._next(body, headers, raw)
        with self._lock:
            self.requests.append(body)
            self.raw_requests.append(raw)
            self.request_headers.append(headers)
            self.chat_requests.append(body)
            if self.chat_script:
                return self.chat_script.popleft()
        return {"role": "assistant", "content": self.reply}

    def reset(self) -> None:
        super().reset()
        self.chat_script.clear()
        self.chat_requests.clear()
        self.loop_requests.clear()
        self.loop_headers.clear()
        self.delay_seconds = 0.0


def write_project(root: Path, *, database_url: str, stub_url: str) -> None:
    """An AmritaBot project in ``root`` with this plugin configured as a user would."""
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [project]
            name = "memory-bot"
            version = "0.1.0"
            requires-python = ">=3.10, <3.14"
            dependencies = ["amrita>=1.13.1", "ambot-inlinectl>=0.2.2", "amrita-memory-pg"]

            [tool.amrita]
            plugins = ["amrita.plugins.chat", "amrita.plugins.manager", "amrita.plugins.webui",
                       "{PLUGIN}"]

            [tool.nonebot]
            plugins = ["nonebot_plugin_orm"]
            """
        ),
        encoding="utf-8",
    )
    subconscious = {
        "enabled": True,
        "target_user_id": str(TARGET_QQ),
        "allow_send_to_user": True,
        "allowed_tools": [OTHER_TOOL],
        "prompt_dir": str(root / "memory-prompts"),
        # cycles start from the tests (/memory dmn), never from a timer during the session
        "use_idle_window_planner": False,
        "rethink_base_delay_minutes": 600,
    }
    (root / ".env").write_text(
        textwrap.dedent(
            f"""\
            ENVIRONMENT=prod
            DRIVER=~fastapi
            HOST=127.0.0.1
            PORT=18080
            LOCALSTORE_USE_CWD=true
            COMMAND_SEP=[".", " ", ""]
            ALEMBIC_STARTUP_CHECK=false
            SUPERUSERS=["{SUPERUSER}"]
            LOG_LEVEL=INFO
            DATABASE_URL={database_url}
            EMBEDDING_PROCTOL=hash
            AMRITA_MEMORY_DATA_DIR={root / "memory-data"}
            AMRITA_MEMORY_SUBCONSCIOUS='{json.dumps(subconscious)}'
            AMRITA_MEMORY_TOOL_NAMES=both
            """
        ),
        encoding="utf-8",
    )
    (root / ".env.prod").write_text("LOG_LEVEL=INFO\n", encoding="utf-8")
    chat = root / "config" / "chat"
    (chat / "models").mkdir(parents=True)
    (chat / "private_prompts").mkdir()
    (chat / "group_prompts").mkdir()
    # AmritaBot's own preset file: the model every chat turn (and so the loop) uses
    (chat / "models" / f"{PRESET_NAME}.json").write_text(
        json.dumps(
            {"name": PRESET_NAME, "model": HOST_MODEL, "base_url": stub_url, "api_key": HOST_KEY}
        ),
        encoding="utf-8",
    )
    # the placeholder a fresh install writes: no base_url, no api_key
    (chat / "models" / "default.json").write_text(json.dumps({"name": "default"}), encoding="utf-8")
    (chat / "private_prompts" / "default.txt").write_text(PERSONA, encoding="utf-8")
    (chat / "group_prompts" / "default.txt").write_text("你是群聊里的 Amrita。", encoding="utf-8")
    # the chat plugin's config (a fresh install writes enable = false; the content check
    # would spend one model call per turn, so it is off); [core] in the current format
    (chat / "config.toml").write_text(
        textwrap.dedent(
            f"""\
            enable = true
            preset = "{PRESET_NAME}"

            [llm.tools]
            enable_report = false

            [core.function_config]
            use_minimal_context = false
            """
        ),
        encoding="utf-8",
    )
    # another plugin of the bot, in its local plugin folder: a read-only tool of its own
    other = root / "plugins" / "other_weather"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text(
        textwrap.dedent(
            f'''\
            """Another plugin: a read-only weather tool in amrita-core's registry."""
            from amrita_core.tools.manager import ToolsManager
            from amrita_core.tools.models import (
                FunctionDefinitionSchema, FunctionParametersSchema, FunctionPropertySchema,
                ToolData, ToolFunctionSchema,
            )

            async def weather(args: dict) -> str:
                return f"{{args['city']}}：晴，25°C"

            ToolsManager().register_tool(ToolData(
                data=ToolFunctionSchema(type="function", function=FunctionDefinitionSchema(
                    name="{OTHER_TOOL}", description="查天气",
                    parameters=FunctionParametersSchema(
                        type="object",
                        properties={{"city": FunctionPropertySchema(type="string",
                                                                   description="城市")}},
                        required=["city"]))),
                func=weather))
            '''
        ),
        encoding="utf-8",
    )


@dataclass
class QQ:
    """The OneBot v11 side: every API call the bot makes, answered like a QQ client."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def call_api(self, bot: Any, api: str, **data: Any) -> Any:
        self.calls.append((api, data))
        if api.startswith("send"):
            return {"message_id": next(_message_ids)}
        if api.startswith("get_") and api.endswith("_list"):
            return []
        return {}

    def sent(self, api: str = "send_msg") -> list[dict[str, Any]]:
        return [data for name, data in self.calls if name == api]

    def texts(self, api: str = "send_msg") -> list[str]:
        """The plain text of each message sent through ``api``."""
        out = []
        for data in self.sent(api):
            message = data.get("message")
            if isinstance(message, str):
                out.append(message)
            else:
                out.append(
                    "".join(seg.data.get("text", "") for seg in message if seg.type == "text")
                )
        return out


def private_event(text: str, user_id: int = TARGET_QQ) -> Any:
    """A QQ private message to the bot, as the OneBot v11 adapter builds it."""
    from nonebot.adapters.onebot.v11 import Message, PrivateMessageEvent
    from nonebot.adapters.onebot.v11.event import Sender

    return PrivateMessageEvent(
        time=int(time.time()),
        self_id=BOT_QQ,
        post_type="message",
        sub_type="friend",
        message_type="private",
        user_id=user_id,
        message_id=next(_message_ids),
        message=Message(text),
        original_message=Message(text),
        raw_message=text,
        font=0,
        to_me=True,
        sender=Sender(user_id=user_id, nickname=f"u{user_id}"),
    )
