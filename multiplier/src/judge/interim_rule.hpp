// RFC 9110 15.2 as the judge reads it from a proxy's leg: a proxy forwards the
// interim (1xx) responses it did not ask for itself, before the final one,
// and an interim response is never the end of an exchange. Pure functions.
#pragma once

#include "core/measurement.hpp"
#include "judge/cache_rules.hpp"

#include <optional>
#include <string>

namespace spe {

struct InterimJudgement {
    bool exercised = false;          // the leg had the chance to break the rule
    std::optional<Finding> finding;  // and broke it
};

/// Judges one proxy's leg against the Collector's (`reference`). `own_fetch`:
/// the proxy's reply came from an origin fetch its parent made for this
/// proxy's request (so its parent had the origin's interim replies to relay
/// to it, as it relayed them to the Multiplier); a reply from a store, the
/// proxy's or its parent's, never had any to forward.
InterimJudgement judge_interim(const Measure& reference, const Measure& reply, bool own_fetch);

/// A leg's interim replies as the evidence shows them: "103 at 0.004 s, 102 at 0.051 s" ("none").
std::string interim_text(const Measure& m);

/// Whether `reply` came from an origin fetch made for the request sent at
/// `sent_at` (unix s): its fetch stamp is the same Collector's as the
/// reference's, a later fetch than it, made after the request left.
bool is_own_fetch(const Measure& reference, const Measure& reply, double sent_at);

}  // namespace spe
