#include "http/reply_header.hpp"

#include <boost/beast/http/write.hpp>

#include <sstream>

namespace spe {

void take_header(Measure& m, const http::response_header<>& h, const HeaderPolicy& policy, bool cache_fields) {
    m.status = h.result_int();
    m.version = h.version();
    m.headers = policy.select(h);
    if (auto stamp = h.find(kFetchStampHeader); stamp != h.end()) m.fetch = std::string(stamp->value());
    // The replay port's refusal of a proxy's copy of an unsafe request, passed on by the proxy.
    if (auto refused = h.find(kReplayRefusedHeader); refused != h.end())
        m.replay_refusal = std::string(refused->value());
    if (cache_fields) m.cache_headers = take_cache_headers(h);
}

void note_interim(Measure& m, unsigned status, Clock::time_point started) {
    // A peer may send any number of them (a 102 every few seconds keeps a slow
    // reply alive); the record keeps the first few.
    if (m.interim.size() < kMaxInterims) m.interim.push_back({status, micros_since(started)});
}

std::string header_text(const http::response_header<>& h) {
    std::ostringstream out;
    out << h;
    return out.str();
}

}  // namespace spe
