// The frame of every example program: a table of its commands, each with its options, its help and
// the function that runs it. main() hands its arguments to run_program, which starts the world of
// ranks (examples/common/ranks.h), prints the usage and each command's --help, parses the options
// (examples/common/args.h), refuses several ranks for a command that runs alone, and turns an
// error into one line on stderr and the exit code 1:
//
//   int main(int argc, char** argv) {
//     return qkv::examples::run_program(argc, argv, {"lm", "a character-level GPT", {
//         Command{"train", "train a character-level GPT on Moby-Dick", train_options(),
//         cmd_train}.on_ranks(),
//         {"sample", "generate text from a trained run", sample_options(), cmd_sample}}});
//   }
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "examples/common/args.h"

namespace qkv::examples {

struct Command {
  std::string name;     // "train"
  std::string summary;  // one line of the program's usage
  std::vector<Args::Option> options;
  std::function<int(const Args&)> run;
  bool ranks = false;          // runs under mpirun on several ranks (train); other commands are refused there
  std::string arguments = {};  // what follows the options in the usage line: "[SENTENCE...]"
  std::string note = {};       // printed after the options by --help

  Command on_ranks() && {
    ranks = true;
    return std::move(*this);
  }
  Command with_arguments(std::string a) && {
    arguments = std::move(a);
    return std::move(*this);
  }
  Command with_note(std::string n) && {
    note = std::move(n);
    return std::move(*this);
  }
};

struct Program {
  std::string name;     // "lm": the executable, and the prefix of its error messages
  std::string summary;  // what it is, for the usage's first line
  std::vector<Command> commands;
};

// Runs the command argv[1] names with the options that follow it; the exit code: 0, 1 after an
// error (reported on stderr), 2 for no command or an unknown one (the usage on stderr).
int run_program(int argc, char** argv, const Program& program);

// A program of one command: the same frame without the command word ("scaling_study [OPTIONS]").
int run_tool(int argc, char** argv, const Command& command);

// The options nearly every command takes.
inline const Args::Option kThreadsOption = {"threads", "0", "threads (0: QKV_NUM_THREADS or all cores)"};
Args::Option run_option(const std::string& fallback,
                        const std::string& help = "run directory of a trained model");

// The common start of a command: no positional arguments (unless `positional`), the thread count
// of --threads, the reference mode of --reference (said on stderr when it is on, for a command that
// does not announce itself otherwise: `announce`).
void start_command(const Args& args, const std::string& program, bool announce = false,
                   bool positional = false);

// --matmul: how float32 products are computed (tensor/precision.h).
inline constexpr const char* kMatmulHelp =
    "highest: float32 products; medium: operands rounded to bfloat16, sums in float32 (needs AVX512_BF16; "
    "not in the reference mode)";
// The same for a program whose default is auto (resolved_matmul).
inline constexpr const char* kMatmulAutoHelp =
    "auto: medium where this CPU has AVX512_BF16 and the reference mode is off, else highest (the run keeps "
    "which); highest: float32 products; medium: operands rounded to bfloat16, sums in float32 (needs "
    "AVX512_BF16; not in the reference mode)";

// --recompute: the encoder's blocks keep no activations for backward (nn::TransformerEncoderOptions::recompute).
inline constexpr const char* kRecomputeHelp =
    "keep only each block's input for backward and run the block again there (qkv::checkpoint): less "
    "memory, more time, the same gradients";

// --matmul auto as this machine and mode resolve it: "medium" where bf16_matmul_available() and the
// reference mode is off, else "highest"; any other value as it is. A fresh run resolves its option
// before anything else reads it, so its config.json holds what its products were, and resuming it
// elsewhere refuses a medium it cannot compute instead of changing precision silently.
std::string resolved_matmul(const std::string& setting);

// Products from now on as `precision` says: "highest" or "medium", the value of --matmul (bench) or
// of a run's config (train; a resumed or loaded run's own: saved_run). Refused, naming the option,
// for any other value, for medium where this build has no bfloat16 kernel, and for medium in the
// reference mode (--reference or QKV_REFERENCE=1, set by start_command), whose products are float32.
void use_matmul_precision(const std::string& precision, bool saved_run = false);

// The directory --name gives: refused, naming the option, when it is empty.
std::string directory_option(const Args& args, const std::string& name);

// Refuses `dir` (option --name) when it holds any of `files` already, naming the first: a program
// that writes them never overwrites an earlier result. ValueError "--out D holds F already; ...".
void refuse_existing(const std::string& name, const std::string& dir, const std::vector<std::string>& files);
// Refuses file `path` (option --name) when it exists: "--heatmap F exists already; ...".
void refuse_existing_file(const std::string& name, const std::string& path);
// Makes the output directory --name gives (proved writable), after refuse_existing.
std::string prepare_out(const Args& args, const std::string& name, const std::vector<std::string>& files);

}  // namespace qkv::examples
