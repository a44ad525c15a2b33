// Tests of studio/theme.cpp and the themed colours of studio/canvas_style.cpp: names both ways,
// the dark palette is dark and the light one light, apply_theme switches the application's
// palette and the canvas colours together, and every icon the window asks for exists as SVG in
// resources/ and is listed in studio.qrc and resources/README.md.
#include <QApplication>
#include <QFile>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "tests/support/paths.h"
#include "studio/common/canvas_style.h"
#include "studio/common/theme.h"

using tessera::studio::apply_theme;
using tessera::studio::theme_from_name;
using tessera::studio::theme_name;
using tessera::studio::theme_palette;
namespace style = tessera::studio::style;

class ThemeTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void cleanup() { apply_theme(style::Theme::kLight); }

  void names_round_trip() {
    QCOMPARE(theme_name(style::Theme::kLight), QStringLiteral("light"));
    QCOMPARE(theme_name(style::Theme::kDark), QStringLiteral("dark"));
    QCOMPARE(theme_from_name(QStringLiteral("dark")), style::Theme::kDark);
    QCOMPARE(theme_from_name(QStringLiteral("light")), style::Theme::kLight);
    QCOMPARE(theme_from_name(QStringLiteral("purple")), style::Theme::kLight);  // unknown
    QCOMPARE(theme_from_name(QString()), style::Theme::kLight);
  }

  void dark_is_dark_and_text_reads_on_it() {
    const style::CanvasColours& light = style::colours_for(style::Theme::kLight);
    const style::CanvasColours& dark = style::colours_for(style::Theme::kDark);
    QVERIFY(light.background.lightness() > 200);
    QVERIFY(dark.background.lightness() < 60);
    // Text against background: a lightness gap of more than half the range in both themes.
    QVERIFY(light.background.lightness() - light.text.lightness() > 128);
    QVERIFY(dark.text.lightness() - dark.background.lightness() > 128);
    QVERIFY(dark.box_fill.lightness() < 80);
    const QPalette p = theme_palette(style::Theme::kDark);
    QVERIFY(p.color(QPalette::Window).lightness() < 60);
    QVERIFY(p.color(QPalette::WindowText).lightness() > 200);
    QVERIFY(p.color(QPalette::Base).lightness() < 60);
  }

  void apply_switches_palette_and_canvas() {
    QCOMPARE(style::current_theme(), style::Theme::kLight);
    QCOMPARE(style::colours().background, QColor(0xf4, 0xf5, 0xf7));
    apply_theme(style::Theme::kDark);
    QCOMPARE(style::current_theme(), style::Theme::kDark);
    QCOMPARE(style::colours().background, QColor(0x1e, 0x21, 0x26));
    QCOMPARE(QApplication::palette().color(QPalette::Window), QColor(0x2b, 0x2e, 0x33));
    apply_theme(style::Theme::kLight);
    QCOMPARE(style::colours().background, QColor(0xf4, 0xf5, 0xf7));
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 150);
  }

  void icons_exist_and_are_listed() {
    QFile qrc(QString::fromStdString(tessera::test::source_dir() + "/resources/studio.qrc"));
    QVERIFY(qrc.open(QIODevice::ReadOnly));
    const QString listed = QString::fromUtf8(qrc.readAll());
    QFile readme(QString::fromStdString(tessera::test::source_dir() + "/resources/README.md"));
    QVERIFY(readme.open(QIODevice::ReadOnly));
    const QString doc = QString::fromUtf8(readme.readAll());
    for (const char* name :
         {"new", "open", "save", "undo", "redo", "find", "import", "export", "group"}) {
      const QString file = QStringLiteral("icons/%1.svg").arg(QLatin1String(name));
      QFile svg(QString::fromStdString(tessera::test::source_dir() + "/resources/") + file);
      QVERIFY2(svg.open(QIODevice::ReadOnly), qPrintable(file));
      const QByteArray text = svg.readAll();
      QVERIFY(text.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
      QVERIFY(text.trimmed().endsWith("</svg>"));
      QVERIFY2(listed.contains(QStringLiteral("<file>%1</file>").arg(file)), qPrintable(file));
      QVERIFY2(doc.contains(QStringLiteral("`%1`").arg(file)), qPrintable(file));
    }
    // Not linked into the tests: a null icon, not a crash.
    QVERIFY(tessera::studio::action_icon(QStringLiteral("open")).isNull());
  }
};

TESSERA_QTEST(ThemeTest)
#include "theme_test.moc"
