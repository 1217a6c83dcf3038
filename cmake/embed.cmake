# cmake -DINPUT=model.json -DOUTPUT=out.cc -DFUNCTION=EcsModelJson \
#       -DNAMESPACE=paddock::ecs::api -DHEADER=ecs/api/models/models.h -P cmake/embed.cmake
#
# Writes a C++ source defining `std::string_view <NAMESPACE>::<FUNCTION>()` (declared in HEADER)
# that returns the file's bytes. Each service embeds its own botocore model this way
# (docs/architecture.md, "Adding a service"); other modules embed data files alike.
# The text is split into separate literals well under the 64 KB that compilers are
# required to support, and joined once on first use.
if(NOT NAMESPACE OR NOT HEADER OR NOT FUNCTION)
  message(FATAL_ERROR "embed.cmake needs -DFUNCTION, -DNAMESPACE and -DHEADER")
endif()
get_filename_component(input_name ${INPUT} NAME)
file(READ ${INPUT} content HEX)
string(LENGTH "${content}" hex_len)
set(chunk_hex 32000)  # 16000 bytes per literal
set(body "")
set(offset 0)
set(index 0)
while(offset LESS hex_len)
  string(SUBSTRING "${content}" ${offset} ${chunk_hex} chunk)
  # Hex pairs become \x escapes: safe for any byte, no delimiter clashes.
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" chunk "${chunk}")
  string(APPEND body "constexpr char kChunk${index}[] = \"${chunk}\";\n")
  string(APPEND chunks "kChunk${index}, ")
  string(APPEND sizes "sizeof(kChunk${index}) - 1, ")
  math(EXPR offset "${offset} + ${chunk_hex}")
  math(EXPR index "${index} + 1")
endwhile()
file(WRITE ${OUTPUT}.tmp
"// Generated from ${input_name} by embed.cmake. Do not edit.
#include \"${HEADER}\"

#include <cstddef>
#include <string>

namespace ${NAMESPACE} {
namespace {
${body}
constexpr const char* kChunks[] = {${chunks}};
constexpr std::size_t kSizes[] = {${sizes}};
}  // namespace

std::string_view ${FUNCTION}() {
  static const std::string* text = [] {
    auto* s = new std::string();
    for (std::size_t i = 0; i < sizeof(kChunks) / sizeof(kChunks[0]); ++i) s->append(kChunks[i], kSizes[i]);
    return s;
  }();
  return *text;
}

}  // namespace ${NAMESPACE}
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
