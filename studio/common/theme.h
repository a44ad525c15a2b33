// Light and dark themes of the whole window: the widgets' palette (QApplication::setPalette) and
// the canvas colours (studio/canvas_style.h) together, and the names under which the choice is
// kept in the settings ("light", "dark"). Also the icons of the main actions, from the resources.
//
// Usage (main_window.cpp):
//   apply_theme(theme_from_name(settings.value("view/theme").toString()));
//   scene->apply_theme();                        // the canvas redraws in the new colours
//   action->setIcon(action_icon("open"));        // :/tessera/icons/open.svg
#pragma once

#include <QIcon>
#include <QPalette>
#include <QString>

#include "studio/common/canvas_style.h"

namespace tessera::studio {

QString theme_name(style::Theme theme);  // "light", "dark"
// The theme named `name`; light for anything else (an old or hand-edited settings file).
style::Theme theme_from_name(const QString& name);
// The widget palette of a theme: the style's standard palette (light) or a dark one.
QPalette theme_palette(style::Theme theme);
// Makes `theme` current: the application's palette and the canvas colours. Scenes must then
// redraw (GraphScene::apply_theme). Needs a QApplication.
void apply_theme(style::Theme theme);

// The icon `:/tessera/icons/<name>.svg` (resources/README.md lists them); a null icon when the
// resources are not linked in (the tests' executables) or Qt's SVG plugin is missing.
QIcon action_icon(const QString& name);

}  // namespace tessera::studio
