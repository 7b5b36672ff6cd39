#include "judge/fetch_memory.hpp"

namespace spe {
namespace {

std::optional<FetchStamp> stamp_of(const Measure& m) {
    return m.fetch ? parse_fetch_stamp(*m.fetch) : std::nullopt;
}

}  // namespace

void FetchMemory::remember(std::string_view method, const Measure& reference) {
    if (method != "GET" || !reference.status || !reference.md5 || reference.error != LegError::none) return;
    const auto stamp = stamp_of(reference);
    if (!stamp) return;
    const std::lock_guard lock(mutex_);
    if (const auto* kept = fetches_.find(stamp->serial); kept && kept->stamp.id == stamp->id) return;
    // What the validator compares, and nothing else (no captures, times or judge fields).
    fetches_.insert_or_assign(stamp->serial,
                              Kept{*stamp, reference.status, reference.md5, reference.headers, reference.fetch});
}

std::optional<Measure> FetchMemory::other_fetch(const Measure& reference, const Measure& reply) const {
    if (!reply.fetch || !reference.fetch || *reply.fetch == *reference.fetch) return std::nullopt;  // no parse
    const auto mine = stamp_of(reply);
    const auto theirs = stamp_of(reference);
    if (!mine || !theirs || mine->id == theirs->id) return std::nullopt;
    const std::lock_guard lock(mutex_);
    const auto* kept = fetches_.find(mine->serial);
    if (!kept || kept->stamp.id != mine->id) return std::nullopt;
    Measure out;
    out.status = kept->status;
    out.md5 = kept->md5;
    out.headers = kept->headers;
    out.fetch = kept->fetch;
    return out;
}

std::optional<ComparedHeaders> FetchMemory::first_headers(const FetchStamp& fetch) const {
    const std::lock_guard lock(mutex_);
    const auto* kept = fetches_.find(fetch.serial);
    if (!kept || kept->stamp.id != fetch.id) return std::nullopt;
    return kept->headers;
}

}  // namespace spe
