"""One sentence for a validation error: the key, the value, its source, what is allowed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, SecretStr, ValidationError

from amrita_memory_pg.domain.redact import MASK, redact
from amrita_memory_pg.settings.keys import SECTIONS, field_at, lookup
from amrita_memory_pg.settings.loader import Layer


def explain(exc: ValidationError, layers: Sequence[Layer], settings_cls: type[BaseModel]) -> str:
    """Turn the validation errors into one sentence: key, value, source, what is allowed."""
    messages = []
    for error in exc.errors():
        loc = tuple(str(part) for part in error["loc"])
        # Errors inside a list/dict value point below the key; report the key itself.
        key_path = loc[:2] if loc and loc[0] in SECTIONS else loc[:1]
        dotted = ".".join(key_path)
        value: Any = None
        where = ""
        for layer in layers:
            found, value = lookup(layer.data, key_path)
            if found:
                where = f" (from {layer.where(key_path)})"
                break
        if error["type"] == "extra_forbidden":
            if len(key_path) == 2:
                allowed = ", ".join(SECTIONS[key_path[0]].model_fields)
                scope = f"[{key_path[0]}]"
            else:
                allowed = ", ".join(
                    [k for k in settings_cls.model_fields if k not in SECTIONS]
                    + [f"[{s}]" for s in SECTIONS]
                )
                scope = "the top level"
            messages.append(
                f"unknown config key `{dotted}`{where}; allowed keys in {scope}: {allowed}"
            )
        else:
            shown = MASK if is_secret(settings_cls, key_path) else redact(repr(value))
            messages.append(f"invalid value for `{dotted}` = {shown}{where}: {error['msg']}")
    return "; ".join(messages)


def is_secret(settings_cls: type[BaseModel], path: tuple[str, ...]) -> bool:
    info = field_at(settings_cls, path)
    return info is not None and info.annotation is SecretStr
