// A training's evaluations, one Row each, kept in two places: every checkpoint holds them without
// their timings, so that two runs of one seed write checkpoints of the same bytes whatever the
// machine's speed; metrics.csv holds them with the timings, for people and plots. A Row lists its
// fields as a config does (examples/common/config.h), with the timings marked:
//
//   struct Evaluation {
//     int64_t step = 0;
//     double validation_bits = 0, seconds = 0;
//     template <class F> void fields(F&& f) {
//       f("step", step);                // the first field numbers the rows
//       f("validation_bits_per_char", validation_bits);
//       f("seconds", seconds, kTiming);
//     }
//   };
#pragma once

#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "io/json.h"
#include "tensor/error.h"

namespace qkv::examples {

inline constexpr bool kTiming = true;

template <class Row>
struct History {
  std::vector<Row> rows;

  // [[1, 2.5, ...], ...]: each row's fields but its timings, in order.
  io::Json to_json() const {
    io::Json::Array out;
    for (Row row : rows) {
      io::Json::Array values;
      row.fields([&](const char*, auto& value, bool timing = false) {
        if (timing) return;
        if constexpr (std::is_floating_point_v<std::decay_t<decltype(value)>>)
          values.emplace_back(static_cast<double>(value));
        else
          values.emplace_back(static_cast<int64_t>(value));
      });
      out.emplace_back(std::move(values));
    }
    return io::Json(std::move(out));
  }

  // The rows to_json wrote; also rows with every field, timings included, as older checkpoints
  // wrote them. ValueError naming `source` and the row otherwise.
  static History from_json(const io::Json& json, const std::string& source) {
    if (!json.is_array()) throw ValueError(source + ": its history is not an array of rows");
    History h;
    for (const io::Json& values : json.as_array()) {
      Row row;
      size_t untimed = 0, all = 0;
      row.fields([&](const char*, auto&, bool timing = false) { untimed += timing ? 0 : 1, ++all; });
      const size_t n = values.is_array() ? values.as_array().size() : 0;
      if (n != untimed && n != all)
        throw ValueError(source + ": history row " + std::to_string(h.rows.size() + 1) + " is not [" +
                         keys(false) + "]");
      size_t i = 0;
      row.fields([&](const char*, auto& value, bool timing = false) {
        if (timing && n == untimed) return;
        const io::Json& v = values.as_array()[i++];
        using V = std::decay_t<decltype(value)>;
        const bool ok = std::is_floating_point_v<V> ? v.is_int() || v.is_double() : v.is_int();
        if (!ok)
          throw ValueError(source + ": history row " + std::to_string(h.rows.size() + 1) + " is not [" +
                           keys(false) + "]");
        if constexpr (std::is_floating_point_v<V>)
          value = static_cast<V>(v.as_double());
        else
          value = static_cast<V>(v.as_int());
        if (timing) value = V{};  // an older checkpoint's timing: metrics.csv has the run's own
      });
      h.rows.push_back(row);
    }
    return h;
  }

  // The header of every field's key, then a line per row (6 significant digits).
  std::string csv() const {
    std::ostringstream out;
    out << keys(true) << "\n" << std::setprecision(6);
    for (Row row : rows) {
      const char* separator = "";
      row.fields([&](const char*, auto& value, bool = false) { out << separator << value, separator = ","; });
      out << "\n";
    }
    return out.str();
  }

  // The timings of the rows from `csv` (metrics.csv): a line whose first value numbers one of the
  // rows gives that row its timings. Lines that do not read are passed over: timings are for
  // people, nothing is computed from them.
  void take_timings(const std::string& csv) {
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line);
    if (line != keys(true)) return;  // another program's file, or another layout
    while (std::getline(in, line)) {
      std::vector<double> cells;
      std::istringstream row_in(line);
      for (std::string cell; std::getline(row_in, cell, ',');) {
        try {
          cells.push_back(std::stod(cell));
        } catch (const std::exception&) {
          break;
        }
      }
      for (Row& row : rows) {
        size_t i = 0;
        bool match = false;
        row.fields([&](const char*, auto& value, bool timing = false) {
          if (i >= cells.size()) return;
          const double cell = cells[i++];
          if (i == 1)
            match = static_cast<double>(value) == cell;
          else if (timing && match)
            value = static_cast<std::decay_t<decltype(value)>>(cell);
        });
      }
    }
  }

  // "epoch,train_loss,...": the keys of every field (with timings), or of those a checkpoint keeps.
  static std::string keys(bool timings) {
    Row row;
    std::string out;
    row.fields([&](const char* key, auto&, bool timing = false) {
      if (timing && !timings) return;
      out += (out.empty() ? "" : timings ? "," : ", ") + std::string(key);
    });
    return out;
  }
};

// The row most trainings keep (lm, vit, long_range), under the column names the program gives
// (`Names`, five of them: "step,train_bits_per_char,validation_bits_per_char,lr,seconds"), as
// nanoGPT logs iter, train loss, val loss and lr.
template <const char* const* Names>
struct MetricsRow {
  int64_t step = 0;    // steps (or epochs) done
  double loss = 0;     // the training loss (or bits) of the steps since the last row
  double score = 0;    // how the model does now: validation bits, accuracy...
  double lr = 0;       // the learning rate of the last step
  double seconds = 0;  // of training since the run began (a resumed run's go on from its last)
  template <class F>
  void fields(F&& f) {
    f(Names[0], step);
    f(Names[1], loss);
    f(Names[2], score);
    f(Names[3], lr);
    f(Names[4], seconds, kTiming);
  }
};

}  // namespace qkv::examples
