// The command-line options of `tagger train` and `tagger ablate`, and the Config and TrainOptions
// they make. Every default is read from Config's member initializers (and TrainOptions'), so it is
// stated once: with no options given, config_from yields Config{}.
#pragma once

#include <vector>

#include "examples/common/args.h"
#include "examples/tagger/model.h"
#include "examples/tagger/train.h"

namespace tagger {

std::vector<qkv::examples::Args::Option> train_options();

// The sentence whose attention a run on real text draws, unless --example says otherwise: from the
// Brown test documents (cg12), with words that change class ("like", "plays") and one that training
// never shows ("nihilistic").
inline constexpr const char* kRealTextExample =
    "American newspaper reviewers like to call his plays nihilistic .";

// "with --corpus brown or ... files, the defaults for real text: --d-model 128 ...": the options
// whose defaults real_text_defaults() changes, for --help.
std::string real_text_note();

// The Config of parsed train_options(), validated (ValueError for values out of range). Data file
// names are made absolute, so that eval and --resume find them from any working directory.
Config config_from(const qkv::examples::Args& args);

// --cache and --run of parsed options; ValueError when given empty (--run=), which names no directory.
std::string cache_option(const qkv::examples::Args& args);
std::string run_option(const qkv::examples::Args& args);
// The run directory of parsed train_options(): --run, or runs/brown for --corpus brown without it.
std::string run_dir_from(const qkv::examples::Args& args);

// The run directory, figures, profiling and attention sentence of parsed train_options().
TrainOptions train_options_from(const qkv::examples::Args& args);

}  // namespace tagger
