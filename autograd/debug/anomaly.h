// Anomaly mode: find the op that first produced a NaN or an Inf, and graphs that outlive their step.
// Off by default; turn it on around a suspicious region, as torch.autograd.detect_anomaly:
//
//   qkv::DetectAnomaly anomaly;
//   Tensor loss = model_loss(batch);   // throws AnomalyError at the op whose output is NaN/Inf
//   loss.backward();                   // throws AnomalyError at the backward that made one
//
// An op "produced" a NaN when its result holds one and its inputs held none, and an Inf when its
// result holds one and its inputs were all finite; so a deliberate -inf (an attention mask passed to
// where) is blamed on nobody, but masked_fill(mask, -INFINITY) is reported: it creates the -inf.
// The report names the op, the shapes of its inputs and where it was created: the call stack of its
// forward, captured for every op while anomaly mode is on (function names need an executable linked
// with -rdynamic, CMake's ENABLE_EXPORTS; otherwise addr2line turns the addresses into lines).
//
// Memory: when a backward starts, nodes recorded under anomaly mode before the previous backward,
// still alive, never run backward and not part of this backward draw a warning: a tensor of a previous
// step still holds its graph, as in the classic leak `total_loss = total_loss + loss`.
// Checking every result costs a pass over it and a stack capture per op: for debugging only. While
// on, anomaly mode is an observer of autograd (autograd/observer.h); off, it is not registered and
// costs nothing.
#pragma once

#include <functional>
#include <string>

#include "tensor/error.h"

namespace qkv {

// What anomaly mode throws: the message is the report.
class AnomalyError : public Error {
 public:
  using Error::Error;
};

bool is_anomaly_enabled();
void set_anomaly_enabled(bool enabled);

// Anomaly mode on within a scope.
class DetectAnomaly {
 public:
  DetectAnomaly();
  ~DetectAnomaly();
  DetectAnomaly(const DetectAnomaly&) = delete;
  DetectAnomaly& operator=(const DetectAnomaly&) = delete;

 private:
  bool previous_;
};

// Where anomaly mode's warnings go: by default, standard error. Returns the previous handler.
using WarningHandler = std::function<void(const std::string& message)>;
WarningHandler set_anomaly_warning_handler(WarningHandler handler);

}  // namespace qkv
