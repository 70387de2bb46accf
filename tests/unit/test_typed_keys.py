"""An old-style partition key an operator types names the partition it is now (it used to
find nothing): domain/keys.legacy_key_now, used by the CLI, the admin page and /memory pause."""

from __future__ import annotations

import pytest

from amrita_memory_pg.domain.keys import legacy_key_now


@pytest.mark.parametrize(
    ("typed", "now"),
    [
        ("user_10004", "QQPlatform_Private_10004"),
        (" group_1 ", "QQPlatform_Group_1"),
        ("QQPlatform_user_7", "QQPlatform_Private_7"),
        ("QQPlatform_Private_10004", None),  # current already
        ("global", None),
        ("10004", None),  # bare digits say no scope: left to the caller's rule
        ("QQPlatform_Channel_9", None),
        ("no such key", None),
        ("", None),
    ],
)
def test_an_old_key_resolves_and_nothing_else_does(typed: str, now: str | None) -> None:
    assert legacy_key_now(typed) == now
