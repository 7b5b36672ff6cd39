"""A reply the Multiplier captured (RUN/captures/, spe_tools/rundir/captures.py) as a HAR response: its whole
header as received and the first bytes of its body, which the record alone does not have.

Secrets stay as the capture keeps them: the value of a Cookie, Set-Cookie, Authorization or
Proxy-Authorization is an `hmac:` digest there. A capture written with --capture-secrets holds them as received;
such a value is written as "(present)", never copied (docs/log-format.md, "Credentials and cookies"), unless the
export is asked to keep secrets (--keep-secrets)."""

from __future__ import annotations

import re

from spe_tools.export.exchange import PRESENT
from spe_tools.rundir.captures import CapturedReply
from spe_tools.workload.har.archive import HarResponse

SECRET_FIELDS = frozenset({"cookie", "set-cookie", "authorization", "proxy-authorization"})
DIGEST = re.compile(r"hmac:[0-9a-f]{16}")


def kept_value(name: str, value: str, keep_secrets: bool = False) -> str:
    """A captured field's value as the export writes it: a secret's only as its digest, else "(present)" (as
    received with keep_secrets)."""
    secret = name.lower() in SECRET_FIELDS and not DIGEST.fullmatch(value)
    return PRESENT if secret and not keep_secrets else value


def _secrets_said(reply: CapturedReply, headers: list[tuple[str, str]], keep_secrets: bool) -> list[str]:
    if headers != list(reply.headers):
        return ["values the capture holds as received (--capture-secrets) written as (present)"]
    if keep_secrets and any(kept_value(n, v) != v for n, v in reply.headers):
        return ["secret values written as received (--capture-secrets, --keep-secrets)"]
    return []


def captured_response(reply: CapturedReply, whose: str, capture: str, header_bytes: int | None,
                      keep_secrets: bool = False) -> HarResponse:
    """`whose` reply ("the Collector's", "nginx's") from the capture file named `capture`."""
    headers = [(name, kept_value(name, value, keep_secrets)) for name, value in reply.headers]
    said = [f"{whose} reply header as the Multiplier received it ({capture}); Cookie and Set-Cookie values, "
            "credentials as hmac: digests", *_secrets_said(reply, headers, keep_secrets)]
    mime = next((v for n, v in headers if n.lower() == "content-type"), "")
    whole = len(reply.body_head) >= reply.body_bytes
    content = (f"the whole body ({reply.body_bytes} bytes) from the capture" if whole else
               f"the first {len(reply.body_head)} of {reply.body_bytes} bytes of the body, from the capture "
               "(--capture-body-bytes)")
    return HarResponse(reply.status, reply.reason, reply.http_version, headers, reply.body_head, reply.body_bytes,
                       mime, headers_size=header_bytes or -1, comment="; ".join(said), content_comment=content)
