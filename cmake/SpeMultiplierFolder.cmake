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

function(spe_multiplier_folder folder)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "USES;SOURCES;LINKS")
  set(target spe_${folder})
  add_library(${target} STATIC ${ARG_SOURCES})
  target_include_directories(${target} PUBLIC ${SPE_MULTIPLIER_SOURCE_ROOT})
  list(TRANSFORM ARG_USES PREPEND spe_ OUTPUT_VARIABLE used)
  target_link_libraries(${target} PUBLIC spe_asio ${used} ${ARG_LINKS})
  spe_strict_warnings(${target})
  spe_sanitize(${target})

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
