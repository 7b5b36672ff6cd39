#include "judge/validator.hpp"
#include "http/field_equivalence.hpp"

namespace spe {

std::vector<std::string> differing_headers(const ComparedHeaders& a, const ComparedHeaders& b) {
    // Both lists are sorted by name: walk them together like a merge.
    std::vector<std::string> out;
    auto ia = a.begin();
    auto ib = b.begin();
    while (ia != a.end() || ib != b.end()) {
        if (ib == b.end() || (ia != a.end() && ia->name < ib->name)) {
            out.push_back((ia++)->name);
        } else if (ia == a.end() || ib->name < ia->name) {
            out.push_back((ib++)->name);
        } else {
            if (!equivalent_field_values(ia->name, ia->value, ib->value)) out.push_back(ia->name);
            ++ia;
            ++ib;
        }
    }
    return out;
}

namespace {

// RFC 9110 section 15.4.5: a 304 carries the headers a 200 would have had among these,
// and should carry no other representation metadata. Caches differ in the optional rest
// (Squid adds Content-Type and Last-Modified, nginx and Traffic Server drop them), which
// says nothing about whether the client's cached copy stays right: compare only these.
bool required_in_304(std::string_view name) {
    return name == "cache-control" || name == "content-location" || name == "etag" || name == "expires" ||
           name == "vary";
}

ComparedHeaders only_required_in_304(const ComparedHeaders& headers) {
    ComparedHeaders out;
    for (const auto& h : headers)
        if (required_in_304(h.name)) out.push_back(h);
    return out;
}

std::vector<std::string> mismatched_headers(const Measure& reference, const Measure& m) {
    if (*reference.status == 304 && *m.status == 304)
        return differing_headers(only_required_in_304(reference.headers), only_required_in_304(m.headers));
    return differing_headers(reference.headers, m.headers);
}

ResultClass error_class(LegError e) {
    return is_no_response(e) ? ResultClass::no_response : ResultClass::protocol_error;
}

/// The status comes before any error that happened after it: a body cut at the
/// reference's length (sequential mode) or broken later (truncated, reset)
/// gets the same class as the whole body read in concurrent mode would.
ResultClass classify_reply(const Measure& reference, const Measure& m, bool headers_differ) {
    // SPE's own answers, not the proxy's: they come before anything compared.
    if (m.error == LegError::not_sent) return ResultClass::not_sent;
    if (m.error == LegError::replay_refused) return ResultClass::replay_refused;
    if (!m.status) return error_class(m.error);  // no reply header: nothing to compare
    if (!reference.status || *m.status != *reference.status) return ResultClass::status_code_mismatch;
    // The read was cut because the body ran past the reference's length.
    if (m.error == LegError::body_too_large) return ResultClass::body_mismatch;
    if (m.error != LegError::none) return error_class(m.error);
    if (m.md5 != reference.md5) return ResultClass::body_mismatch;
    return headers_differ ? ResultClass::header_mismatch : ResultClass::ok;
}

/// The class and header list of `m` against `expected` (the reference, or the fetch the reply names).
void compare(const Measure& expected, ProxyResult& result) {
    const Measure& m = result.measure;
    result.mismatched_headers.clear();
    // A leg that failed after its header still has its headers (selected as
    // soon as the header was parsed): the list is the true difference.
    if (m.status && expected.status) result.mismatched_headers = mismatched_headers(expected, m);
    result.result = classify_reply(expected, m, !result.mismatched_headers.empty());
}

void hold_to_other_fetch(const Measure& other_fetch, ProxyResult& result) {
    // Another fetch than the reference's: held to that fetch, the proxy answers for what differs from it,
    // and only a faithful copy of it is excused what the two fetches' own difference explains.
    auto against_fetch = result;
    compare(other_fetch, against_fetch);
    if (against_fetch.result != ResultClass::ok) {
        result = std::move(against_fetch);
        return;
    }
    result.result = ResultClass::other_fetch;  // the list stays the difference from the reference
}

}  // namespace

void validate(const Measure& reference, ProxyResult& result, const Measure* other_fetch) {
    if (!result.measure.replay_refusal.empty()) {
        // SPE's refusal, not the proxy's reply: the reason is the record's error, whatever the read of the
        // 502's body came to (cut at the reference's length in sequential mode when the reference was a 502 too).
        result.measure.error = LegError::replay_refused;
        result.measure.error_detail = result.measure.replay_refusal;
    }
    compare(reference, result);
    if (other_fetch && result.result != ResultClass::ok) hold_to_other_fetch(*other_fetch, result);
}

void validate(const Measure& reference, ProxyResult& result, const FetchMemory& fetches) {
    validate(reference, result);
    // Looked up only for a reply that differs: most match, and the lookup parses two stamps.
    if (result.result == ResultClass::ok) return;
    if (const auto other = fetches.other_fetch(reference, result.measure)) hold_to_other_fetch(*other, result);
}

}  // namespace spe
