"""What the synthetic origin serves: the content model, the RFC 9111 conformance cases, conditional requests."""
