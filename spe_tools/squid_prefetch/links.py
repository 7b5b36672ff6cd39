"""What an HTML page embeds and links to, found with the standard library's HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

# Attributes that name an object the browser fetches to render the page.
EMBEDDING = {("img", "src"), ("script", "src"), ("iframe", "src"), ("frame", "src"), ("embed", "src"),
             ("source", "src"), ("audio", "src"), ("video", "src"), ("video", "poster"), ("input", "src"),
             ("object", "data")}
EMBEDDED_LINK_RELS = {"stylesheet", "icon", "shortcut", "preload", "modulepreload", "apple-touch-icon"}
# Attributes that name a page the user may go to next.
LINKING = {("a", "href"), ("area", "href")}


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.embedded: list[str] = []
        self.linked: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value}
        if tag == "base" and "href" in values and self.base is None:
            self.base = values["href"]
        if tag == "link" and "href" in values:
            rels = set((values.get("rel") or "").lower().split())
            if rels & EMBEDDED_LINK_RELS:
                self.embedded.append(values["href"])
            elif "prefetch" in rels or "next" in rels:
                self.linked.append(values["href"])
            return
        for name, value in values.items():
            if (tag, name) in EMBEDDING:
                self.embedded.append(value)
            elif (tag, name) in LINKING:
                self.linked.append(value)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)


def page_references(html: str, page_url: str) -> tuple[list[str], list[str]]:
    """The absolute http(s) URLs `html` (fetched from `page_url`) embeds and links to, each once, in page
    order, without fragments; the page itself is not among its links."""
    parser = _Collector()
    parser.feed(html)
    parser.close()
    base = urljoin(page_url, parser.base) if parser.base else page_url
    seen = {urldefrag(page_url).url}
    return _absolute(parser.embedded, base, seen), _absolute(parser.linked, base, seen)


def _absolute(refs: list[str], base: str, seen: set[str]) -> list[str]:
    out = []
    for ref in refs:
        url = urldefrag(urljoin(base, ref.strip())).url
        if urlsplit(url).scheme in ("http", "https") and url not in seen:
            seen.add(url)
            out.append(url)
    return out
