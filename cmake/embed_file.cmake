# Script mode: writes OUT, a C++ file holding the bytes of IN.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR size "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE ${OUT}
"// Generated from ${IN}; do not edit.\n#include <string_view>\nnamespace ${NS} {\nnamespace {\nconstexpr char kBytes[] = {${bytes} 0};\n}\nstd::string_view ${SYMBOL}() { return {kBytes, ${size}}; }\n}\n")
