// Same start: every rank trains from rank 0's weights, and says so before the first step.
//
// Each rank builds its model from the same seed, which should give the same weights; "should" is
// not enough (a different vocabulary from different data, a different build), and ranks that start
// apart train apart silently. So, as PyTorch's DistributedDataParallel does at construction:
//   1. compare a digest of the state's names and shapes across ranks: a broadcast between different
//      models would mix their bytes, so a mismatch stops every rank here, naming the ranks;
//   2. broadcast every parameter and persistent buffer from rank 0;
//   3. compare a digest of names, shapes and values (io::state_checksum, the first part of a
//      checkpoint's checksum): after 2 it must agree; it is also what check_same_state compares
//      later, after a resume, for instance.
// Every rank throws the same error, so none is left waiting in a collective.
#pragma once

#include <string>

#include "dist/process_group.h"
#include "nn/module.h"

namespace qkv::dist {

void broadcast_parameters(nn::Module& module, ProcessGroup& group);

// Throws Disagreement (dist/agree.h) on every rank, naming `when` and each rank's digest, unless all ranks hold the
// same state (names, shapes and bytes).
void check_same_state(const nn::Module& module, ProcessGroup& group, const std::string& when);

}  // namespace qkv::dist
