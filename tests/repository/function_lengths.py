#!/usr/bin/env python3
"""Lists C++ functions longer than a limit, for the repository checks (tests/CMakeLists.txt).

usage: function_lengths.py LIMIT FILE...   prints "file:line: NAME is N lines" for each, exits 1 if any

A function is a brace block opened after a ')' (optionally followed by const, noexcept, override,
a trailing return type or a constructor's initializer list) at namespace or class level; lambdas
and control blocks inside a function count towards the function that holds them. Comments, strings
and character literals are skipped; a digit separator (100'000) is not taken for a character literal. This is a heuristic for code written in this project's style,
not a C++ parser.
"""
import re
import sys


def strip(text):
    """Blanks out comments, string and character literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == "'" and i > 0 and re.match(r"[0-9A-Fa-f]'[0-9A-Fa-f]", text[i - 1:i + 2]) and \
                re.search(r"\b[0-9][0-9A-Za-z']*$", text[max(0, i - 40):i]):
            out.append(c)  # a digit separator inside a number, as in 100'000 or 0xFFFF'FFFF
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """Yields (name, first line, number of lines) of each top-level function body."""
    code = strip(text)
    depth_stack = []  # for each open brace: True if it opened a function body
    in_function = 0
    for m in re.finditer(r"[{}]", code):
        if m.group() == "{":
            head = code[max(0, m.start() - 400):m.start()]
            is_fn = False
            if in_function == 0:
                tail = head.rstrip()
                tail = re.sub(r"(\s*(const|noexcept|override|final|mutable))+$", "", tail)
                tail = re.sub(r"\s*->\s*[\w:<>,\s*&]+$", "", tail)
                init = re.search(r"\)\s*:\s*[\w:]+[({][^;{}]*$", tail)  # constructor initializers
                is_fn = tail.endswith(")") or init is not None
                if is_fn:
                    kw = re.search(r"\b(if|for|while|switch|catch)\s*\([^;{}]*\)$", tail)
                    is_fn = kw is None and not re.search(r"=\s*\[[^\]]*\]\s*\([^;{}]*\)$", tail)
            if is_fn:
                line = code.count("\n", 0, m.start()) + 1
                names = re.findall(r"([~\w:]+)\s*\(", head)
                depth_stack.append((True, line, names[-1] if names else "?"))
                in_function += 1
            else:
                depth_stack.append((False, 0, ""))
        elif depth_stack:
            fn, line, name = depth_stack.pop()
            if fn:
                in_function -= 1
                end = code.count("\n", 0, m.start()) + 1
                yield name, line, end - line + 1


def main():
    limit = int(sys.argv[1])
    long_ones = []
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name, line, length in functions(text):
            if length > limit:
                long_ones.append(f"{path}:{line}: {name} is {length} lines")
    print("\n".join(long_ones) if long_ones else f"no function over {limit} lines")
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main())
