// The op profiler: exact counts of calls, FLOPs and bytes for known ops; nothing changes when off.
#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <thread>

#include "autograd/debug/profiler.h"
#include "autograd/ops/attention.h"
#include "gradcheck_registry.h"
#include "io/json.h"
#include "qkv.h"

using namespace qkv;
using qkv::testing::GradcheckEntry;
using qkv::testing::gradcheck_registry;
using qkv::testing::In;

namespace {

const OpProfile* row(const std::vector<OpProfile>& rows, const std::string& op, Pass pass) {
  for (const OpProfile& r : rows)
    if (r.op == op && r.pass == pass) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("the profiler counts the calls and FLOPs of a matmul forward and backward exactly") {
  // C (8,32) = A (8,16)·B (16,32): 2·8·32·16 FLOPs forward; backward dA = dC·Bᵀ and dB = Aᵀ·dC,
  // twice that.
  const Tensor a = randn({8, 16}, true), b = randn({16, 32}, true);
  Profiler profiler;
  for (int i = 0; i < 3; ++i) a.matmul(b).backward(ones({8, 32}));
  profiler.stop();
  const std::vector<OpProfile> rows = profiler.ops();

  const OpProfile* fwd = row(rows, "matmul", Pass::Forward);
  REQUIRE(fwd != nullptr);
  CHECK(fwd->calls == 3);
  CHECK(fwd->flops == 3 * 2 * 8 * 32 * 16);
  CHECK(fwd->bytes_allocated == 3 * 8 * 32 * 4);  // each call allocates its output, nothing else
  CHECK(fwd->peak_bytes >= 8 * 32 * 4);
  CHECK(fwd->total_ns > 0);

  const OpProfile* bwd = row(rows, "matmul", Pass::Backward);
  REQUIRE(bwd != nullptr);
  CHECK(bwd->calls == 3);
  CHECK(bwd->flops == 3 * 2 * (2 * 8 * 32 * 16));
  // The two products of backward are folded into the backward row, not counted as forward calls.
  CHECK(fwd->calls == 3);
  // Their results (A's and B's shapes) and the leaves' first .grad copies are allocated in there.
  CHECK(bwd->bytes_allocated >= 3 * (8 * 16 + 16 * 32) * 4);

  // The transposed views backward takes are folded into its row too: no other row exists.
  CHECK(rows.size() == 2);
  CHECK(profiler.ops_ms() <= profiler.wall_ms());
  CHECK(profiler.unscoped_ops().empty());
}

TEST_CASE("the profiler counts fused_attention's products, and backward only those its inputs need") {
  // q (B, H, Tq, d) = (2, 3, 4, 5), k and v (2, 3, 6, 5): each product Q·Kᵀ, P·V, and in backward
  // dP = dO·Vᵀ, dV, dQ, dK is a multiply-add per (b, h, query, key, feature).
  const int64_t product = 2 * 2 * 3 * 4 * 6 * 5;
  const Tensor q = randn({2, 3, 4, 5}, true), k = randn({2, 3, 6, 5}, true), v = randn({2, 3, 6, 5});
  Profiler profiler;
  fused_attention(q, k, v, IndexTensor(), Tensor(), Tensor(), 0.0f, default_generator())
      .output.backward(ones({2, 4, 15}));
  profiler.stop();
  const std::vector<OpProfile> rows = profiler.ops();
  const OpProfile* fwd = row(rows, "fused_attention", Pass::Forward);
  const OpProfile* bwd = row(rows, "fused_attention", Pass::Backward);
  REQUIRE(fwd != nullptr);
  REQUIRE(bwd != nullptr);
  CHECK(fwd->flops == 2 * product);
  // Backward reads the weights the forward returned, then dP, dQ and dK: v needs no gradient, so no dV.
  CHECK(bwd->flops == 3 * product);
  // Without weights, backward computes Q·Kᵀ again, and that is counted too.
  Profiler without_weights;
  fused_attention(q, k, v, IndexTensor(), Tensor(), Tensor(), 0.0f, default_generator(), /*need_weights=*/false)
      .output.backward(ones({2, 4, 15}));
  without_weights.stop();
  const std::vector<OpProfile> rows2 = without_weights.ops();
  REQUIRE(row(rows2, "fused_attention", Pass::Backward) != nullptr);
  CHECK(row(rows2, "fused_attention", Pass::Forward)->flops == 2 * product);
  CHECK(row(rows2, "fused_attention", Pass::Backward)->flops == 4 * product);
}

TEST_CASE("the profiler counts only the keys fused_attention computes with: none past a valid length") {
  // Valid lengths 2 and 6 of 6 keys: the kernels leave out keys 2..5 of the first sequence, so
  // each product is a multiply-add per (h, query, feature) and key 0..1 of b = 0 or 0..5 of b = 1.
  const int64_t product = 2 * 3 * 4 * (2 + 6) * 5;
  const Tensor q = randn({2, 3, 4, 5}, true), k = randn({2, 3, 6, 5}, true), v = randn({2, 3, 6, 5}, true);
  Profiler profiler;
  fused_attention(q, k, v, IndexTensor({2, 6}, {2}), Tensor(), Tensor(), 0.0f, default_generator())
      .output.backward(ones({2, 4, 15}));
  profiler.stop();
  const std::vector<OpProfile> rows = profiler.ops();
  REQUIRE(row(rows, "fused_attention", Pass::Forward) != nullptr);
  CHECK(row(rows, "fused_attention", Pass::Forward)->flops == 2 * product);
  CHECK(row(rows, "fused_attention", Pass::Backward)->flops == 4 * product);  // dP, dV, dQ, dK
}

TEST_CASE("the profiler times an op that calls other ops as one call") {
  // A matrix-vector product views its vector as a column and squeezes the result: one matmul call.
  const Tensor a = randn({4, 5}), v = randn({5});
  Profiler profiler;
  a.matmul(v);
  profiler.stop();
  const std::vector<OpProfile> rows = profiler.ops();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].op == "matmul");
  CHECK(rows[0].calls == 1);
  CHECK(rows[0].flops == 2 * 4 * 5);
}

TEST_CASE("profiler rows are sorted by time and exported as CSV and JSON with the same numbers") {
  const Tensor x = randn({64, 64}, true);
  Profiler profiler;
  for (int i = 0; i < 4; ++i) x.matmul(x).tanh().sum().backward();
  profiler.stop();
  const std::vector<OpProfile> rows = profiler.ops();
  REQUIRE(rows.size() == 6);  // matmul, tanh, sum: forward and backward
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i - 1].total_ns >= rows[i].total_ns);
  for (const OpProfile& r : rows) CHECK(r.calls == 4);

  std::istringstream csv(profiler.csv());
  std::string line;
  std::getline(csv, line);
  CHECK(line == "op,pass,calls,total_ms,mean_us,flops,gflop_per_s,bytes_allocated,peak_bytes");
  for (const OpProfile& r : rows) {
    std::getline(csv, line);
    CHECK(line.rfind(r.op + (r.pass == Pass::Forward ? ",forward,4," : ",backward,4,"), 0) == 0);
  }

  const io::Json j = io::parse_json(profiler.json());
  const auto& ops = j.find("ops")->as_array();
  REQUIRE(ops.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    CHECK(ops[i].find("op")->as_string() == rows[i].op);
    CHECK(ops[i].find("calls")->as_int() == rows[i].calls);
    CHECK(ops[i].find("total_ns")->as_int() == rows[i].total_ns);
    CHECK(ops[i].find("flops")->as_int() == rows[i].flops);
  }
  CHECK(j.find("peak_bytes")->as_int() == profiler.peak_bytes());

  const std::string table = profiler.report();
  CHECK(table.find("matmul") != std::string::npos);
  CHECK(table.find("ops took") != std::string::npos);
}

TEST_CASE("the profiler's peak memory covers the tensors live during an op") {
  // The forward of exp allocates its (1024, 1024) output: the peak reaches 4 MiB above the start.
  const Tensor x = zeros({1024, 1024});
  Profiler profiler;
  { const Tensor y = x.exp(); }
  profiler.stop();
  const std::vector<OpProfile> rows = profiler.ops();
  const OpProfile* exp = row(rows, "exp", Pass::Forward);
  REQUIRE(exp != nullptr);
  CHECK(exp->bytes_allocated == 1024 * 1024 * 4);
  CHECK(exp->peak_bytes >= profiler.start_bytes() + 1024 * 1024 * 4);
  CHECK(profiler.peak_bytes() >= profiler.start_bytes() + 1024 * 1024 * 4);
}

TEST_CASE("with the profiler off ops give the same values and graphs and nothing is recorded") {
  manual_seed(5);
  Tensor x = randn({6, 7}, true), w = randn({7, 3}, true);
  auto step = [&] {
    x.zero_grad();
    w.zero_grad();
    const Tensor y = x.matmul(w).softmax(-1).log().mean();
    y.backward();
    return std::vector<std::vector<float>>{y.to_vector(), x.grad().to_vector(), w.grad().to_vector()};
  };
  const auto off = step();
  std::vector<std::vector<float>> on;
  {
    Profiler profiler;
    on = step();
    CHECK(!profiler.ops().empty());
  }
  CHECK(on == off);
  CHECK(step() == off);

  // A profiler records only its own thread: ops run on another thread leave it empty.
  Profiler profiler;
  std::thread([&] { x.matmul(w).sum(); }).join();
  profiler.stop();
  CHECK(profiler.ops().empty());
}

TEST_CASE("every op defined in autograd/ops opens an OpScope, so its forward is timed") {
  Profiler profiler;
  for (const GradcheckEntry& e : gradcheck_registry()) {
    CAPTURE(e.name);
    std::vector<Tensor> inputs;
    for (const In& in : e.inputs) {
      Tensor t = in.kind == In::Kind::Fixed ? tensor(in.values, in.shape)
                 : in.kind == In::Kind::Normal ? randn(in.shape) : uniform(in.shape, in.lo, in.hi);
      inputs.push_back(t.requires_grad_(in.grad));
    }
    const Tensor out = e.fn ? e.fn(inputs) : e.make_module().fn(inputs);
    if (out.requires_grad()) out.sum().backward();
  }
  profiler.stop();
  CHECK_MESSAGE(profiler.unscoped_ops().empty(),
                "ops that record a node without opening an autograd::OpScope: "
                    << [&] {
                         std::string s;
                         for (const std::string& op : profiler.unscoped_ops()) s += op + " ";
                         return s;
                       }());
}
