// A request as it goes on the wire, serialized once: the Collector and every
// proxy under test get the same bytes, so the header is not serialized again
// for each of them (it was a fifth of the Multiplier's user-space work per
// request with four proxies).
#pragma once

#include "core/message_types.hpp"

#include <boost/asio/buffer.hpp>

#include <array>
#include <string>
#include <string_view>

namespace spe {

class WireRequest {
public:
    /// Serializes the start line and fields of `message` and keeps its body.
    /// The body is sent as is, so the framing headers must already describe
    /// it (Content-Length, or no body), as make_upstream_request ensures.
    explicit WireRequest(Request message);

    /// What may be sent again after a failure (upstream_connection.hpp).
    http::verb method() const { return method_; }
    /// The serialized start line and fields (for what the cache-rule judge reads).
    std::string_view header() const { return header_; }
    /// The header block followed by the body, for one gathered write.
    std::array<boost::asio::const_buffer, 2> buffers() const {
        return {boost::asio::buffer(header_), boost::asio::buffer(body_)};
    }

private:
    http::verb method_;
    std::string header_;
    std::string body_;
};

}  // namespace spe
