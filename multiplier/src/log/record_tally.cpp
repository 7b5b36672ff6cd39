#include "log/record_tally.hpp"

namespace spe {
namespace {

LegTally leg_of(const Measure& m, ResultClass result) {
    LegTally leg;
    leg.result = result;
    leg.error = m.error;
    leg.header_bytes = m.header_bytes;
    leg.body_bytes = m.bytes;
    if (m.connect_us && *m.connect_us > 0) leg.connect_us = *m.connect_us;
    if (m.ttfb_us) leg.ttfb_us = *m.ttfb_us;
    if (m.total_us) leg.total_us = *m.total_us;
    if (m.cache) {
        for (const auto& f : m.cache->violations)
            leg.violations.push_back(f.rule);
        for (const auto& f : m.cache->advisories)
            leg.advisories.push_back(f.rule);
    }
    return leg;
}

ResultClass collector_class(const Measure& m) {
    if (m.error == LegError::none) return ResultClass::ok;
    return is_no_response(m.error) ? ResultClass::no_response : ResultClass::protocol_error;
}

}  // namespace

RecordTally tally_of(const RequestRecord& record) {
    RecordTally tally;
    tally.collector = leg_of(record.collector, collector_class(record.collector));
    if (record.client_held_us) tally.client_held_us = *record.client_held_us;
    tally.proxies.reserve(record.proxies.size());
    for (const auto& p : record.proxies)
        tally.proxies.push_back(leg_of(p.measure, p.result));
    return tally;
}

}  // namespace spe
