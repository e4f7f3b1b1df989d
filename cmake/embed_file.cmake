# Script mode: writes OUT, a C++ file holding the bytes of IN. A line of IN that
# is exactly `// @include PATH` (leading spaces allowed) is replaced by the
# bytes of INCLUDE_ROOT/PATH first (the guest core shared by the harnesses,
# src/guest/common/); an included file is not searched for includes again.
# With STRIP_COMMENT_LINES, lines that hold only a `//` comment are left out,
# and what is left must be printable ASCII (tabs and newlines too).
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
if(STRIP_COMMENT_LINES)
  # Lines that hold only a `//` comment go (the harnesses' argv copies and heap:
  # issue 19). A line with code keeps its comment; the harnesses have no
  # multi-line template literal or string a comment line could sit in.
  string(REGEX REPLACE "\n[ ]*//[^\n]*" "" text "\n${text}")
  string(SUBSTRING "${text}" 1 -1 text)
  # What is left must be ASCII: V8 keeps a source with one character above
  # 0x7F as two bytes a character, and the harness's copies then no longer fit
  # regular heap pages (1 MiB more per sandbox, docs/sandbox.md).
  string(REGEX MATCH "[^\t\n -~][^\n]*" bad "${text}")
  if(bad)
    message(FATAL_ERROR "${IN}: a character outside printable ASCII in code a sandbox runs, at \"${bad}\": "
                        "keep the harness ASCII outside comment lines (grep -nP '[^\\x00-\\x7F]')")
  endif()
endif()
file(WRITE ${OUT}.js "${text}")
file(READ ${OUT}.js hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR size "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE ${OUT}
"// Generated from ${IN}; do not edit.\n#include <string_view>\nnamespace ${NS} {\nnamespace {\nconstexpr char kBytes[] = {${bytes} 0};\n}\nstd::string_view ${SYMBOL}() { return {kBytes, ${size}}; }\n}\n")
