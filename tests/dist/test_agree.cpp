// Agreement (dist/agree.h): the ranks gather each other's texts and refuse different settings with
// one message on every rank. At 1, 2 and 3 ranks in CTest.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dist/agree.h"
#include "tests/dist/dist_testing.h"

using dist_testing::group;
using qkv::dist::Setting;

TEST_CASE("all_gather_text gives every rank every rank's text, of any length, in rank order") {
  auto& g = group();
  // Lengths 0, 9, 18...: not multiples of the 8-byte words the texts travel in, with NULs inside.
  std::string mine;
  for (int i = 0; i < 9 * g.rank(); ++i) mine += static_cast<char>(i % 3 == 0 ? '\0' : 'a' + g.rank());
  const std::vector<std::string> all = qkv::dist::all_gather_text(g, mine);
  REQUIRE(all.size() == static_cast<size_t>(g.size()));
  for (int r = 0; r < g.size(); ++r) {
    REQUIRE(all[r].size() == static_cast<size_t>(9 * r));
    for (size_t i = 0; i < all[r].size(); ++i) CHECK(all[r][i] == (i % 3 == 0 ? '\0' : 'a' + r));
  }
}

TEST_CASE("check_same_settings passes equal settings and names each one that differs, on every rank") {
  auto& g = group();
  const std::vector<Setting> same = {{"--steps", "40"}, {"--lr", "0.002"}};
  CHECK_NOTHROW(qkv::dist::check_same_settings(g, same, "options"));
  if (g.size() == 1) return;
  // The last rank was given other steps and a reduction of its own; --lr agrees.
  const bool last = g.rank() == g.size() - 1;
  const std::vector<Setting> mine = {{"--steps", last ? "41" : "40"}, {"--lr", "0.002"},
                                     {"--reduce", last ? "fixed" : "library"}};
  std::string expected = "the ranks were given different options (--steps:";
  for (int r = 0; r < g.size(); ++r)
    expected += std::string(r ? "," : "") + (r == g.size() - 1 ? " '41'" : " '40'") + " on rank " + std::to_string(r);
  expected += "; --reduce:";
  for (int r = 0; r < g.size(); ++r)
    expected += std::string(r ? "," : "") + (r == g.size() - 1 ? " 'fixed'" : " 'library'") + " on rank " +
                std::to_string(r);
  expected += ");";
  CHECK_THROWS_WITH_AS(qkv::dist::check_same_settings(g, mine, "options"), doctest::Contains(expected.c_str()),
                       qkv::dist::Disagreement);
  // A setting one rank lacks, and a long value cut short in the message.
  std::vector<Setting> extra = same;
  if (last) extra.emplace_back("--text", std::string(5000, 'x'));
  CHECK_THROWS_WITH_AS(qkv::dist::check_same_settings(g, extra, "options"),
                       doctest::Contains("--text: (none) on rank 0"), qkv::dist::Disagreement);
  try {
    qkv::dist::check_same_settings(g, extra, "options");
  } catch (const qkv::dist::Disagreement& e) {
    CHECK(std::string(e.what()).find("(5000 characters)") != std::string::npos);
    CHECK(std::string(e.what()).size() < 500);
  }
}
