// Colours and fonts of the graph canvas.
#include "studio/common/canvas_style.h"

#include <QFontDatabase>
#include <QGuiApplication>
#include <array>
#include <map>

namespace tessera::studio::style {

QColor category_colour(const std::string& category) {
  static const std::map<std::string, QColor> kKnown = {
      {"nn", QColor(0x2f, 0x6d, 0xb0)},         {"conv", QColor(0x2f, 0x6d, 0xb0)},
      {"pool", QColor(0x3f, 0x86, 0x9e)},       {"norm", QColor(0x5a, 0x62, 0xb8)},
      {"activation", QColor(0xc8, 0x6a, 0x1e)}, {"math", QColor(0x3d, 0x8a, 0x4e)},
      {"reduce", QColor(0x1f, 0x8a, 0x86)},     {"tensor", QColor(0x7b, 0x55, 0xa8)},
      {"logic", QColor(0x8a, 0x7b, 0x22)},      {"cast", QColor(0x6b, 0x74, 0x80)},
      {"control", QColor(0xa8, 0x3f, 0x78)},    {"loss", QColor(0x9b, 0x4a, 0x3a)},
  };
  auto it = kKnown.find(category);
  if (it != kKnown.end()) return it->second;
  static const std::array<QColor, 6> kSpare = {QColor(0x4a, 0x7a, 0x8c), QColor(0x8c, 0x5a, 0x4a),
                                               QColor(0x5a, 0x8c, 0x4a), QColor(0x6a, 0x4a, 0x8c),
                                               QColor(0x8c, 0x4a, 0x6a), QColor(0x4a, 0x5a, 0x8c)};
  size_t h = 0;  // not std::hash: the colour must not change between builds
  for (unsigned char c : category) h = h * 31 + c;
  return kSpare[h % kSpare.size()];
}

QColor unknown_op_colour() {
  return QColor(0x88, 0x88, 0x88);
}

const CanvasColours& colours_for(Theme theme) {
  static const CanvasColours kLight{
      QColor(0xf4, 0xf5, 0xf7), QColor(0xff, 0xff, 0xff), QColor(0x8a, 0x93, 0xa0),
      QColor(0xe6, 0xec, 0xf3), QColor(0x5b, 0x67, 0x78), QColor(0x1f, 0x25, 0x2d),
      QColor(0x6b, 0x74, 0x80), QColor(0x5f, 0x68, 0x75), QColor(0xa8, 0xae, 0xb6),
      QColor(0xd0, 0x21, 0x21), QColor(255, 255, 255, 230), QColor(0x3b, 0x82, 0xf6)};
  static const CanvasColours kDark{
      QColor(0x1e, 0x21, 0x26), QColor(0x2b, 0x30, 0x37), QColor(0x5c, 0x65, 0x70),
      QColor(0x33, 0x3b, 0x46), QColor(0x8a, 0x96, 0xa6), QColor(0xe3, 0xe6, 0xea),
      QColor(0x9a, 0xa3, 0xae), QColor(0xa0, 0xa8, 0xb3), QColor(0x5a, 0x61, 0x6a),
      QColor(0xff, 0x5c, 0x5c), QColor(0x1e, 0x21, 0x26, 230), QColor(0x60, 0xa5, 0xfa)};
  return theme == Theme::kDark ? kDark : kLight;
}

namespace {
Theme g_theme = Theme::kLight;  // see colours() in the header
}  // namespace

const CanvasColours& colours() {
  return colours_for(g_theme);
}

Theme current_theme() {
  return g_theme;
}

void set_current_theme(Theme theme) {
  g_theme = theme;
}

QFont canvas_font(int pixel_size, bool bold) {
  QFont f = QGuiApplication::font();
  f.setPixelSize(pixel_size);
  f.setBold(bold);
  return f;
}

QFont type_font(int pixel_size) {
  QFont f = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  f.setPixelSize(pixel_size);
  return f;
}

}  // namespace tessera::studio::style
