#!/usr/bin/env python3
"""The function-length check reads C++ as this project writes it: a digit separator (100'000) is
part of a number, not the start of a character literal that would swallow the code after it and
lose the functions there (CTest runs this file)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from function_lengths import functions  # noqa: E402

SOURCE = """int f() {
  char brace = '{';
  int n = 100'000;
  long mask = 0xFFFF'FFFF;
  return brace + n + static_cast<int>(mask);
}

int g() { return 1; }

struct S {
  int h() const {
    return '}' == 0 ? 2'0 : 3;
  }
};
"""

found = list(functions(SOURCE))
expected = [("f", 1, 6), ("g", 8, 1), ("h", 11, 3)]
if found != expected:
    print(f"expected {expected}, found {found}")
    sys.exit(1)
print("ok: digit separators and character literals read as C++ reads them")
