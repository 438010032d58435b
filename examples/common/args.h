// A small command-line parser for the example programs: `--name value` and `--flag`, with typed
// getters, defaults, a generated help text and clear errors for unknown or malformed options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace qkv::examples {

class Args {
 public:
  // argv after the subcommand; `spec` lists the accepted options as {name, default, help}. An
  // option whose default is "false" or "true" is a flag (no value; --name sets it to true). An
  // option given twice is refused rather than the last one silently winning.
  struct Option {
    std::string name, fallback, help;
  };
  Args(int argc, char** argv, std::vector<Option> spec, std::string usage);

  std::string str(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  // An integer in [lo, hi]; ValueError naming the option and the range otherwise.
  int64_t integer_in(const std::string& name, int64_t lo, int64_t hi) const;
  double number(const std::string& name) const;
  // A finite number in [lo, hi]; ValueError naming the option and the range otherwise.
  double number_in(const std::string& name, double lo, double hi) const;
  bool flag(const std::string& name) const;
  bool given(const std::string& name) const;     // set on the command line, not by default
  bool has(const std::string& name) const;       // an option of this command's spec
  std::vector<std::string> given_names() const;  // the options given, in the spec's order
  // Every option of the spec, given or not, with its value as text, in the spec's order.
  std::vector<std::pair<std::string, std::string>> values() const;
  const std::vector<std::string>& positional() const { return positional_; }
  // For a command that takes no positional arguments: ValueError "unexpected argument 'WORD'" for
  // the first one given.
  void refuse_positional() const;
  bool help_requested() const { return help_; }
  std::string help() const;

 private:
  const Option& option(const std::string& name) const;
  std::vector<Option> spec_;
  std::string usage_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// --reference, the same on every program: run on the composed references (tensor/reference_mode.h).
inline const Args::Option kReferenceOption = {
    "reference", "false",
    "run every fused op as its composed reference, with plain allocation and OpenMP loops (the code a "
    "reader reads first; slower, the same results to float32 rounding; also QKV_REFERENCE=1)"};

// Sets the thread count from --threads when it is above 0; 0 keeps the default (QKV_NUM_THREADS
// or the cores). A negative count or one above qkv::kMaxThreads is a ValueError naming the option.
void use_threads(const Args& args);

// How the programs name the mode when it is on.
inline constexpr const char* kReferenceModeNote =
    "reference mode (composed ops, plain allocation, OpenMP loops)";

// Sets the reference mode as --reference says when it is given (--reference=false turns off what
// QKV_REFERENCE=1 turned on); otherwise leaves it as QKV_REFERENCE set it. Says whether it is on.
bool use_reference_mode(const Args& args);

// A number as an option's text: the shortest decimal that reads back as the same number, so that a
// default taken from a struct's initializer shows as written there ("0.003", "1", a float's "0.1").
std::string option_text(double value);
std::string option_text(float value);

// "a, b, c": the names with `separator` between them.
std::string join(const std::vector<std::string>& names, const std::string& separator = ", ");

// 'text' for a message, cut after `most` characters: "'xxxx...' (5000000 characters)", so that a
// huge word of a user's file does not become a huge error.
std::string quoted(const std::string& text, size_t most = 40);

// `options` but those named: a command that would not read an option does not take it, so that
// giving it is refused ("unknown option") rather than ignored.
std::vector<Args::Option> without(std::vector<Args::Option> options, const std::vector<std::string>& names);

// "a,b,c" (or "a, b, c") given to option --name → {"a", "b", "c"}. An empty item or one listed twice is refused,
// naming the option: either would quietly compare less, or do the same work twice.
std::vector<std::string> split_list(const std::string& name, const std::string& text);

// Makes the output directory `path` (and its parents) if missing and proves it writable by creating
// and removing a file, so that a program refuses a bad --out before its work rather than after.
// ValueError naming the option, the path and the reason.
void make_output_directory(const std::string& option, const std::string& path);

// The integer `text` given to option --name: decimal digits with an optional leading '-' (no '+',
// no whitespace), within 64 bits; ValueError naming the option otherwise.
int64_t parse_integer(const std::string& name, const std::string& text);

// The number `text` given to option --name in decimal notation (digits, '.', an exponent, a leading
// '-'; "inf" and "nan" are read, for range checks to refuse); hexadecimal floats, '+' and whitespace
// are refused with a ValueError naming the option.
double parse_number(const std::string& name, const std::string& text);

// Lines read from standard input by the programs hold one sentence or date: 1 MiB is far more than
// any needs, and bounds the memory a stream without newlines (/dev/zero) can take.
inline constexpr size_t kMaxLineBytes = size_t{1} << 20;

// Reads the next line of `in` (without its '\n', or its "\r\n") into `line` and counts it in
// `line_number`; false at the end of the input. A line longer than `max_bytes` is refused without reading the
// rest of it: ValueError "stdin: line N is longer than M bytes".
bool read_line(std::istream& in, std::string& line, int64_t& line_number, size_t max_bytes = kMaxLineBytes);

}  // namespace qkv::examples
