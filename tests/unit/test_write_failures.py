"""A write reported as failed must not commit later: driver failures are classified by
class and SQLSTATE into «nothing changed» and «outcome unknown», and every write tool's
error reply says what to do.

The integration tests (tests/integration/test_write_outcome.py) check the same against a
real server that stalls, times out and drops connections; these pin the table itself,
including the cases a test server cannot be made to produce on demand (a serialization
failure, a read-only standby, out of connections).
"""

from __future__ import annotations

import asyncpg
import pytest
from asyncpg.exceptions._base import DataError as ArgumentDataError

from amrita_memory_pg.domain.errors import (
    BackendError,
    ConfigError,
    DatabaseRefused,
    EmbeddingError,
    OutcomeUnknown,
)
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.storage.pg.outcome import classify
from amrita_memory_pg.tools.failures import CHECK_HINTS, failure_message

E = asyncpg.exceptions


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (E.QueryCanceledError("canceling statement due to statement timeout"), "timeout"),
        (E.LockNotAvailableError("canceling statement due to lock timeout"), "lock"),
        (E.SerializationError("could not serialize access"), "conflict"),
        (E.DeadlockDetectedError("deadlock detected"), "conflict"),
        (E.ReadOnlySQLTransactionError("read-only transaction"), "read_only"),
        (E.TooManyConnectionsError("too many clients"), "resources"),
        (E.DiskFullError("no space"), "resources"),
        (E.CannotConnectNowError("the database system is starting up"), "unavailable"),
        (E.UniqueViolationError("duplicate key"), "refused"),
        (E.DataError("invalid input syntax"), "refused"),
        (E.RaiseError("an error raised by a function"), "refused"),
    ],
)
@pytest.mark.parametrize("sent", [False, True])
def test_an_error_the_server_answered_changed_nothing(
    exc: asyncpg.PostgresError, reason: str, sent: bool
) -> None:
    """The server answered the statement with an error: its transaction rolled back."""
    mapped = classify(exc, sent=sent)
    assert isinstance(mapped, DatabaseRefused)
    assert mapped.reason == reason
    assert mapped.sqlstate == exc.sqlstate


@pytest.mark.parametrize(
    "exc",
    [
        E.AdminShutdownError("terminating connection due to administrator command"),
        E.CrashShutdownError("terminating connection because of crash of another server process"),
        E.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        E.ConnectionFailureError("connection failure"),
        TimeoutError(),
        ConnectionResetError(),
        BrokenPipeError(),
        E.ProtocolError("unexpected message"),
    ],
)
def test_a_lost_connection_after_sending_is_an_unknown_outcome(exc: BaseException) -> None:
    assert isinstance(classify(exc, sent=True), OutcomeUnknown)
    # …and the same failure while acquiring a connection means nothing was sent.
    before = classify(exc, sent=False)
    assert isinstance(before, DatabaseRefused) and before.reason == "unavailable"


def test_client_side_refusals_before_sending_changed_nothing() -> None:
    closed = classify(asyncpg.InterfaceError("connection is closed"), sent=True)
    assert isinstance(closed, DatabaseRefused) and closed.reason == "unavailable"
    bad_arg = classify(ArgumentDataError("invalid input for query argument $1"), sent=True)
    assert isinstance(bad_arg, DatabaseRefused) and bad_arg.reason == "refused"
    refused = classify(ConnectionRefusedError(), sent=False)
    assert isinstance(refused, DatabaseRefused) and refused.reason == "unavailable"


def test_a_failed_rollback_does_not_hide_a_lost_connection() -> None:
    """A transaction block whose connection died mid-statement raises, on exit, asyncpg's
    «connection is closed» from its ROLLBACK attempt; the lost connection behind it decides."""
    masked = asyncpg.InterfaceError("cannot perform operation: connection is closed")
    masked.__context__ = E.AdminShutdownError("terminating connection due to administrator command")
    assert isinstance(classify(masked, sent=True), OutcomeUnknown)
    refused = classify(masked, sent=False)
    assert isinstance(refused, DatabaseRefused) and refused.reason == "unavailable"
    # A definite failure behind a non-driver exception does not make it unknown.
    wrapped = ValueError("wrapped")
    wrapped.__cause__ = E.QueryCanceledError("canceling statement due to statement timeout")
    assert classify(wrapped, sent=True) is None


def test_what_is_not_a_driver_failure_is_not_classified() -> None:
    assert classify(ValueError("x"), sent=True) is None
    assert classify(KeyError("x"), sent=False) is None
    # A vector backend's error raised from a refused socket stays the backend's error.
    backend = BackendError("chroma at http://127.0.0.1:8000 is unreachable")
    backend.__cause__ = ConnectionRefusedError()
    assert classify(backend, sent=True) is None
    message = failure_message("write_memory", "写入记忆失败", backend)
    assert message.startswith("写入记忆失败: chroma at") and "没有做任何修改" in message


WRITE_TOOLS = sorted(CHECK_HINTS)
PREFIX = {
    "write_memory": "写入记忆失败",
    "update_memory": "更新记忆失败",
    "delete_memory": "删除记忆失败",
    "append_memo": "追加备忘录失败",
    "update_memo": "更新备忘录失败",
    "subconscious_write_memory": "写入记忆失败",
    "subconscious_update_memory": "更新记忆失败",
    "subconscious_delete_memory": "删除记忆失败",
    "subconscious_rewrite_memo": "改写备忘录失败",
    "subconscious_update_profile": "更新画像失败",
    "subconscious_batch_edit": "批量修改失败",
}
#: the read a write's unknown-outcome reply tells the LLM to check with
CHECK_WITH = {
    "subconscious_update_profile": "subconscious_get_profile",
    "subconscious_batch_edit": "subconscious_read_memory",
}


@pytest.mark.parametrize("tool", WRITE_TOOLS)
def test_an_unknown_outcome_says_so_and_how_to_check(tool: str) -> None:
    """The F7 reply was «写入记忆失败: » — empty, and wrong (10 of 27 had committed)."""
    message = failure_message(tool, PREFIX[tool], TimeoutError())
    assert message.startswith(PREFIX[tool].removesuffix("失败") + "结果未知：")
    assert "失败" not in message.split("：", 1)[0]  # it does not claim a failure it cannot know
    assert "可能已经生效" in message
    assert CHECK_HINTS[tool] in message
    check = CHECK_WITH.get(tool, "read_memo" if tool.endswith("_memo") else "list_memory")
    assert check in message


@pytest.mark.parametrize("tool", WRITE_TOOLS)
@pytest.mark.parametrize(
    "exc",
    [
        E.QueryCanceledError("statement timeout"),
        E.LockNotAvailableError("lock timeout"),
        E.SerializationError("serialize"),
        E.TooManyConnectionsError("too many"),
        E.CheckViolationError("check"),
        DatabaseRefused("no connection", reason="unavailable"),
    ],
)
def test_a_refusal_says_nothing_changed_and_what_to_do(tool: str, exc: BaseException) -> None:
    message = failure_message(tool, PREFIX[tool], exc)
    head, _, body = message.partition("：")
    assert head == PREFIX[tool]
    assert "没有做任何修改" in body and "请" in body
    assert "结果未知" not in message


def test_a_read_never_asks_to_check_a_write() -> None:
    message = failure_message("read_memory", "检索记忆失败", TimeoutError())
    assert message.startswith("检索记忆失败：") and "请稍后重试" in message
    assert "结果未知" not in message


def test_other_failures_are_never_empty() -> None:
    empty_embedding = failure_message("write_memory", "写入记忆失败", EmbeddingError(""))
    assert (
        empty_embedding.startswith("写入记忆失败: EmbeddingError")
        and "请稍后重试" in empty_embedding
    )
    bug = failure_message("write_memory", "写入记忆失败", RuntimeError(""))
    assert "RuntimeError" in bug and "list_memory" in bug
    assert failure_message("list_memory", "列出记忆失败", RuntimeError("")).endswith("请告知管理员")


def test_the_client_waits_longer_than_the_server() -> None:
    """command_timeout ≤ statement_timeout would let the client give up first: an unknown
    outcome in place of the server's clean 57014."""
    defaults = load_settings(env={}, read_default_files=False).database
    assert defaults.statement_timeout == 10 and defaults.lock_timeout == 5
    assert defaults.command_timeout > defaults.statement_timeout
    with pytest.raises(ConfigError, match=r"statement_timeout.*below command_timeout"):
        load_settings(
            env={"AMRITA_MEMORY_DATABASE__COMMAND_TIMEOUT": "10"}, read_default_files=False
        )
    off = load_settings(
        env={
            "AMRITA_MEMORY_DATABASE__COMMAND_TIMEOUT": "5",
            "AMRITA_MEMORY_DATABASE__STATEMENT_TIMEOUT": "0",
        },
        read_default_files=False,
    )
    assert off.database.statement_timeout == 0
