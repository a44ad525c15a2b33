// The profiler timeline view: draws a TimelineModel with Dear ImGui (1.86) into the current ImGui
// context: time ruler, lanes with labels, spans coloured by op, folded blocks, tooltips, search,
// statistics and memory curves. It only produces ImGui draw lists, so any host renders it: the
// `tessera-insight` GLFW viewer and the studio's QOpenGLWidget, both with the OpenGL3 backend.
//
//   TimelineView view(loaded.model);              // or TimelineView view(nullptr) +
//   set_message(error)
//   // each frame, between ImGui::NewFrame() and ImGui::Render():
//   view.draw("Timeline");
//   if (auto s = view.take_clicked()) studio.select_node(s->node);
//
// Input is read from ImGuiIO: the mouse (drag pans, wheel zooms around the cursor, a click selects
// a span, a click on a folded block zooms into it) and the letter keys W/S (zoom) and A/D (pan) in
// io.KeysDown['W'] etc., the indices GLFW's and Qt's key codes use for letters.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "insight/timeline/model.h"

namespace tessera::insight::timeline {

// A span the user clicked (copied out of the model).
struct SelectedSpan {
  SpanRef ref;
  int32_t node = -1;
  std::string name, op, device, detail;
  int64_t thread = 0;
  int64_t start_ns = 0, end_ns = 0;  // times as in the model
};

class TimelineView {
 public:
  // `model` may be null: the view then shows only the message (set_message).
  explicit TimelineView(std::shared_ptr<const TimelineModel> model);

  // A line shown instead of the timeline (no model) or above it (a warning); "" clears it.
  // `error` false: a hint (what to do), drawn in the text colour rather than red.
  void set_message(std::string message, bool error = true);
  // Draws everything in one ImGui window filling io.DisplaySize. Call between NewFrame and Render.
  void draw(const char* window_title);
  // The span clicked since the last call, if any.
  std::optional<SelectedSpan> take_clicked();
  // Highlights every span of `node` (-1: none), e.g. the node selected in the studio's graph.
  void select_node(int32_t node);

  // The visible window, in model ns. zoom_to clamps to a minimum width of 100 ns.
  void zoom_to(double t0_ns, double t1_ns);
  void fit();
  // The execution's spans (kernels, steps, copies) when the trace also holds compilation
  // (stages, passes): what a loaded run first shows. Everything (fit) otherwise.
  void fit_execution();
  double view_t0() const { return t0_; }
  double view_t1() const { return t1_; }

  // Search as the search box does: matches by start; next/previous centre the view on one.
  void search(const std::string& needle);
  const std::vector<SpanRef>& matches() const { return matches_; }
  void next_match(int direction);  // +1 next, -1 previous
  int current_match() const { return current_match_; }
  // Where the search field was drawn in the last frame (screen pixels), for tests.
  float search_field_x0() const { return search_[0]; }
  float search_field_y0() const { return search_[1]; }
  float search_field_x1() const { return search_[2]; }
  float search_field_y1() const { return search_[3]; }

  // Frame figures for tests and the benchmark.
  struct FrameStats {
    int64_t items = 0, folds = 0, folded_spans = 0;
  };
  const FrameStats& last_frame() const { return frame_; }
  // The screen rectangle where span `r` was drawn in the last frame (false when not drawn alone).
  bool span_rect(const SpanRef& r, float* x0, float* y0, float* x1, float* y1) const;

 private:
  struct Hit {
    float x0, y0, x1, y1;
    SpanRef ref;
    uint32_t count;  // 1: the span; > 1: a fold starting at ref
    int64_t start_ns, end_ns;
  };
  void draw_toolbar();
  void draw_ruler(float x0, float width);
  void draw_lanes(float x0, float width, float height);
  void draw_counters(float x0, float width);
  void draw_stats();
  void tooltip(const Hit& h) const;
  void handle_input(float x0, float width, bool hovered, bool activated, bool active);
  void centre_on(const SpanRef& r);
  SelectedSpan selected(const SpanRef& r) const;
  uint32_t colour_of(StringId id) const;
  double ns_per_px(float width) const { return (t1_ - t0_) / std::max(width, 1.0f); }

  std::shared_ptr<const TimelineModel> model_;
  std::string message_;
  double t0_ = 0, t1_ = 1;
  float last_width_ = 1000.0f;
  std::optional<SelectedSpan> clicked_;
  std::optional<SpanRef> selected_;
  int32_t selected_node_ = -1;
  // search
  std::string needle_, needle_box_;
  std::vector<SpanRef> matches_;
  std::vector<uint8_t> match_strings_;
  int current_match_ = -1;
  bool message_is_error_ = true;
  float search_[4] = {0, 0, 0, 0};  // the search field: x0, y0, x1, y1
  // stats
  bool stats_window_only_ = false;
  int stats_by_ = 0;  // 0 op, 1 node
  std::vector<GroupStats> stats_;
  double stats_t0_ = -1, stats_t1_ = -1;
  int stats_key_ = -1;
  int window_still_frames_ = 0;
  double last_t0_ = 0, last_t1_ = 0;
  int scroll_to_lane_ = -1;
  // frame state
  std::vector<DrawItem> items_;
  std::vector<Hit> hits_;
  FrameStats frame_;
  std::vector<uint32_t> colours_;
  bool pressed_ = false;
  float press_x_ = 0, press_y_ = 0;
  double press_t0_ = 0, press_t1_ = 0;
};

}  // namespace tessera::insight::timeline
