// No exception may leave a Qt slot: Qt's event loop is not exception-safe. Every slot body that
// calls into code that could throw (allocation, the standard library) runs inside guarded(),
// which reports the exception and returns normally.
//
//   connect(action, &QAction::triggered, this, [this] { guarded(this, tr("Open"), [&] { ... }); });
#pragma once

#include <QString>
#include <exception>

class QWidget;

namespace tessera::studio {

// Tells the user (a message box over `parent`, or stderr when there is no GUI) that `what` failed
// with an unexpected exception. Never throws.
void report_exception(QWidget* parent, const QString& what, const char* detail) noexcept;

template <class F>
void guarded(QWidget* parent, const QString& what, F&& body) noexcept {
  try {
    body();
  } catch (const std::exception& e) {
    report_exception(parent, what, e.what());
  } catch (...) {
    report_exception(parent, what, "unknown exception");
  }
}

}  // namespace tessera::studio
