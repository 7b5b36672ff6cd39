# SPE_SANITIZE=ON builds every SPE target with AddressSanitizer + UBSan
# (used by the "asan" preset and by ./spe test --asan).
option(SPE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

function(spe_sanitize target)
  if(SPE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
