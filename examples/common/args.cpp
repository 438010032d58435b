#include "examples/common/args.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <filesystem>

#include "io/file.h"
#include "tensor/error.h"
#include "tensor/reference_mode.h"
#include "tensor/threads.h"

namespace qkv::examples {
namespace {

bool is_flag(const Args::Option& o) { return o.fallback == "false" || o.fallback == "true"; }

}  // namespace

Args::Args(int argc, char** argv, std::vector<Option> spec, std::string usage)
    : spec_(std::move(spec)), usage_(std::move(usage)) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {  // the end of the options: every word after it is text, "-h" and "--x" too
      positional_.insert(positional_.end(), argv + i + 1, argv + argc);
      break;
    }
    if (a == "-h" || a == "--help") {
      help_ = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Option& o = option(name);
    if (values_.count(name)) throw ValueError("option --" + name + " is given twice");
    if (eq != std::string::npos) {
      // --name=VALUE gives the value, even an empty one, which the option's reader then judges: the
      // next word is never taken (--run= --no-figures must not train into "--no-figures").
      values_[name] = value;
    } else if (is_flag(o)) {
      values_[name] = "true";
    } else {
      if (i + 1 >= argc) throw ValueError("option --" + name + " needs a value (" + o.help + ")");
      values_[name] = argv[++i];
    }
  }
}

namespace {

// The edit distance of two option names (insertions, deletions, substitutions, and two neighbouring
// letters swapped: "--rnu" is one edit from "--run"), for suggestions.
size_t edit_distance(const std::string& a, const std::string& b) {
  // d[i][j]: the distance between a's first i characters and b's first j.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])  // two letters swapped
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

const Args::Option& Args::option(const std::string& name) const {
  for (const Option& o : spec_)
    if (o.name == name) return o;
  // The nearest name within a third of its length, or one that begins the given name or that the
  // given name begins: a typo.
  const Option* nearest = nullptr;
  size_t best = name.size() / 3 + 1;
  for (const Option& o : spec_) {
    const bool part = name.size() >= 3 && (o.name.starts_with(name) || name.starts_with(o.name));
    const size_t d = part ? 1 : edit_distance(name, o.name);
    if (d < best) best = d, nearest = &o;
  }
  throw ValueError("unknown option --" + name + "\n" +
                   (nearest ? "did you mean --" + nearest->name + "? " : std::string()) +
                   "(--help lists the options)");
}

std::string Args::str(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() ? it->second : option(name).fallback;
}

std::string quoted(const std::string& text, size_t most) {
  std::string out = "'";
  out.append(text, 0, most);
  if (text.size() <= most) return out + "'";
  return out + "...' (" + std::to_string(text.size()) + " characters)";
}

std::vector<Args::Option> without(std::vector<Args::Option> options, const std::vector<std::string>& names) {
  std::erase_if(options, [&](const Args::Option& o) { return std::find(names.begin(), names.end(), o.name) != names.end(); });
  return options;
}

std::vector<std::pair<std::string, std::string>> Args::values() const {
  std::vector<std::pair<std::string, std::string>> all;
  for (const Option& o : spec_) all.emplace_back(o.name, str(o.name));
  return all;
}

void Args::refuse_positional() const {
  if (!positional_.empty())
    throw ValueError("unexpected argument '" + positional_.front() + "'\n(--help lists the options)");
}

// std::from_chars reads exactly the documented forms: no leading '+' or whitespace, no hexadecimal
// unless asked for, and the whole text or it says where it stopped.
int64_t parse_integer(const std::string& name, const std::string& s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range)  // not clamped: a clamped value is not what was asked for
    throw ValueError("option --" + name + ": " + s + " is out of the range of a 64-bit integer");
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw ValueError("option --" + name + " expects an integer, got '" + s + "'");
  return v;
}

double parse_number(const std::string& name, const std::string& s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (s.empty() || (ec != std::errc() && ec != std::errc::result_out_of_range) || end != s.data() + s.size())
    throw ValueError("option --" + name + " expects a number in decimal notation, got '" + s + "'");
  // Past a double's range from_chars leaves v alone; strtod gives the infinity or zero the range
  // checks then judge.
  return ec == std::errc() ? v : std::strtod(s.c_str(), nullptr);
}

bool read_line(std::istream& in, std::string& line, int64_t& line_number, size_t max_bytes) {
  line.clear();
  std::streambuf* buf = in.rdbuf();
  for (int c = buf->sbumpc();; c = buf->sbumpc()) {
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      if (line.empty()) return false;
      break;
    }
    if (c == '\n') break;
    if (line.size() == max_bytes) {
      throw ValueError("stdin: line " + std::to_string(line_number + 1) + " is longer than " +
                       std::to_string(max_bytes) + " bytes");
    }
    line.push_back(static_cast<char>(c));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();  // a CRLF line end, as Windows writes it
  ++line_number;
  return true;
}

int64_t Args::integer(const std::string& name) const { return parse_integer(name, str(name)); }

int64_t Args::integer_in(const std::string& name, int64_t lo, int64_t hi) const {
  const int64_t v = integer(name);
  if (v < lo || v > hi) {
    throw ValueError("option --" + name + " expects an integer from " + std::to_string(lo) + " to " +
                     std::to_string(hi) + ", got " + std::to_string(v));
  }
  return v;
}

double Args::number(const std::string& name) const { return parse_number(name, str(name)); }

double Args::number_in(const std::string& name, double lo, double hi) const {
  const double v = number(name);
  if (!(v >= lo && v <= hi)) {  // false for NaN
    throw ValueError("option --" + name + " expects a number from " + option_text(lo) + " to " +
                     option_text(hi) + ", got " + str(name));
  }
  return v;
}

bool Args::flag(const std::string& name) const {
  const std::string s = str(name);
  if (s == "true" || s == "1") return true;
  if (s == "false" || s == "0") return false;
  throw ValueError("option --" + name + " expects true or false, got '" + s + "'");
}

bool Args::given(const std::string& name) const {
  option(name);
  return values_.count(name) > 0;
}

bool Args::has(const std::string& name) const {
  return std::any_of(spec_.begin(), spec_.end(), [&](const Option& o) { return o.name == name; });
}

std::vector<std::string> Args::given_names() const {
  std::vector<std::string> names;
  for (const Option& o : spec_)
    if (values_.count(o.name)) names.push_back(o.name);
  return names;
}

std::string Args::help() const {
  std::string out = usage_ + "\n\noptions:\n";
  for (const Option& o : spec_) {
    std::string left = "  --" + o.name + (is_flag(o) ? "" : " VALUE");
    if (left.size() < 26) left += std::string(26 - left.size(), ' ');
    out += left + " " + o.help + (is_flag(o) || o.fallback.empty() ? "" : " (default: " + o.fallback + ")") +
           "\n";
  }
  return out;
}

std::string option_text(double value) {
  char buf[32];  // a double's shortest form takes at most 24 characters
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, value).ptr);
}

std::string option_text(float value) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, value).ptr);
}

std::string join(const std::vector<std::string>& names, const std::string& separator) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : separator) + n;
  return out;
}

std::vector<std::string> split_list(const std::string& name, const std::string& text) {
  std::vector<std::string> items;
  const std::string expected = "option --" + name + " has an empty item in '" + text + "'; expected a,b,...";
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(' '));  // "a, b": the spaces around an item are not part of it
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty()) throw ValueError(expected);
    if (std::find(items.begin(), items.end(), item) != items.end())
      throw ValueError("option --" + name + " lists '" + item + "' twice");
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

void make_output_directory(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw ValueError("option --" + option + " is empty; expected a directory");
  const std::string what = "option --" + option + ": cannot write into '" + path + "': ";
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw ValueError(what + ec.message());
  if (!fs::is_directory(path, ec)) throw ValueError(what + "it is not a directory");
  // Permission bits do not bind root, and a read-only mount shows none: only a write tells.
  io::check_writable(path, "option --" + option);
}

void use_threads(const Args& args) {
  if (const int64_t n = args.integer_in("threads", 0, kMaxThreads); n > 0)
    set_num_threads(static_cast<int>(n));
}

bool use_reference_mode(const Args& args) {
  if (args.given("reference")) set_reference_mode(args.flag("reference"));
  return reference_mode();
}

}  // namespace qkv::examples
