// The inspector: the selected node's op (name and doc), its editable name, one field per
// attribute of its op's schema, and its inputs and outputs with their types. The fields are made
// from the schema: int, float, string, ints and floats are line edits (lists as "1, 2, 3"; floats
// accept "inf" and "nan"), showing the default as a placeholder while the attribute is absent,
// with a reset button (Document::clear_attribute); tensor and graph attributes show a read-only
// summary. Applying a field (Enter or leaving it) calls Document::set_attribute or rename_node; a
// refusal (text that does not parse, or the document's reason) is shown under the field in red,
// emitted as edit_refused(), and the field reverts. It observes the document and follows undo.
//
// Usage (main_window.cpp):
//   auto* inspector = new Inspector(document);
//   connect(scene, &GraphScene::node_selection_changed, inspector, &Inspector::show_selection);
#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <map>

#include "engine/core/status.h"
#include "engine/ir/graph.h"
#include "studio/document/attribute_text.h"

class QLabel;
class QLineEdit;
class QScrollArea;
class QToolButton;

namespace tessera::studio {

class Document;

class Inspector : public QWidget {
  Q_OBJECT

 public:
  // `document` must outlive the inspector.
  explicit Inspector(Document& document, QWidget* parent = nullptr);

  // Shows node `id` (kNoNode or a node the graph lacks: the empty state, "No node selected").
  void show_node(ir::NodeId id);
  // Shows the node when exactly one is selected, else the empty state.
  void show_selection(const QList<ir::NodeId>& ids);
  ir::NodeId node() const { return node_; }

  // What applying the field does: parses `text` and sets the attribute (empty text clears it),
  // or renames the node. A refusal is also shown under the field and the field reverts.
  Status apply_attribute(const QString& key, const QString& text);
  Status apply_name(const QString& text);
  Status reset_attribute(const QString& key);

  // For tests and the window: the widgets of the shown node (nullptr when absent).
  QLineEdit* name_field() const { return name_field_; }
  QLineEdit* attribute_field(const QString& key) const;
  QStringList attribute_names() const;           // schema order
  QString attribute_error(const QString& key) const;  // the red text under the field, or ""
  QString name_error() const;
  QString title() const;                         // "Conv" or "No node selected"
  QString cost_text() const;                     // the node's parameters and FLOPs, or ""
  QStringList port_lines() const;                // "X: x : f32[N, 1, 28, 28]", inputs then outputs

 Q_SIGNALS:
  // An edit was refused; the text says why (for the status bar).
  void edit_refused(const QString& message);

 private:
  struct Field {
    ir::AttrKind kind;
    QLineEdit* edit = nullptr;   // nullptr for tensor and graph attributes
    QLabel* summary = nullptr;   // read-only value of tensor and graph attributes
    QToolButton* reset = nullptr;
    QLabel* error = nullptr;
  };

  void rebuild();         // a new form for node_
  void refresh_values();  // the node's current values into the form
  // Shows `text` under a field (empty: hides it); a refusal is also emitted, prefixed by `what`.
  void update_cost();  // the cost line from the document
  void show_error(QLabel* label, const QString& text, const QString& what = {});

  Document& document_;
  ir::NodeId node_ = ir::kNoNode;
  QScrollArea* scroll_;
  QWidget* form_ = nullptr;
  QLabel* title_ = nullptr;
  QLabel* problem_ = nullptr;
  QLabel* cost_ = nullptr;  // "2,416 parameters · 470,400 FLOPs per sample"
  QLineEdit* name_field_ = nullptr;
  QLabel* name_error_ = nullptr;
  std::map<QString, Field> fields_;
  QStringList field_order_;
  QList<QLabel*> port_labels_;
};

}  // namespace tessera::studio
