# cmake -DINPUT=model.json -DOUTPUT=out.cc -DFUNCTION=EcsModelJson -P embed.cmake
#
# Writes a C++ source defining `std::string_view paddock::aws::<FUNCTION>()` that returns the
# file's bytes. The text is split into raw-string chunks well under the 64 KB literal limit that
# compilers may impose; adjacent literals concatenate into one array.
file(READ ${INPUT} content HEX)
string(LENGTH "${content}" hex_len)
set(chunk_hex 32000)  # 16000 bytes per literal
set(body "")
set(offset 0)
while(offset LESS hex_len)
  string(SUBSTRING "${content}" ${offset} ${chunk_hex} chunk)
  # Hex pairs become \x escapes: safe for any byte, no delimiter clashes.
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" chunk "${chunk}")
  string(APPEND body "    \"${chunk}\"\n")
  math(EXPR offset "${offset} + ${chunk_hex}")
endwhile()
file(WRITE ${OUTPUT}.tmp
"// Generated from ${INPUT} by embed.cmake. Do not edit.
#include \"aws/models/models.h\"

namespace paddock::aws {
namespace {
constexpr char kData[] =
${body};
}  // namespace

std::string_view ${FUNCTION}() { return std::string_view(kData, sizeof(kData) - 1); }

}  // namespace paddock::aws
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
