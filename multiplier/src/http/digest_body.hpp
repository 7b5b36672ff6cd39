// A Beast Body for replies that are measured, not kept: the parser feeds the
// decoded bytes to an MD5 digest (compared with the reference first, when one
// is expected) and keeps at most `head_limit` of them (for mismatch captures),
// so a proxy's reply never occupies more than one buffer.
#pragma once

#include "http/expected_body_digest.hpp"

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

#include <algorithm>
#include <string>

namespace spe {

struct DigestBody {
    struct value_type {
        ExpectedBodyDigest digest;
        std::string head;
        std::size_t head_limit = 0;

        /// Takes the next decoded body bytes: digested, and the first head_limit kept.
        void put(const char* p, std::size_t n) {
            digest.update(p, n);
            if (head.size() < head_limit) head.append(p, std::min(n, head_limit - head.size()));
        }
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
                body_.put(static_cast<const char*>(b.data()), b.size());
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
