// Compares a proxy's reply with the reference (the Collector's reply as the
// client got it) and gives the result class of the log.
#pragma once

#include "measurement.hpp"

namespace spe {

/// Fills `result.result` and `result.mismatched_headers` from `reference`.
/// Precedence: an error before the reply header, then status, then an error
/// after it (a body cut at the reference length is a BODY_MISMATCH), then body
/// MD5, then headers.
void validate(const Measure& reference, ProxyResult& result);

/// Names present in only one of the two sets or with different values (sorted).
std::vector<std::string> differing_headers(const ComparedHeaders& a, const ComparedHeaders& b);

}  // namespace spe
