// qkv's exceptions. Misuse throws one of these; the message names the op, the shapes involved and
// what was expected, e.g. "matmul: shapes (2,3) and (4,5) cannot be multiplied: 3 != 4".
#pragma once

#include <stdexcept>
#include <string>

namespace qkv {

// The base of everything qkv throws on bad input.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Shapes that do not fit the op: broadcasting, matmul, view, cat, layer inputs.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// An index out of range: a dim, a slice bound, a token id, a class target.
class IndexError : public Error {
 public:
  using Error::Error;
};

// An argument with a bad value: a negative size, a probability outside [0, 1), an unknown option.
class ValueError : public Error {
 public:
  using Error::Error;
};

// A use that the current state forbids: backward through a freed graph, an in-place change to a
// tensor saved for backward, a gradient asked of a tensor that does not require one.
class StateError : public Error {
 public:
  using Error::Error;
};

// A file or stream that is truncated, corrupted or not of the expected format.
class FormatError : public Error {
 public:
  using Error::Error;
};

}  // namespace qkv
