// The file operations the formats share: writing a file so that a crash never leaves half of it,
// reading exact byte ranges of a file whose size is known before anything is allocated, and
// reading a whole text file of bounded size.
// Errors name the op and the file: "save_npy: cannot create 'out/x.npy': No such file or
// directory". Failures of the system (missing file, full disk) throw qkv::Error; a file that ends
// before the bytes asked for throws FormatError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
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
// destructor ran (names ".TARGET.tmp-PID-N" in `dir`) for the targets named, removed; returns
// their names. A file of another name is left alone, whatever it looks like. Every such file is
// removed, whatever became of its process: call it only while holding the directory's
// DirectoryLock (one writer at a time), never where another process may be in the middle of a write.
std::vector<std::string> remove_temp_files(const std::filesystem::path& dir, const std::vector<std::string>& targets);

// The target of an AtomicFileWriter's temporary file from its name (".data.bin.tmp-42-0" →
// "data.bin"), or "" for a name that is not one.
std::string temp_file_target(const std::string& name);

// One writer at a time in a directory: an advisory lock (flock) on the file DIR/.lock, which the
// kernel releases when its holder ends, however it ends, so a killed writer never leaves it stuck.
// Two locks conflict even within one process. The file stays behind, empty: its bytes never change.
class DirectoryLock {
 public:
  // Takes the lock on `dir` (which must exist), or, when another holds it or the lock file cannot
  // be made (a read-only directory), returns an object that holds nothing: locked() says which.
  static DirectoryLock try_lock(const std::filesystem::path& dir);
  // Takes the lock on `dir`, waiting as long as another holds it, and calling on_wait first when it
  // must wait (to say so). Throws Error naming the lock file (`op` names the caller) when it cannot
  // be made, as in a read-only directory.
  static DirectoryLock wait_for(const std::filesystem::path& dir, const std::string& op,
                                const std::function<void()>& on_wait = {});
  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  ~DirectoryLock();

  bool locked() const { return fd_ >= 0; }

 private:
  DirectoryLock() = default;
  int fd_ = -1;
};

// Throws Error naming `dir` when an AtomicFileWriter cannot write there (read-only, missing, full):
// creates and removes a temporary file as the writer would. A long job checks this before it
// starts, not at its first save.
void check_writable(const std::filesystem::path& dir, const std::string& op);

// Writes `text` to `path` through an AtomicFileWriter: the one way qkv writes a text file (configs,
// vocabularies, CSV and JSON reports, CoNLL-U). `op` names the caller in error messages.
void write_text_file(const std::filesystem::path& path, std::string_view text, const std::string& op);

// What qkv reads a whole text file into memory from (configs, vocabularies): 64 MiB, a thousand
// times the largest it writes, so that a hostile file cannot exhaust memory.
inline constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t{64} << 20;

// The whole of the text file at `path`: the one way qkv reads a file into a string. It must be a
// regular file once links are followed: a directory, a device such as /dev/zero, a FIFO or a
// socket is refused with ValueError naming the path and what it is ("tagger: 'run/config.json'
// is a character device, not a regular file"), as is a file over max_bytes. Missing or unreadable
// files throw qkv::Error with the system's reason. `op` names the caller in messages.
std::string read_text_file(const std::filesystem::path& path, const std::string& op,
                           std::uint64_t max_bytes = kMaxTextFileBytes);

// Throws as read_text_file does unless `path` is a regular file after following links: for
// readers that stream a file of any size (CoNLL corpora) but must not wait on a FIFO or read a
// directory.
void require_regular_file(const std::filesystem::path& path, const std::string& op);

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
