"""A reply the Multiplier captured (RUN/captures/, spe_tools/rundir/captures.py) as a HAR response: its whole
header as received and the first bytes of its body, which the record alone does not have.

Secrets stay as the capture keeps them: the value of a Cookie, Set-Cookie, Authorization or
Proxy-Authorization is an `hmac:` digest there. A capture written with --capture-secrets holds them as received;
such a value is written as "(present)", never copied (docs/log-format.md, "Credentials and cookies")."""

from __future__ import annotations

import re

from spe_tools.export.exchange import PRESENT
from spe_tools.rundir.captures import CapturedReply
from spe_tools.workload.har import HarResponse

SECRET_FIELDS = frozenset({"cookie", "set-cookie", "authorization", "proxy-authorization"})
DIGEST = re.compile(r"hmac:[0-9a-f]{16}")


def kept_value(name: str, value: str) -> str:
    """A captured field's value as the export writes it: a secret's only as its digest, else "(present)"."""
    return PRESENT if name.lower() in SECRET_FIELDS and not DIGEST.fullmatch(value) else value


def captured_response(reply: CapturedReply, whose: str, capture: str, header_bytes: int | None) -> HarResponse:
    """`whose` reply ("the Collector's", "nginx's") from the capture file named `capture`."""
    headers = [(name, kept_value(name, value)) for name, value in reply.headers]
    said = [f"{whose} reply header as the Multiplier received it ({capture}); Cookie and Set-Cookie values, "
            "credentials as hmac: digests"]
    if headers != list(reply.headers):
        said.append("values the capture holds as received (--capture-secrets) written as (present)")
    mime = next((v for n, v in headers if n.lower() == "content-type"), "")
    whole = len(reply.body_head) >= reply.body_bytes
    content = (f"the whole body ({reply.body_bytes} bytes) from the capture" if whole else
               f"the first {len(reply.body_head)} of {reply.body_bytes} bytes of the body, from the capture "
               "(--capture-body-bytes)")
    return HarResponse(reply.status, reply.reason, reply.http_version, headers, reply.body_head, reply.body_bytes,
                       mime, headers_size=header_bytes or -1, comment="; ".join(said), content_comment=content)
