// tessera.insight's Run: one run of the insight store recorded from Python (insight.cpp), also
// what a Python Trainer records into (train.cpp).
#pragma once

#include <memory>
#include <string>

#include "insight/recorder.h"
#include "python/src/common.h"

namespace tessera::python {

class PyRun {
 public:
  // Opens (creates) the database (empty: the default one) and starts the run; raises naming the file.
  PyRun(const std::string& db, const insight::RunInfo& info);
  // A run never finished is recorded as failed.
  ~PyRun();
  int64_t id() const { return id_; }
  bool finished() const { return !rec_; }
  insight::Recorder& live();  // raises when finished
  // Each (name, value) of `metrics` as a point at `step`.
  void log(int64_t step, const py::dict& metrics, int64_t epoch);
  void finish(const std::string& status, const std::string& error);

 private:
  std::unique_ptr<insight::Recorder> rec_;
  int64_t id_ = -1;
};

}  // namespace tessera::python
