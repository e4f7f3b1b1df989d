# taskyon_embed(VAR FILE NAMESPACE SYMBOL [INCLUDE_ROOT DIR DEPENDS FILE...]):
# compiles FILE into a C++ source that defines `std::string_view
# NAMESPACE::SYMBOL()`, and sets VAR_SOURCE to it. With INCLUDE_ROOT, each
# `// @include PATH` line of FILE is replaced by DIR/PATH (cmake/embed_file.cmake);
# list those files under DEPENDS so a change rebuilds. With STRIP_COMMENT_LINES,
# lines that hold only a `//` comment are left out of the bytes.
function(taskyon_embed var file ns symbol)
  cmake_parse_arguments(EMBED "STRIP_COMMENT_LINES" "INCLUDE_ROOT" "DEPENDS" ${ARGN})
  set(out ${CMAKE_BINARY_DIR}/generated/${var}.cc)
  set(root_arg)
  if(EMBED_INCLUDE_ROOT)
    set(root_arg -DINCLUDE_ROOT=${EMBED_INCLUDE_ROOT})
  endif()
  if(EMBED_STRIP_COMMENT_LINES)
    list(APPEND root_arg -DSTRIP_COMMENT_LINES=ON)
  endif()
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out} -DNS=${ns} -DSYMBOL=${symbol} ${root_arg}
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_file.cmake
    DEPENDS ${file} ${EMBED_DEPENDS} ${CMAKE_SOURCE_DIR}/cmake/embed_file.cmake
    COMMENT "Embedding ${file}")
  set(${var}_SOURCE ${out} PARENT_SCOPE)
endfunction()
