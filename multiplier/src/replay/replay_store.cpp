#include "replay/replay_store.hpp"

#include "http/header_policy.hpp"

namespace spe {

ReplayStore::ReplayStore(std::chrono::milliseconds ttl, std::uint64_t max_bytes) : ttl_(ttl), max_bytes_(max_bytes) {}

void ReplayStore::put(const std::string& tag, UnsafeRequestFacts request, std::shared_ptr<const StoredReply> reply,
                      Clock::time_point now) {
    const auto bytes = reply->body.size();
    insert(tag, Entry{std::move(request), std::move(reply), bytes, now});
}

void ReplayStore::put_too_large(const std::string& tag, UnsafeRequestFacts request, std::uint64_t body_bytes,
                                Clock::time_point now) {
    insert(tag, Entry{std::move(request), nullptr, body_bytes, now});  // nothing held: the size names the refusal
}

void ReplayStore::insert(const std::string& tag, Entry entry) {
    std::lock_guard lock(mutex_);
    if (tag.empty() || entries_.contains(tag)) return;  // tags are unique per client request
    const auto held = entry.reply ? entry.reply_bytes : 0;
    make_room(held, entry.stored_at);
    bytes_ += held;
    entries_.emplace(tag, std::move(entry));
    order_.push_back(tag);
}

void ReplayStore::make_room(std::uint64_t incoming, Clock::time_point now) {
    while (!order_.empty()) {
        auto it = entries_.find(order_.front());
        const bool expired = it == entries_.end() || now - it->second.stored_at > ttl_;
        if (!expired && bytes_ + incoming <= max_bytes_) break;
        if (it != entries_.end()) {
            if (it->second.reply) bytes_ -= it->second.reply_bytes;
            entries_.erase(it);
        }
        order_.pop_front();
    }
}

std::variant<std::shared_ptr<const StoredReply>, std::string> ReplayStore::find(std::string_view tag,
                                                                                const UnsafeRequestFacts& copy,
                                                                                Clock::time_point now) {
    if (tag.empty()) return std::string("the request has no X-SPE-Request tag: no client request to answer it from");
    std::lock_guard lock(mutex_);
    auto it = entries_.find(std::string(tag));
    if (it == entries_.end() || now - it->second.stored_at > ttl_)
        return "no client reply for tag " + std::string(tag) +
               " (none was made, it broke off, or it is older than --replay-ttl or was pushed out of the store)";
    const auto& entry = it->second;
    if (copy.method != entry.request.method)
        return "the method differs from the client's: " + copy.method + " instead of " + entry.request.method;
    if (copy.body_md5 != entry.request.body_md5 || copy.body_bytes != entry.request.body_bytes)
        return "the body differs from the client's: " + std::to_string(copy.body_bytes) + " bytes, MD5 " +
               copy.body_md5 + " instead of " + std::to_string(entry.request.body_bytes) + " bytes, MD5 " +
               entry.request.body_md5;
    if (!entry.reply)
        return "the client's reply (" + std::to_string(entry.reply_bytes) +
               " body bytes) is larger than --replay-store-bytes: it was not kept";
    return entry.reply;
}

void ReplayRecording::header(const http::response_header<>& h) {
    reply_.header = h;
    strip_hop_by_hop(reply_.header);
    for (auto field : {http::field::content_length, http::field::transfer_encoding, http::field::via})
        reply_.header.erase(field);
    // The Collector stamps what it relays from the replay port as it does an origin's reply.
    erase_collector_stamps(reply_.header);
    erase_withheld_fields(reply_.header);
}

void ReplayRecording::body(const char* data, std::size_t n) {
    body_bytes_ += n;
    if (too_large_) return;
    if (body_bytes_ > max_body_) {
        too_large_ = true;
        std::string().swap(reply_.body);
        return;
    }
    reply_.body.append(data, n);
}

void ReplayRecording::keep(ReplayStore& store, const std::string& tag, UnsafeRequestFacts request,
                           std::int64_t delay_us) {
    if (too_large_) {
        store.put_too_large(tag, std::move(request), body_bytes_);
        return;
    }
    reply_.delay_us = delay_us;
    store.put(tag, std::move(request), std::make_shared<const StoredReply>(std::move(reply_)));
}

std::uint64_t ReplayStore::bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
}

std::size_t ReplayStore::entries() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

}  // namespace spe
