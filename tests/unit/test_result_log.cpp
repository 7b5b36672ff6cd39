#include "result_log.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace {
spe::RequestRecord sample() {
    spe::RequestRecord r;
    r.ts = 1000.5;
    r.id = 7;
    r.client = "127.0.0.1:5555";
    r.method = "GET";
    r.url = "http://example.org/\xff\"quoted\"";
    r.version = "HTTP/1.1";
    r.client_status = 200;
    r.collector.status = 200;
    r.collector.bytes = 5083;
    r.collector.md5 = "aa";
    r.collector.connect_us = 0;
    r.collector.ttfb_us = 34195;
    r.collector.total_us = 68285;
    spe::ProxyResult ok{"Proxy-1", {}, spe::ResultClass::ok, {}};
    ok.measure.status = 200;
    ok.measure.bytes = 5083;
    ok.measure.ttfb_us = 1'108'105;
    ok.measure.total_us = 1'158'658;
    spe::ProxyResult bad{"Proxy-2", {}, spe::ResultClass::header_mismatch, {"content-type", "etag"}};
    bad.measure.status = 200;
    spe::ProxyResult dead{"Proxy-3", {}, spe::ResultClass::no_response, {}};
    dead.measure.error = spe::LegError::timeout;
    r.proxies = {ok, bad, dead};
    return r;
}
}  // namespace

TEST_CASE("JSON line carries the schema's fields and survives invalid UTF-8") {
    auto j = nlohmann::json::parse(spe::to_json_line(sample()));
    for (auto key : {"ts", "id", "client", "method", "url", "version", "collector", "proxies"})
        CHECK(j.contains(key));
    CHECK(j["id"] == 7);
    CHECK(j["collector"]["ttfb_us"] == 34195);
    CHECK(j["collector"]["error"].is_null());
    REQUIRE(j["proxies"].size() == 3);
    CHECK(j["proxies"][1]["result"] == "HEADER_MISMATCH");
    CHECK(j["proxies"][1]["mismatched_headers"] == nlohmann::json({"content-type", "etag"}));
    CHECK(j["proxies"][2]["error"] == "timeout");
    CHECK(j["proxies"][2]["status"].is_null());
    CHECK(j["proxies"][2]["ttfb_us"].is_null());
}

TEST_CASE("ROPE lines follow the paper's Figure 3") {
    auto text = spe::to_rope_lines(sample(), 4630);
    CHECK_THAT(text, Catch::Contains(":(pid=4630):RESULT: Collector: 0:34195 0:34090 5083 {DUMMY,} 127.0.0.1 "
                                     "non-validation HTTP/1.1 GET http://example.org/"));
    CHECK_THAT(text, Catch::Contains("RESULT: Proxy-1: 1:108105 0:50553 5083 {200,200,OK,} 127.0.0.1"));
    CHECK_THAT(text, Catch::Contains("RESULT: Proxy-2: 0:0 0:0 0 {200,200,HEADER_MISMATCH,content-type,etag,}"));
    CHECK_THAT(text, Catch::Contains("RESULT: Proxy-3: 0:0 0:0 0 {200,-,NO_RESPONSE,}"));
    CHECK(std::count(text.begin(), text.end(), '\n') == 4);
}
