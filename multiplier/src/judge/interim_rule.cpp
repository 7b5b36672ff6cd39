#include "judge/interim_rule.hpp"
#include "judge/cache_rule_catalogue.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace spe {
namespace {

// The Collector stamps in milliseconds.
constexpr double kInterimClockSlack = 0.005;

std::size_t count_of(const std::vector<Interim>& list, unsigned status) {
    return static_cast<std::size_t>(
        std::count_if(list.begin(), list.end(), [status](const Interim& i) { return i.status == status; }));
}

std::string last_interim(const Measure& m) {
    const auto& last = m.interim.back();
    return fmt::format("{} at {:.3f} s", last.status, static_cast<double>(last.at_us) / 1e6);
}

/// An interim reply and then no final one: hung (the deadline) or ended the exchange there.
std::optional<Finding> no_final_reply(const Measure& reply) {
    if (reply.status || reply.interim.empty() || reply.error == LegError::aborted) return std::nullopt;
    if (reply.error == LegError::timeout)
        return Finding{cache_rule("interim"),
                       fmt::format("hung after an interim response ({}): no final response before the deadline",
                                   last_interim(reply))};
    return Finding{cache_rule("interim"),
                   fmt::format("an interim response ({}) as its final response: {} without a final response",
                               last_interim(reply), to_string(reply.error))};
}

bool owes_interim(const Measure& reference) {
    return std::any_of(reference.interim.begin(), reference.interim.end(),
                       [](const Interim& i) { return i.status != 100; });
}

/// The origin's reply came with interim replies, which the patched Collector (its fetch stamp says it is one)
/// keeps with the copy and sends every proxy request answered from it before the final reply (patch 0021); a
/// proxy that then got none, and answered nothing or an error of its own (no fetch stamp: no parent's reply
/// reached the client), failed on them: nginx hangs, Varnish answers 503 (both seen in front of an origin too).
std::optional<Finding> failed_after_parent_interim(const Measure& reference, const Measure& reply) {
    if (!reference.fetch || !owes_interim(reference) || *reference.status >= 500 || !reply.interim.empty())
        return std::nullopt;
    const auto sent = interim_text(reference);
    if (!reply.status &&
        (reply.error == LegError::timeout || reply.error == LegError::closed || reply.error == LegError::reset))
        return Finding{cache_rule("interim"),
                       fmt::format("no final response ({}) where the origin's came after interim responses ({}), "
                                   "which its parent passes on",
                                   to_string(reply.error), sent)};
    if (reply.status && *reply.status >= 500 && !reply.fetch)
        return Finding{cache_rule("interim"),
                       fmt::format("a {} of its own where the origin's {} came after interim responses ({}), "
                                   "which its parent passes on",
                                   *reply.status, *reference.status, sent)};
    return std::nullopt;
}

}  // namespace

bool judged_without_final_reply(const Measure& reference, const Measure& reply) {
    return !reply.interim.empty() || (reference.status && failed_after_parent_interim(reference, reply));
}

RuleJudgement judge_interim(const Measure& reference, const Measure& reply, ParentInterim parent) {
    RuleJudgement out;
    // The reference must have ended well: a proxy is not blamed for an exchange its parent did not finish.
    if (!reference.status) return out;
    if (auto f = no_final_reply(reply)) {
        out.exercised = true;
        out.finding = std::move(f);
        return out;
    }
    if (auto f = failed_after_parent_interim(reference, reply)) {
        out.exercised = true;
        out.finding = std::move(f);
        return out;
    }
    if (!reply.status) return out;
    std::vector<unsigned> owed;
    if (parent.sent)
        owed = *parent.sent;
    else if (parent.own_fetch)
        for (const auto& i : reference.interim)
            owed.push_back(i.status);
    // 100 Continue is left out: a proxy that sent Expect itself need not forward the 100 it asked for.
    for (const auto status : owed) {
        if (status == 100) continue;
        out.exercised = true;
        const auto due = static_cast<std::size_t>(std::count(owed.begin(), owed.end(), status));
        if (count_of(reply.interim, status) < due) {
            out.finding = Finding{
                cache_rule("interim"),
                fmt::format("dropped the {} interim response its parent relayed for this request "
                            "({} sent {} of them)",
                            status, parent.sent ? "its parent's X-SPE-Parent says it" : "the Collector's reply had",
                            due)};
            break;
        }
    }
    return out;
}

std::string interim_text(const Measure& m) {
    std::string out;
    for (const auto& i : m.interim)
        out += fmt::format("{}{} at {:.3f} s", out.empty() ? "" : ", ", i.status, static_cast<double>(i.at_us) / 1e6);
    return out.empty() ? "none" : out;
}

bool is_own_fetch(const Measure& reference, const Measure& reply, double sent_at) {
    if (!reference.fetch || !reply.fetch) return false;
    const auto ref = parse_fetch_stamp(*reference.fetch);
    const auto own = parse_fetch_stamp(*reply.fetch);
    return ref && own && own->collector() == ref->collector() && own->serial > ref->serial &&
           own->time >= sent_at - kInterimClockSlack;
}

}  // namespace spe
