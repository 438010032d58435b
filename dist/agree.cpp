#include "dist/agree.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>

namespace qkv::dist {
namespace {

// Quoted values are cut to this many characters, so that a long one does not fill the message.
constexpr size_t kShownChars = 60;

std::string shown(const std::string& value) {
  if (value.size() <= kShownChars) return "'" + value + "'";
  return "'" + value.substr(0, kShownChars) + "...' (" + std::to_string(value.size()) + " characters)";
}

// Settings as one text: each name and value followed by a NUL.
std::string pack(const std::vector<Setting>& settings) {
  std::string text;
  for (const auto& [name, value] : settings) text += name + '\0' + value + '\0';
  return text;
}

std::vector<Setting> unpack(const std::string& text) {
  std::vector<std::string> parts;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\0', start);
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::vector<Setting> settings;
  for (size_t i = 0; i + 1 < parts.size(); i += 2) settings.emplace_back(parts[i], parts[i + 1]);
  return settings;
}

}  // namespace

std::vector<std::string> all_gather_text(ProcessGroup& group, const std::string& mine) {
  const size_t n = static_cast<size_t>(group.size());
  std::vector<uint64_t> lengths(n);
  const uint64_t my_length[1] = {mine.size()};
  group.all_gather(std::span<const uint64_t>(my_length), std::span<uint64_t>(lengths));
  // The collectives move 64-bit words: each rank's text padded to the longest, in words.
  const size_t words = (*std::max_element(lengths.begin(), lengths.end()) + 7) / 8;
  std::vector<uint64_t> padded(words, 0), all(words * n);
  if (!mine.empty()) std::memcpy(padded.data(), mine.data(), mine.size());  // an empty vector's data() may be null
  group.all_gather(std::span<const uint64_t>(padded), std::span<uint64_t>(all));
  std::vector<std::string> texts(n);
  for (size_t r = 0; r < n; ++r)
    texts[r].assign(reinterpret_cast<const char*>(all.data() + r * words), static_cast<size_t>(lengths[r]));
  return texts;
}

void check_same_settings(ProcessGroup& group, const std::vector<Setting>& settings, const std::string& what) {
  const std::vector<std::string> texts = all_gather_text(group, pack(settings));
  if (std::all_of(texts.begin(), texts.end(), [&](const std::string& t) { return t == texts[0]; })) return;
  // Each name's value on each rank, "(not given)" where a rank has no such setting.
  std::vector<std::string> names;
  std::vector<std::map<std::string, std::string>> values(texts.size());
  for (size_t r = 0; r < texts.size(); ++r)
    for (const auto& [name, value] : unpack(texts[r])) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      values[r][name] = value;
    }
  std::string differences;
  for (const std::string& name : names) {
    std::vector<std::string> each;
    for (const auto& v : values) each.push_back(v.count(name) ? shown(v.at(name)) : "(none)");
    if (std::all_of(each.begin(), each.end(), [&](const std::string& e) { return e == each[0]; })) continue;
    differences += differences.empty() ? "" : "; ";
    differences += name + ":";
    for (size_t r = 0; r < each.size(); ++r)
      differences += (r ? ", " : " ") + each[r] + " on rank " + std::to_string(r);
  }
  if (differences.empty()) differences = "the same settings in another order";
  throw Disagreement(
      "the ranks were given different " + what + " (" + differences +
      "); every rank must train with the same ones, or the ranks would train apart or wait for "
      "each other forever");
}

}  // namespace qkv::dist
