"""The link prefetcher of lab kind `squid-prefetch`: a Squid and an agent that follows its access log.

It is a proxy under test, a subject of evaluation, not part of SPE's data path. The design is that of
Debian's former squid-prefetch package: when a client fetches an HTML page through the Squid, the agent
fetches the page again through the same Squid (normally a hit), parses it, and warms the Squid with the
objects the page embeds and the pages it links to, within limits on depth, rate and bytes
(docs/lab-file.md, kind "squid-prefetch"). SPE measures it from outside like any other proxy
(analysis/sections/prefetch.py): its prefetches are the requests its Collector port saw that no client caused.
"""
