#include "tls/client_hello.hpp"

#include "http/md5_digest.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace spe {
namespace {

constexpr unsigned kHandshakeRecord = 22;
constexpr unsigned kClientHello = 1;
constexpr std::size_t kRecordHeader = 5;
constexpr std::size_t kMaxRecordPayload = 16384 + 2048;  // RFC 8446 5.1 (2^14), with TLS 1.2's allowance

constexpr unsigned kServerName = 0;
constexpr unsigned kSupportedGroups = 10;
constexpr unsigned kAlpn = 16;
constexpr unsigned kPadding = 21;
constexpr unsigned kPreSharedKey = 41;
constexpr unsigned kEarlyData = 42;
constexpr unsigned kSupportedVersions = 43;
constexpr unsigned kCookie = 44;

/// RFC 8701: 0x0a0a, 0x1a1a ... 0xfafa.
bool grease(unsigned value) {
    return (value & 0x0f0f) == 0x0a0a && (value >> 8) == (value & 0xff);
}

/// Big-endian reads over a bounded view; any read past the end makes it fail for good.
class Reader {
public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}
    bool ok() const { return ok_; }
    bool empty() const { return bytes_.empty(); }
    unsigned number(std::size_t width) {
        if (!ok_ || bytes_.size() < width) return fail(), 0;
        unsigned value = 0;
        for (std::size_t i = 0; i < width; ++i)
            value = (value << 8) | static_cast<unsigned char>(bytes_[i]);
        bytes_.remove_prefix(width);
        return value;
    }
    std::string_view take(std::size_t n) {
        if (!ok_ || bytes_.size() < n) return fail(), std::string_view{};
        auto out = bytes_.substr(0, n);
        bytes_.remove_prefix(n);
        return out;
    }
    /// A vector<...> of RFC 8446 3.4: its length in `width` bytes, then its contents.
    Reader vector(std::size_t width) {
        const auto contents = take(number(width));
        return Reader(contents, ok_);
    }

private:
    Reader(std::string_view bytes, bool ok) : bytes_(bytes), ok_(ok) {}
    void fail() { ok_ = false; }
    std::string_view bytes_;
    bool ok_ = true;
};

/// Appends the non-GREASE numbers of `list`; false if the list is malformed.
bool append_numbers(std::string& out, Reader list, std::size_t width) {
    bool first = true;
    while (list.ok() && !list.empty()) {
        const unsigned value = list.number(width);
        if (grease(value)) continue;
        if (!first) out += '-';
        out += std::to_string(value);
        first = false;
    }
    return list.ok();
}

/// The ClientHello body (after its 4-byte handshake header): SNI and fingerprint; nullopt if malformed.
std::optional<ClientHello> parse_body(std::string_view body) {
    Reader r(body);
    const unsigned legacy_version = r.number(2);
    r.take(32);   // random
    r.vector(1);  // legacy_session_id
    Reader ciphers = r.vector(2);
    r.vector(1);  // legacy_compression_methods
    Reader extensions = r.empty() ? Reader(std::string_view{}) : r.vector(2);
    if (!r.ok()) return std::nullopt;

    ClientHello hello;
    std::string text = std::to_string(legacy_version) + ",";
    if (!append_numbers(text, ciphers, 2)) return std::nullopt;
    std::vector<unsigned> types;
    std::string groups, alpn, versions;
    while (!extensions.empty()) {
        const unsigned type = extensions.number(2);
        Reader data = extensions.vector(2);
        if (!extensions.ok()) return std::nullopt;
        if (grease(type) || type == kPadding || type == kPreSharedKey || type == kEarlyData || type == kCookie)
            continue;
        types.push_back(type);
        bool well_formed = true;
        if (type == kServerName) {
            Reader names = data.vector(2);
            while (names.ok() && !names.empty()) {
                const unsigned name_type = names.number(1);
                const auto name = names.take(names.number(2));
                if (name_type == 0 && names.ok() && hello.sni.empty()) hello.sni = std::string(name);
            }
            well_formed = names.ok();
        } else if (type == kSupportedGroups) {
            well_formed = append_numbers(groups, data.vector(2), 2);
        } else if (type == kAlpn) {
            Reader protocols = data.vector(2);
            while (protocols.ok() && !protocols.empty()) {
                const auto protocol = protocols.take(protocols.number(1));
                if (!alpn.empty()) alpn += '-';
                alpn += protocol;
            }
            well_formed = protocols.ok();
        } else if (type == kSupportedVersions) {
            well_formed = append_numbers(versions, data.vector(1), 2);
        }
        if (!well_formed) return std::nullopt;
    }
    std::sort(types.begin(), types.end());
    text += ',';
    for (std::size_t i = 0; i < types.size(); ++i)
        text += (i ? "-" : "") + std::to_string(types[i]);
    text += "," + groups + "," + alpn + "," + versions;
    hello.fingerprint = md5_hex(text.data(), text.size()).substr(0, 16);
    return hello;
}

}  // namespace

ClientHelloScan scan_client_hello(std::string_view bytes) {
    ClientHelloScan scan;
    const auto need = [&scan](std::size_t wanted) {
        if (wanted > kMaxClientHelloBytes) return scan;  // not_client_hello: too long to wait for
        scan.status = ClientHelloScan::Status::need_more;
        scan.wanted = wanted;
        return scan;
    };
    // The handshake messages, reassembled from the records read so far.
    std::string handshake;
    std::size_t offset = 0;
    for (;;) {
        if (bytes.size() < offset + kRecordHeader) return need(offset + kRecordHeader);
        Reader header(bytes.substr(offset, kRecordHeader));
        const unsigned type = header.number(1);
        header.number(2);  // legacy_record_version
        const std::size_t length = header.number(2);
        if (type != kHandshakeRecord || length == 0 || length > kMaxRecordPayload) return scan;
        if (bytes.size() < offset + kRecordHeader + length) return need(offset + kRecordHeader + length);
        handshake.append(bytes.substr(offset + kRecordHeader, length));
        offset += kRecordHeader + length;
        if (handshake.size() < 4) continue;
        Reader message(handshake);
        if (message.number(1) != kClientHello) return scan;
        const std::size_t body_length = message.number(3);
        if (4 + body_length > kMaxClientHelloBytes) return scan;
        if (handshake.size() < 4 + body_length) continue;
        auto hello = parse_body(std::string_view(handshake).substr(4, body_length));
        if (!hello) return scan;
        scan.status = ClientHelloScan::Status::complete;
        scan.hello = std::move(*hello);
        return scan;
    }
}

}  // namespace spe
