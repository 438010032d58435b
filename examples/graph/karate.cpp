// The friendships are the widely used copy of Zachary's edge list (his Table 1, the 78 pairs that
// interacted outside the club; as distributed with Pajek, UCINET and NetworkX's
// karate_club_graph), numbered from 0; the factions are the clubs the members joined after the
// split, as NetworkX records them ("Mr. Hi" and "Officer").
#include "examples/graph/karate.h"

#include <utility>
#include <vector>

#include "tensor/factories.h"

namespace graph {
namespace {

// Each member's friends with a higher number.
const std::vector<std::vector<int64_t>> kFriends = {
    {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 17, 19, 21, 31},  // 0, Mr. Hi
    {2, 3, 7, 13, 17, 19, 21, 30},                              // 1
    {3, 7, 8, 9, 13, 27, 28, 32},                               // 2
    {7, 12, 13},                                                // 3
    {6, 10},                                                    // 4
    {6, 10, 16},                                                // 5
    {16},                                                       // 6
    {},                                                         // 7
    {30, 32, 33},                                               // 8
    {33},                                                       // 9
    {},                                                         // 10
    {},                                                         // 11
    {},                                                         // 12
    {33},                                                       // 13
    {32, 33},                                                   // 14
    {32, 33},                                                   // 15
    {},                                                         // 16
    {},                                                         // 17
    {32, 33},                                                   // 18
    {33},                                                       // 19
    {32, 33},                                                   // 20
    {},                                                         // 21
    {32, 33},                                                   // 22
    {25, 27, 29, 32, 33},                                       // 23
    {25, 27, 31},                                               // 24
    {31},                                                       // 25
    {29, 33},                                                   // 26
    {33},                                                       // 27
    {31, 33},                                                   // 28
    {32, 33},                                                   // 29
    {32, 33},                                                   // 30
    {32, 33},                                                   // 31
    {33},                                                       // 32
    {},                                                         // 33, John A.
};

// The members who followed Mr. Hi; the other 17 followed the administrator.
const std::vector<int64_t> kMrHi = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 16, 17, 19, 21};

}  // namespace

Graph karate_club() {
  Graph g;
  g.nodes = 34, g.classes = 2;
  g.class_names = {"Mr. Hi", "administrator"};
  for (int64_t u = 0; u < g.nodes; ++u)
    for (int64_t v : kFriends[u]) g.edges.emplace_back(u, v);
  std::vector<int64_t> labels(34, 1);
  for (int64_t m : kMrHi) labels[m] = 0;
  g.labels = qkv::IndexTensor(labels);
  g.features = qkv::eye(34);
  g.train = {0, 33};
  for (int64_t i = 1; i < 33; ++i) g.test.push_back(i);
  return g;
}

}  // namespace graph
