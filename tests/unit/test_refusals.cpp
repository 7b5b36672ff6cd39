#include "core/refusals.hpp"

#include <catch2/catch.hpp>

#include <utility>

using spe::Refusal;

TEST_CASE("every refusal has the status the clients and the tests know it by") {
    const std::pair<Refusal, unsigned> expected[] = {
        {Refusal::malformed_request, 400},        {Refusal::request_timeout, 408},
        {Refusal::header_too_large, 431},         {Refusal::body_too_large, 413},
        {Refusal::ambiguous_framing, 400},        {Refusal::unsupported_transfer_coding, 501},
        {Refusal::unsupported_version, 505},      {Refusal::not_a_proxy_request, 400},
        {Refusal::forwarding_loop, 508},          {Refusal::bad_connect, 400},
        {Refusal::connect_port_not_allowed, 403}, {Refusal::client_not_allowed, 403},
        {Refusal::collector_timeout, 504},        {Refusal::collector_failed, 502},
        {Refusal::upgrade_not_accepted, 502},     {Refusal::replay_refused, 502},
    };
    for (const auto& [refusal, status] : expected)
        CHECK(spe::status_of(refusal) == status);
}

TEST_CASE("the Collector's own refusal of a tunnel is passed on with its status") {
    const spe::Refused refused{Refusal::collector_refused_tunnel, "the Collector refused the tunnel: 403 Forbidden",
                               403};
    CHECK(refused.status() == 403);
    CHECK(spe::Refused{Refusal::forwarding_loop, "loop"}.status() == 508);
}

TEST_CASE("a failed Collector leg is a gateway timeout or a bad gateway") {
    CHECK(spe::status_of(spe::collector_failure(spe::LegError::timeout)) == 504);
    CHECK(spe::status_of(spe::collector_failure(spe::LegError::refused)) == 502);
    CHECK(spe::status_of(spe::collector_failure(spe::LegError::truncated)) == 502);
}
