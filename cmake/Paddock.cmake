# paddock_add_library(name SOURCES ... DEPS ...): one module = one static library.
set(PADDOCK_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
if(PADDOCK_WERROR)
  list(APPEND PADDOCK_WARNINGS -Werror)
endif()

function(paddock_add_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE ${PADDOCK_WARNINGS})
  target_link_libraries(${name} PUBLIC ${A_DEPS})
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
