# taskyon_embed(VAR FILE NAMESPACE SYMBOL): compiles FILE into a C++ source that
# defines `std::string_view NAMESPACE::SYMBOL()`, and sets VAR_SOURCE to it.
function(taskyon_embed var file ns symbol)
  set(out ${CMAKE_BINARY_DIR}/generated/${var}.cc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${file} -DOUT=${out} -DNS=${ns} -DSYMBOL=${symbol}
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_file.cmake
    DEPENDS ${file} ${CMAKE_SOURCE_DIR}/cmake/embed_file.cmake
    COMMENT "Embedding ${file}")
  set(${var}_SOURCE ${out} PARENT_SCOPE)
endfunction()
