// Helpers of the canvas tests: how much of a view's picture is drawn.
#pragma once

#include <QImage>
#include <QPainter>
#include <cstdlib>

#include "studio/common/canvas_style.h"
#include "studio/canvas/graph_view.h"

namespace canvas_test {

// The share of the viewport's pixels (painted as on screen, through its paintEvent) that differ
// from the canvas background by more than a faint tint.
inline double ink_share(tessera::studio::GraphView& view) {
  QImage image(view.viewport()->size(), QImage::Format_ARGB32);
  image.fill(Qt::white);
  QPainter painter(&image);
  view.viewport()->render(&painter);
  painter.end();
  const QRgb background = tessera::studio::style::colours().background.rgb();
  qint64 ink = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const QRgb p = image.pixel(x, y);
      const int d = std::abs(qRed(p) - qRed(background)) + std::abs(qGreen(p) - qGreen(background)) +
                    std::abs(qBlue(p) - qBlue(background));
      ink += d > 24;
    }
  return static_cast<double>(ink) / (image.width() * image.height());
}

}  // namespace canvas_test
