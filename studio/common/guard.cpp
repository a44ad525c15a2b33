// Reporting exceptions caught at the edge of a Qt slot.
#include "studio/common/guard.h"

#include <QApplication>
#include <QMessageBox>
#include <cstdio>

namespace tessera::studio {

void report_exception(QWidget* parent, const QString& what, const char* detail) noexcept {
  try {
    std::fprintf(stderr, "tessera-studio: %s: internal error: %s\n", what.toLocal8Bit().constData(),
                 detail);
    if (qobject_cast<QApplication*>(QCoreApplication::instance()))
      QMessageBox::critical(parent, QObject::tr("Internal error"),
                            QObject::tr("%1 failed with an internal error:\n\n%2")
                                .arg(what, QString::fromLocal8Bit(detail)));
  } catch (...) {
    std::fputs("tessera-studio: internal error while reporting an internal error\n", stderr);
  }
}

}  // namespace tessera::studio
