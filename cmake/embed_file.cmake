# Script mode: writes OUT, a C++ file holding the bytes of IN. A line of IN that
# is exactly `// @include PATH` (leading spaces allowed) is replaced by the
# bytes of INCLUDE_ROOT/PATH first (the guest core shared by the harnesses,
# src/guest/common/); an included file is not searched for includes again.
file(READ ${IN} text)
if(DEFINED INCLUDE_ROOT)
  string(REGEX MATCHALL "[ ]*// @include [A-Za-z0-9_./-]+\n" includes "${text}")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ ]*// @include ([A-Za-z0-9_./-]+)\n$" "\\1" path "${line}")
    if(NOT EXISTS ${INCLUDE_ROOT}/${path})
      message(FATAL_ERROR "${IN}: cannot include ${INCLUDE_ROOT}/${path}")
    endif()
    file(READ ${INCLUDE_ROOT}/${path} included)
    string(REPLACE "${line}" "${included}" text "${text}")
  endforeach()
endif()
file(WRITE ${OUT}.js "${text}")
file(READ ${OUT}.js hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR size "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE ${OUT}
"// Generated from ${IN}; do not edit.\n#include <string_view>\nnamespace ${NS} {\nnamespace {\nconstexpr char kBytes[] = {${bytes} 0};\n}\nstd::string_view ${SYMBOL}() { return {kBytes, ${size}}; }\n}\n")
