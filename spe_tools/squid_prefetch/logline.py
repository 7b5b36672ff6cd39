"""The squid-prefetch kind's access-log lines, and the two forms of an intercepted URL.

The kind's squid.conf logs (LOGFORMAT) time, elapsed ms, client address, result/status, bytes, method,
URL, content type and the request's X-SPE-Scheme header. The Multiplier sends an intercepted
https://host:port/path to a proxy as http://host:port/path with X-SPE-Scheme: https; the agent reads pages
under their https URL (their relative links are https) and asks the Squid for them in that same form, so
its prefetch and the client's later request are one object.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

LOGFORMAT = "%ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru %mt %{X-SPE-Scheme}>h"


@dataclass(frozen=True)
class AccessLine:
    client: str
    status: int
    method: str
    url: str
    content_type: str
    scheme: str  # "https" when the request came as an intercepted one, else ""

    def is_html_page(self) -> bool:
        """A page a client got (200; a 304 revalidated the client's own copy: the page is in the Squid)."""
        return self.method == "GET" and self.status in (200, 304) and (
            self.content_type.startswith("text/html") or
            (self.content_type == "-" and urlsplit(self.url).path.endswith((".html", ".htm", "/"))))


def parse_line(text: str) -> AccessLine | None:
    f = text.split()
    if len(f) < 9:
        return None
    try:
        status = int(f[3].rsplit("/", 1)[1])
    except (IndexError, ValueError):
        return None
    return AccessLine(client=f[2], status=status, method=f[5], url=f[6], content_type=f[7].lower(),
                      scheme="https" if f[8].lower() == "https" else "")


def presented_url(upstream_url: str, scheme: str) -> str:
    """The URL as the client asked it: https again for an intercepted request."""
    if scheme != "https" or not upstream_url.startswith("http://"):
        return upstream_url
    return "https://" + upstream_url[len("http://"):]


def upstream_form(url: str) -> tuple[str, str]:
    """How the Multiplier would send `url` to a proxy: (absolute http URL, "https" or "")."""
    parts = urlsplit(url)
    if parts.scheme != "https":
        return url, ""
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    netloc = parts.netloc if parts.port else f"{host}:443"
    return urlunsplit(("http", netloc, parts.path or "/", parts.query, "")), "https"
