// What a reply's body shows against its framing, as the judge reads it from the leg (the leg reads and
// measures; its error says where the body went wrong): a reply to HEAD has no body (RFC 9110 9.3.2), and a
// stored copy's body ends where its Content-Length says (RFC 9111 3.2). Pure functions.
#pragma once

#include "core/measurement.hpp"
#include "judge/cache_rules.hpp"

#include <string_view>

namespace spe {

/// A reply to HEAD followed by body bytes (RFC 9110 9.3.2): the leg reads no body for HEAD, so bytes
/// after the header are one. Exercised by every reply to HEAD.
RuleJudgement judge_head_body(std::string_view method, const Measure& reply);

/// A copy from the proxy's store (reused, or revalidated during this request) whose body did not end where
/// its header said: the leg read past the declared length or the body ended short or its framing broke. A
/// cache that took Content-Length from a 304 onto its stored reply does this (RFC 9111 3.2 leaves
/// Content-Length out of the update), from the reply that merged the 304 on. Exercised by every body from
/// a store but a reply to HEAD (no body to frame); a fetch made for this request is the origin's or the
/// leg's, not a stored copy's.
RuleJudgement judge_framing(std::string_view method, bool from_store, const Measure& reply);

}  // namespace spe
