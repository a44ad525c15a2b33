// The scene's drawing of layout groups: frames around expanded groups, one box for a collapsed
// group with its crossing edges re-attached to that box's ports.
#include <map>
#include <set>

#include "studio/document/document.h"
#include "studio/canvas/graph_items.h"
#include "studio/canvas/graph_scene.h"

namespace tessera::studio {

namespace {
constexpr double kFrameMargin = 14;  // between a group's frame and its boxes
}  // namespace

GroupFrameItem* GraphScene::group_frame(const QString& name) const {
  for (QGraphicsItem* item : group_items_)
    if (item->type() == static_cast<int>(CanvasItemType::kGroupFrame) &&
        static_cast<GroupFrameItem*>(item)->name() == name)
      return static_cast<GroupFrameItem*>(item);
  return nullptr;
}

GroupBoxItem* GraphScene::group_box(const QString& name) const {
  for (QGraphicsItem* item : group_items_)
    if (item->type() == static_cast<int>(CanvasItemType::kGroupBox) &&
        static_cast<GroupBoxItem*>(item)->name() == name)
      return static_cast<GroupBoxItem*>(item);
  return nullptr;
}

QStringList GraphScene::selected_group_boxes() const {
  QStringList out;
  for (QGraphicsItem* item : group_items_)
    if (item->type() == static_cast<int>(CanvasItemType::kGroupBox) && item->isSelected())
      out << static_cast<GroupBoxItem*>(item)->name();
  return out;
}

void GraphScene::clear_groups() {
  // Edges and labels were added after the boxes they end at: delete in reverse.
  for (auto it = group_items_.rbegin(); it != group_items_.rend(); ++it) {
    removeItem(*it);
    delete *it;
  }
  group_items_.clear();
  group_edges_.clear();
  for (BoxItem* box : boxes_) box->setVisible(true);
  for (EdgeItem* edge : edge_items_) {
    if (!edge) continue;
    edge->setVisible(true);
    if (edge->label()) edge->label()->setVisible(true);
  }
}

void GraphScene::draw_groups() {
  sketch_dirty_ = true;  // collapsed groups hide boxes
  clear_groups();
  const std::vector<formats::NodeGroup>& groups = document_.layout().groups;
  if (groups.empty()) return;
  std::map<ir::NodeId, int> box_of_node;
  for (size_t b = 0; b < boxes_.size(); ++b)
    if (boxes_[b]->type() == static_cast<int>(CanvasItemType::kNode))
      box_of_node[static_cast<NodeItem*>(boxes_[b])->node_id()] = static_cast<int>(b);

  // Frames for expanded groups; for collapsed ones, which boxes they swallow and where.
  std::map<int, int> collapsed_of_box;  // box index -> group index
  std::map<int, QRectF> collapsed_rect;
  std::map<int, int> collapsed_count;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    QRectF rect;
    int count = 0;
    for (ir::NodeId id : groups[gi].nodes) {
      auto it = box_of_node.find(id);
      if (it == box_of_node.end()) continue;
      const BoxItem* box = boxes_[static_cast<size_t>(it->second)];
      rect |= QRectF(box->pos(), box->size());
      ++count;
      if (groups[gi].collapsed) collapsed_of_box[it->second] = static_cast<int>(gi);
    }
    if (count == 0) continue;
    const QString name = QString::fromStdString(groups[gi].name);
    if (!groups[gi].collapsed) {
      auto* frame = new GroupFrameItem(
          name, rect.adjusted(-kFrameMargin, -kFrameMargin, kFrameMargin, kFrameMargin));
      addItem(frame);
      group_items_.push_back(frame);
    } else {
      collapsed_rect[static_cast<int>(gi)] = rect;
      collapsed_count[static_cast<int>(gi)] = count;
    }
  }
  if (collapsed_rect.empty()) return;

  // Edges touching a collapsed group: hidden; those crossing its border are drawn again to its
  // box: an input port per entering edge, an output port per leaving value.
  auto group_of = [&](int box) {
    auto it = collapsed_of_box.find(box);
    return it == collapsed_of_box.end() ? -1 : it->second;
  };
  std::map<int, int> inputs;                          // group -> entering edges
  std::map<int, std::map<ir::ValueId, int>> outputs;  // group -> leaving value -> port
  std::vector<size_t> crossing;
  for (size_t k = 0; k < edges_.size(); ++k) {
    const int from = group_of(edges_[k].from_box), to = group_of(edges_[k].to_box);
    if (from < 0 && to < 0) continue;
    if (EdgeItem* edge = edge_items_[k]) {
      edge->setVisible(false);
      if (edge->label()) edge->label()->setVisible(false);
    }
    if (from == to) continue;  // inside one group
    crossing.push_back(k);
    if (to >= 0) ++inputs[to];
    if (from >= 0) outputs[from].emplace(edges_[k].value, static_cast<int>(outputs[from].size()));
  }
  for (const auto& [box, group] : collapsed_of_box)
    boxes_[static_cast<size_t>(box)]->setVisible(false);
  std::map<int, GroupBoxItem*> group_boxes;
  for (const auto& [gi, rect] : collapsed_rect) {
    auto* box =
        new GroupBoxItem(QString::fromStdString(groups[static_cast<size_t>(gi)].name),
                         collapsed_count[gi], inputs[gi], static_cast<int>(outputs[gi].size()));
    box->setPos(rect.topLeft());
    addItem(box);
    group_items_.push_back(box);
    group_boxes[gi] = box;
  }
  std::map<int, int> next_input;
  std::set<ir::ValueId> labelled;
  const ir::Graph& g = document_.graph();
  for (size_t k : crossing) {
    const Edge& e = edges_[k];
    const int from = group_of(e.from_box), to = group_of(e.to_box);
    const BoxItem* from_box =
        from >= 0 ? group_boxes[from] : boxes_[static_cast<size_t>(e.from_box)];
    const int from_slot = from >= 0 ? outputs[from][e.value] : e.from_slot;
    const BoxItem* to_box = to >= 0 ? group_boxes[to] : boxes_[static_cast<size_t>(e.to_box)];
    const int to_slot = to >= 0 ? next_input[to]++ : e.to_slot;
    const bool typed = document_.is_typed(e.value);
    auto* edge = new EdgeItem(e.value, from_box, from_slot, to_box, to_slot, {}, typed);
    addItem(edge);
    group_items_.push_back(edge);
    group_edges_.push_back(edge);
    if (typed && labelled.insert(e.value).second) {
      auto* label = new EdgeLabelItem(QString::fromStdString(g.value(e.value).type.to_string()));
      addItem(label);
      group_items_.push_back(label);
      edge->set_label(label);
    }
    edge->update_geometry();
  }
}

}  // namespace tessera::studio
