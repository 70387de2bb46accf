"""Sending the L3 loop's proactive messages through the host.

The reference sent ``subconscious_send_to_user``'s message as a private message at once.
Here the tool queues it in ``pending_message`` (PostgreSQL) and the runner asks the
integration's :data:`PrivateSend` to deliver it right away: each pending row is taken by
one UPDATE (so two bot processes never both send it), sent, and given back with the
reason if the send failed — then it waits for the next attempt (the next proactive
message of the target, or the target's next private message). At most once: a process
dying between the take and the send loses that message rather than sending it twice.
Only personal (private) targets get messages; a group never does (W14).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime

from amrita_memory_pg.domain.consolidation import is_private_key, key_subject
from amrita_memory_pg.domain.redact import redact
from amrita_memory_pg.storage.consolidation import ConsolidationRepository, PendingMessage

log = logging.getLogger(__name__)

#: Send ``text`` as a private message to the user of a personal partition key
#: (the integration: NoneBot's ``send_private_msg``); raises when it could not.
PrivateSend = Callable[[str, str], Awaitable[None]]


@dataclass
class Delivery:
    """What one delivery did: the messages sent, and those kept for a retry (with why)."""

    sent: list[PendingMessage] = field(default_factory=list)
    failed: list[tuple[PendingMessage, str]] = field(default_factory=list)


async def deliver(
    repo: ConsolidationRepository, target_key: str, send: PrivateSend, now: datetime
) -> Delivery:
    """Send every pending message of a personal target, oldest first; never raises for
    a failed send (the row is pending again, the reason stored)."""
    done = Delivery()
    if not is_private_key(target_key):
        return done
    for message in await repo.take_messages(target_key, now=now):
        try:
            await send(target_key, message.content)
        except Exception as exc:  # the host's send: keep the message for a retry
            reason = redact(str(exc).strip() or type(exc).__name__)
            log.warning(
                "proactive message %s to %s not sent (%s); kept for a retry",
                message.id,
                key_subject(target_key),
                reason,
            )
            await repo.release_message(target_key, message.id, reason[:500])
            done.failed.append((message, reason))
            continue
        done.sent.append(message)
    return done
