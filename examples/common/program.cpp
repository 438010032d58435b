#include "examples/common/program.h"

#include <filesystem>
#include <iostream>
#include <new>

#include "dist/agree.h"
#include "examples/common/ranks.h"
#include "tensor/error.h"
#include "tensor/precision.h"
#include "tensor/reference_mode.h"

namespace qkv::examples {
namespace {

std::string usage(const Program& p) {
  size_t width = 0;
  for (const Command& c : p.commands) width = std::max(width, c.name.size());
  std::string out = "usage: " + p.name + " COMMAND [OPTIONS]   (" + p.summary + ")\ncommands:\n";
  for (const Command& c : p.commands)
    out += "  " + c.name + std::string(width + 3 - c.name.size(), ' ') + c.summary + "\n";
  return out + "run `" + p.name + " COMMAND --help` for its options\n";
}

// Under mpirun, refuses ranks that were given different options: the command, every option but
// --threads (a rank may have other cores), --help, the arguments and the reference mode
// (QKV_REFERENCE).
void check_ranks_agree(const Args& args, const std::string& title) {
  if (!world_started() || world().size() < 2) return;
  std::vector<dist::Setting> settings = {{"the command", title},
                                         {"--help", args.help_requested() ? "given" : "not given"}};
  for (const auto& [name, value] : args.values())
    if (name != "threads") settings.emplace_back("--" + name, value);
  settings.emplace_back("the arguments", join(args.positional(), " "));
  const bool reference =
      args.has("reference") && args.given("reference") ? args.flag("reference") : reference_mode();
  settings.emplace_back("the reference mode (--reference, QKV_REFERENCE)", reference ? "on" : "off");
  dist::check_same_settings(world().group(), settings, "options");
}

// Parses the options of `command` and runs it; `title` is what its usage line calls it.
int run_command(int argc, char** argv, const std::string& title, const Command& command) {
  const Args args(argc, argv, command.options,
                  "usage: " + title + " [OPTIONS]" +
                      (command.arguments.empty() ? "" : " " + command.arguments) + "\n" + command.summary);
  check_ranks_agree(args, title);
  if (args.help_requested()) {
    std::cout << args.help() << command.note;
    return 0;
  }
  return command.run(args);
}

}  // namespace

int run_program(int argc, char** argv, const Program& p) {
  if (!start_world(argc, argv, p.name)) return 1;
  const std::string word = argc < 2 ? "" : argv[1];
  if (word.empty() || word == "--help" || word == "-h") {
    (word.empty() ? std::cerr : std::cout) << usage(p);
    return word.empty() ? 2 : 0;
  }
  const auto command =
      std::find_if(p.commands.begin(), p.commands.end(), [&](const Command& c) { return c.name == word; });
  if (command == p.commands.end()) {
    std::cerr << p.name << ": unknown command '" << word << "'\n" << usage(p);
    return 2;
  }
  try {
    if (!command->ranks && world().size() > 1)
      throw ValueError("`" + p.name + " " + word + "` runs in one process; run it without mpirun");
    return run_command(argc - 2, argv + 2, p.name + " " + word, *command);
  } catch (const dist::Disagreement& e) {
    return fail(p.name, e.what(), true);
  } catch (const std::bad_alloc&) {  // an allocation outside qkv's tensors, which name their sizes
    return fail(p.name, "out of memory in `" + p.name + " " + word + "`: lower the sizes its options ask for");
  } catch (const std::exception& e) {
    return fail(p.name, e.what());
  }
}

int run_tool(int argc, char** argv, const Command& command) {
  try {
    return run_command(argc - 1, argv + 1, command.name, command);
  } catch (const std::exception& e) {
    std::cerr << command.name << ": " << e.what() << "\n";
    return 1;
  }
}

Args::Option run_option(const std::string& fallback, const std::string& help) {
  return {"run", fallback, help};
}

void start_command(const Args& args, const std::string& program, bool announce, bool positional) {
  if (!positional) args.refuse_positional();
  if (args.has("threads")) use_threads(args);
  if (args.has("reference") && use_reference_mode(args) && announce)
    std::cerr << program << ": " << kReferenceModeNote << "\n";
}

std::string resolved_matmul(const std::string& setting) {
  if (setting != "auto") return setting;
  return bf16_matmul_available() && !reference_mode() ? "medium" : "highest";
}

void use_matmul_precision(const std::string& precision, bool saved_run) {
  if (precision != "highest" && precision != "medium")
    throw ValueError("option --matmul is '" + precision + "'; expected one of highest, medium");
  if (reference_mode() && precision == "medium")
    throw ValueError(std::string(saved_run ? "the run was trained with --matmul medium (its config.json), and "
                                           : "--matmul medium: ") +
                     "the reference mode (--reference or QKV_REFERENCE=1) computes every product in float32; drop "
                     "one of the two");
  try {
    set_matmul_precision(precision == "medium" ? MatmulPrecision::medium : MatmulPrecision::highest);
  } catch (const ValueError& e) {
    throw ValueError(std::string("--matmul medium: ") + e.what());
  }
}

std::string directory_option(const Args& args, const std::string& name) {
  if (args.str(name).empty()) throw ValueError("option --" + name + " is empty; expected a directory");
  return args.str(name);
}

void refuse_existing(const std::string& name, const std::string& dir, const std::vector<std::string>& files) {
  for (const std::string& f : files)
    if (std::filesystem::exists(std::filesystem::path(dir) / f))
      throw ValueError("--" + name + " " + dir + " holds " + f +
                       " already; choose another directory (nothing was changed)");
}

void refuse_existing_file(const std::string& name, const std::string& path) {
  if (path.empty()) throw ValueError("option --" + name + " is empty; expected a file to write");
  if (std::filesystem::exists(path))
    throw ValueError("--" + name + " " + path + " exists already; choose another file (nothing was changed)");
}

std::string prepare_out(const Args& args, const std::string& name, const std::vector<std::string>& files) {
  const std::string dir = args.str(name);
  refuse_existing(name, dir, files);
  make_output_directory(name, dir);
  return dir;
}

}  // namespace qkv::examples
