// The judge's catalogue (judge/cache_rule_catalogue.hpp) is the one place a rule's section is written: a
// finding is made from the rule's row, so every record shows the section --list-cache-rules prints.
#include "judge/cache_rule_catalogue.hpp"
#include "log/record_json.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>

TEST_CASE("a finding takes its rule and section from the catalogue's row, never a section of its own") {
    // Not an aggregate: {rule, section, reason} does not compile, only {cache_rule("..."), reason}.
    static_assert(!std::is_aggregate_v<spe::Finding>);
    static_assert(!std::is_constructible_v<spe::Finding, std::string_view, std::string_view, std::string>);
    static_assert(std::is_constructible_v<spe::Finding, const spe::CacheRule&, std::string>);
    for (const auto& row : spe::kCacheRules) {
        const spe::Finding f{row, "why"};
        CHECK(f.rule == row.id);
        CHECK(f.section == row.section);
    }
    CHECK(spe::cache_rule("age").section == "4, 5.1");  // one rule, both sections it is judged by
}

TEST_CASE("every rule's section in a record is the one --list-cache-rules prints") {
    const auto listed = nlohmann::json::parse(spe::cache_rule_catalogue_json());
    REQUIRE(listed.size() == spe::kCacheRules.size());
    spe::CacheVerdict v;
    for (const auto& row : spe::kCacheRules)
        (row.severity == spe::RuleSeverity::violation ? v.violations : v.advisories).push_back({row, "why"});
    spe::RequestRecord r;
    r.proxies.push_back({"p", {}, spe::ResultClass::ok, {}});
    r.proxies[0].measure.status = 200;
    r.proxies[0].measure.cache = v;
    const auto cache = nlohmann::json::parse(spe::to_json_line(r, "m1"))["proxies"][0]["cache"];
    std::size_t written = 0;
    for (const auto* list : {"violations", "advisories"})
        for (const auto& finding : cache[list]) {
            const auto rule = std::find_if(listed.begin(), listed.end(),
                                           [&](const auto& entry) { return entry["id"] == finding["rule"]; });
            REQUIRE(rule != listed.end());
            CHECK(finding["section"] == (*rule)["section"]);
            CHECK((*rule)["severity"] == (std::string_view(list) == "violations" ? "violation" : "advisory"));
            ++written;
        }
    CHECK(written == spe::kCacheRules.size());
}
