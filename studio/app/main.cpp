// tessera-studio [FILE] [--screenshot PNG]: the desktop app's entry point.
//
// FILE (.json or .tir) is opened at start. --screenshot PNG shows the window, waits until it is
// laid out, saves QWidget::grab() of it to PNG and exits 0; when FILE cannot be opened it prints
// the error to stderr and exits 1 instead of showing a dialog (scripts and tests use this).
#include <QApplication>
#include <QCommandLineParser>
#include <QSize>
#include <QTabWidget>
#include <QDir>
#include <QIcon>
#include <QImageReader>
#include <QPixmap>
#include <QTimer>
#include <cstdio>
#include <exception>
#include <memory>

#include "engine/ops/op_def.h"
#include "insight/database.h"
#include "studio/document/document.h"
#include "studio/canvas/graph_scene.h"
#include "studio/common/guard.h"
#include "studio/insight/imgui_widget.h"
#include "studio/app/main_window.h"

namespace {

using tessera::Status;
using tessera::studio::Document;
using tessera::studio::guarded;
using tessera::studio::MainWindow;

// Exceptions must not cross Qt's event loop. Slots catch their own (studio/guard.h); this is the
// last line for anything that slips through: report and drop the event.
class StudioApplication : public QApplication {
 public:
  using QApplication::QApplication;
  bool notify(QObject* receiver, QEvent* event) override {
    try {
      return QApplication::notify(receiver, event);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tessera-studio: internal error: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "tessera-studio: internal error: unknown exception\n");
    }
    return false;
  }
};

// The SVG icon needs Qt's SVG image plugin (Debian: libqt6svg6); without it there is no icon.
QIcon app_icon() {
  if (!QImageReader::supportedImageFormats().contains("svg")) return QIcon();
  return QIcon(QStringLiteral(":/tessera/icons/tessera.svg"));
}

void print_error(const QString& text) {
  std::fprintf(stderr, "tessera-studio: %s\n", text.toLocal8Bit().constData());
}

// Grabs the window to PATH; the exit code for --screenshot.
int save_screenshot(MainWindow& window, const QString& path) {
  QCoreApplication::processEvents();  // pending layout and resize events
  const QPixmap pixmap = window.grab();
  if (pixmap.isNull() || !pixmap.save(path, "PNG")) {
    print_error(QStringLiteral("cannot write screenshot %1").arg(path));
    return 1;
  }
  return 0;
}

int run(StudioApplication& app) {
  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Tessera Studio: opens a dataflow graph (.json or .tir) and draws it."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("file"),
                               QStringLiteral("Graph file to open (.tsr, .json, .tir or .onnx)."),
                               QStringLiteral("[FILE]"));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral(
          "Show the window, save it to PNG and exit (exit 1 when FILE cannot be opened)."),
      QStringLiteral("PNG"));
  parser.addOption(screenshot);
  const QCommandLineOption db_option(
      QStringLiteral("db"),
      QStringLiteral("The insight database runs are recorded in and the dashboard reads (default: "
                     "$TESSERA_DB, else $XDG_DATA_HOME/tessera/insight.db, else "
                     "~/.local/share/tessera/insight.db)."),
      QStringLiteral("PATH"));
  parser.addOption(db_option);
  const QCommandLineOption size_option(
      QStringLiteral("size"),
      QStringLiteral("The window's size, e.g. 1280x720 (default: the saved size, 1200x760 the "
                     "first time and with --screenshot)."),
      QStringLiteral("WxH"));
  parser.addOption(size_option);
  const QCommandLineOption tab_option(
      QStringLiteral("tab"),
      QStringLiteral("The tab shown at start: graph, runs, passes or profile."),
      QStringLiteral("NAME"));
  parser.addOption(tab_option);
  parser.process(app);  // exits on --help, --version and unknown options
  const QStringList files = parser.positionalArguments();
  if (files.size() > 1) {
    print_error(QStringLiteral("at most one FILE (see --help)"));
    return 2;
  }
  const bool shooting = parser.isSet(screenshot);
  QSize size(1200, 760);
  if (parser.isSet(size_option)) {
    const QStringList wh = parser.value(size_option).split(QLatin1Char('x'));
    bool w_ok = false, h_ok = false;
    const int w = wh.size() == 2 ? wh[0].toInt(&w_ok) : 0;
    const int h = wh.size() == 2 ? wh[1].toInt(&h_ok) : 0;
    if (!w_ok || !h_ok || w < 200 || h < 150 || w > 16384 || h > 16384) {
      print_error(QStringLiteral("--size %1: expected WIDTHxHEIGHT, each from 200x150 to 16384 "
                                 "pixels, e.g. 1280x720")
                      .arg(parser.value(size_option)));
      return 2;
    }
    size = QSize(w, h);
  }
  const QStringList tab_names = {QStringLiteral("graph"), QStringLiteral("runs"),
                                 QStringLiteral("passes"), QStringLiteral("profile")};
  const int tab = parser.isSet(tab_option) ? tab_names.indexOf(parser.value(tab_option).toLower()) : 0;
  if (tab < 0) {
    print_error(QStringLiteral("--tab %1: expected one of graph, runs, passes, profile")
                    .arg(parser.value(tab_option)));
    return 2;
  }

  const tessera::ops::OpRegistry registry = tessera::ops::make_default_registry();
  Document document(registry);
  // Screenshots are reproducible: no saved geometry, no autosave, never a prompt.
  tessera::studio::MainWindowOptions options =
      shooting ? tessera::studio::MainWindowOptions{} : tessera::studio::MainWindowOptions::persistent();
  // The environment is read here only (never below main()), as the CLI does.
  options.insight_database = parser.isSet(db_option)
                                 ? parser.value(db_option)
                                 : QString::fromStdString(tessera::insight::default_database_path(
                                       qEnvironmentVariable("TESSERA_DB").toStdString(),
                                       qEnvironmentVariable("XDG_DATA_HOME").toStdString(),
                                       QDir::homePath().toStdString()));
  MainWindow window(document, options);
  // Otherwise the saved size, or 1200x760 the first time.
  if (shooting || parser.isSet(size_option)) window.resize(size);
  else if (options.settings_file.isEmpty()) window.resize(window.first_size());
  window.tabs()->setCurrentIndex(tab);
  if (!files.isEmpty()) {
    const QString path = files.front();
    if (!shooting) {
      // Read on a worker once the event loop runs: the window shows at once and keeps responding;
      // an error is shown over it, and a newer autosave offered back.
      QTimer::singleShot(0, &window, [&window, path] {
        guarded(&window, QObject::tr("Opening %1").arg(path), [&] { window.open_in_background(path); });
      });
    } else if (Status st = window.open_file(path); !st) {
      print_error(QStringLiteral("cannot open graph: %1").arg(QString::fromStdString(st.error().to_string())));
      return 1;
    } else if (const auto& error = document.inference_error(); error) {
      print_error(QStringLiteral("warning: %1").arg(QString::fromStdString(error->to_string())));
    }
  }
  window.show();
  if (shooting) {
    const QString png = parser.value(screenshot);
    // A short delay lets the window system map and size the window before the grab; then wait
    // (up to 30 s) for the Graphviz layout, which runs on a worker thread.
    auto* poll = new QTimer(&window);
    auto waited = std::make_shared<int>(0);
    poll->setInterval(50);
    QObject::connect(poll, &QTimer::timeout, &window, [&window, png, poll, waited] {
      *waited += 50;
      if (*waited < 200 || (window.scene()->is_refining() && *waited < 30000)) return;
      poll->stop();
      int code = 1;
      try {
        code = save_screenshot(window, png);
      } catch (const std::exception& e) {  // no allocation here: nothing may escape the slot
        std::fprintf(stderr, "tessera-studio: internal error: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "tessera-studio: internal error: unknown exception\n");
      }
      QCoreApplication::exit(code);
    });
    poll->start();
  }
  return app.exec();
}

}  // namespace

int main(int argc, char** argv) {
  tessera::studio::ImGuiWidget::set_default_format();  // the profiler's timeline: OpenGL 3.3 core
  StudioApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("Tessera Studio"));
  QApplication::setOrganizationName(QStringLiteral("Tessera"));
  QApplication::setApplicationVersion(QStringLiteral(TESSERA_VERSION));
  QApplication::setWindowIcon(app_icon());
  try {
    return run(app);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera-studio: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "tessera-studio: internal error: unknown exception\n");
  }
  return 2;
}
