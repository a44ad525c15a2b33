// The graph canvas's scene: observes a Document and mirrors its graph as items (a box per node,
// a small box per graph input and output, an edge per use of a value), placed by LayeredLayout.
// It never changes the document; it rebuilds when the document says the graph changed (an
// exception while rebuilding is reported and leaves an empty scene).
//
// Usage:
//   Document doc(registry);
//   GraphScene scene(doc);            // follows doc from now on
//   doc.load("samples/lenet.json");   // scene rebuilds, then emits rebuilt()
//   scene.node_item(3)->content().op; // "Conv"
#pragma once

#include <QGraphicsScene>
#include <map>

#include "engine/ir/graph.h"

namespace tessera::studio {

class Document;
class EdgeItem;
class NodeItem;
class TerminalItem;

class GraphScene : public QGraphicsScene {
  Q_OBJECT

 public:
  // `document` must outlive the scene.
  explicit GraphScene(const Document& document, QObject* parent = nullptr);

  const Document& document() const { return document_; }
  NodeItem* node_item(ir::NodeId id) const;  // nullptr when the node has no item
  int node_item_count() const { return static_cast<int>(node_items_.size()); }
  // The rectangle holding every item (empty for an empty document).
  QRectF graph_rect() const { return graph_rect_; }

 signals:
  // Emitted after the items were rebuilt for a new graph (views refit).
  void rebuilt();

 private:
  void rebuild();

  const Document& document_;
  std::map<ir::NodeId, NodeItem*> node_items_;  // owned by the scene
  QRectF graph_rect_;
};

}  // namespace tessera::studio
