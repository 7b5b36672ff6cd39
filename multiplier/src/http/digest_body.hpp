// A Beast Body for replies that are measured, not kept: the parser feeds the
// decoded bytes to an MD5 digest and keeps at most `head_limit` of them (for
// mismatch captures), so a proxy's reply never occupies more than one buffer.
#pragma once

#include "http/md5_digest.hpp"

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include <string>

namespace spe {

struct DigestBody {
    struct value_type {
        Md5Digest digest;
        std::string head;
        std::size_t head_limit = 0;
    };

    class reader {
    public:
        template <bool isRequest, class Fields>
        reader(boost::beast::http::header<isRequest, Fields>&, value_type& body) : body_(body) {}

        void init(const boost::optional<std::uint64_t>&, boost::system::error_code& ec) { ec = {}; }

        template <class ConstBufferSequence>
        std::size_t put(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
            std::size_t n = 0;
            for (auto b : boost::beast::buffers_range_ref(buffers)) {
                const auto* p = static_cast<const char*>(b.data());
                body_.digest.update(p, b.size());
                if (body_.head.size() < body_.head_limit)
                    body_.head.append(p, std::min(b.size(), body_.head_limit - body_.head.size()));
                n += b.size();
            }
            ec = {};
            return n;
        }

        void finish(boost::system::error_code& ec) { ec = {}; }

    private:
        value_type& body_;
    };
};

}  // namespace spe
