cmake_minimum_required(VERSION 3.25)
# Checks that the code a Markdown page quotes from the repository is the repository's code, and the
# output it shows is what the programs print:
#   cmake -DIN=docs/page.md -DROOT=<source dir> [-DPROGRAMS=<dir> -DWORK=<dir>] -P check_quoted_code.cmake
# A fenced block whose info string ends in file=PATH shows the whole file PATH and must equal it;
# one ending in excerpt=PATH shows part of PATH and must occur in it verbatim:
#   ```cpp file=nn/alibi.h          ```python excerpt=tests/nn/encoder_golden.py
# One ending in output=PROGRAM,ARG,... shows part of what the program PROGRAMS/PROGRAM prints
# with those arguments, run in WORK (each command once), and must occur in it verbatim:
#   ```text output=tagger_step,--out,step,--reference
# Other blocks are not checked here (plain ```cpp blocks are a page's program, which
# extract_cpp_blocks.cmake extracts to be compiled). Every mismatch is reported, with the line of the
# page where the quote stops matching, and the script fails if there was any.
include(${CMAKE_CURRENT_LIST_DIR}/markdown_blocks.cmake)

# out = the length of the longest prefix of `text` for which `found(prefix)` holds. `found` is
# monotone (a prefix of a found string is found too), so a binary search needs log2(length) tests.
# mode PREFIX: the prefix must start `target`; mode INSIDE: it must occur in `target`.
function(longest_matching_prefix text target mode out)
  string(LENGTH "${text}" high)
  set(low 0)
  while(low LESS high)
    math(EXPR mid "(${low} + ${high} + 1) / 2")
    string(SUBSTRING "${text}" 0 ${mid} prefix)
    string(FIND "${target}" "${prefix}" at)
    if((mode STREQUAL "PREFIX" AND at EQUAL 0) OR (mode STREQUAL "INSIDE" AND at GREATER -1))
      set(low ${mid})
    else()
      math(EXPR high "${mid} - 1")
    endif()
  endwhile()
  set(${out} ${low} PARENT_SCOPE)
endfunction()

# out = what PROGRAMS/PROGRAM prints for `command` "PROGRAM,ARG,...", run in WORK; each command
# runs once, its output kept in a global property for the page's other quotes of it.
function(program_output command out)
  get_property(cached GLOBAL PROPERTY "qkv_output_${command}" SET)
  if(NOT cached)
    if(NOT DEFINED PROGRAMS OR NOT DEFINED WORK)
      message(FATAL_ERROR "${IN}: quotes the output of `${command}`: pass -DPROGRAMS and -DWORK")
    endif()
    string(REPLACE "," ";" argv "${command}")
    list(POP_FRONT argv program)
    file(MAKE_DIRECTORY "${WORK}")
    execute_process(COMMAND "${PROGRAMS}/${program}" ${argv} WORKING_DIRECTORY "${WORK}"
                    OUTPUT_VARIABLE printed RESULT_VARIABLE code)
    if(NOT code EQUAL 0)
      message(FATAL_ERROR "${IN}: `${command}` failed (${code})")
    endif()
    set_property(GLOBAL PROPERTY "qkv_output_${command}" "${printed}")
  endif()
  get_property(printed GLOBAL PROPERTY "qkv_output_${command}")
  set(${out} "${printed}" PARENT_SCOPE)
endfunction()

# The programs run in a fresh WORK: they refuse to write over what an earlier check left.
if(DEFINED WORK)
  file(REMOVE_RECURSE "${WORK}")
endif()
file(READ "${IN}" page)
set(rest "\n${page}")
set(line 0)
set(quotes 0)
set(failures 0)
while(TRUE)
  markdown_next_block(rest line info body body_line)
  if(body_line EQUAL 0)
    break()
  endif()
  if(NOT info MATCHES " (file|excerpt|output)=([^ ]+)$")
    continue()
  endif()
  set(kind ${CMAKE_MATCH_1})
  set(path ${CMAKE_MATCH_2})
  math(EXPR quotes "${quotes} + 1")
  if(kind STREQUAL "output")
    program_output("${path}" source)
  elseif(EXISTS "${ROOT}/${path}")
    file(READ "${ROOT}/${path}" source)
  else()
    message(SEND_ERROR "${IN}:${body_line}: the block quotes ${path}, which does not exist")
    math(EXPR failures "${failures} + 1")
    continue()
  endif()
  string(FIND "${source}" "${body}" at)
  if((kind STREQUAL "file" AND body STREQUAL source) OR (NOT kind STREQUAL "file" AND at GREATER -1))
    continue()
  endif()
  if(kind STREQUAL "file")
    longest_matching_prefix("${body}" "${source}" PREFIX matched)
    set(what "differs from ${path}")
  elseif(kind STREQUAL "output")
    longest_matching_prefix("${body}" "${source}" INSIDE matched)
    set(what "is not in what `${path}` prints")
  else()
    longest_matching_prefix("${body}" "${source}" INSIDE matched)
    set(what "is not in ${path} as quoted")
  endif()
  string(SUBSTRING "${body}" 0 ${matched} prefix)
  markdown_count_newlines("${prefix}" count)
  math(EXPR where "${body_line} + ${count}")
  message(SEND_ERROR "${IN}:${body_line}: the block ${what}; the first difference is on line ${where}")
  math(EXPR failures "${failures} + 1")
endwhile()

if(failures GREATER 0)
  message(FATAL_ERROR "${IN}: ${failures} of ${quotes} quoted blocks do not match the repository")
endif()
message(STATUS "${IN}: all ${quotes} quoted blocks match the repository")
