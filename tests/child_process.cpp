#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

extern char** environ;

namespace qkv::testing {
namespace {

std::map<std::string, ChildMain>& children() {
  static std::map<std::string, ChildMain> all;
  return all;
}

}  // namespace

ChildRegistrar::ChildRegistrar(const std::string& name, ChildMain fn) { children()[name] = std::move(fn); }

int child_main(const std::string& name, const std::vector<std::string>& args) {
  auto it = children().find(name);
  if (it == children().end()) {
    std::fprintf(stderr, "no child named '%s'\n", name.c_str());
    return 2;
  }
  return it->second(args);
}

ChildResult run_child(const std::string& name, const std::vector<std::string>& args,
                      const std::vector<std::string>& env) {
  std::vector<std::string> child_args = {"--child", name};
  child_args.insert(child_args.end(), args.begin(), args.end());
  return run_program(std::filesystem::read_symlink("/proc/self/exe").string(), child_args, env);
}

namespace {

// A new file for one of the child's output streams, opened for writing.
int output_file(std::string& path) {
  path = "/tmp/qkv-child-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("run_program: mkstemp failed");
  return fd;
}

std::string take_file(const std::string& path) {
  std::ifstream in(path);
  std::string text(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(path);
  return text;
}

}  // namespace

ChildResult run_program(const std::string& path, const std::vector<std::string>& args,
                        const std::vector<std::string>& env) {
  std::vector<std::string> argv_s = {path};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  // The current environment, with the entries of `env` replacing those of the same key.
  auto key_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e; ++e) {
    bool replaced = false;
    for (const std::string& mine : env) replaced |= key_of(mine) == key_of(*e);
    if (!replaced) env_s.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);

  // The child's output goes to files: a pipe would need a reader while we wait.
  std::string out_path, err_path;
  const int out = output_file(out_path), err = output_file(err_path);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out);
  ::close(err);
  ChildResult result;
  if (rc == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  result.output = take_file(out_path);
  result.errors = take_file(err_path);
  if (rc != 0) throw std::runtime_error("run_program: posix_spawn failed for " + path);
  return result;
}

InteractiveProgram::InteractiveProgram(const std::string& path, const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {path};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Close-on-exec, so that no other child started meanwhile holds the program's stdin open (it would
  // then never see the end of its input); dup2 in the child clears the flag on the copies it keeps.
  int to_child[2] = {-1, -1}, from_child[2] = {-1, -1};
  const auto close_all = [&] {
    for (const int fd : {to_child[0], to_child[1], from_child[0], from_child[1]})
      if (fd >= 0) ::close(fd);
  };
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
    close_all();
    throw std::runtime_error("InteractiveProgram: pipe failed");
  }
  int err = -1;
  try {
    err = output_file(err_path_);
  } catch (...) {
    close_all();
    throw;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
  pid_t pid;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  ::close(err);
  in_ = to_child[1];
  out_ = from_child[0];
  if (rc != 0) {
    ::close(in_);
    ::close(out_);
    in_ = out_ = -1;
    std::filesystem::remove(err_path_);
    err_path_.clear();
    throw std::runtime_error("InteractiveProgram: posix_spawn failed for " + path);
  }
  pid_ = pid;
}

InteractiveProgram::~InteractiveProgram() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (in_ >= 0) ::close(in_);
  if (out_ >= 0) ::close(out_);
  if (!err_path_.empty()) std::filesystem::remove(err_path_);
}

void InteractiveProgram::write(const std::string& text) {
  const ::sighandler_t previous = ::signal(SIGPIPE, SIG_IGN);  // a program that has ended: write fails
  const ssize_t n = ::write(in_, text.data(), text.size());
  ::signal(SIGPIPE, previous);
  if (n != static_cast<ssize_t>(text.size())) throw std::runtime_error("InteractiveProgram: write failed");
}

std::string InteractiveProgram::read_line(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    if (const size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "<timeout>";
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) return "<eof>";
    pending_.append(buf, static_cast<size_t>(n));
  }
}

ChildResult InteractiveProgram::finish() {
  ::close(in_);
  in_ = -1;
  ChildResult result;
  for (char buf[4096];;) {
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) break;
    pending_.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.output = std::move(pending_);
  result.errors = take_file(err_path_);
  err_path_.clear();
  return result;
}

}  // namespace qkv::testing
