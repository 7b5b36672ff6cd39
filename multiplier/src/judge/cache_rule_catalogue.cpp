#include "judge/cache_rule_catalogue.hpp"

#include <nlohmann/json.hpp>

namespace spe {

std::string cache_rule_catalogue_json() {
    auto out = nlohmann::json::array();
    for (const auto& rule : kCacheRules)
        out.push_back({{"id", rule.id},
                       {"section", rule.section},
                       {"severity", rule.severity == RuleSeverity::violation ? "violation" : "advisory"},
                       {"meaning", rule.meaning}});
    return out.dump(2);
}

}  // namespace spe
