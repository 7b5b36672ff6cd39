// RFC 9110 15.2 as the judge reads it from a proxy's leg: a proxy forwards the
// interim (1xx) responses it did not ask for itself, before the final one,
// and an interim response is never the end of an exchange. Pure functions.
#pragma once

#include "core/measurement.hpp"
#include "judge/cache_rules.hpp"

#include <string>
#include <vector>

namespace spe {

/// What the proxy's parent sent before the reply, as far as the judge knows.
struct ParentInterim {
    /// The parent answered this very request (the reply is no reuse) and said what interim replies it sent
    /// before it (X-SPE-Parent's interim, patch 0021: its copies keep them): the proxy owes exactly those.
    const std::vector<unsigned>* sent = nullptr;
    /// Without that: the proxy's reply came from an origin fetch its parent made for this proxy's
    /// request, so its parent relayed to it what it relayed to the Multiplier (the reference's).
    bool own_fetch = false;
};

/// Judges one proxy's leg against the Collector's (`reference`); a reply from the proxy's own store never
/// had any interim reply to forward.
RuleJudgement judge_interim(const Measure& reference, const Measure& reply, ParentInterim parent);

/// Whether a leg with no final reply is judged at all: it had an interim reply, or the origin's came with
/// some that its parent sends every proxy (below).
bool judged_without_final_reply(const Measure& reference, const Measure& reply);

/// A leg's interim replies as the evidence shows them: "103 at 0.004 s, 102 at 0.051 s" ("none").
std::string interim_text(const Measure& m);

/// Whether `reply` came from an origin fetch made for the request sent at
/// `sent_at` (unix s): its fetch stamp is the same Collector's as the
/// reference's, a later fetch than it, made after the request left.
bool is_own_fetch(const Measure& reference, const Measure& reply, double sent_at);

}  // namespace spe
