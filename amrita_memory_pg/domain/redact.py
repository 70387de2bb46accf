"""One redaction for every text that can reach a log, a reply, ``status`` or a backup.

Secrets reach messages in four shapes: credentials inside a URL (``https://u:pw@host``),
a key in a query string or a keyword DSN (``?password=…``, ``api_key=…``), an auth
header echoed by a server (``Authorization: Bearer sk-…``), and the raw value of a
configured key quoted by some error text. :func:`redact` removes all four; callers
that know their secrets (an API key, a DSN password) pass them in ``secrets`` so that
even an unrecognisable echo of them is scrubbed. Pure string work, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"

#: userinfo of any scheme://user:pw@host (and scheme://token@host)
_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@'\"]+@")
#: key=value pairs whose key names a secret: query strings, keyword DSNs, form bodies
_SECRET_PAIR = re.compile(
    r"(?P<key>\b(?:password|passwd|pwd|pass|secret|token|access_token|api[_-]?key|apikey|key)"
    r"\s*[=:]\s*)(?P<q>['\"]?)(?P<value>[^\s&'\",;}]+)(?P=q)",
    re.IGNORECASE,
)
#: an HTTP auth header echoed back, with or without the scheme word
_AUTH_HEADER = re.compile(
    r"(?P<key>\b(?:authorization|x-api-key|api-key|proxy-authorization)['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(?P<scheme>bearer|basic|token)\s+)?(?P<value>[^\s'\",}]+)",
    re.IGNORECASE,
)
#: bare bearer tokens and the common provider key shapes (OpenAI/DeepSeek ``sk-…``)
_BEARER = re.compile(r"\b(?P<scheme>bearer)\s+[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE)
_KEY_SHAPES = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{8,}")

#: shorter values are not scrubbed by value: "a" would blank every word containing it
_MIN_SECRET_LEN = 4


def redact_url(url: str) -> str:
    """``https://user:pw@host/x?key=k`` → ``https://***@host/x?key=***``."""
    return redact(url)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every credential it carries replaced by ``***``."""
    if not text:
        return text
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET_LEN}, key=len)[::-1]:
        text = text.replace(secret, MASK)
    text = _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    text = _AUTH_HEADER.sub(
        lambda m: m.group("key") + (m.group("scheme") + " " if m.group("scheme") else "") + MASK,
        text,
    )
    text = _BEARER.sub(lambda m: m.group("scheme") + " " + MASK, text)
    text = _KEY_SHAPES.sub(MASK, text)
    return _SECRET_PAIR.sub(lambda m: m.group("key") + m.group("q") + MASK + m.group("q"), text)
