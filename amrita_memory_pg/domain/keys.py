"""Partition keys: the framework's ``uni_id`` (reference §2).

Current format (amrita ≥ 1.9): ``QQPlatform_Private_{qq}`` / ``QQPlatform_Group_{gid}``;
legacy: ``user_{qq}`` / ``group_{gid}``; oldest: bare digits whose kind only the memory's
scope tells. The bot-wide scope ``global`` has the single key ``global``: one store
serves one bot (several bots keep one database each, or one schema each), so no bot id
is part of it; it is injected in every chat and written only by superusers, the system
or the CLI. Unlike the
reference, ids stay strings (no ``int()``: leading zeros and non-numeric ids survive) and
an explicit platform prefix is kept (reference W20).
"""

from __future__ import annotations

import re
from typing import Literal

from amrita_memory_pg.domain.validation import InvalidInput, echo, text_refusal, too_long_refusal

KEY_FORMAT_VERSION = 2
GLOBAL_KEY = "global"

Kind = Literal["private", "group"]

_PLATFORM_NAMES = {"qq": "QQPlatform", "onebot": "QQPlatform", "onebot v11": "QQPlatform"}
_KEY = re.compile(
    r"^(?:(?P<prefix>[A-Za-z0-9]+)_)?(?P<kind>Private|Group|Channel|user|group)_(?P<id>\d+)$"
)
_DIGITS = re.compile(r"^\d+$")
#: a personal partition: ``{Platform}_Private_{id}`` (any id text) or the legacy ``user_{id}``
_PERSONAL = re.compile(r"^(?:[A-Za-z0-9]+_Private|user)_\S+$")


def platform_prefix(platform: str) -> str:
    """``qq`` → ``QQPlatform``; any other platform → ``{Name}Platform``."""
    name = platform.strip()
    known = _PLATFORM_NAMES.get(name.lower())
    if known:
        return known
    cleaned = re.sub(r"[^A-Za-z0-9]", "", name) or "Unknown"
    return cleaned[0].upper() + cleaned[1:] + "Platform"


def personal_key(platform: str, user_id: str) -> str:
    """The personal partition of a user, shared by their private and group chats."""
    return f"{platform_prefix(platform)}_Private_{user_id}"


def group_key(platform: str, group_id: str) -> str:
    """The shared partition of a group."""
    return f"{platform_prefix(platform)}_Group_{group_id}"


def scope_of_key(key: str) -> Literal["user", "group", "global"]:
    """The scope a partition key belongs to: ``global``, a group key, else personal."""
    if key == GLOBAL_KEY:
        return "global"
    match = _KEY.match(key)
    if match and match.group("kind") in ("Group", "group", "Channel"):
        return "group"
    return "user"


def is_current(key: str) -> bool:
    """Whether a key is already in the current format (or the global key)."""
    if key == GLOBAL_KEY:
        return True
    match = _KEY.match(key)
    return bool(match and match.group("prefix") and match.group("kind") in ("Private", "Group"))


def to_current(raw: str, scope: str | None, default_platform: str = "qq") -> str | None:
    """The current-format key of a stored key, or None when it is not recognised.

    Already-current keys map to themselves (the conversion is idempotent); ``Channel``
    keys and bare digits without a ``user``/``group`` scope are not recognised.
    """
    if raw == GLOBAL_KEY:
        return raw
    match = _KEY.match(raw)
    if match:
        kind = match.group("kind")
        ident = match.group("id")
        prefix = match.group("prefix") or platform_prefix(default_platform)
        if kind in ("Group", "group"):
            return f"{prefix}_Group_{ident}"
        if kind in ("Private", "user"):
            return f"{prefix}_Private_{ident}"
        return None
    if _DIGITS.match(raw):
        if scope == "user":
            return personal_key(default_platform, raw)
        if scope == "group":
            return group_key(default_platform, raw)
    return None


def is_personal_key(key: str) -> bool:
    """Whether ``key`` is a user's personal partition (a group or ``global`` is not).

    User profiles exist only for personal partitions.
    """
    return bool(_PERSONAL.match(key))


def user_key(text: str, platform: str = "qq") -> str | None:
    """The personal partition named by an operator or a superuser: a personal key as it
    is (legacy ``user_{id}`` converted), or a bare user id on ``platform``; None for a
    group key, ``global``, an empty text, or on QQ a bare id that is not a QQ number
    (``NOPE`` named nobody, yet became ``QQPlatform_Private_NOPE``)."""
    name = text.strip()
    if not name or any(ch.isspace() for ch in name):
        return None
    if is_personal_key(name):
        return to_current(name, "user") or name
    if _KEY.match(name) or name == GLOBAL_KEY or "_Group_" in name:
        return None
    if platform == "qq" and not (name.isascii() and name.isdigit()):
        return None
    return personal_key(platform, name)


def legacy_key_now(text: str, default_platform: str = "qq") -> str | None:
    """The current key an old-style key an operator typed stands for (``user_10004`` →
    ``QQPlatform_Private_10004``, ``group_1`` → ``QQPlatform_Group_1``); None when the text
    is current, ``global`` or not a recognised old key (bare digits say no scope).

    Why: the store holds current keys only, so a typed old key found nothing and said
    nothing; every surface where a key is typed resolves it with this.
    Kept apart from the key validation so that one rule can call it.
    """
    key = text.strip()
    if not key or is_current(key):
        return None
    now = to_current(key, None, default_platform)
    return now if now is not None and now != key else None


#: the longest partition key any surface accepts (the current formats are far shorter)
MAX_KEY_CHARS = 200
#: a key the adapters write for a platform whose ids are not digits (the console bot's
#: ``ConsolePlatform_Private_user``): ``{Platform}_{Private|Group}_{id}``, the id plain
#: letters, digits and ``_.@-`` — nothing a path, a URL or a page would read otherwise
_PLATFORM_KEY = re.compile(r"^[A-Za-z0-9]+_(?:Private|Group)_[A-Za-z0-9][A-Za-z0-9_.@-]*$")


def check_partition_key(text: str) -> str:
    """The ONE key rule of every surface (CLI, web page, ``/memory``): ``global`` or a
    current-format key (``QQPlatform_Private_10001``, ``QQPlatform_Group_1``, or another
    platform's ``ConsolePlatform_Private_user``), at most 200 characters; raises
    :class:`InvalidInput` with a sentence otherwise.

    Why one rule: the CLI used to accept ``qq:private:1``, ``../../etc`` or a 100,000
    character key that the admin page then listed but refused to open.
    """
    key = text.strip()
    if len(key) > MAX_KEY_CHARS:
        long = too_long_refusal(len(key), MAX_KEY_CHARS)
        raise InvalidInput(f"分区键{long.reason}", en=f"the partition key {long.en}")
    refused = text_refusal(key)
    if refused is not None:
        raise InvalidInput(f"分区键{refused.reason}", en=f"the partition key {refused.en}")
    if key == GLOBAL_KEY or is_current(key) or _PLATFORM_KEY.match(key):
        return key
    hint = to_current(key, None)
    suggestion = f"；是不是指 {hint}？" if hint else ""
    raise InvalidInput(
        f"不是有效的分区键：{echo(key)}（应为 global、QQPlatform_Private_10001 或 "
        f"QQPlatform_Group_1 这样的格式）{suggestion}",
        en=f"is not a valid partition key: {echo(key)} (expected global, "
        "QQPlatform_Private_10001 or QQPlatform_Group_1)"
        + (f"; did you mean {hint}?" if hint else ""),
    )
