// The two file operations the formats share: writing a file so that a crash never leaves half of
// it, and reading exact byte ranges of a file whose size is known before anything is allocated.
// Errors name the op and the file: "save_npy: cannot create 'out/x.npy': No such file or
// directory". Failures of the system (missing file, full disk) throw qkv::Error; a file that ends
// before the bytes asked for throws FormatError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qkv::io {

// Writes to a temporary file in the target's directory; commit() flushes it to disk (fsync) and
// renames it over the target, which POSIX makes atomic: readers, and the file system after a
// crash, see either the old file or the complete new one. Destroyed without commit() (because a
// write threw, say), it deletes the temporary file and leaves the target as it was.
class AtomicFileWriter {
 public:
  AtomicFileWriter(std::string op, std::filesystem::path target);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string op_;
  std::filesystem::path target_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The temporary files of AtomicFileWriters whose process was killed before commit() or the
// destructor ran (names ".TARGET.tmp-PID-N" in `dir`), removed; returns their names. Every such
// file is removed, whatever became of its process: call it only where one writer works at a time
// (a training run's directory), never where another process may be in the middle of a write.
std::vector<std::string> remove_temp_files(const std::filesystem::path& dir);

// Throws Error naming `dir` when an AtomicFileWriter cannot write there (read-only, missing, full):
// creates and removes a temporary file as the writer would. A long job checks this before it
// starts, not at its first save.
void check_writable(const std::filesystem::path& dir, const std::string& op);

// Writes `text` to `path` through an AtomicFileWriter: the one way qkv writes a text file (configs,
// vocabularies, CSV and JSON reports, CoNLL-U). `op` names the caller in error messages.
void write_text_file(const std::filesystem::path& path, std::string_view text, const std::string& op);

class FileReader {
 public:
  FileReader(std::string op, const std::filesystem::path& path);  // must be a regular file
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  uint64_t size() const { return size_; }
  // Fills `out` with the bytes at [offset, offset + out.size()).
  void read_at(uint64_t offset, std::span<std::byte> out) const;
  // "load_npy: 'x.npy': ", the prefix of every message about this file.
  const std::string& context() const { return context_; }

 private:
  std::string context_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace qkv::io
