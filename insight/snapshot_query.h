// Reads a run's IR snapshots back from the insight store: every snapshot the compilation sent
// (stage, pass, index, timing, node counts, diagnostics, the IR text) with its provenance, and the
// engine version that recorded them, for the studio's pass stepper.
//
// Usage:
//   TRY(insight::Database db, insight::Database::open(path));
//   TRY(insight::RunSnapshots rs, insight::read_run_snapshots(db, run_id));
//   for (const observe::Snapshot& s : rs.snapshots) ...   // in index order
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/observe/sinks.h"
#include "insight/database.h"

namespace tessera::insight {

struct RunSnapshots {
  int64_t run = -1;
  std::string name, kind, graph_name;
  std::string engine_version;               // the version that recorded the run ("" when unknown)
  std::vector<observe::Snapshot> snapshots;  // by index; hash is 0 when the stored one is not hex
};

// The snapshots of run `run`, ordered by index. An error names the run when it does not exist,
// and the file when the database cannot be read.
Expected<RunSnapshots> read_run_snapshots(const Database& db, int64_t run);

}  // namespace tessera::insight
