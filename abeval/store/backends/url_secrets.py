"""The secrets a store URL may carry, and the URL as it may be shown.

A URL carries a secret in its user information (``USER:PASSWORD@``), in a query
parameter (``?password=``, ``?sslpassword=``, ``?token=``: any key that holds
``password``, ``secret`` or ``token``, in any case) or, for Spark Connect, in a
``;token=`` parameter. :func:`masked_url` shows each as ``***``: a SQLAlchemy URL
through SQLAlchemy's own rendering, any other URL by the same rules.
:func:`without_secrets` removes them from a driver's message.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

MASK = "***"
_SECRET_KEY = re.compile(r"password|secret|token", re.I)
#: ``?key=value``, ``&key=value`` or ``;key=value`` (Spark Connect's parameters).
_PARAM = re.compile(r"([?&;])([^=&;#?]*)=([^&;#]*)")


def is_secret_key(key: str) -> bool:
    """Whether a parameter named ``key`` holds a secret."""
    return bool(_SECRET_KEY.search(key))


def split_credentials(url: str) -> tuple[str, str | None, str]:
    """``(scheme://user, password, host...)`` of a URL, or ``(url, None, "")`` when
    it has no password. The user information runs to the *last* ``@`` before the
    query (and, in a Spark Connect URL, before its first ``;``), so a password with
    a raw ``@`` or ``/`` in it is masked whole (SQLAlchemy would end it at the first
    ``@``, and its tail would show as the host)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url, None, ""
    head = rest.split("?", 1)[0]
    if scheme == "sc":
        head = head.split(";", 1)[0]
    at = head.rfind("@")
    if at < 0 or ":" not in rest[:at]:
        return url, None, ""
    user, _, password = rest[:at].partition(":")
    return f"{scheme}://{user}", password, rest[at + 1 :]


def _masked_params(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        return f"{m.group(1)}{m.group(2)}={MASK}" if is_secret_key(m.group(2)) else m.group(0)

    return _PARAM.sub(one, text)


def masked_url(url: str) -> str:
    """``url`` with its password and secret parameters shown as ``***``."""
    user, password, rest = split_credentials(url)
    if password is not None:
        return _masked_params(f"{user}:{MASK}@{rest}")
    parsed = _sqlalchemy_url(url)
    if parsed is None:
        return _masked_params(url)
    secret = {k: MASK for k in parsed.query if is_secret_key(k)}
    if secret:
        parsed = parsed.update_query_dict(secret)
    shown = str(parsed.render_as_string(hide_password=True))
    return shown.replace(f"={quote(MASK, safe='')}", f"={MASK}")  # SQLAlchemy escapes it


def _sqlalchemy_url(url: str) -> URL | None:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    if url.startswith("sc://"):
        return None
    try:
        return make_url(url)
    except (ArgumentError, ValueError):
        return None


def secrets_of(url: str) -> list[str]:
    """The secret values ``url`` holds, as written and percent-decoded, longest first."""
    found = []
    _, password, _ = split_credentials(url)
    if password:
        found.append(password)
    found += [m.group(3) for m in _PARAM.finditer(url) if is_secret_key(m.group(2))]
    both = {v for s in found if s for v in (s, unquote(s)) if v}
    return sorted(both, key=len, reverse=True)


def without_secrets(text: str, url: str) -> str:
    """``text`` (a driver's message) without the URL's secrets: the URL itself is
    shown masked, and each secret is masked where it stands as a word of its own
    (never inside another word: a password ``se`` leaves "service" alone)."""
    values = secrets_of(url)
    if not values:
        return text
    text = text.replace(url, masked_url(url))
    for value in values:
        word = re.compile(r"(?<![\w])" + re.escape(value) + r"(?![\w])")
        text = word.sub(MASK, text)
    return text
