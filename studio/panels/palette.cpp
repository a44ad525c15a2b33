// The op palette: the registry's ops by category, a search filter, drag and activate.
#include "studio/panels/palette.h"

#include <QDrag>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMimeData>
#include <QPalette>
#include <QStringList>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <map>

#include "studio/common/guard.h"
#include "studio/document/clipboard.h"

namespace tessera::studio {

namespace {

constexpr int kOpRole = Qt::UserRole + 1;  // the op name on op rows; empty on category rows

// A tree whose op rows drag as kOpMimeType and activate on Enter.
class OpTree : public QTreeWidget {
 public:
  using QTreeWidget::QTreeWidget;

 protected:
  QStringList mimeTypes() const override { return {QString::fromLatin1(kOpMimeType)}; }

  QMimeData* mimeData(const QList<QTreeWidgetItem*>& items) const override {
    for (const QTreeWidgetItem* item : items) {
      const QString op = item->data(0, kOpRole).toString();
      if (op.isEmpty()) continue;
      auto* data = new QMimeData;
      data->setData(QString::fromLatin1(kOpMimeType), op.toUtf8());
      data->setText(op);
      return data;
    }
    return nullptr;
  }

  Qt::DropActions supportedDropActions() const override { return Qt::CopyAction; }

  void keyPressEvent(QKeyEvent* event) override {
    if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) && currentItem() &&
        !currentItem()->data(0, kOpRole).toString().isEmpty()) {
      Q_EMIT itemActivated(currentItem(), 0);
      event->accept();
      return;
    }
    QTreeWidget::keyPressEvent(event);
  }
};

}  // namespace

bool is_internal_category(const QString& category) {
  static const QStringList kInternal = {QStringLiteral("fused"), QStringLiteral("grad"),
                                        QStringLiteral("runtime"), QStringLiteral("training")};
  return kInternal.contains(category);
}

QString palette_category(const ops::OpDef& def) {
  return def.category.empty() ? QStringLiteral("other") : QString::fromStdString(def.category);
}

Palette::Palette(const ops::OpRegistry& registry, QWidget* parent) : QWidget(parent) {
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search ops"));
  search_->setClearButtonEnabled(true);
  tree_ = new OpTree(this);
  tree_->setHeaderHidden(true);
  tree_->setDragEnabled(true);
  tree_->setDragDropMode(QAbstractItemView::DragOnly);
  tree_->setDefaultDropAction(Qt::CopyAction);
  tree_->setSelectionMode(QAbstractItemView::SingleSelection);
  tree_->setExpandsOnDoubleClick(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(search_);
  layout->addWidget(tree_);

  // Categories sorted by name, ops by name within each (registry.all() is sorted); the
  // categories of ops the engine makes itself (passes, autodiff, the training step, the split
  // stage) come last, greyed: they are listed for completeness, a network rarely needs them.
  std::map<std::pair<bool, QString>, std::vector<const ops::OpDef*>> groups;
  for (const ops::OpDef* def : registry.all()) {
    const QString category = palette_category(*def);
    groups[{is_internal_category(category), category}].push_back(def);
  }
  for (const auto& [key, defs] : groups) {
    const auto& [internal, category] = key;
    auto* group = new QTreeWidgetItem(tree_, {category});
    group->setFlags(Qt::ItemIsEnabled);
    QFont bold = group->font(0);
    bold.setBold(true);
    group->setFont(0, bold);
    if (internal) {
      group->setForeground(0, tree_->palette().brush(QPalette::Disabled, QPalette::Text));
      group->setToolTip(0, tr("Ops the engine creates itself (optimisation passes, autodiff, the "
                              "training step, device copies); rarely placed by hand"));
    }
    for (const ops::OpDef* def : defs) {
      const QString name = QString::fromStdString(def->name);
      auto* item = new QTreeWidgetItem(group, {name});
      item->setData(0, kOpRole, name);
      item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
      QString tip = QStringLiteral("<b>%1</b> <i>%2</i>").arg(name.toHtmlEscaped(), category);
      if (internal) tip += tr(" (made by the engine)");
      if (!def->doc.empty())
        tip += QStringLiteral("<br>%1").arg(QString::fromStdString(def->doc).toHtmlEscaped());
      item->setToolTip(0, tip);
    }
  }

  connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
    guarded(this, tr("Filtering the palette"), [&] { set_filter(text); });
  });
  connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item, int) {
    guarded(this, tr("Adding an op"), [&] {
      const QString op = item ? item->data(0, kOpRole).toString() : QString();
      if (!op.isEmpty()) Q_EMIT op_activated(op);
    });
  });
}

void Palette::set_filter(const QString& text) {
  const QString needle = text.trimmed();
  for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
    QTreeWidgetItem* group = tree_->topLevelItem(c);
    int shown = 0;
    for (int i = 0; i < group->childCount(); ++i) {
      QTreeWidgetItem* item = group->child(i);
      const bool match = needle.isEmpty() || item->text(0).contains(needle, Qt::CaseInsensitive);
      item->setHidden(!match);
      shown += match ? 1 : 0;
    }
    group->setHidden(shown == 0);
    group->setExpanded(!needle.isEmpty() && shown > 0);
  }
}

QStringList Palette::all_ops() const {
  QStringList out;
  for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
    const QTreeWidgetItem* group = tree_->topLevelItem(c);
    for (int i = 0; i < group->childCount(); ++i) out << group->child(i)->data(0, kOpRole).toString();
  }
  return out;
}

QStringList Palette::visible_ops() const {
  QStringList out;
  for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
    const QTreeWidgetItem* group = tree_->topLevelItem(c);
    if (group->isHidden()) continue;
    for (int i = 0; i < group->childCount(); ++i)
      if (!group->child(i)->isHidden()) out << group->child(i)->data(0, kOpRole).toString();
  }
  return out;
}

QStringList Palette::categories() const {
  QStringList out;
  for (int c = 0; c < tree_->topLevelItemCount(); ++c) out << tree_->topLevelItem(c)->text(0);
  return out;
}

bool Palette::is_expanded(const QString& category) const {
  for (int c = 0; c < tree_->topLevelItemCount(); ++c)
    if (tree_->topLevelItem(c)->text(0) == category) return tree_->topLevelItem(c)->isExpanded();
  return false;
}

}  // namespace tessera::studio
