// io/file.h: a writer that dies before commit() leaves only a temporary file, which
// remove_temp_files recognises by the writer's own naming; check_writable names the directory.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "child_process.h"
#include "io/file.h"
#include "scratch_dir.h"
#include "tensor/error.h"

namespace fs = std::filesystem;

// Writes half of args[0]/data.bin and dies, as a process killed in the middle of a save.
QKV_CHILD("die while writing", [](const std::vector<std::string>& args) -> int {
  qkv::io::AtomicFileWriter out("test", fs::path(args.at(0)) / "data.bin");
  const std::string half = "half of the bytes";
  out.write(std::as_bytes(std::span(half.data(), half.size())));
  std::_Exit(0);  // no destructor, no commit
});

TEST_CASE("remove_temp_files removes what a killed AtomicFileWriter left and nothing else") {
  qkv::testing::ScratchDir dir;
  qkv::testing::write_file(dir / "data.bin", "the old file");
  REQUIRE(qkv::testing::run_child("die while writing", {dir.path().string()}).exit_code == 0);
  std::vector<std::string> names = dir.entries();
  REQUIRE(names.size() == 2);  // data.bin as it was, and the temporary file
  CHECK(qkv::testing::read_file(dir / "data.bin") == "the old file");
  const std::string leftover = names[0] == "data.bin" ? names[1] : names[0];
  CHECK(leftover.rfind(".data.bin.tmp-", 0) == 0);
  for (const char* look_alike :
       {".data.bin.tmp-", ".data.bin.tmp-12", ".data.bin.tmp-1-x", "data.bin.tmp-1-2"})
    qkv::testing::write_file(dir / look_alike, "");

  CHECK(qkv::io::remove_temp_files(dir.path()) == std::vector<std::string>{leftover});
  CHECK_FALSE(fs::exists(dir / leftover));
  CHECK(dir.entries().size() == 5);
  CHECK(qkv::io::remove_temp_files(dir.path()).empty());
}

TEST_CASE("check_writable leaves nothing behind and names a directory it cannot write to") {
  qkv::testing::ScratchDir dir;
  qkv::io::check_writable(dir.path(), "test");
  CHECK(dir.entries().empty());
  const fs::path missing = dir / "missing";
  const std::string expected = "test: cannot write in the directory '" + missing.string() + "'";
  CHECK_THROWS_WITH_AS(qkv::io::check_writable(missing, "test"), doctest::Contains(expected.c_str()),
                       qkv::Error);
}
