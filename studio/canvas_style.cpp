// Colours and fonts of the graph canvas.
#include "studio/canvas_style.h"

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
