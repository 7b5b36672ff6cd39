// The client connection as the HTTP code reads and writes it: the TCP stream
// itself, or, once a CONNECT tunnel is intercepted, a TLS server stream over it
// (OpenSSL through Asio's ssl::stream). Deadlines stay on the TCP stream: a TLS
// read or write past its deadline fails with the same timeout as a plain one.
#pragma once

#include "io/timed_stream.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <memory>
#include <string>

namespace spe {

/// The TCP stream under TLS, first giving back the bytes the Multiplier had
/// already read from it (a ClientHello sent right behind the CONNECT request
/// sits in the session's read buffer, and the TLS engine must see it first).
class PrefixedStream {
public:
    using executor_type = TimedStream::executor_type;
    using lowest_layer_type = tcp::socket;

    PrefixedStream(TimedStream& next, std::string already_read) : next_(next), prefix_(std::move(already_read)) {}

    executor_type get_executor() noexcept { return next_.get_executor(); }
    lowest_layer_type& lowest_layer() { return next_.socket(); }
    const lowest_layer_type& lowest_layer() const { return next_.socket(); }
    TimedStream& next_layer() { return next_; }

    template <class MutableBufferSequence, class Token>
    auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [this](auto handler, const MutableBufferSequence& b) {
                if (prefix_.empty()) {
                    next_.async_read_some(b, std::move(handler));
                    return;
                }
                const auto n = asio::buffer_copy(b, asio::buffer(prefix_));
                prefix_.erase(0, n);
                auto ex = asio::get_associated_executor(handler, next_.get_executor());
                asio::post(ex, [h = std::move(handler), n]() mutable { std::move(h)(error_code{}, n); });
            },
            token, buffers);
    }

    template <class ConstBufferSequence, class Token>
    auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
        return next_.async_write_some(buffers, std::forward<Token>(token));
    }

private:
    TimedStream& next_;
    std::string prefix_;
};

using TlsServerStream = asio::ssl::stream<PrefixedStream>;

class ClientStream {
public:
    using executor_type = TimedStream::executor_type;

    explicit ClientStream(TimedStream& transport) : tcp_(transport) {}

    executor_type get_executor() noexcept { return tcp_.get_executor(); }
    TimedStream& transport() { return tcp_; }
    void expires_after(Clock::duration d) { tcp_.expires_after(d); }

    /// From now on reads and writes go through TLS (the handshake is the caller's).
    TlsServerStream& start_tls(asio::ssl::context& ctx, std::string already_read) {
        tls_ = std::make_unique<TlsServerStream>(PrefixedStream(tcp_, std::move(already_read)), ctx);
        return *tls_;
    }
    bool tls() const { return tls_ != nullptr; }
    TlsServerStream* tls_stream() { return tls_.get(); }

    template <class MutableBufferSequence, class Token>
    auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [this](auto handler, const MutableBufferSequence& b) {
                if (tls_)
                    tls_->async_read_some(b, std::move(handler));
                else
                    tcp_.async_read_some(b, std::move(handler));
            },
            token, buffers);
    }

    template <class ConstBufferSequence, class Token>
    auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [this](auto handler, const ConstBufferSequence& b) {
                if (tls_)
                    tls_->async_write_some(b, std::move(handler));
                else
                    tcp_.async_write_some(b, std::move(handler));
            },
            token, buffers);
    }

private:
    TimedStream& tcp_;
    std::unique_ptr<TlsServerStream> tls_;
};

}  // namespace spe
