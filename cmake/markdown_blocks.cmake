# Reads the fenced code blocks of a Markdown page one at a time, for the scripts that turn a page
# into a program (extract_cpp_blocks.cmake) or check its quotes (check_quoted_code.cmake). Text is
# searched with string(FIND) rather than regex lists, because code is full of the semicolons that
# CMake lists split on.
#
#   markdown_next_block(rest line info body body_line)
# `rest` names a variable holding the unread part of the page, which begins with a newline (start
# with "\n${page}"), and `line` one holding the page's line at that newline (start with 0). Takes
# the next block off `rest`, advances `line`, and sets in the caller:
#   info       the fence's info string without the backticks: "cpp", "cpp file=nn/alibi.h", ""
#   body       the block's lines, each with its newline
#   body_line  the page's line of the block's first line; 0 when no block is left
# Errors name the page by the caller's variable IN.

function(markdown_count_newlines text out)
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines count)
  set(${out} ${count} PARENT_SCOPE)
endfunction()

function(markdown_next_block rest_var line_var info_var body_var body_line_var)
  set(rest "${${rest_var}}")
  set(line ${${line_var}})
  string(FIND "${rest}" "\n```" open)
  if(open EQUAL -1)
    set(${body_line_var} 0 PARENT_SCOPE)
    return()
  endif()
  string(SUBSTRING "${rest}" 0 ${open} skipped)
  markdown_count_newlines("${skipped}\n" count)
  math(EXPR line "${line} + ${count}")  # the opening fence's line
  math(EXPR open "${open} + 4")
  string(SUBSTRING "${rest}" ${open} -1 rest)
  string(FIND "${rest}" "\n" info_end)
  string(FIND "${rest}" "\n```" close)
  if(info_end EQUAL -1 OR close EQUAL -1)
    message(FATAL_ERROR "${IN}:${line}: the block opened here is not closed")
  endif()
  string(SUBSTRING "${rest}" 0 ${info_end} info)
  string(SUBSTRING "${rest}" ${info_end} -1 rest)  # from the newline that ends the fence
  string(FIND "${rest}" "\n```" close)
  math(EXPR body_length "${close} + 1")
  string(SUBSTRING "${rest}" 1 ${close} body)  # from after that newline up to the closing fence
  string(SUBSTRING "${rest}" ${body_length} -1 rest)
  math(EXPR body_line "${line} + 1")
  markdown_count_newlines("${body}" count)
  math(EXPR line "${body_line} + ${count}")  # the closing fence's line
  string(FIND "${rest}" "\n" close_end)
  if(close_end EQUAL -1)
    set(rest "")
  else()
    string(SUBSTRING "${rest}" ${close_end} -1 rest)
  endif()
  set(${rest_var} "${rest}" PARENT_SCOPE)
  set(${line_var} ${line} PARENT_SCOPE)
  set(${info_var} "${info}" PARENT_SCOPE)
  set(${body_var} "${body}" PARENT_SCOPE)
  set(${body_line_var} ${body_line} PARENT_SCOPE)
endfunction()
