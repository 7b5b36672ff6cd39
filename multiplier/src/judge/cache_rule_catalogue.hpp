// The catalogue of the cache-rule judge's rules: each rule's id (what a
// record's violations, advisories and `exercised` name), its section (RFC
// 9111's unless it names another RFC; every section a finding of the rule may
// cite, as a finding takes it from here), whether breaking it is a violation or
// an advisory (a SHOULD, or a request directive RFC 9111 5.2.1 makes optional),
// and what breaking it means. The judge names a rule only through cache_rule()
// and rule_id(), which the compiler checks against this table; a finding is
// made from the row (core/cache_verdict.hpp), so no call site writes a section.
// --list-cache-rules prints the table.
// `python -m analysis.cache_rule_catalogue --update` writes that output for the
// report (analysis/cache_rule_catalogue.json) and the log schema's enums, and
// tests/python/loopback/test_cache_rule_catalogue.py fails while they are behind.
#pragma once

#include "core/cache_verdict.hpp"

#include <array>
#include <string>
#include <string_view>

namespace spe {

inline constexpr auto kCacheRules = std::to_array<CacheRule>({
    {"no-store", "5.2.2.5", RuleSeverity::violation, "reused a reply whose Cache-Control had no-store"},
    {"private", "5.2.2.7", RuleSeverity::violation, "a shared cache reused a private reply"},
    {"authorization", "3.5", RuleSeverity::violation,
     "reused a reply to a request with Authorization, without public / s-maxage / must-revalidate"},
    {"stale", "4.2.4", RuleSeverity::violation, "served a stale copy without permission"},
    {"must-revalidate", "5.2.2.2", RuleSeverity::violation, "served stale although must-revalidate"},
    {"proxy-revalidate", "5.2.2.8", RuleSeverity::violation, "served stale although proxy-revalidate"},
    {"s-maxage", "5.2.2.10", RuleSeverity::violation, "served past s-maxage"},
    {"no-cache", "5.2.2.4", RuleSeverity::violation, "reused a no-cache reply without validating it"},
    {"vary", "4.1", RuleSeverity::violation,
     "served a variant whose Vary-named request headers differ from this request's"},
    {"invalidation", "4.4", RuleSeverity::violation,
     "served a copy stored before a successful unsafe request to the same URI"},
    // 4: a reused reply carries Age, its true age; 5.1: an Age that is no delta-seconds is none.
    {"age", "4, 5.1", RuleSeverity::violation,
     "reused reply with no Age, an Age that is no delta-seconds, or an Age below the copy's true age"},
    {"not-modified", "4.3.2", RuleSeverity::violation, "a 304 whose validators do not match the client's request"},
    {"head-body", "9110 9.3.2", RuleSeverity::violation, "a reply to HEAD with a body"},
    {"interim", "9110 15.2", RuleSeverity::violation,
     "dropped an interim (1xx) response its parent relayed, or ended or hung after one without a final response"},
    {"validator-precedence", "9110 13.2.2", RuleSeverity::violation,
     "a 304 that only If-Modified-Since allowed, to a request with a non-matching If-None-Match"},
    {"not-modified-fields", "9110 15.4.5", RuleSeverity::violation,
     "a 304 without the ETag or Vary the stored reply has"},
    {"framing", "3.2", RuleSeverity::violation,
     "a stored copy (reused or revalidated) whose body disagrees with its Content-Length (e.g. taken from a 304)"},
    {"date", "4, 3.2", RuleSeverity::violation,
     "reused a stored reply with another Date than the valid one its parent sent"},
    {"stored-fields", "3.1", RuleSeverity::violation,
     "reused a stored reply without an end-to-end field its parent sent (Set-Cookie too)"},
    {"connection-fields", "9110 7.6.1", RuleSeverity::violation,
     "forwarded, or served from its store, a field its parent's Connection listed (for that hop only)"},
    {"header-update", "4.3.4", RuleSeverity::violation,
     "took its parent's 304 and served the copy without a field that 304 carried and the origin changed"},
    {"private-fields", "5.2.2.7", RuleSeverity::violation,
     "reused a stored reply with a field its private=\"...\" named, which a shared cache must not store"},
    {"no-cache-fields", "5.2.2.4", RuleSeverity::violation,
     "reused a reply without validating it, with a field its no-cache=\"...\" named"},
    {"invalid-freshness", "4.2.1", RuleSeverity::violation,
     "reused without validation a copy whose max-age or s-maxage is no delta-seconds (invalid: stale)"},
    {"heuristic", "4.2.2", RuleSeverity::advisory, "heuristic freshness beyond 10 % of (Date - Last-Modified)"},
    {"request-no-store", "5.2.1.5", RuleSeverity::advisory, "reused a reply to a request that had no-store"},
    {"request-no-cache", "5.2.1.4", RuleSeverity::advisory,
     "request no-cache (or Pragma: no-cache) answered from cache without validating"},
    {"request-max-age", "5.2.1.1", RuleSeverity::advisory, "request max-age=N answered with a copy older than N"},
    {"duplicate-freshness", "4.2.1", RuleSeverity::advisory,
     "reused a copy fresh by the first of repeated max-age, s-maxage or Expires"},
});

/// The catalogue's row of a rule, checked when compiled: a rule that is not in
/// kCacheRules does not compile. What a Finding is made from.
consteval const CacheRule& cache_rule(std::string_view id) {
    for (const auto& rule : kCacheRules)
        if (rule.id == id) return rule;
    throw "not a rule of kCacheRules (judge/cache_rule_catalogue.hpp)";
}

/// The id of a rule of the catalogue, checked when compiled (the string the record writes is the catalogue's own).
consteval std::string_view rule_id(std::string_view id) {
    return cache_rule(id).id;
}

/// The catalogue as JSON (--list-cache-rules): [{"id", "section", "severity", "meaning"}, ...] in table order.
std::string cache_rule_catalogue_json();

}  // namespace spe
