// The op palette: every op of the registry in a tree grouped by category (OpDef::category, "other"
// when empty), a search box that filters by name (case-insensitive substring) and expands the
// categories with matches, each op's doc as its tooltip. Dragging an op starts a QDrag carrying
// its name under kOpMimeType; double-click or Enter on an op emits op_activated(name).
//
// Usage (main_window.cpp):
//   auto* palette = new Palette(document.registry());
//   dock->setWidget(palette);
//   connect(palette, &Palette::op_activated, view, [view](const QString& op) { ... });
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>

#include "engine/ops/op_def.h"

class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;

namespace tessera::studio {

// The palette's group of an op: its OpDef::category, or "other" when it has none.
QString palette_category(const ops::OpDef& def);
// Categories of ops the engine makes itself (fused, grad, runtime, training): listed last, greyed.
bool is_internal_category(const QString& category);

class Palette : public QWidget {
  Q_OBJECT

 public:
  // `registry` must outlive the palette; its ops are listed once, at construction.
  explicit Palette(const ops::OpRegistry& registry, QWidget* parent = nullptr);

  // Filters the ops to those whose name contains `text` (case-insensitive; empty shows all) and
  // expands the categories that keep an op (all collapsed again when `text` is empty).
  void set_filter(const QString& text);
  QLineEdit* search_box() const { return search_; }
  QTreeWidget* tree() const { return tree_; }
  // Every op listed (hidden or not), and those the filter shows, in tree order.
  QStringList all_ops() const;
  QStringList visible_ops() const;
  // The categories, in tree order, and whether one is expanded.
  QStringList categories() const;
  bool is_expanded(const QString& category) const;

 Q_SIGNALS:
  // The user asked to add this op (double-click or Enter on it).
  void op_activated(const QString& op);

 private:
  QLineEdit* search_;
  QTreeWidget* tree_;
};

}  // namespace tessera::studio
