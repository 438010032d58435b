// Zachary's karate club (Zachary 1977, "An Information Flow Model for Conflict and Fission in Small
// Groups", Journal of Anthropological Research 33(4), 452–473): 34 members, 78 friendships, and the
// two factions the club split into, the instructor's (Mr. Hi, node 0) and the administrator's (John
// A., node 33).
#pragma once

#include "examples/graph/graph.h"

namespace graph {

// The club as a graph: nodes 0 ... 33 (Zachary's members 1 ... 34), classes 0 = Mr. Hi's faction and
// 1 = the administrator's, features the identity (one-hot, 34 wide: a node knows nothing but who it
// is, so whatever a model learns of the others comes through the edges). Semi-supervised as the
// club's own question: train holds the two leaders, 0 and 33; test every other member; val is empty.
Graph karate_club();

}  // namespace graph
