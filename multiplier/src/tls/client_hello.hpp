// A TLS client's first flight, read (not consumed) inside a CONNECT tunnel
// before the Multiplier decides whether to intercept it (--intercept-tls):
// the SNI name, which --no-intercept patterns match as well as the CONNECT
// host, and a fingerprint of the client's TLS stack, which tells a client that
// refused SPE's certificate apart from another client on the same address.
//
// The fingerprint is the MD5 of what a TLS stack sends the same way on every
// connection (JA3-like): the legacy version, the cipher suites in order, the
// extension types sorted (Chrome shuffles them), the supported groups, the
// ALPN list and the supported versions; GREASE values, and the extensions
// that come and go between connections of one client (padding, a resumption's
// pre_shared_key and early_data, a retry's cookie), are left out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace spe {

struct ClientHello {
    std::string sni;          // the first host_name of server_name; empty: none
    std::string fingerprint;  // 16 hex digits
};

struct ClientHelloScan {
    enum class Status {
        need_more,         // read until `wanted` bytes in all, then scan again
        complete,          // `hello` is set
        not_client_hello,  // not (or not a well-formed) ClientHello: leave it to the TLS library
    };
    Status status = Status::not_client_hello;
    std::size_t wanted = 0;
    ClientHello hello;
};

/// The most a ClientHello may take (records, headers included); beyond it the scan gives up.
constexpr std::size_t kMaxClientHelloBytes = 64 * 1024;

/// Scans what a client sent so far (TLS records from its first byte).
/// A ClientHello split over several handshake records is reassembled.
ClientHelloScan scan_client_hello(std::string_view bytes);

}  // namespace spe
