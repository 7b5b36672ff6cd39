# Strict warnings, as errors, on SPE's own targets only (never on third-party code).
function(spe_strict_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror
    -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused
    -Woverloaded-virtual -Wimplicit-fallthrough
    # GCC 12 misreads Asio 1.74's awaitable frame allocator (operator new in the
    # frame base, sized delete) as a mismatch: a false positive in Boost's headers.
    -Wno-mismatched-new-delete)
endfunction()
