// The parser of a proxy's reply: what a proxy leg measures and no more. Beast's
// basic_parser does all the reading (status line, fields, limits, framing,
// chunks, HEAD, 1xx); its callbacks here keep the status line and the fields
// in one buffer of the parser's own and hand the body to the leg's digesting
// sink. No Beast message is built: a tree of fields cost an allocation and a
// case-insensitive insert per field, for a header that is read once and dropped.
#pragma once

#include "http/digest_body.hpp"
#include "http/field_view.hpp"
#include "http/kept_text.hpp"

#include <boost/beast/http/basic_parser.hpp>

#include <cstdint>
#include <string_view>

namespace spe {

class ProxyReplyParser final : public boost::beast::http::basic_parser<false> {
public:
    // Not defaulted here: `parser.emplace()` would zero the whole object (its kept text) first.
    ProxyReplyParser();

    /// A reply whose status is not `status` gets `limit` as its body limit in place of the one set
    /// (basic_parser::body_limit): set from the status line, before the length is checked against it.
    void other_status_body_limit(unsigned status, std::uint64_t limit) {
        capped_status_ = status;
        other_status_limit_ = limit;
    }

    /// The sink of the decoded body bytes (set up before the first byte: session/proxy_reply.hpp).
    DigestBody::value_type& body() { return body_; }
    const DigestBody::value_type& body() const { return body_; }

    // The header, once parsed (is_header_done()); its parts stay valid while the parser lives.
    unsigned status() const { return status_; }
    unsigned version() const { return version_; }
    std::string_view reason() const { return reason_; }
    /// The fields in arrival order, as Beast's fields would hold them (values trimmed of optional whitespace).
    FieldViews fields() const { return fields_; }
    /// Whether the header lets the connection carry another request, as Beast's
    /// message::keep_alive says: by the version and the first Connection field.
    /// (basic_parser::keep_alive also says no to a body that ends with the connection.)
    bool header_keep_alive() const { return header_keep_alive_; }

private:
    // basic_parser clears `ec` before each call; none of these fails.
    void on_request_impl(boost::beast::http::verb, std::string_view, std::string_view, int,
                         boost::beast::error_code&) override {}
    void on_response_impl(int code, std::string_view reason, int version, boost::beast::error_code& ec) override;
    void on_field_impl(boost::beast::http::field name, std::string_view name_string, std::string_view value,
                       boost::beast::error_code& ec) override;
    void on_header_impl(boost::beast::error_code&) override {}
    void on_body_init_impl(const boost::optional<std::uint64_t>&, boost::beast::error_code&) override {}
    std::size_t on_body_impl(std::string_view body, boost::beast::error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t, std::string_view, boost::beast::error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, std::string_view body, boost::beast::error_code& ec) override;
    void on_finish_impl(boost::beast::error_code&) override {}

    DigestBody::value_type body_;
    unsigned status_ = 0;
    unsigned version_ = 0;
    bool header_keep_alive_ = false;
    bool connection_seen_ = false;
    unsigned capped_status_ = 0;  // 0: the body limit set holds for every status
    std::uint64_t other_status_limit_ = 0;
    // The reason, names and values are copied as they are parsed. Views of Beast's input would
    // not last: basic_parser (Boost 1.74, impl/basic_parser.ipp: put and parse_fields) hands
    // back the status line and every whole field line it has parsed when the rest of the header
    // has not arrived yet, so the read that brings the rest may move or overwrite them; and a
    // value with obs-fold is unfolded into a buffer local to parse_fields, gone when it returns.
    KeptText kept_;
    std::string_view reason_;
    FieldViewList fields_;
};

}  // namespace spe
