// The reply fields the cache-rule judge reads, as received: taken once from
// each reply header (http/reply_header.hpp) into the measure, read by the judge
// (judge/), shown by the record (log/). Cheap copies of a few values.
#pragma once

#include "core/field_name_set.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace spe {

/// The reply fields the judge reads.
enum class CacheField : std::uint8_t {
    cache_control,
    expires,
    date,
    last_modified,
    etag,
    vary,
    age,
    content_encoding,
    cache_status,  // RFC 9211
    x_cache,
    validated,  // X-SPE-Validated
    reply_to,   // X-SPE-Reply-To: the client request (tag) the copy was fetched for
    parent,     // X-SPE-Parent: what the Collector sent the proxy (parent_stamp.hpp)
    count
};

/// The reply fields RFC 9111 decisions depend on, as received (absent:
/// nullopt). The values share one buffer: every reply's fields are taken and
/// thousands of fetches' are kept, so one allocation each instead of a dozen.
class CacheHeaders {
public:
    std::optional<std::string_view> get(CacheField f) const {
        const auto& s = spans_[index(f)];
        if (!s.present) return std::nullopt;
        return std::string_view(text_).substr(s.offset, s.length);
    }
    /// Sets the field's value (replacing any).
    void set(CacheField f, std::string_view value);
    /// Adds a repeated field's value (joined with ", ", as RFC 9110 5.3 allows).
    void append(CacheField f, std::string_view value);
    /// Sets the fields of an empty header from values in arrival order (repeats joined).
    void assign(std::span<const std::pair<CacheField, std::string_view>> values);
    void clear(CacheField f) { spans_[index(f)] = {}; }

    std::optional<std::string_view> cache_control() const { return get(CacheField::cache_control); }
    std::optional<std::string_view> expires() const { return get(CacheField::expires); }
    std::optional<std::string_view> date() const { return get(CacheField::date); }
    std::optional<std::string_view> last_modified() const { return get(CacheField::last_modified); }
    std::optional<std::string_view> etag() const { return get(CacheField::etag); }
    std::optional<std::string_view> vary() const { return get(CacheField::vary); }
    std::optional<std::string_view> age() const { return get(CacheField::age); }
    std::optional<std::string_view> content_encoding() const { return get(CacheField::content_encoding); }
    std::optional<std::string_view> cache_status() const { return get(CacheField::cache_status); }
    std::optional<std::string_view> x_cache() const { return get(CacheField::x_cache); }
    std::optional<std::string_view> validated() const { return get(CacheField::validated); }
    std::optional<std::string_view> reply_to() const { return get(CacheField::reply_to); }
    std::optional<std::string_view> parent() const { return get(CacheField::parent); }

    bool set_cookie = false;
    /// The names of every field of the reply: what a proxy kept of the fields its parent sent
    /// (X-SPE-Parent's list) is judged by them.
    FieldNameSet field_names;

private:
    struct Span {
        std::uint32_t offset = 0;
        std::uint32_t length = 0;
        bool present = false;
    };
    static std::size_t index(CacheField f) { return static_cast<std::size_t>(f); }

    std::string text_;
    std::array<Span, static_cast<std::size_t>(CacheField::count)> spans_{};
};

/// The judged fields a record shows (a violation's evidence, the origin's
/// reply), by lowercase name, in name order (as the record writes them).
inline constexpr std::array<std::pair<std::string_view, CacheField>, 8> kShownFields = {{
    {"age", CacheField::age},
    {"cache-control", CacheField::cache_control},
    {"date", CacheField::date},
    {"etag", CacheField::etag},
    {"expires", CacheField::expires},
    {"last-modified", CacheField::last_modified},
    {"vary", CacheField::vary},
    {"x-spe-validated", CacheField::validated},
}};

}  // namespace spe
