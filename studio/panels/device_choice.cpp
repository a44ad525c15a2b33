// The device chooser (see device_choice.h).
#include "studio/panels/device_choice.h"

#include <QComboBox>

#include "engine/backend/device.h"

namespace tessera::studio {

QComboBox* make_device_choice(QWidget* parent) {
  auto* box = new QComboBox(parent);
  box->addItem(QObject::tr("auto"), QStringLiteral("auto"));
  const backend::DeviceSet devices = backend::DeviceSet::discover(false);
  QString tip = QObject::tr("Where the graph runs. auto: the first GPU when there is one, else the CPU.");
  for (const auto& d : devices.all()) {
    if (d->name() != "cpu" && d->name().rfind("cuda:", 0) != 0) continue;
    box->addItem(QString::fromStdString(d->name()), QString::fromStdString(d->name()));
    box->setItemData(box->count() - 1, QString::fromStdString(d->description()), Qt::ToolTipRole);
  }
  if (!devices.cuda_unavailable().empty())
    tip += QObject::tr("\nNo GPU: %1").arg(QString::fromStdString(devices.cuda_unavailable()));
  box->setToolTip(tip);
  return box;
}

std::string device_choice(const QComboBox* box) {
  const QString v = box->currentData().toString();
  return v.isEmpty() ? std::string("auto") : v.toStdString();
}

}  // namespace tessera::studio
