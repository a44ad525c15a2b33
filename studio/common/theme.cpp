// Light and dark themes, and the action icons.
#include "studio/common/theme.h"

#include <QApplication>
#include <QFile>
#include <QStyle>

namespace tessera::studio {

QString theme_name(style::Theme theme) {
  return theme == style::Theme::kDark ? QStringLiteral("dark") : QStringLiteral("light");
}

style::Theme theme_from_name(const QString& name) {
  return name == QLatin1String("dark") ? style::Theme::kDark : style::Theme::kLight;
}

QPalette theme_palette(style::Theme theme) {
  if (theme == style::Theme::kLight) return QApplication::style()->standardPalette();
  const QColor window(0x2b, 0x2e, 0x33), base(0x1e, 0x21, 0x26), text(0xe3, 0xe6, 0xea);
  const QColor disabled(0x80, 0x86, 0x8e), highlight(0x3b, 0x82, 0xf6);
  QPalette p;
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::white);
  p.setColor(QPalette::Link, highlight.lighter(130));
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Light, window.lighter(150));
  p.setColor(QPalette::Midlight, window.lighter(125));
  p.setColor(QPalette::Mid, window.darker(120));
  p.setColor(QPalette::Dark, window.darker(150));
  p.setColor(QPalette::Shadow, Qt::black);
  for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, disabled);
  return p;
}

void apply_theme(style::Theme theme) {
  style::set_current_theme(theme);
  QApplication::setPalette(theme_palette(theme));
}

QIcon action_icon(const QString& name) {
  const QString path = QStringLiteral(":/tessera/icons/%1.svg").arg(name);
  return QFile::exists(path) ? QIcon(path) : QIcon();
}

}  // namespace tessera::studio
