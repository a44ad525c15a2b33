// Stage 2, split: typed graph -> placed, partitioned graph. Every node gets a device: the cheapest
// device that can run it, the preferred device on ties; a node that cannot run on the preferred
// device records why. Edges between devices are cut with explicit Copy nodes (graph inputs,
// params and graph outputs live on the host device "cpu"), so each device's nodes form its own
// subgraph and every transfer is a node the executor schedules and the trace shows.
//
// Device choice is a side table indexed by node id (no device state on IR nodes).
//
// Usage:
//   TRY(PlacedGraph placed, split(std::move(prepared), devices, "cpu", ctx));
//   std::cout << placed.print();
#pragma once

#include <string>
#include <vector>

#include "engine/backend/device.h"
#include "engine/stages/prepare.h"

namespace tessera::stages {

inline constexpr const char* kHostDevice = "cpu";

struct Placement {
  ir::NodeId node = ir::kNoNode;
  std::string device;
  std::string reason;  // why not the preferred device ("" when it is on the preferred device)
};

struct PlacedGraph {
  ir::Graph graph;
  std::vector<std::string> device_of;  // by node id ("" for tombstones)
  std::vector<Placement> fallbacks;    // nodes not on the preferred device, with the reason
  std::string preferred;
  int copies = 0;                      // Copy nodes inserted

  const std::string& device(ir::NodeId id) const;
  // Gives nodes created after the split (by passes) the device of the first node they came from
  // (Provenance::from), else of their first input's producer, else the host.
  void place_new_nodes();
  // Node ids per device, in topological order.
  std::vector<std::pair<std::string, std::vector<ir::NodeId>>> partitions() const;
  // The IR text followed by a placement table.
  std::string print() const;
};

Expected<PlacedGraph> split(PreparedGraph prepared, const backend::DeviceSet& devices, const std::string& preferred,
                            StageContext& ctx);

// After the optimiser: places the nodes it made (place_new_nodes), moves to the host every node
// its device cannot run (a fused form the device has no kernel for), with the reason in
// fallbacks, bypasses copies that became same-device, and cuts the new cross-device edges.
// Nothing to do when every node is on the host.
Status refit(PlacedGraph& placed, const backend::DeviceSet& devices, const ops::OpRegistry& registry);

}  // namespace tessera::stages
