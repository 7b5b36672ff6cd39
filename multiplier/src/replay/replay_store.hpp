// The client's replies to unsafe requests (POST, PUT, PATCH, DELETE, any
// method but GET, HEAD, OPTIONS, TRACE), kept for the proxies' copies of the
// same request. The Collector sends those copies to the replay port instead of
// the origin, and the replay port answers each one from here: the origin sees
// every unsafe request once, as the client sent it, and every proxy gets the
// reply the client got. A copy that does not match the client's request (no
// tag, an unknown or expired one, another method, another body) is refused.
#pragma once

#include "core/message_types.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

namespace spe {

/// What a copy of the request must match: the client's request as the Multiplier read it.
struct UnsafeRequestFacts {
    std::string method;
    std::string body_md5;  // hex MD5 of the decoded body
    std::uint64_t body_bytes = 0;
};

/// The reply the client got, as the Collector sent it (end-to-end fields only).
struct StoredReply {
    http::response_header<> header;
    std::string body;
    std::int64_t delay_us = 0;  // the Collector's time to first byte for the client: the proxies wait as long
};

class ReplayStore {
public:
    using Clock = std::chrono::steady_clock;
    ReplayStore(std::chrono::milliseconds ttl, std::uint64_t max_bytes);

    /// The reply to the client request tagged `tag`. A reply whose body is larger than the store holds
    /// is remembered as too large, so its copies are refused with that reason.
    void put(const std::string& tag, UnsafeRequestFacts request, std::shared_ptr<const StoredReply> reply,
             Clock::time_point now = Clock::now());
    void put_too_large(const std::string& tag, UnsafeRequestFacts request, std::uint64_t body_bytes,
                       Clock::time_point now = Clock::now());

    /// The reply for a proxy's copy, or why it is refused.
    std::variant<std::shared_ptr<const StoredReply>, std::string> find(std::string_view tag,
                                                                       const UnsafeRequestFacts& copy,
                                                                       Clock::time_point now = Clock::now());

    std::uint64_t max_bytes() const { return max_bytes_; }
    std::uint64_t bytes() const;
    std::size_t entries() const;

private:
    struct Entry {
        UnsafeRequestFacts request;
        std::shared_ptr<const StoredReply> reply;  // null: too large to keep
        std::uint64_t reply_bytes = 0;             // its body's size (held only when `reply` is set)
        Clock::time_point stored_at;
    };
    void insert(const std::string& tag, Entry entry);
    /// Drops expired entries, then the oldest until `incoming` more bytes fit. Under the lock.
    void make_room(std::uint64_t incoming, Clock::time_point now);

    const std::chrono::milliseconds ttl_;
    const std::uint64_t max_bytes_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, Entry> entries_;
    std::deque<std::string> order_;  // tags, oldest first
    std::uint64_t bytes_ = 0;
};

/// The client's reply to an unsafe request, recorded as the Collector leg relays it, then kept in the store.
class ReplayRecording {
public:
    explicit ReplayRecording(std::uint64_t max_body) : max_body_(max_body) {}
    /// The Collector's reply header, end-to-end fields only (the replay port frames its own).
    void header(const http::response_header<>& h);
    void body(const char* data, std::size_t n);
    /// The whole reply into `store` for the client request tagged `tag` (or, over the body limit, only that
    /// it was too large); `delay_us`: the Collector's time to first byte.
    void keep(ReplayStore& store, const std::string& tag, UnsafeRequestFacts request, std::int64_t delay_us);

private:
    std::uint64_t max_body_;
    StoredReply reply_;
    std::uint64_t body_bytes_ = 0;
    bool too_large_ = false;
};

}  // namespace spe
