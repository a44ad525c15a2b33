// Copy and paste payloads: the selected nodes as a small graph of their own (the nodes, the params
// they use, the edges between them; inputs from outside the selection become absent) plus their
// positions, carried as IR text so that it fits the system clipboard and a person can read it.
//
// Usage:
//   TRY(ClipboardPayload p, copy_selection(state, {3, 4}));
//   clipboard->setData(kClipboardMimeType, QByteArray::fromStdString(clipboard_text(p)));
//   TRY(ClipboardPayload back, parse_clipboard(text));   // Document::paste takes it
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "studio/document/document_state.h"

namespace tessera::studio {

inline constexpr char kClipboardMimeType[] = "application/x-tessera-ir";
// The mime type of an op dragged from the palette; the data is the op name in UTF-8.
inline constexpr const char* kOpMimeType = "application/x-tessera-op";

struct ClipboardPayload {
  ir::Graph graph;  // no inputs or outputs; params and nodes with their own dense ids
  std::map<ir::NodeId, NodePosition> positions;  // by the payload's node ids
};

// Fails when an id is not a live node or the selection is empty.
Expected<ClipboardPayload> copy_selection(const DocumentState& state,
                                          const std::vector<ir::NodeId>& ids);

// IR text (ir::print_graph), then one "// position #ID X Y" line per positioned node.
std::string clipboard_text(const ClipboardPayload& payload);
// Reads clipboard_text's output (or plain IR text: no positions then). Errors say what is wrong.
Expected<ClipboardPayload> parse_clipboard(const std::string& text);

}  // namespace tessera::studio
