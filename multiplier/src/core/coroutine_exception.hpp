// What ends a detached coroutine by an exception (an internal error: the data
// path reports its failures as values) is reported, never lost and never
// thrown on into an I/O thread's run loop.
#pragma once

#include <exception>
#include <utility>

namespace spe {

/// A completion handler for asio::co_spawn: when the coroutine ended by an
/// exception, calls `report(what)` with its message. (An exception that is no
/// std::exception goes on, as it would from the coroutine itself.)
template <class Report>
auto report_exception(Report report) {
    return [report = std::move(report)](std::exception_ptr e) mutable {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            report(ex.what());
        }
    };
}

}  // namespace spe
