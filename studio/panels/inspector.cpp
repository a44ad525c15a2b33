// The inspector: the selected node's schema-generated form, applying edits through the Document.
#include "studio/panels/inspector.h"

#include <QFont>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QStringList>
#include <QScrollArea>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/ops/op_def.h"
#include "studio/document/attribute_text.h"
#include "studio/document/document.h"
#include "studio/common/guard.h"

namespace tessera::studio {

namespace {

QString qstr(const std::string& s) {
  return QString::fromStdString(s);
}

// The schema's name for port i (variadic ports numbered), as the canvas shows it.
std::string port_name(const std::vector<ops::PortSpec>& ports, size_t i, const char* fallback) {
  if (ports.empty()) return fallback + std::to_string(i);
  const size_t last = ports.size() - 1;
  const ops::PortSpec& spec = ports[std::min(i, last)];
  if (spec.variadic) return spec.name + std::to_string(i - std::min(i, last));
  if (i > last) return fallback + std::to_string(i);
  return spec.name;
}

}  // namespace

Inspector::Inspector(Document& document, QWidget* parent)
    : QWidget(parent), document_(document) {
  scroll_ = new QScrollArea(this);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // the form follows the width
  setMinimumWidth(200);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll_);

  auto when_current = [this](ir::NodeId id, auto body) {
    if (id == node_) guarded(this, tr("Updating the inspector"), body);
  };
  connect(&document_, &Document::graph_reset, this,
          [this] { guarded(this, tr("Updating the inspector"), [&] { show_node(ir::kNoNode); }); });
  connect(&document_, &Document::node_removed, this, [this, when_current](ir::NodeId id) {
    when_current(id, [&] { show_node(ir::kNoNode); });
  });
  connect(&document_, &Document::node_added, this, [this, when_current](ir::NodeId id) {
    when_current(id, [&] { rebuild(); });  // undo of a removal brings the shown node back
  });
  connect(&document_, &Document::node_changed, this, [this, when_current](ir::NodeId id) {
    when_current(id, [&] { refresh_values(); });
  });
  // Any edit (Add Weight changes only values and edges): the ports, types and counts follow.
  connect(&document_, &Document::changed, this, [this] {
    guarded(this, tr("Updating the inspector"), [&] { refresh_values(); });
  });
  rebuild();
}

void Inspector::show_selection(const QList<ir::NodeId>& ids) {
  show_node(ids.size() == 1 ? ids.front() : ir::kNoNode);
}

void Inspector::show_node(ir::NodeId id) {
  if (!document_.graph().has_node(id)) id = ir::kNoNode;
  if (id == node_ && form_) {
    refresh_values();
    return;
  }
  node_ = id;
  rebuild();
}

void Inspector::rebuild() {
  // The old form may hold the widget whose signal led here: delete it later.
  if (QWidget* old = scroll_->takeWidget()) old->deleteLater();
  fields_.clear();
  field_order_.clear();
  port_labels_.clear();
  name_field_ = nullptr;
  name_error_ = nullptr;
  problem_ = nullptr;
  cost_ = nullptr;
  form_ = new QWidget;
  title_ = new QLabel(form_);
  QFont big = title_->font();
  big.setBold(true);
  big.setPointSizeF(big.pointSizeF() * 1.3);
  title_->setFont(big);
  auto* layout = new QVBoxLayout(form_);
  layout->addWidget(title_);
  const ir::Graph& g = document_.graph();
  if (!g.has_node(node_)) {
    node_ = ir::kNoNode;
    title_->setText(tr("No node selected"));
    title_->setAlignment(Qt::AlignCenter);
    layout->addStretch(1);
    scroll_->setWidget(form_);
    return;
  }
  const ir::Node& n = g.node(node_);
  const ops::OpDef* def = document_.registry().find(n.op);
  title_->setText(qstr(n.op));
  auto* doc = new QLabel(def ? qstr(def->doc) : tr("(op not in the registry)"), form_);
  doc->setWordWrap(true);
  layout->addWidget(doc);
  cost_ = new QLabel(form_);
  cost_->setWordWrap(true);
  update_cost();
  layout->addWidget(cost_);
  problem_ = new QLabel(form_);
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("color: #d02121;"));

  auto* grid = new QGridLayout;
  layout->addLayout(grid);
  int row = 0;
  auto make_error_label = [&] {
    auto* label = new QLabel(form_);
    label->setWordWrap(true);
    label->setStyleSheet(QStringLiteral("color: #d02121;"));
    label->hide();
    grid->addWidget(label, row++, 1, 1, 2);
    return label;
  };
  grid->addWidget(new QLabel(tr("name"), form_), row, 0);
  name_field_ = new QLineEdit(form_);
  grid->addWidget(name_field_, row++, 1, 1, 2);
  name_error_ = make_error_label();
  connect(name_field_, &QLineEdit::editingFinished, this, [this] {
    guarded(this, tr("Renaming the node"), [&] {
      if (name_field_) (void)apply_name(name_field_->text());
    });
  });

  if (def) {
    for (const ops::AttrSpec& spec : def->attrs) {
      const QString key = qstr(spec.name);
      Field field{spec.kind};
      auto* label = new QLabel(key, form_);
      label->setToolTip(QStringLiteral("%1 (%2)%3").arg(
          qstr(spec.doc), qstr(std::string(ir::attr_kind_name(spec.kind))),
          spec.required ? tr(", required") : QString()));
      grid->addWidget(label, row, 0);
      if (spec.kind == ir::AttrKind::kTensor || spec.kind == ir::AttrKind::kGraph) {
        field.summary = new QLabel(form_);
        grid->addWidget(field.summary, row, 1);
      } else {
        field.edit = new QLineEdit(form_);
        field.edit->setToolTip(label->toolTip());
        QString placeholder = spec.required ? tr("required") : tr("unset");
        if (spec.default_value) placeholder = format_attribute(*spec.default_value);
        field.edit->setPlaceholderText(placeholder);
        grid->addWidget(field.edit, row, 1);
        connect(field.edit, &QLineEdit::editingFinished, this, [this, key] {
          guarded(this, tr("Setting an attribute"), [&] {
            if (QLineEdit* edit = attribute_field(key)) (void)apply_attribute(key, edit->text());
          });
        });
      }
      field.reset = new QToolButton(form_);
      field.reset->setText(QStringLiteral("\u21ba"));
      field.reset->setToolTip(tr("Reset to the default"));
      grid->addWidget(field.reset, row++, 2);
      connect(field.reset, &QToolButton::clicked, this, [this, key] {
        guarded(this, tr("Resetting an attribute"), [&] { (void)reset_attribute(key); });
      });
      field.error = make_error_label();
      fields_[key] = field;
      field_order_ << key;
    }
  }

  // The node's problem under its fields: shown and hidden as attributes are typed, it used to
  // move every field under the pointer ("required attribute missing" above them).
  layout->addWidget(problem_);
  auto* ports_title = new QLabel(tr("<b>inputs and outputs</b>"), form_);
  layout->addWidget(ports_title);
  const size_t count = n.inputs.size() + n.outputs.size();
  for (size_t i = 0; i < count; ++i) {
    auto* label = new QLabel(form_);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setWordWrap(true);  // scoped ONNX names are long: they wrap after each '/'
    layout->addWidget(label);
    port_labels_ << label;
  }
  layout->addStretch(1);
  scroll_->setWidget(form_);
  refresh_values();
}

void Inspector::update_cost() {
  if (!cost_ || !document_.graph().has_node(node_)) return;
  const QLocale numbers(QLocale::English);
  QStringList parts;
  parts << tr("%1 parameters").arg(numbers.toString(static_cast<qlonglong>(document_.node_parameter_count(node_))));
  if (std::optional<double> flops = document_.node_flops(node_))
    parts << tr("%1 FLOPs per sample").arg(numbers.toString(static_cast<qlonglong>(*flops)));
  else
    parts << tr("FLOPs unknown until every type is inferred");
  cost_->setText(parts.join(QStringLiteral(" \u00b7 ")));
}

void Inspector::refresh_values() {
  update_cost();
  if (!form_ || node_ == ir::kNoNode) return;
  const ir::Graph& g = document_.graph();
  if (!g.has_node(node_)) {
    show_node(ir::kNoNode);
    return;
  }
  const ir::Node& n = g.node(node_);
  if (static_cast<size_t>(port_labels_.size()) != n.inputs.size() + n.outputs.size()) {
    rebuild();  // a port was filled or emptied: the form has a line per port
    return;
  }
  if (name_field_ && !name_field_->hasFocus()) name_field_->setText(qstr(n.name));
  for (auto& [key, field] : fields_) {
    const ir::Attribute* value = n.attr(key.toStdString());
    if (field.edit) field.edit->setText(value ? format_attribute(*value) : QString());
    if (field.summary) field.summary->setText(value ? format_attribute(*value) : tr("(none)"));
    field.reset->setEnabled(value != nullptr);
  }
  if (problem_) {
    const Error* e = document_.node_error(node_);
    problem_->setText(e ? qstr(e->message) : QString());
    problem_->setVisible(e != nullptr);
  }
  const ops::OpDef* def = document_.registry().find(n.op);
  auto describe = [&](ir::ValueId v) -> QString {
    if (v == ir::kNoValue || !g.has_value(v)) return tr("(not connected)");
    const ir::Value& value = g.value(v);
    const QString name = value.name.empty() ? QStringLiteral("%") + QString::number(v) : qstr(value.name);
    QString breakable = name;
    breakable.replace(QLatin1Char('/'), QStringLiteral("/\u200b"));  // a line may break there
    return QStringLiteral("%1 : %2").arg(
        breakable, document_.is_typed(v) ? qstr(value.type.to_string()) : QStringLiteral("?"));
  };
  int k = 0;
  for (size_t i = 0; i < n.inputs.size() && k < port_labels_.size(); ++i, ++k)
    port_labels_[k]->setText(QStringLiteral("\u2192 %1: %2").arg(
        qstr(def ? port_name(def->inputs, i, "in") : "in" + std::to_string(i)),
        describe(n.inputs[i])));
  for (size_t i = 0; i < n.outputs.size() && k < port_labels_.size(); ++i, ++k)
    port_labels_[k]->setText(QStringLiteral("\u2190 %1: %2").arg(
        qstr(def ? port_name(def->outputs, i, "out") : "out" + std::to_string(i)),
        describe(n.outputs[i])));
}

void Inspector::show_error(QLabel* label, const QString& text, const QString& what) {
  if (!label) return;
  label->setText(text);
  label->setVisible(!text.isEmpty());
  if (!text.isEmpty()) Q_EMIT edit_refused(what.isEmpty() ? text : what + QStringLiteral(": ") + text);
}

Status Inspector::apply_attribute(const QString& key, const QString& text) {
  auto it = fields_.find(key);
  if (node_ == ir::kNoNode || it == fields_.end())
    return make_error("no attribute '" + key.toStdString() + "' shown");
  Field& field = it->second;
  const ir::Node& n = document_.graph().node(node_);
  const ir::Attribute* current = n.attr(key.toStdString());
  const QString current_text = current ? format_attribute(*current) : QString();
  Status st;
  if (text.trimmed().isEmpty()) {
    if (!current) {
      show_error(field.error, QString());
      return Status::ok();  // nothing to clear
    }
    st = document_.clear_attribute(node_, key.toStdString());
  } else {
    Expected<ir::Attribute> value = parse_attribute(field.kind, text);
    if (value && current && format_attribute(*value) == current_text) {
      // The same value (editingFinished also fires on leaving the field): nothing to do.
      show_error(field.error, QString());
      refresh_values();
      return Status::ok();
    }
    st = value ? document_.set_attribute(node_, key.toStdString(), *value) : value.status();
  }
  if (!st) {
    show_error(field.error, qstr(st.error().message), key);
    refresh_values();  // the field reverts
    return st;
  }
  if ((it = fields_.find(key)) != fields_.end()) show_error(it->second.error, QString());
  return st;
}

Status Inspector::reset_attribute(const QString& key) {
  auto it = fields_.find(key);
  if (node_ == ir::kNoNode || it == fields_.end())
    return make_error("no attribute '" + key.toStdString() + "' shown");
  if (!document_.graph().node(node_).attr(key.toStdString())) return Status::ok();
  Status st = document_.clear_attribute(node_, key.toStdString());
  if ((it = fields_.find(key)) != fields_.end())
    show_error(it->second.error, st ? QString() : qstr(st.error().message), key);
  return st;
}

Status Inspector::apply_name(const QString& text) {
  if (node_ == ir::kNoNode) return make_error("no node shown");
  const std::string name = text.trimmed().toStdString();
  if (name == document_.graph().node(node_).name) {
    show_error(name_error_, QString());
    return Status::ok();
  }
  Status st = document_.rename_node(node_, name);
  show_error(name_error_, st ? QString() : qstr(st.error().message), tr("name"));
  if (!st && name_field_) name_field_->setText(qstr(document_.graph().node(node_).name));
  return st;
}

QLineEdit* Inspector::attribute_field(const QString& key) const {
  auto it = fields_.find(key);
  return it == fields_.end() ? nullptr : it->second.edit;
}

QStringList Inspector::attribute_names() const {
  return field_order_;
}

QString Inspector::attribute_error(const QString& key) const {
  auto it = fields_.find(key);
  return it == fields_.end() || !it->second.error ? QString() : it->second.error->text();
}

QString Inspector::name_error() const {
  return name_error_ ? name_error_->text() : QString();
}

QString Inspector::title() const {
  return title_ ? title_->text() : QString();
}

QString Inspector::cost_text() const { return cost_ ? cost_->text() : QString(); }

QStringList Inspector::port_lines() const {
  QStringList out;
  for (const QLabel* label : port_labels_) out << label->text();
  return out;
}

}  // namespace tessera::studio
