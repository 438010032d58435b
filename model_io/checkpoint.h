// Checkpoints: everything needed to resume training, in one safetensors file (io/safetensors.h),
// so that Python's `safetensors` package (and so PyTorch) can read the weights too.
//
// Layout. Tensors, all F32:
//   "model.<name>"   each entry of the model's state_dict, e.g. "model.blocks.0.fc.weight"
//   "optim.<key>"    each tensor of the optimizer's state (optim/optimizer.h), e.g.
//                    "optim.state.3.exp_avg"
// and "__metadata__", strings only:
//   "format"         "qkv.checkpoint"
//   "version"        "1"
//   "step"           the training step, in decimal
//   "rng.seed", "rng.offset"   the default generator's state (tensor/random.h), in decimal
//   "optimizer"      the optimizer's name: "SGD", "Adam", "AdamW"; "" (and no "optim.*" entries)
//                    in a checkpoint of the weights alone
//   "optim.<key>"    each scalar of the optimizer's state, e.g. "optim.param_groups.0.lr", with
//                    17 significant digits, which give back the same double
//   "config"         a free text: the run's hyperparameters, a command line, JSON...
//   "checksum"       FNV-1a (64 bits) of the tensors and the other metadata, below
// The checksum catches what the safetensors structure cannot, such as a flipped bit in the data.
//
// The checksum, exactly, so that another tool can write a checkpoint (tests/io/torch_checkpoint.py
// does, from a PyTorch state_dict). FNV-1a over a stream of bytes: start from the offset basis
// h = 14695981039346656037 (0xcbf29ce484222325); for each byte b, h = (h XOR b) · 1099511628211
// (0x100000001b3) modulo 2^64. The stored value is h as 16 lowercase hex digits, zero-padded. The
// stream is, with str(s) meaning the UTF-8 bytes of s followed by one 0 byte:
//   1. for each tensor, in increasing byte order of its name (as the safetensors header names it,
//      "model.fc.weight"):
//        str(name), str(dtype) ("F32"), str(shape), then its data bytes exactly as stored in the
//        file (little-endian float32, C order; no terminator)
//      where shape is written in decimal as "(2,3)", "(5,)" for one dimension, "()" for a scalar,
//      without spaces;
//   2. then for each metadata entry except "checksum", in increasing byte order of its key:
//        str(key), str(value).
// There is no length or count field: the 0 terminators keep ("ab", "c") apart from ("a", "bc").
//
// Loading trusts nothing: a truncated, corrupted or foreign file throws FormatError naming the
// file and the problem; a checkpoint that does not fit the model or the optimizer throws
// ValueError listing every missing, unexpected and mis-shaped key. Either way the file is read and
// checked completely before anything is written, so the model, the optimizer and the generator
// are left exactly as they were.
//
// Non-finite values. A NaN or an infinity in a weight or an optimizer moment is the mark of a run
// that diverged, never a state to continue from: save_checkpoint refuses to write one (so a good
// checkpoint is never replaced by a diverged one) and reading refuses one, with a ValueError naming
// the file and the first such tensor, unless allow_non_finite is set (to inspect the wreck).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "nn/module.h"
#include "optim/optimizer.h"
#include "tensor/random.h"

namespace qkv::io {

// The contents of a checkpoint file, checked but not applied.
struct Checkpoint {
  nn::StateDict model{};
  optim::OptimizerState optimizer{};
  std::string optimizer_name{};
  int64_t step = 0;
  GeneratorState rng{};
  std::string config{};
};

// Writes the model's state_dict, the optimizer's state, the step, the default generator's state
// and `config` atomically: on any error the file at `path` is left as it was.
// ValueError, and nothing written, when a tensor holds a NaN or an infinity.
void save_checkpoint(const std::filesystem::path& path, const nn::Module& model,
                     const optim::Optimizer& optimizer, int64_t step, const std::string& config = "");
// The same without an optimizer: the weights, the step, the generator and the config. It loads
// with read_checkpoint; load_checkpoint with an optimizer refuses it. For the weights alone in the
// file PyTorch's safetensors reads directly, without the "model." prefix, see model_io/weights.h.
void save_checkpoint(const std::filesystem::path& path, const nn::Module& model, int64_t step,
                     const std::string& config = "");

// Part 1 of the checksum above over the model's state_dict alone (names with the "model."
// prefix): equal on two processes exactly when their models have the same names, shapes and bytes.
// The data-parallel trainer compares it across ranks (dist/same_start.h).
std::string state_checksum(const nn::Module& model);

// Reads and checks a checkpoint without applying it: to look at it, or to load only the weights
// (model.load_state_dict(read_checkpoint(path).model, false)) when fine-tuning.
Checkpoint read_checkpoint(const std::filesystem::path& path, bool allow_non_finite = false);

// Restores a checkpoint into the model, the optimizer and the default generator, and returns what
// it held (with the tensors now in the model and optimizer) for the step and the config. With
// strict = false, the model may have keys the file lacks and the other way round; shapes must
// always match, and the optimizer's state must always fit exactly.
Checkpoint load_checkpoint(const std::filesystem::path& path, nn::Module& model, optim::Optimizer& optimizer,
                           bool strict = true, bool allow_non_finite = false);

}  // namespace qkv::io
