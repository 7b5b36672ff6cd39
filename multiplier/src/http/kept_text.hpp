// Copies of the strings of a header being parsed, at addresses that do not
// change while they are kept (http/proxy_reply_parser.hpp keeps views of them).
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace spe {

/// Copies of strings that stay where they are while it lives: a block of its
/// own first, enough for a common header, then blocks from the heap.
class KeptText {
public:
    KeptText() {}  // not zeroed: one is made for every reply a proxy leg reads
    KeptText(const KeptText&) = delete;
    KeptText& operator=(const KeptText&) = delete;

    std::string_view keep(std::string_view s) {
        if (s.size() > room_) grow(s.size());
        char* at = next_;
        if (!s.empty()) std::memcpy(at, s.data(), s.size());
        next_ += s.size();
        room_ -= s.size();
        return {at, s.size()};
    }

private:
    void grow(std::size_t at_least) {
        // A new block; the old ones stay, for what was kept in them.
        const auto size = std::max<std::size_t>(at_least, 4096);
        more_.push_back(std::make_unique_for_overwrite<char[]>(size));
        next_ = more_.back().get();
        room_ = size;
    }

    char first_[2048];
    char* next_ = first_;
    std::size_t room_ = sizeof first_;
    std::vector<std::unique_ptr<char[]>> more_;
};

}  // namespace spe
