// The read buffers of client and upstream connections.
//
// An idle connection holds no read buffer (docs/benchmarks.md, memory): each
// reply's buffer is allocated when the reply is read and freed after it. The
// heap takes that well: with mimalloc (the release build's allocator) a
// per-thread stock of recycled 16 KiB blocks saved nothing measurable
// (docs/benchmarks.md, "read buffers under mimalloc"), so there is none.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>

namespace spe {

using ReadBuffer = boost::beast::flat_buffer;

}  // namespace spe
