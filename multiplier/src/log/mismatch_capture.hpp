// For mismatches (--capture-dir), captures of both replies: the request, the
// result, both reply headers and the first body bytes, one file per proxy, until
// the directory holds --capture-max-bytes. Formatted on the calling thread, put
// on disk by the record writer (record_writer.hpp). Thread-safe.
#pragma once

#include "core/measurement.hpp"
#include "log/record_queue.hpp"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace spe {

class MismatchCaptures {
public:
    /// Creates `dir` if need be (throws std::runtime_error when it cannot). `secrets`
    /// (--capture-secrets): secret fields' values as received.
    MismatchCaptures(std::string dir, std::uint64_t max_bytes, bool secrets);

    /// Adds a capture for each proxy whose reply did not match (a reply that
    /// was there and differs), as long as the byte budget lasts.
    void capture_mismatches(const RequestRecord& record, std::vector<CaptureFile>& out);

private:
    std::string dir_;
    std::uint64_t max_bytes_;
    bool secrets_;
    std::atomic<std::uint64_t> captured_bytes_{0};
};

/// A mismatch capture's text: the request, the result, both reply headers and
/// body heads; with `secrets` false, the values of Cookie, Set-Cookie,
/// Authorization and Proxy-Authorization as the process's keyed digest.
std::string capture_text(const RequestRecord& record, const ProxyResult& proxy, bool secrets);

}  // namespace spe
