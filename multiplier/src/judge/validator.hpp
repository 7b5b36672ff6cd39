// Compares a proxy's reply with the reference (the Collector's reply as the
// client got it) and gives the result class of the log.
#pragma once

#include "core/measurement.hpp"
#include "judge/fetch_memory.hpp"

namespace spe {

/// Fills `result.result` and `result.mismatched_headers` from `reference`.
/// Precedence: an error before the reply header, then status, then an error
/// after it (a body cut at the reference length is a BODY_MISMATCH), then body
/// MD5, then headers.
/// `other_fetch`: the first reply a client got from the origin fetch the
/// proxy's reply names, when that is another fetch than the reference's and
/// is known (FetchMemory). The proxy is then held to that fetch: any
/// difference from it is the proxy's, as above; a reply that matches it but
/// not the reference is OTHER_FETCH, listing the headers that differ from the
/// reference (the two fetches' difference).
void validate(const Measure& reference, ProxyResult& result, const Measure* other_fetch = nullptr);
/// The same, with the other fetch looked up in `fetches` (a GET's legs) only when the reply differs
/// from the reference.
void validate(const Measure& reference, ProxyResult& result, const FetchMemory& fetches);

/// Names present in only one of the two sets or with different values (sorted).
std::vector<std::string> differing_headers(const ComparedHeaders& a, const ComparedHeaders& b);

}  // namespace spe
