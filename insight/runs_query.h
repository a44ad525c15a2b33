// Batched reads of the insight store for the studio's runs dashboard: every run with its
// hyper-parameters and metric summaries in a handful of queries (not a few per run), metric series
// for a set of runs, a run's recorded graph text, the lineage of the whole database, and a cheap
// change check for live updates. Safe while a recorder writes from another process (WAL readers).
//
//   TRY(auto db, Database::open(path));
//   TRY(std::vector<RunSummary> runs, load_run_summaries(db));
//   TRY(auto series, load_metric_series(db, {3, 4}, "train/loss"));
//   TRY(int64_t v, data_version(db));   // differs after another connection commits
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "insight/database.h"
#include "insight/query.h"

namespace tessera::insight {

// One run as the dashboard lists it.
struct RunSummary {
  RunRecord run;
  std::map<std::string, std::string> hyperparams;
  // Per metric name (sorted by name): the final value (at the highest step; count 0, best_value =
  // final_value: see load_run_summaries).
  std::vector<MetricSummary> metrics;
  std::string graph_hash;  // the "input" graph (else any recorded graph); "" when none
};

// Every run, by id ascending: runs, hyper-parameters and graphs in one query each, and the final
// metric values by two index seeks per (run, metric) from two statements prepared once (no scan of
// the points; about 20 ms for 500 runs x 3 metrics x 1,000 steps). best_value is the final value
// here: the best needs every point (summarize_metrics over load_metric_series).
Expected<std::vector<RunSummary>> load_run_summaries(const Database& db);

// The points of `runs`, per run in (name, step) order; only metric `name` when it is not empty.
// Runs without points are absent from the map.
Expected<std::map<int64_t, std::vector<MetricPoint>>> load_metric_series(const Database& db,
                                                                         const std::vector<int64_t>& runs,
                                                                         const std::string& name = {});

// A run's recorded graph: the "input" role first, else the first recorded one.
struct RunGraph {
  std::string hash, name, format, role, body;  // body: IR text ("tir") with params as inputs
};
// Error "run N recorded no graph" when there is none.
Expected<RunGraph> run_graph(const Database& db, int64_t run);

// The lineage of the whole database: graph versions, runs, checkpoints and the edges between them.
struct LineageGraph {
  struct Graph {
    std::string hash, name;
    int64_t created_ns = 0;
  };
  struct Run {
    int64_t id = 0;
    std::string name, status, graph_hash;  // graph_hash: as RunSummary::graph_hash
  };
  // resumed_from / fine_tuned_from: from_run continued from checkpoint (0 when the edge points to a
  // checkpoint path no recorded run wrote; checkpoint_path holds it). derived_from: graph -> graph.
  struct Edge {
    std::string kind;
    int64_t from_run = 0, checkpoint = 0;
    std::string checkpoint_path;
    std::string from_graph, to_graph;
  };
  std::vector<Graph> graphs;                  // by creation time
  std::vector<Run> runs;                      // by id
  std::vector<CheckpointRecord> checkpoints;  // by id
  std::vector<Edge> edges;                    // by id
};
Expected<LineageGraph> load_lineage(const Database& db);

// SQLite's PRAGMA data_version on this connection: changes whenever another connection commits
// (a recorder's batch, a heartbeat, a new run); the same value means nothing changed.
Expected<int64_t> data_version(const Database& db);

}  // namespace tessera::insight
