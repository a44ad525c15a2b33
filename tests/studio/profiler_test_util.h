// Helpers of the profiler GUI tests (Xvfb): waiting for frames of an ImGuiWidget, and finding and
// clicking a span of the profiler's timeline with the mouse as a user does.
#pragma once

#include <QPoint>
#include <QSignalSpy>
#include <QTest>
#include <optional>
#include <string>

#include "insight/timeline/view.h"
#include "studio/insight/imgui_widget.h"
#include "studio/insight/profiler_panel.h"

namespace profiler_test {

// Draws `n` frames (false when one does not come within 5 s).
inline bool wait_frames(tessera::studio::ImGuiWidget* w, int n) {
  QSignalSpy spy(w, &tessera::studio::ImGuiWidget::frame_drawn);
  for (int i = 0; i < n; ++i) {
    w->update();
    if (!spy.wait(5000)) return false;
  }
  return true;
}

// Searches `needle`, centres the view on the first match and zooms 20x around it (so a short
// kernel is many pixels wide on any machine); the centre of a matching span drawn at least 4 px
// wide, or nothing.
inline std::optional<QPoint> find_span(tessera::studio::ProfilerPanel& profiler, const std::string& needle) {
  tessera::insight::timeline::TimelineView* view = profiler.view();
  view->search(needle);
  if (view->matches().empty()) return std::nullopt;
  view->next_match(+1);
  const double centre = (view->view_t0() + view->view_t1()) / 2, half = (view->view_t1() - view->view_t0()) / 40;
  view->zoom_to(centre - half, centre + half);
  if (!wait_frames(profiler.timeline_widget(), 3)) return std::nullopt;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  for (const auto& m : view->matches())
    if (view->span_rect(m, &x0, &y0, &x1, &y1) && x1 - x0 >= 4)
      return QPoint(static_cast<int>((x0 + x1) / 2), static_cast<int>((y0 + y1) / 2));
  return std::nullopt;
}

// Moves the mouse to `at`, presses and releases the left button, with frames drawn in between
// (ImGui sees a press and a release on different frames, as from a person).
inline bool click(tessera::studio::ImGuiWidget* gl, QPoint at) {
  QTest::mouseMove(gl, at);
  if (!wait_frames(gl, 2)) return false;
  QTest::mousePress(gl, Qt::LeftButton, Qt::NoModifier, at);
  if (!wait_frames(gl, 2)) return false;
  QTest::mouseRelease(gl, Qt::LeftButton, Qt::NoModifier, at);
  return wait_frames(gl, 2);
}

// A quick click: press and release delivered before the next frame (a touchpad tap, a loaded
// machine), which Dear ImGui 1.86 alone would never see as a click.
inline bool quick_click(tessera::studio::ImGuiWidget* gl, QPoint at) {
  QTest::mouseMove(gl, at);
  if (!wait_frames(gl, 2)) return false;
  QTest::mouseClick(gl, Qt::LeftButton, Qt::NoModifier, at);
  return wait_frames(gl, 3);
}

}  // namespace profiler_test
