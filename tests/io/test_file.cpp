// io/file.h: a writer that dies before commit() leaves only a temporary file, which
// remove_temp_files recognises by the writer's own naming; a directory's lock admits one writer and
// dies with it; check_writable names the directory; the
// whole-file reader takes only regular files, of bounded size, each refusal naming the path and what
// it found.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "child_process.h"
#include "io/file.h"
#include "io/scratch_dir.h"
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
  // Look-alikes, and a temporary file of another target: a user's, or another program's.
  for (const char* look_alike :
       {".data.bin.tmp-", ".data.bin.tmp-12", ".data.bin.tmp-1-x", "data.bin.tmp-1-2", ".notes.txt.tmp-3-4"})
    qkv::testing::write_file(dir / look_alike, "");

  CHECK(qkv::io::remove_temp_files(dir.path(), {"data.bin", "other.bin"}) == std::vector<std::string>{leftover});
  CHECK_FALSE(fs::exists(dir / leftover));
  CHECK(dir.entries().size() == 6);
  CHECK(qkv::io::remove_temp_files(dir.path(), {"data.bin"}).empty());
  CHECK(fs::exists(dir / ".notes.txt.tmp-3-4"));
}

QKV_CHILD("lock a directory and wait", [](const std::vector<std::string>& args) {
  const qkv::io::DirectoryLock lock = qkv::io::DirectoryLock::try_lock(args.at(0));
  std::printf("%d\n", lock.locked() ? 1 : 0);
  std::fflush(stdout);
  if (args.size() > 1) std::_Exit(0);  // killed while holding it: no destructor runs
  return 0;
});

TEST_CASE("a DirectoryLock admits one holder at a time and a killed holder leaves it free") {
  qkv::testing::ScratchDir dir;
  {
    const qkv::io::DirectoryLock first = qkv::io::DirectoryLock::try_lock(dir.path());
    REQUIRE(first.locked());
    const qkv::io::DirectoryLock second = qkv::io::DirectoryLock::try_lock(dir.path());
    CHECK_FALSE(second.locked());
    // Another process is refused too.
    CHECK(qkv::testing::run_child("lock a directory and wait", {dir.path().string()}).output == "0\n");
  }
  // Released with its holder: by the destructor, or by the end of a process that never ran it.
  CHECK(qkv::testing::run_child("lock a directory and wait", {dir.path().string(), "die"}).output == "1\n");
  CHECK(qkv::io::DirectoryLock::try_lock(dir.path()).locked());
  // A directory the lock file cannot be made in holds no lock, and throws nothing.
  CHECK_FALSE(qkv::io::DirectoryLock::try_lock(dir / "missing").locked());
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

using qkv::testing::ScratchDir;

TEST_CASE("read_text_file returns the whole file byte for byte") {
  ScratchDir dir;
  const std::string text = std::string("line one\r\nline two\0with a zero\n", 31) + "\xc3\xa9";
  const auto path = dir.new_file(text);
  CHECK(qkv::io::read_text_file(path, "test") == text);
  CHECK(qkv::io::read_text_file(dir.new_file(""), "test").empty());
}

TEST_CASE("read_text_file follows a link to a regular file") {
  ScratchDir dir;
  const auto target = dir.new_file("{\"a\": 1}");
  std::filesystem::create_symlink(target, dir / "link.json");
  CHECK(qkv::io::read_text_file(dir / "link.json", "test") == "{\"a\": 1}");
}

TEST_CASE("read_text_file refuses a link to /dev/zero naming the path and what it is") {
  ScratchDir dir;
  std::filesystem::create_symlink("/dev/zero", dir / "config.json");
  const std::string expected =
      "tagger: '" + (dir / "config.json").string() + "': is a character device, not a regular file";
  CHECK_THROWS_WITH_AS(qkv::io::read_text_file(dir / "config.json", "tagger"), expected.c_str(),
                       qkv::ValueError);
}

TEST_CASE("read_text_file refuses a directory and a FIFO without waiting for a writer") {
  ScratchDir dir;
  CHECK_THROWS_WITH_AS(qkv::io::read_text_file(dir.path(), "test"),
                       doctest::Contains("is a directory, not a regular file"), qkv::ValueError);
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(qkv::io::read_text_file(dir / "fifo", "test"),
                       doctest::Contains("fifo': is a FIFO (named pipe), not a regular file"),
                       qkv::ValueError);
}

TEST_CASE("read_text_file refuses a file over max_bytes and names both sizes") {
  ScratchDir dir;
  const auto path = dir.new_file(std::string(101, 'x'));
  CHECK(qkv::io::read_text_file(path, "test", 101).size() == 101);
  CHECK_THROWS_WITH_AS(qkv::io::read_text_file(path, "test", 100),
                       doctest::Contains("is 101 bytes, over the 100 a text file read whole may hold"),
                       qkv::ValueError);
}

TEST_CASE("read_text_file names a missing file and the system's reason") {
  ScratchDir dir;
  CHECK_THROWS_WITH_AS(qkv::io::read_text_file(dir / "absent.txt", "Vocab::load"),
                       doctest::Contains("absent.txt': cannot open: No such file or directory"), qkv::Error);
}

TEST_CASE("require_regular_file refuses a directory and /dev/null and accepts a file") {
  ScratchDir dir;
  CHECK_NOTHROW(qkv::io::require_regular_file(dir.new_file("x"), "read_conllu"));
  CHECK_THROWS_WITH_AS(qkv::io::require_regular_file(dir.path(), "read_conllu"),
                       doctest::Contains("is a directory, not a regular file"), qkv::ValueError);
  CHECK_THROWS_WITH_AS(qkv::io::require_regular_file("/dev/null", "read_conllu"),
                       "read_conllu: '/dev/null': is a character device, not a regular file",
                       qkv::ValueError);
}
