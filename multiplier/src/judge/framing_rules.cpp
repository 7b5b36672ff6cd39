#include "judge/framing_rules.hpp"
#include "judge/cache_rule_catalogue.hpp"

#include <fmt/format.h>

namespace spe {

RuleJudgement judge_head_body(std::string_view method, const Measure& reply) {
    RuleJudgement out;
    if (method != "HEAD") return out;
    out.exercised = true;
    if (reply.error == LegError::extra_data)
        out.finding = Finding{cache_rule("head-body"), "a reply to HEAD followed by body bytes"};
    return out;
}

RuleJudgement judge_framing(std::string_view method, bool from_store, const Measure& reply) {
    RuleJudgement out;
    if (!from_store || method == "HEAD") return out;
    out.exercised = true;
    if (reply.error != LegError::extra_data && reply.error != LegError::truncated && reply.error != LegError::bad_body)
        return out;
    // The leg's own reason says what it saw.
    out.finding =
        Finding{cache_rule("framing"),
                fmt::format("a stored copy's body disagrees with its framing ({} bytes read: {})", reply.bytes,
                            reply.error_detail.empty() ? to_string(reply.error) : reply.error_detail)};
    return out;
}

}  // namespace spe
