#include "core/cache_headers.hpp"

namespace spe {

void CacheHeaders::set(CacheField f, std::string_view value) {
    auto& s = spans_[index(f)];
    s = {static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(value.size()), true};
    text_.append(value);
}

void CacheHeaders::assign(std::span<const std::pair<CacheField, std::string_view>> values) {
    // Sized once and written in place: one allocation and one copy per value
    // (this runs for every reply). Repeats follow their field, as Beast keeps them.
    std::size_t size = 0;
    for (const auto& [field, value] : values)
        size += value.size() + 2;
    text_.resize(size);
    std::size_t at = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto& [field, value] = values[i];
        auto& s = spans_[index(field)];
        if (s.present && s.offset + s.length != at) {  // a repeat after another field: the general way
            text_.resize(at);
            for (; i < values.size(); ++i)
                append(values[i].first, values[i].second);
            return;
        }
        if (s.present) {
            text_.replace(at, 2, ", ");
            at += 2;
            s.length += static_cast<std::uint32_t>(value.size() + 2);
        } else {
            s = {static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(value.size()), true};
        }
        value.copy(text_.data() + at, value.size());
        at += value.size();
    }
    text_.resize(at);
}

void CacheHeaders::append(CacheField f, std::string_view value) {
    auto& s = spans_[index(f)];
    if (!s.present) return set(f, value);
    if (s.offset + s.length != text_.size()) {  // not the last value written: move it to the end first
        const auto at = static_cast<std::uint32_t>(text_.size());
        text_.append(text_, s.offset, s.length);
        s.offset = at;
    }
    text_.append(", ").append(value);
    s.length = static_cast<std::uint32_t>(text_.size() - s.offset);
}

}  // namespace spe
