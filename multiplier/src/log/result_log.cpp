#include "log/result_log.hpp"

#include "core/config.hpp"
#include "http/secret_digest.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <ctime>
#include <filesystem>

namespace spe {
namespace {

/// A member name as written before its value, `,"name":`, made at compile time.
template <std::size_t N>
struct MemberName {
    std::array<char, N + 3> text{};
    consteval MemberName(const char (&name)[N]) {  // implicit, so that key<"name">() reads well
        text[0] = ',';
        text[1] = '"';
        for (std::size_t i = 0; i + 1 < N; ++i)
            text[i + 2] = name[i];
        text[N + 1] = '"';
        text[N + 2] = ':';
    }
};

// The JSON line is written by hand: building an nlohmann::json tree per record
// (a std::map per object, a heap node per value) cost about a third of the
// Multiplier's CPU per request. The output is byte-identical to
// nlohmann::json::dump() of the same tree (keys in sorted order, same number
// and string forms); tests/unit/test_result_log.cpp checks that.
class JsonWriter {
public:
    explicit JsonWriter(std::string& out) : out_(out) {}

    void open() { out_ += '{', first_ = true; }
    void close() { out_ += '}', first_ = false; }
    void open_array() { out_ += '[', first_ = true; }
    void close_array() { out_ += ']', first_ = false; }
    /// Starts a member: the comma (if needed) and "key":, in one append (the
    /// names are known at compile time; a record has about 80 members).
    template <MemberName name>
    JsonWriter& key() {
        out_.append(name.text.data() + (first_ ? 1 : 0), name.text.size() - (first_ ? 1 : 0));
        first_ = true;  // the value follows without a comma
        return *this;
    }
    /// After a member name written as a string (names not known at compile time).
    void colon() { out_ += ':', first_ = true; }
    void element() {
        if (!first_) out_ += ',';
        first_ = false;
    }
    void null() { out_ += "null", first_ = false; }
    void boolean(bool b) { out_ += b ? "true" : "false", first_ = false; }
    template <class Int>
    void integer(Int v) {
        std::array<char, 24> buf{};
        auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
        out_.append(buf.data(), res.ptr);
        first_ = false;
    }
    template <class Int>
    void integer(const std::optional<Int>& v) {
        v ? integer(*v) : null();
    }
    void number(double v) {
        if (!std::isfinite(v)) return null();
        std::array<char, 64> buf{};
        auto* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), v);
        out_.append(buf.data(), end);
        first_ = false;
    }
    /// A non-negative number of at most three decimals (times and ages in ms
    /// resolution), written as nlohmann's shortest form would (trailing zeros
    /// trimmed, ".0" when whole) with integer formatting: the judge writes
    /// several per reply, and the general double formatting costs ten times more.
    void number_ms(double v) {
        if (!std::isfinite(v) || v < 0 || v >= 1e15) return number(v);
        const auto ms = static_cast<std::uint64_t>(std::llround(v * 1000));
        if (static_cast<double>(ms) / 1000 != v) return number(v);  // not a whole number of ms: the general form
        integer(ms / 1000);
        // The fraction's digits, trailing zeros trimmed ("0" when whole).
        const auto frac = static_cast<unsigned>(ms % 1000);
        const std::array<char, 4> digits = {'.', static_cast<char>('0' + frac / 100),
                                            static_cast<char>('0' + frac / 10 % 10),
                                            static_cast<char>('0' + frac % 10)};
        const std::size_t length = frac == 0 ? 2 : frac % 10 != 0 ? 4 : frac % 100 != 0 ? 3 : 2;
        out_.append(digits.data(), length);
        first_ = false;
    }
    void string(std::string_view s);
    /// The string, or null when it is empty.
    void string_or_null(std::string_view s) { s.empty() ? null() : string(s); }

private:
    std::string& out_;
    bool first_ = true;
};

/// Which bytes a JSON string cannot hold as they are: quote, backslash,
/// control characters, and (for nlohmann's UTF-8 handling) non-ASCII.
constexpr std::array<bool, 256> kNeedsCare = [] {
    std::array<bool, 256> t{};
    for (std::size_t c = 0; c < t.size(); ++c)
        t[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
    return t;
}();

void JsonWriter::string(std::string_view s) {
    first_ = false;
    const auto care =
        std::find_if(s.begin(), s.end(), [](char c) { return kNeedsCare[static_cast<unsigned char>(c)]; });
    if (care == s.end()) {  // the common case: one append, quotes included
        const auto at = out_.size();
        out_.resize(at + s.size() + 2);
        out_[at] = '"';
        s.copy(out_.data() + at + 1, s.size());
        out_[at + 1 + s.size()] = '"';
        return;
    }
    if (std::any_of(care, s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
        // Non-ASCII: nlohmann's own escaping, which replaces invalid UTF-8 (client-supplied URLs) instead of throwing.
        out_ += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return;
    }
    out_ += '"';
    auto plain = [](char c) { return !kNeedsCare[static_cast<unsigned char>(c)]; };
    while (!s.empty()) {
        // Runs of characters that need no escape go in one append.
        const auto run = static_cast<std::size_t>(std::find_if_not(s.begin(), s.end(), plain) - s.begin());
        out_.append(s.data(), run);
        s.remove_prefix(run);
        if (s.empty()) break;
        const char c = s.front();
        s.remove_prefix(1);
        switch (c) {
            case '"':
                out_ += "\\\"";
                break;
            case '\\':
                out_ += "\\\\";
                break;
            case '\b':
                out_ += "\\b";
                break;
            case '\f':
                out_ += "\\f";
                break;
            case '\n':
                out_ += "\\n";
                break;
            case '\r':
                out_ += "\\r";
                break;
            case '\t':
                out_ += "\\t";
                break;
            default:
                fmt::format_to(std::back_inserter(out_), "\\u{:04x}", static_cast<unsigned>(c));
        }
    }
    out_ += '"';
}

std::string http_version(unsigned version) {
    if (version == 11) return "HTTP/1.1";
    if (version == 10) return "HTTP/1.0";
    return fmt::format("HTTP/{}.{}", version / 10, version % 10);
}

void findings(JsonWriter& w, const std::vector<Finding>& list) {
    w.open_array();
    for (const auto& f : list) {
        w.element();
        w.open();
        w.key<"reason">().string(f.reason);
        w.key<"rule">().string(f.rule);
        w.key<"section">().string(f.section);
        w.close();
    }
    w.close_array();
}

/// Header fields as a JSON object, names in sorted order (as nlohmann writes them).
void fields_object(JsonWriter& w, const CacheVerdict::Fields& fields) {
    // Sorted by name through pointers (no copy of the strings); of a repeated name the first is kept.
    std::array<const std::pair<std::string, std::string>*, 32> order{};
    const std::size_t n = std::min(fields.size(), order.size());
    for (std::size_t i = 0; i < n; ++i)
        order[i] = &fields[i];
    std::stable_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n),
                     [](const auto* a, const auto* b) { return a->first < b->first; });
    w.open();
    for (std::size_t i = 0; i < n; ++i) {
        if (i > 0 && order[i]->first == order[i - 1]->first) continue;
        w.element();
        w.string(order[i]->first);
        w.colon();
        w.string(order[i]->second);
    }
    w.close();
}

/// A reply's shown judged fields as a JSON object (names in order), or
/// nothing when it has none.
void shown_fields_object(JsonWriter& w, const CacheHeaders& h) {
    w.open();
    for (const auto& [name, field] : kShownFields)
        if (const auto value = h.get(field)) {
            w.element();
            w.string(name);
            w.colon();
            w.string(*value);
        }
    w.close();
}

bool has_shown_fields(const CacheHeaders& h) {
    return std::any_of(kShownFields.begin(), kShownFields.end(), [&](const auto& f) { return h.get(f.second); });
}

/// The cache-rule judge's verdict: the record's `cache` object. Members
/// that are empty or null are left out: most replies have no finding, and the
/// object is written five times per request at 4-way fan-out.
void cache_object(JsonWriter& w, const CacheVerdict& v) {
    w.open();
    if (!v.advisories.empty()) {
        w.key<"advisories">();
        findings(w, v.advisories);
    }
    if (v.age_s) w.key<"age_s">().number_ms(std::round(*v.age_s * 1000) / 1000);
    if (!v.claim.empty()) w.key<"claim">().string(v.claim);
    if (!v.claim_conflict.empty()) w.key<"claim_conflict">().string(v.claim_conflict);
    if (!v.conservative.empty()) w.key<"conservative">().string(v.conservative);
    if (!v.violations.empty()) {
        w.key<"evidence">();
        w.open();
        w.key<"reference">();
        fields_object(w, v.evidence_reference);
        w.key<"request">();
        fields_object(w, v.evidence_request);
        w.key<"served">();
        fields_object(w, v.evidence_served);
        w.close();
    }
    if (!v.exercised.empty()) {
        w.key<"exercised">();
        w.open_array();
        for (auto rule : v.exercised) {
            w.element();
            w.string(rule);
        }
        w.close_array();
    }
    if (!v.fetch.empty()) w.key<"fetch">().string({v.fetch.data(), v.fetch.size()});
    if (v.fetched_at) w.key<"fetched_at">().number_ms(*v.fetched_at);
    if (v.origin && has_shown_fields(*v.origin)) {
        w.key<"origin">();
        shown_fields_object(w, *v.origin);
    }
    w.key<"provenance">().string(v.provenance);
    w.key<"reused">().boolean(v.reused);
    if (!v.unjudged.empty()) w.key<"unjudged">().string(v.unjudged);
    if (v.validated_at) w.key<"validated_at">().number_ms(*v.validated_at);
    if (!v.violations.empty()) {
        w.key<"violations">();
        findings(w, v.violations);
    }
    w.close();
}

/// The interim (1xx) replies before the final one: [{"at_us":N,"status":103}, ...].
void interim_array(JsonWriter& w, const std::vector<Interim>& interim) {
    w.key<"interim">();
    w.open_array();
    for (const auto& i : interim) {
        w.element();
        w.open();
        w.key<"at_us">().integer(i.at_us);
        w.key<"status">().integer(i.status);
        w.close();
    }
    w.close_array();
}

/// The members of a measure every reply has, in key order, around `middle`
/// (the members that sort between "md5" and "retried").
template <class Middle>
void measure_members(JsonWriter& w, const Measure& m, Middle&& middle) {
    w.key<"bytes">().integer(m.bytes);
    if (m.cache) {
        w.key<"cache">();
        cache_object(w, *m.cache);
    }
    w.key<"connect_us">().integer(m.connect_us);
    w.key<"error">();
    m.error == LegError::none ? w.null() : w.string(to_string(m.error));
    w.key<"error_detail">().string_or_null(m.error_detail);
    w.key<"fetch">();
    m.fetch ? w.string(*m.fetch) : w.null();
    w.key<"header_bytes">().integer(m.header_bytes);
    w.key<"http_version">();
    m.version ? w.string(http_version(m.version)) : w.null();
    if (!m.interim.empty()) interim_array(w, m.interim);  // left out when there were none
    w.key<"md5">();
    m.md5 ? w.string(*m.md5) : w.null();
    middle();
    w.key<"retried">().boolean(m.retried);
    w.key<"status">().integer(m.status);
    w.key<"total_us">().integer(m.total_us);
    w.key<"ttfb_us">().integer(m.ttfb_us);
}

std::string seconds_micros(const std::optional<std::int64_t>& us) {
    const auto v = us.value_or(0);
    return fmt::format("{}:{}", v / 1'000'000, v % 1'000'000);
}

std::string ctime_of(double ts) {
    auto t = static_cast<std::time_t>(ts);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a %b %d %H:%M:%S %Y", &tm);
    return buf;
}

}  // namespace

std::string to_json_line(const RequestRecord& r) {
    std::string out;
    // A judged record is about 700 bytes plus 530 per proxy: one allocation for the line.
    out.reserve(768 + 640 * r.proxies.size());
    JsonWriter w(out);
    w.open();
    w.key<"client">().string(r.client);
    w.key<"client_status">().integer(r.client_status);
    w.key<"collector">();
    w.open();
    measure_members(w, r.collector, [] {});
    w.close();
    w.key<"id">().integer(r.id);
    if (r.intercepted) w.key<"intercepted">().boolean(true);
    w.key<"method">().string(r.method);
    w.key<"note">().string_or_null(r.note);
    w.key<"proxies">();
    w.open_array();
    for (const auto& p : r.proxies) {
        w.element();
        w.open();
        measure_members(w, p.measure, [&] {
            w.key<"mismatched_headers">();
            w.open_array();
            for (const auto& h : p.mismatched_headers) {
                w.element();
                w.string(h);
            }
            w.close_array();
            w.key<"name">().string(p.name);
            w.key<"position">().integer(p.position);
            if (p.queued_us) w.key<"queued_us">().integer(*p.queued_us);
            w.key<"result">().string(to_string(p.result));
        });
        w.close();
    }
    w.close_array();
    if (!r.request_headers.empty()) {
        w.key<"request_headers">();
        fields_object(w, r.request_headers);
    }
    w.key<"tag">().string_or_null(r.tag);
    w.key<"ts">().number(std::round(r.ts * 1e6) / 1e6);
    w.key<"url">().string(r.url);
    w.key<"validation">().boolean(r.validation);
    w.key<"version">().string(r.version);
    w.close();
    return out;
}

std::string to_rope_lines(const RequestRecord& r, long pid) {
    // Figure 3: date:(pid):RESULT: name: initial-latency transfer-time size {validation} client type version method url
    const auto client_ip = r.client.substr(0, r.client.rfind(':'));
    const auto tail = fmt::format("{} {} {} {} {}", client_ip, r.validation ? "validation" : "non-validation",
                                  r.version, r.method, r.url);
    const auto prefix = fmt::format("{}:(pid={}):RESULT: ", ctime_of(r.ts), pid);
    auto transfer = [](const Measure& m) -> std::optional<std::int64_t> {
        if (!m.total_us || !m.ttfb_us) return std::nullopt;
        return *m.total_us - *m.ttfb_us;
    };
    std::string out = fmt::format("{}Collector: {} {} {} {{DUMMY,}} {}\n", prefix, seconds_micros(r.collector.ttfb_us),
                                  seconds_micros(transfer(r.collector)), r.collector.bytes, tail);
    const auto ref_status = r.collector.status ? std::to_string(*r.collector.status) : "-";
    for (const auto& p : r.proxies) {
        std::string validation = fmt::format(
            "{},{},{},", ref_status, p.measure.status ? std::to_string(*p.measure.status) : "-", to_string(p.result));
        if (p.result == ResultClass::header_mismatch || p.result == ResultClass::other_fetch)
            for (const auto& h : p.mismatched_headers)
                validation += h + ",";
        out += fmt::format("{}{}: {} {} {} {{{}}} {}\n", prefix, p.name, seconds_micros(p.measure.ttfb_us),
                           seconds_micros(transfer(p.measure)), p.measure.bytes, validation, tail);
    }
    return out;
}

ResultLog::ResultLog(const Config& config)
    : capture_dir_(config.capture_dir),
      capture_max_bytes_(config.capture_max_bytes),
      capture_secrets_(config.capture_secrets),
      json_(!config.log_path.empty()),
      rope_(!config.rope_log_path.empty()),
      writer_(config.log_path, config.rope_log_path, config.log_queue_bytes) {
    if (!capture_dir_.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(capture_dir_, ec);
        if (ec) throw std::runtime_error("cannot create --capture-dir " + capture_dir_ + ": " + ec.message());
    }
}

void ResultLog::write(const RequestRecord& record) {
    RecordWrite out;
    if (json_) out.json = to_json_line(record) + '\n';
    if (rope_) out.rope = to_rope_lines(record, static_cast<long>(::getpid()));
    if (!capture_dir_.empty())
        for (const auto& p : record.proxies)
            if (p.result != ResultClass::ok && p.result != ResultClass::no_response)
                if (auto file = capture(record, p)) out.captures.push_back(std::move(*file));
    writer_.submit(std::move(out));
}

std::string capture_text(const RequestRecord& r, const ProxyResult& p, bool secrets) {
    // Redacted here, for a mismatch only: the legs keep the headers as received (no cost per request).
    auto header = [&](const std::string& text) {
        return secrets ? text : redact_header_text(text, process_secret_digest());
    };
    return fmt::format(
        "# SPE mismatch capture\nrequest: {} {} {} {}\nproxy: {}\nresult: {}\nmismatched headers: {}\nerror: {} {}\n"
        "\n## Collector reply header\n{}\n## Collector body: first {} of {} bytes, md5 {}\n{}\n"
        "\n## Proxy reply header\n{}\n## Proxy body: first {} of {} bytes, md5 {}\n{}\n",
        r.id, r.method, r.url, r.version, p.name, to_string(p.result), fmt::join(p.mismatched_headers, ", "),
        to_string(p.measure.error), p.measure.error_detail, header(r.collector.raw_header),
        r.collector.body_head.size(), r.collector.bytes, r.collector.md5.value_or("-"), r.collector.body_head,
        header(p.measure.raw_header), p.measure.body_head.size(), p.measure.bytes, p.measure.md5.value_or("-"),
        p.measure.body_head);
}

std::optional<CaptureFile> ResultLog::capture(const RequestRecord& r, const ProxyResult& p) {
    std::string text = capture_text(r, p, capture_secrets_);
    if (captured_bytes_.fetch_add(text.size()) + text.size() > capture_max_bytes_) return std::nullopt;
    return CaptureFile{(std::filesystem::path(capture_dir_) / fmt::format("{:08}-{}.txt", r.id, p.name)).string(),
                       std::move(text)};
}

}  // namespace spe
