cmake_minimum_required(VERSION 3.25)
# Writes the ```cpp code blocks of a Markdown page, in order, to one C++ source file, with #line
# directives so that compiler errors point at the page:
#   cmake -DIN=docs/page.md -DOUT=page.cpp -P extract_cpp_blocks.cmake
# Only blocks whose info string is exactly cpp: a block tagged file= or excerpt= quotes the
# repository (check_quoted_code.cmake), and is not part of the program.
include(${CMAKE_CURRENT_LIST_DIR}/markdown_blocks.cmake)

file(READ "${IN}" page)
set(rest "\n${page}")
set(line 0)
set(code "// Generated from ${IN} by cmake/extract_cpp_blocks.cmake: edit the page, not this file.\n")
while(TRUE)
  markdown_next_block(rest line info body body_line)
  if(body_line EQUAL 0)
    break()
  endif()
  if(info STREQUAL "cpp")
    string(APPEND code "#line ${body_line} \"${IN}\"\n${body}")
  endif()
endwhile()
file(WRITE "${OUT}" "${code}")
