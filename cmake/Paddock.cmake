# Precompiled headers: the standard library, Boost.JSON and fmt are most of what every source
# file parses (about 100,000 lines each), so each flavour of source — the modules, and the tests'
# own sources, which are built with other flags — includes one precompiled header made once: a
# fifth less compile time (docs/benchmarks.md, "How long the tests take"). Only headers from
# outside the project, so a change to a project header rebuilds what includes it, no more.
# PADDOCK_PCH=OFF builds without them (the same sources must build either way).
option(PADDOCK_PCH "Precompile the system headers every source file includes" ON)
set(PADDOCK_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
if(PADDOCK_WERROR)
  list(APPEND PADDOCK_WARNINGS -Werror)
endif()
if(PADDOCK_PCH)
  # GCC takes a precompiled header only where the options it was made with hold, so every module
  # and test compiles with -pthread (which some packages' flags bring: RE2's), as the headers were.
  list(APPEND PADDOCK_WARNINGS -pthread)
  # GCC 12 forgets, for code it inlines from a precompiled header, that the code came from a system
  # header, so its false alarms about std::string's inlined copies are no longer hidden (-Werror
  # made them errors): -Warray-bounds showed five, all in char_traits.h. It and the stringop family,
  # whose GCC 12 false alarms are of the same kind, are off instead.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND PADDOCK_WARNINGS -Wno-array-bounds -Wno-stringop-overflow -Wno-stringop-overread)
  endif()
  # ccache caches a compile that uses a clang precompiled header only without its timestamp.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    list(APPEND PADDOCK_WARNINGS "SHELL:-Xclang -fno-pch-timestamp")
  endif()
endif()

set(PADDOCK_PCH_HEADERS
    <algorithm> <atomic> <charconv> <chrono> <condition_variable> <cstdint> <cstring> <filesystem> <fstream>
    <functional> <map> <memory> <mutex> <optional> <set> <sstream> <string> <string_view> <thread>
    <unordered_map> <utility> <variant> <vector> <boost/json.hpp> <fmt/format.h>)
if(PADDOCK_PCH)
  # Written only when it changes, so a reconfigure rebuilds nothing.
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/paddock_pch.cc
       CONTENT "// The translation unit that makes the precompiled headers.\n")
  add_library(paddock_pch_modules STATIC ${CMAKE_BINARY_DIR}/paddock_pch.cc)
  target_compile_options(paddock_pch_modules PRIVATE ${PADDOCK_WARNINGS})
  target_link_libraries(paddock_pch_modules PUBLIC Boost::json fmt::fmt)
  target_precompile_headers(paddock_pch_modules PRIVATE ${PADDOCK_PCH_HEADERS})
  if(PADDOCK_TESTS)
    add_library(paddock_pch_tests STATIC ${CMAKE_BINARY_DIR}/paddock_pch.cc)
    target_compile_options(paddock_pch_tests PRIVATE ${PADDOCK_WARNINGS})
    if(CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo" OR CMAKE_BUILD_TYPE STREQUAL "Release")
      target_compile_options(paddock_pch_tests PRIVATE -O0 -g0)
    endif()
    target_link_libraries(paddock_pch_tests PUBLIC Boost::json fmt::fmt GTest::gtest GTest::gmock)
    target_precompile_headers(paddock_pch_tests PRIVATE ${PADDOCK_PCH_HEADERS} <gtest/gtest.h> <gmock/gmock.h>)
  endif()
endif()

# paddock_add_library(name SOURCES ... DEPS ...): one module = one static library.
function(paddock_add_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE ${PADDOCK_WARNINGS})
  target_link_libraries(${name} PUBLIC ${A_DEPS})
  if(PADDOCK_PCH)
    target_precompile_headers(${name} REUSE_FROM paddock_pch_modules)
  endif()
endfunction()

# paddock_add_test(name SOURCES ... DEPS ...): a GoogleTest binary registered with CTest.
function(paddock_add_test name)
  if(NOT PADDOCK_TESTS)
    return()
  endif()
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_compile_options(${name} PRIVATE ${PADDOCK_WARNINGS})
  # A test's own sources are not what it measures: the modules it links are built as the preset
  # says, the test's sources without optimization or debug information (GoogleTest's macros at
  # -O2 are most of a release build's compile time; docs/benchmarks.md, "How long the tests take").
  # The sanitizer presets keep theirs, for their reports' stacks.
  if(CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo" OR CMAKE_BUILD_TYPE STREQUAL "Release")
    target_compile_options(${name} PRIVATE -O0 -g0)
  endif()
  target_link_libraries(${name} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(PADDOCK_PCH)
    target_precompile_headers(${name} REUSE_FROM paddock_pch_tests)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300)
endfunction()

# paddock_add_fuzzer(name SOURCES ... DEPS ...): a libFuzzer target, built only with PADDOCK_FUZZ.
function(paddock_add_fuzzer name)
  if(NOT PADDOCK_FUZZ)
    return()
  endif()
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${A_DEPS})
endfunction()

# paddock_embed(var INPUT file OUTPUT name.cc FUNCTION f NAMESPACE ns HEADER h COMMENT text):
# generates ${CMAKE_CURRENT_BINARY_DIR}/name.cc defining `std::string_view ns::f()` (declared in
# h) that returns `file`'s bytes (cmake/embed.cmake), and sets `var` to its path for a target's
# SOURCES. How a service embeds its botocore model and a module its data files.
function(paddock_embed var)
  cmake_parse_arguments(A "" "INPUT;OUTPUT;FUNCTION;NAMESPACE;HEADER;COMMENT" "" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${A_OUTPUT})
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${A_INPUT} -DOUTPUT=${out} -DFUNCTION=${A_FUNCTION} -DNAMESPACE=${A_NAMESPACE}
            -DHEADER=${A_HEADER} -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${A_INPUT} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    COMMENT ${A_COMMENT}
    VERBATIM)
  set(${var} ${out} PARENT_SCOPE)
endfunction()
