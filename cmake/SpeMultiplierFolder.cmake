# One folder of multiplier/src as a static library of its own, spe_<folder>: its
# sources listed once, in the folder's CMakeLists.txt, and reused by the
# executable, the unit, stream and fuzz tests (they link the library).
#
#   spe_multiplier_folder(<folder> USES <folders...> SOURCES <files...> [LINKS <targets...>])
#
# Every file includes from one root, folder first ("judge/cache_rules.hpp").
# USES names the folders this one builds on, and the library links exactly
# those: a file that includes any other folder fails the build
# (SpeIncludeCheck.cmake), so the dependencies written here are the real ones.
set(SPE_INCLUDE_CHECK ${CMAKE_CURRENT_LIST_DIR}/SpeIncludeCheck.cmake)
set(SPE_UNITY_BATCH_SIZE 4 CACHE STRING "Files of one folder compiled together (0: the whole folder, 1: one at a time)")

function(spe_multiplier_folder folder)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "USES;SOURCES;LINKS")
  set(target spe_${folder})
  add_library(${target} STATIC ${ARG_SOURCES})
  target_include_directories(${target} PUBLIC ${SPE_MULTIPLIER_SOURCE_ROOT})
  list(TRANSFORM ARG_USES PREPEND spe_ OUTPUT_VARIABLE used)
  target_link_libraries(${target} PUBLIC spe_asio ${used} ${ARG_LINKS})
  spe_strict_warnings(${target})
  spe_sanitize(${target})
  # Compiled a few files at a time (a unity build): most of a file's compile time is parsing and instantiating
  # Asio's and Beast's headers, which a batch does once for all its files (docs/benchmarks.md, "A cold first
  # run"). Small batches keep two cores busy and an edit's recompile short. Names private to a file (anonymous
  # namespaces) must then differ between the files of one folder.
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${SPE_UNITY_BATCH_SIZE})
  # GCC takes a .cpp included into a batch for a header, and a coroutine's frame holding a type of that file's
  # anonymous namespace for a type that other files could see differently; in a batch no other file includes it.
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)

  # Checked when one of the folder's files changes; a list travels with ',' (a ';' would split the command).
  file(GLOB files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/*.hpp)
  list(JOIN ARG_USES "," allowed)
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${folder}.includes-checked)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DFOLDER=${folder} -DUSES=${allowed} -DDIR=${CMAKE_CURRENT_SOURCE_DIR}
            -P ${SPE_INCLUDE_CHECK}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${files} ${SPE_INCLUDE_CHECK}
    COMMENT "Checking what multiplier/src/${folder} includes"
    VERBATIM)
  add_custom_target(${target}_includes DEPENDS ${stamp})
  add_dependencies(${target} ${target}_includes)
endfunction()
