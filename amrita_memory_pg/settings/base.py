"""What every settings section shares: the model config, the reference-only marker and
the JSON decoding of list/object values."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

#: Marks a key that is read nowhere yet: the reference's config files carry it, so it must
#: load, but the reference page must not present it as working.
ACCEPTED_ONLY = "accepted_only"


class Section(BaseModel):
    # Numbers are accepted for text keys: NoneBot JSON-decodes `.env` values (a QQ number
    # arrives as an int) and TOML users write `target_user_id = 10001` unquoted.
    model_config = ConfigDict(
        extra="forbid", validate_default=True, frozen=True, coerce_numbers_to_str=True
    )


def maybe_json(value: Any, empty: Any) -> Any:
    """A reference-name variable arrives as a string (the generic env source decodes JSON
    itself); lists and objects are written as JSON, and an empty one means empty."""
    if isinstance(value, str) and value.strip() == "":
        return empty
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
