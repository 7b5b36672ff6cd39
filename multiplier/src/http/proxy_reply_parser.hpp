// The parser of a proxy's reply: what a proxy leg measures and no more. Beast's
// basic_parser does all the reading (status line, fields, limits, framing,
// chunks, HEAD, 1xx); its callbacks here keep the status line and the fields
// in one buffer of the parser's own and hand the body to the leg's digesting
// sink. No Beast message is built: a tree of fields cost an allocation and a
// case-insensitive insert per field, for a header that is read once and dropped.
#pragma once

#include "http/digest_body.hpp"
#include "http/field_view.hpp"

#include <boost/beast/http/basic_parser.hpp>
#include <boost/container/small_vector.hpp>

#include <cstdint>
#include <string_view>

namespace spe {

class ProxyReplyParser final : public boost::beast::http::basic_parser<false> {
public:
    ProxyReplyParser() = default;

    /// The sink of the decoded body bytes (set up before the first byte: session/proxy_reply.hpp).
    DigestBody::value_type& body() { return body_; }
    const DigestBody::value_type& body() const { return body_; }

    // The header, once parsed (is_header_done()); its parts stay valid while the parser lives.
    unsigned status() const { return status_; }
    unsigned version() const { return version_; }
    std::string_view reason() const { return text(0, reason_size_); }
    /// The fields in arrival order, values trimmed of optional whitespace as Beast's fields keep them.
    FieldViewList fields() const;
    /// Whether the header lets the connection carry another request, as Beast's
    /// message::keep_alive says: by the version and the first Connection field.
    /// (basic_parser::keep_alive also says no to a body that ends with the connection.)
    bool header_keep_alive() const { return header_keep_alive_; }

private:
    void on_request_impl(boost::beast::http::verb, std::string_view, std::string_view, int,
                         boost::beast::error_code&) override {}
    void on_response_impl(int code, std::string_view reason, int version, boost::beast::error_code& ec) override;
    void on_field_impl(boost::beast::http::field name, std::string_view name_string, std::string_view value,
                       boost::beast::error_code& ec) override;
    void on_header_impl(boost::beast::error_code& ec) override { ec = {}; }
    void on_body_init_impl(const boost::optional<std::uint64_t>&, boost::beast::error_code& ec) override { ec = {}; }
    std::size_t on_body_impl(std::string_view body, boost::beast::error_code& ec) override;
    void on_chunk_header_impl(std::uint64_t, std::string_view, boost::beast::error_code& ec) override { ec = {}; }
    std::size_t on_chunk_body_impl(std::uint64_t, std::string_view body, boost::beast::error_code& ec) override;
    void on_finish_impl(boost::beast::error_code& ec) override { ec = {}; }

    /// Copies `s` to the end of text_; returns where it starts.
    std::uint32_t keep(std::string_view s);
    std::string_view text(std::uint32_t at, std::uint32_t size) const { return {text_.data() + at, size}; }

    struct KeptField {
        boost::beast::http::field name;
        std::uint32_t name_at;
        std::uint32_t name_size;
        std::uint32_t value_at;
        std::uint32_t value_size;
    };

    DigestBody::value_type body_;
    unsigned status_ = 0;
    unsigned version_ = 0;
    std::uint32_t reason_size_ = 0;  // the reason is kept first in text_
    bool header_keep_alive_ = false;
    bool connection_seen_ = false;
    // The reason, names and values, copied as they are parsed. Views of Beast's input would not
    // last: basic_parser (Boost 1.74, impl/basic_parser.ipp: put and parse_fields) hands back
    // the status line and every whole field line it has parsed when the rest of the header has
    // not arrived yet, so the read that brings the rest may move or overwrite them; and a value
    // with obs-fold is unfolded into a buffer local to parse_fields, gone when it returns.
    // Room for a common header, so that most replies allocate nothing here.
    boost::container::small_vector<char, 2048> text_;
    boost::container::small_vector<KeptField, 24> fields_;
};

}  // namespace spe
