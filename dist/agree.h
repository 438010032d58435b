// Agreement: before the first step the ranks compare what each was told, so that ranks given
// different settings stop with an error instead of pairing the wrong collectives.
//
// Ranks run the same program, but mpirun starts each with its own command line (`mpirun -np 1 A :
// -np 1 B`), environment and files. Two ranks with another step count or evaluation schedule call
// different collectives, and one waits forever in a barrier while the other waits in an
// all-reduce; two with another learning rate, clipping or reduction algorithm run to the end and
// train other weights than either asked for. So every rank sends its settings to every other (an
// all-gather of their text), and each finds the same differences and throws the same error.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dist/process_group.h"
#include "tensor/error.h"

namespace qkv::dist {

// What every rank throws at once, after the same collective: since none is left waiting for
// another, a program can report it on each rank and end without aborting the job.
class Disagreement : public ValueError {
 public:
  using ValueError::ValueError;
};

// Every rank's `mine`, in rank order (texts of any lengths; every rank must call it).
std::vector<std::string> all_gather_text(ProcessGroup& group, const std::string& mine);

// A setting as its name ("--steps") and its value as text ("40").
using Setting = std::pair<std::string, std::string>;

// Returns when every rank holds the same settings, in the same order. Otherwise throws
// Disagreement on every rank, with the same message: `what` ("the training options"), then each
// setting that differs with every rank's value, "--steps: 40 on rank 0, 41 on rank 1".
void check_same_settings(ProcessGroup& group, const std::vector<Setting>& settings, const std::string& what);

}  // namespace qkv::dist
