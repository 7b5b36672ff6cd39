// libFuzzer: the bytes a client sends first inside a CONNECT tunnel, through
// the ClientHello scan that decides whether to intercept it (tls/client_hello.*):
// untrusted input, parsed before any TLS library sees it. Properties checked
// beyond "no crash, no sanitizer report":
// - a scan that wants more asks for more than it has, and never past the bound;
// - a complete scan gives a 16-hex-digit fingerprint, and what follows the
//   hello (the client's next records) changes nothing of it;
// - a prefix decides nothing the whole input contradicts: a prefix that is a
//   complete hello is the same hello, one that is no hello stays none.
#include "tls/client_hello.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

using Scan = spe::ClientHelloScan;
using Status = Scan::Status;

bool hex16(const std::string& s) {
    return s.size() == 16 &&
           std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool same_hello(const Scan& a, const Scan& b) {
    return a.status == Status::complete && b.status == Status::complete && a.hello.sni == b.hello.sni &&
           a.hello.fingerprint == b.hello.fingerprint;
}

void check_alone(const Scan& scan, std::string_view bytes) {
    if (scan.status == Status::need_more && (scan.wanted <= bytes.size() || scan.wanted > spe::kMaxClientHelloBytes))
        std::abort();
    if (scan.status != Status::complete) return;
    if (!hex16(scan.hello.fingerprint)) std::abort();
    std::string followed(bytes);
    followed.append("\x17\x03\x03\x00\x05hello", 10);  // an application-data record after it
    if (!same_hello(scan, spe::scan_client_hello(followed))) std::abort();
}

void check_prefix(const Scan& whole, std::string_view bytes) {
    const auto prefix = spe::scan_client_hello(bytes.substr(0, bytes.size() / 2));
    if (prefix.status == Status::complete && !same_hello(prefix, whole)) std::abort();
    if (prefix.status == Status::not_client_hello && whole.status != Status::not_client_hello) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const auto scan = spe::scan_client_hello(bytes);
    check_alone(scan, bytes);
    check_prefix(scan, bytes);
    return 0;
}
