#include "io/file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>

#include "tensor/error.h"

namespace qkv::io {

namespace {

std::string quote_path(const std::filesystem::path& p) { return std::string("'") + p.string() + "'"; }

std::string os_error() { return std::strerror(errno); }

// A name no other writer uses at the same time: dot-prefixed (hidden), with this process's id
// and a counter, e.g. ".model.safetensors.tmp-4242-0".
std::filesystem::path temp_name(const std::filesystem::path& target) {
  static std::atomic<unsigned> counter{0};
  return target.parent_path() / (std::string(".") + target.filename().string() + ".tmp-" +
                                 std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

// True for the names temp_name gives: "." TARGET ".tmp-" digits "-" digits.
bool is_temp_name(const std::string& name) {
  const size_t tmp = name.rfind(".tmp-");
  if (name.size() < 2 || name[0] != '.' || tmp == std::string::npos || tmp < 2) return false;
  const std::string numbers = name.substr(tmp + 5);
  const size_t dash = numbers.find('-');
  auto digits = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  return dash != std::string::npos && digits(numbers.substr(0, dash)) && digits(numbers.substr(dash + 1));
}

// "a directory", "a character device", ...: what a path that is not a regular file is.
std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

void check_regular(const struct stat& st, const std::string& context) {
  if (!S_ISREG(st.st_mode))
    throw ValueError(context + "is " + file_kind(st.st_mode) + ", not a regular file");
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string op, std::filesystem::path target)
    : op_(std::move(op)), target_(std::move(target)) {
  if (target_.filename().empty()) fail("cannot write " + quote_path(target_) + ": not a file name");
  // O_EXCL: never write into a file someone else created; retry under a new name instead.
  // Mode 0666 lets the umask decide the permissions, as for any newly created file.
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = temp_name(target_);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt == 100))
      fail("cannot create " + quote_path(temp_) + " to write " + quote_path(target_) + ": " + os_error());
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFileWriter::fail(const std::string& what) const { throw Error(op_ + ": " + what); }

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write " + quote_path(target_) + ": " + os_error());
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) fail("cannot flush " + quote_path(target_) + " to disk: " + os_error());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot write " + quote_path(target_) + ": " + os_error());
  if (::rename(temp_.c_str(), target_.c_str()) != 0)
    fail("cannot replace " + quote_path(target_) + ": " + os_error());
  committed_ = true;
  // The rename itself lives in the directory; flush that too so the new name survives a crash.
  // Some file systems cannot fsync a directory (EINVAL); the rename has happened all the same.
  const std::filesystem::path dir = target_.has_parent_path() ? target_.parent_path() : ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    const bool synced = ::fsync(dir_fd) == 0 || errno == EINVAL;
    const std::string reason = synced ? "" : os_error();
    ::close(dir_fd);
    if (!synced) fail("wrote " + quote_path(target_) + " but cannot flush its directory: " + reason);
  }
}

FileReader::FileReader(std::string op, const std::filesystem::path& path)
    : context_(std::move(op) + ": " + quote_path(path) + ": ") {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw Error(context_ + "cannot open: " + os_error());
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const std::string reason = os_error();
    ::close(fd_);
    throw Error(context_ + "cannot stat: " + reason);
  }
  try {
    check_regular(st, context_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

FileReader::~FileReader() { ::close(fd_); }

void FileReader::read_at(uint64_t offset, std::span<std::byte> out) const {
  while (!out.empty()) {
    const ssize_t n = ::pread(fd_, out.data(), out.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(context_ + "cannot read: " + os_error());
    }
    if (n == 0)
      throw FormatError(context_ + "file ended at byte " + std::to_string(offset) + ", " +
                        std::to_string(out.size()) + " bytes short (was it truncated?)");
    offset += static_cast<uint64_t>(n);
    out = out.subspan(static_cast<std::size_t>(n));
  }
}

std::string temp_file_target(const std::string& name) {
  return is_temp_name(name) ? name.substr(1, name.rfind(".tmp-") - 1) : std::string();  // ".TARGET.tmp-PID-N"
}

std::vector<std::string> remove_temp_files(const std::filesystem::path& dir, const std::vector<std::string>& targets) {
  std::vector<std::string> removed;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string target = temp_file_target(name);
    if (!entry.is_regular_file() || target.empty()) continue;
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) continue;
    std::filesystem::remove(entry.path());
    removed.push_back(name);
  }
  return removed;
}

namespace {

// The lock file DIR/.lock, opened (made if missing); -1 with errno set when it cannot be.
int open_lock_file(const std::filesystem::path& dir) {
  return ::open((dir / ".lock").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
}

}  // namespace

DirectoryLock DirectoryLock::try_lock(const std::filesystem::path& dir) {
  DirectoryLock lock;
  const int fd = open_lock_file(dir);
  if (fd < 0) return lock;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return lock;
  }
  lock.fd_ = fd;
  return lock;
}

DirectoryLock DirectoryLock::wait_for(const std::filesystem::path& dir, const std::string& op,
                                      const std::function<void()>& on_wait) {
  DirectoryLock lock;
  const std::filesystem::path file = dir / ".lock";
  const int fd = open_lock_file(dir);
  if (fd < 0) throw Error(op + ": cannot make the lock file " + quote_path(file) + ": " + os_error());
  lock.fd_ = fd;  // closed by the destructor if the wait fails
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return lock;
  if (errno == EWOULDBLOCK && on_wait) on_wait();
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) throw Error(op + ": cannot lock " + quote_path(file) + ": " + os_error());
  }
  return lock;
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

void check_writable(const std::filesystem::path& dir, const std::string& op) {
  try {
    AtomicFileWriter probe("writing a probe file", dir / "probe");  // never committed: removed at once
  } catch (const Error& e) {
    throw Error(op + ": cannot write in the directory " + quote_path(dir) + " (" + e.what() + ")");
  }
}

std::string read_text_file(const std::filesystem::path& path, const std::string& op, uint64_t max_bytes) {
  const FileReader file(op, path);
  if (file.size() > max_bytes)
    throw ValueError(file.context() + "is " + std::to_string(file.size()) + " bytes, over the " +
                     std::to_string(max_bytes) + " a text file read whole may hold");
  std::string text(static_cast<std::size_t>(file.size()), '\0');
  file.read_at(0, std::as_writable_bytes(std::span(text.data(), text.size())));
  return text;
}

void require_regular_file(const std::filesystem::path& path, const std::string& op) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error(op + ": " + quote_path(path) + ": cannot open: " + os_error());
  check_regular(st, op + ": " + quote_path(path) + ": ");
}

void write_text_file(const std::filesystem::path& path, std::string_view text, const std::string& op) {
  AtomicFileWriter out(op, path);
  out.write(std::as_bytes(std::span(text.data(), text.size())));
  out.commit();
}

}  // namespace qkv::io
