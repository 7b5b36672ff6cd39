// The client's replies to unsafe requests, kept for the proxies' copies: a copy
// gets the reply only when it matches the client's request (tag, method, body),
// for --replay-ttl, within the store's byte budget; otherwise the reason.
#include "replay/replay_store.hpp"

#include <catch2/catch.hpp>

#include <variant>

using spe::ReplayStore;
using spe::StoredReply;
using spe::UnsafeRequestFacts;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<const StoredReply> reply_of(std::string body, unsigned status = 201) {
    auto r = std::make_shared<StoredReply>();
    r->header.result(status);
    r->body = std::move(body);
    return r;
}

const UnsafeRequestFacts kPost{"POST", "5d41402abc4b2a76b9719d911017c592", 5};

std::string refusal(const std::variant<std::shared_ptr<const StoredReply>, std::string>& found) {
    REQUIRE(std::holds_alternative<std::string>(found));
    return std::get<std::string>(found);
}

}  // namespace

TEST_CASE("a copy with the client's tag, method and body gets the client's reply") {
    ReplayStore store(180s, 1 << 20);
    store.put("t-1", kPost, reply_of("created"));
    auto found = store.find("t-1", kPost);
    REQUIRE(std::holds_alternative<std::shared_ptr<const StoredReply>>(found));
    CHECK(std::get<0>(found)->body == "created");
    CHECK(std::get<0>(found)->header.result_int() == 201);
    // Every proxy's copy gets it, not only the first.
    CHECK(std::holds_alternative<std::shared_ptr<const StoredReply>>(store.find("t-1", kPost)));
}

TEST_CASE("a copy that does not match the client's request is refused with the reason") {
    ReplayStore store(180s, 1 << 20);
    store.put("t-1", kPost, reply_of("created"));
    CHECK_THAT(refusal(store.find("", kPost)), Catch::Contains("no X-SPE-Request tag"));
    CHECK_THAT(refusal(store.find("t-2", kPost)), Catch::Contains("no client reply for tag t-2"));
    CHECK_THAT(refusal(store.find("t-1", {"PUT", kPost.body_md5, 5})), Catch::Contains("method differs"));
    CHECK_THAT(refusal(store.find("t-1", {"POST", "00000000000000000000000000000000", 5})),
               Catch::Contains("body differs"));
    CHECK_THAT(refusal(store.find("t-1", {"POST", kPost.body_md5, 6})), Catch::Contains("body differs"));
}

TEST_CASE("a reply is kept for --replay-ttl, no longer") {
    ReplayStore store(10s, 1 << 20);
    const auto t0 = ReplayStore::Clock::now();
    store.put("t-1", kPost, reply_of("created"), t0);
    CHECK(std::holds_alternative<std::shared_ptr<const StoredReply>>(store.find("t-1", kPost, t0 + 9s)));
    CHECK_THAT(refusal(store.find("t-1", kPost, t0 + 11s)), Catch::Contains("older than --replay-ttl"));
    store.put("t-2", kPost, reply_of("x"), t0 + 12s);  // an insert drops what has expired
    CHECK(store.entries() == 1);
}

TEST_CASE("the store holds at most its byte budget: the oldest replies go first") {
    ReplayStore store(180s, 100);
    store.put("t-1", kPost, reply_of(std::string(60, 'a')));
    store.put("t-2", kPost, reply_of(std::string(30, 'b')));
    CHECK(store.bytes() == 90);
    store.put("t-3", kPost, reply_of(std::string(50, 'c')));
    CHECK(store.bytes() == 80);
    CHECK(std::holds_alternative<std::string>(store.find("t-1", kPost)));
    CHECK(std::holds_alternative<std::shared_ptr<const StoredReply>>(store.find("t-2", kPost)));
    CHECK(std::holds_alternative<std::shared_ptr<const StoredReply>>(store.find("t-3", kPost)));
}

TEST_CASE("a reply too large to keep refuses its copies with its size") {
    ReplayStore store(180s, 100);
    store.put_too_large("t-1", kPost, 5'000'000);
    CHECK(store.bytes() == 0);
    CHECK_THAT(refusal(store.find("t-1", kPost)), Catch::Contains("5000000 body bytes"));
}
