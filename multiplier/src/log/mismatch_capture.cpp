#include "log/mismatch_capture.hpp"

#include "http/secret_digest.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>
#include <utility>

namespace spe {

MismatchCaptures::MismatchCaptures(std::string dir, std::uint64_t max_bytes, bool secrets)
    : dir_(std::move(dir)), max_bytes_(max_bytes), secrets_(secrets) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw std::runtime_error("cannot create --capture-dir " + dir_ + ": " + ec.message());
}

void MismatchCaptures::capture_mismatches(const RequestRecord& r, std::vector<CaptureFile>& out) {
    for (const auto& p : r.proxies) {
        if (p.result == ResultClass::ok || p.result == ResultClass::no_response) continue;
        std::string text = capture_text(r, p, secrets_);
        if (captured_bytes_.fetch_add(text.size()) + text.size() > max_bytes_) continue;
        out.push_back(
            {(std::filesystem::path(dir_) / fmt::format("{:08}-{}.txt", r.id, p.name)).string(), std::move(text)});
    }
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

}  // namespace spe
