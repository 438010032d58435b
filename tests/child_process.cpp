#include "child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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

namespace {

std::string read_and_remove(const char* path) {
  std::ifstream in(path);
  std::string text(std::istreambuf_iterator<char>(in), {});
  std::filesystem::remove(path);
  return text;
}

// Runs argv_s[0] with `env` ("KEY=value") replacing the entries of the same key in the current
// environment, and returns its exit code, stdout and stderr.
ChildResult spawn_and_wait(std::vector<std::string> argv_s, const std::vector<std::string>& env) {
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
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

  // The child's output goes to files: a pipe would need a reader while we wait. Its stdin is
  // /dev/null, so that a program reading stdin ends at once.
  char out_path[] = "/tmp/qkv-child-XXXXXX", err_path[] = "/tmp/qkv-child-XXXXXX";
  const int out_fd = ::mkstemp(out_path), err_fd = ::mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0) throw std::runtime_error("run_child: mkstemp failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  pid_t pid;
  const int rc = posix_spawn(&pid, argv_s[0].c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_fd);
  ::close(err_fd);
  ChildResult result;
  if (rc == 0) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  result.output = read_and_remove(out_path);
  result.errors = read_and_remove(err_path);
  if (rc != 0) throw std::runtime_error("run_child: cannot start " + argv_s[0]);
  return result;
}

}  // namespace

ChildResult run_child(const std::string& name, const std::vector<std::string>& args,
                      const std::vector<std::string>& env) {
  std::vector<std::string> argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "--child", name};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_and_wait(std::move(argv), env);
}

ChildResult run_program(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_and_wait(std::move(argv), {});
}

}  // namespace qkv::testing
