// Structural diff of two IR graphs, for the pass stepper and the runs dashboard: which nodes a
// pass (or a second run) added, removed or changed, and where the new ones came from. Pure: no Qt.
//
// Matching: kById pairs nodes with the same id (passes keep ids; a new node gets a fresh one);
// kByName pairs nodes with the same non-empty name, in id order when a name repeats (two runs'
// graphs, whose ids differ); unnamed nodes then only count as added or removed. A matched pair is
// "changed" when its op, its attributes or its inputs differ. Inputs are compared by where they
// come from: the (matched) producer node and output index, or the graph input / param name (a
// param and an input of the same name are the same source: the pass stepper keeps params as
// inputs), so a consumer of a rewritten producer counts as changed and renumbered values do not.
//
// Usage:
//   GraphDiff d = diff_graphs(before, after, snapshot.provenance);
//   d.summary();                 // "+1 -3 ~1"
//   for (auto& [node, from] : d.links) ...   // after node -> before nodes it came from
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"

namespace tessera::studio {

enum class DiffMatch { kById, kByName };

// After-graph node -> the ids it came from (observe::Snapshot::provenance).
using ProvenanceList = std::vector<std::pair<int32_t, std::vector<int32_t>>>;

struct GraphDiff {
  std::vector<ir::NodeId> added;     // after-graph ids, ascending
  std::vector<ir::NodeId> removed;   // before-graph ids, ascending
  std::vector<ir::NodeId> changed;   // after-graph ids, ascending
  std::map<ir::NodeId, ir::NodeId> matched;  // after id -> before id (changed or not)
  // For each added or changed after node with provenance: the before nodes (live there) it came
  // from. Ids in the provenance that the before graph lacks are dropped.
  std::vector<std::pair<ir::NodeId, std::vector<ir::NodeId>>> links;

  enum class Status { kSame, kAdded, kRemoved, kChanged };
  Status after_status(ir::NodeId id) const;   // kSame, kAdded or kChanged
  Status before_status(ir::NodeId id) const;  // kSame, kRemoved or kChanged
  bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
  std::string summary() const;  // "+3 -5 ~2"
};

// The provenance of a stage, traced back to the graph the stage started from (`before`): `after`
// lists the stage's nodes and their sources, `earlier` what the stage's passes made on the way. A
// source `before` lacks that an earlier pass made is replaced by its own sources. EfficientNet's
// FusedConv comes from a Conv and a Swish, the Swish from a Sigmoid and a Mul: traced, from the
// Conv, the Sigmoid and the Mul.
ProvenanceList trace_provenance(const ProvenanceList& after, const ProvenanceList& earlier, const ir::Graph& before);

GraphDiff diff_graphs(const ir::Graph& before, const ir::Graph& after, const ProvenanceList& provenance = {},
                      DiffMatch match = DiffMatch::kById);

}  // namespace tessera::studio
