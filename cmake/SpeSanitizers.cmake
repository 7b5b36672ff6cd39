# SPE_SANITIZE=ON builds every SPE target with AddressSanitizer + UBSan
# (used by the "asan" preset and by ./spe test --asan).
option(SPE_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

# In the fuzz build (SPE_FUZZ) the libraries are instrumented for libFuzzer
# as well; the fuzz targets add libFuzzer's main when they link.
function(spe_sanitize target)
  if(SPE_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined
      -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  elseif(SPE_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  endif()
endfunction()
