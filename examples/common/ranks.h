// What the training programs share for running under mpirun (docs/distributed.md): the World they
// run in, quiet ranks, and errors that end the whole job instead of leaving the other ranks waiting.
#pragma once

#include <memory>
#include <string>

#include "dist/world.h"
#include "tensor/random.h"

namespace qkv::examples {

// The world of this process, made by start_world at the top of main: a group of one without mpirun.
dist::World& world();
bool world_started();  // false in a program (a test) that never called start_world

// Makes the world (MPI when started by mpirun). Returns false, having reported why, when it cannot
// be made (mpirun with a build that has no MPI).
bool start_world(int& argc, char**& argv, const std::string& program);

// Reports an error of `program` on stderr, naming the rank under mpirun, and returns the exit code
// 1; under mpirun with several ranks it ends the whole job (MPI_Abort) instead, so that no rank is
// left waiting in a collective for one that has stopped, unless `every_rank` fails at once with
// the same error (dist::Disagreement): then each rank reports it and returns 1.
int fail(const std::string& program, const std::string& what, bool every_rank = false);

// A generator state of its own for (seed, stream, step): the programs give dropout stream 1 + rank,
// so that ranks drop different units, and lm's windows stream 0, the same on every rank. A function
// of the step alone, so that a resumed run draws what an uninterrupted one would have.
GeneratorState keyed_stream(uint64_t seed, uint64_t stream, int64_t step);

}  // namespace qkv::examples
