// The timeline view's frame: toolbar, ruler, lanes, counters and the statistics table, drawn with
// ImGui draw lists (view.h). Per frame and per track it draws the model's level-of-detail layout,
// so the cost follows the pixels, not the spans.
#include "insight/timeline/view.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessera::insight::timeline {
namespace {

constexpr float kLabelWidth = 180.0f;
constexpr float kRowHeight = 18.0f;
constexpr float kLaneHeader = 18.0f;
constexpr float kRulerHeight = 22.0f;
constexpr float kCounterHeight = 48.0f;
constexpr float kStatsHeight = 210.0f;
constexpr double kMinPx = 3.0;  // spans narrower than this are folded
constexpr double kMinWindowNs = 100.0;

const ImU32 kFoldColour = IM_COL32(120, 120, 120, 255);
const ImU32 kTextColour = IM_COL32(15, 15, 15, 255);

std::string format_bytes(double b) {
  char buf[32];
  const double a = std::fabs(b);
  if (a < 1024)
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  else if (a < 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else if (a < 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  return buf;
}

// A tick step of 1, 2 or 5 x 10^k ns at least `min_ns`.
double nice_step(double min_ns) {
  double p = std::pow(10.0, std::floor(std::log10(std::max(min_ns, 1.0))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (p * m >= min_ns) return p * m;
  return p * 10;
}

uint32_t fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

// The longest tail of a span's name, cut after a '/', that fits `width` pixels: ONNX exporters
// name nodes by scope ("/layer1/layer1.0/conv1/Conv"), and the scope they share is the least
// telling part. The last part when none fits (clipped by the caller).
const char* fitting_suffix(const std::string& name, float width) {
  const char* begin = name.c_str();
  const char* end = begin + name.size();
  if (ImGui::CalcTextSize(begin, end).x <= width) return begin;
  const char* last = begin;
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    if (name[i] != '/') continue;
    last = begin + i + 1;
    if (ImGui::CalcTextSize(last, end).x <= width) return last;
  }
  return last;
}

}  // namespace

TimelineView::TimelineView(std::shared_ptr<const TimelineModel> model) : model_(std::move(model)) {
  if (!model_) return;
  const StringTable& st = model_->strings();
  colours_.resize(st.size());
  for (size_t i = 0; i < st.size(); ++i) {
    const uint32_t h = fnv1a(st.text(static_cast<StringId>(i)));
    colours_[i] = ImColor::HSV(static_cast<float>(h % 360) / 360.0f,
                               0.45f + static_cast<float>((h >> 9) % 20) / 100.0f, 0.85f);
  }
  fit_execution();
}

void TimelineView::fit_execution() {
  // A recorded run is mostly compilation (stages and passes) before a short execution: the first
  // view shows the execution (kernels, steps, copies), which were a sliver at the right end.
  if (!model_) return;
  int64_t a = INT64_MAX, b = INT64_MIN;
  bool compile = false;
  using Kind = observe::Span::Kind;
  for (const Lane& lane : model_->lanes())
    for (const Track& t : lane.depths)
      for (size_t i = 0; i < t.size(); ++i) {
        const auto kind = static_cast<Kind>(t.kind[i]);
        if (kind == Kind::kStage || kind == Kind::kPass) {
          compile = true;
        } else {
          a = std::min(a, t.start_ns[i]);
          b = std::max(b, t.end_ns[i]);
        }
      }
  if (!compile || a >= b) {
    fit();
    return;
  }
  const double margin = std::max(static_cast<double>(b - a) * 0.02, 50.0);
  zoom_to(static_cast<double>(a) - margin, static_cast<double>(b) + margin);
}

void TimelineView::set_message(std::string message, bool error) {
  message_ = std::move(message);
  message_is_error_ = error;
}

std::optional<SelectedSpan> TimelineView::take_clicked() {
  std::optional<SelectedSpan> out = std::move(clicked_);
  clicked_.reset();
  return out;
}

void TimelineView::select_node(int32_t node) {
  selected_node_ = node;
}

void TimelineView::zoom_to(double t0_ns, double t1_ns) {
  if (!(t1_ns - t0_ns >= kMinWindowNs)) {
    const double c = (t0_ns + t1_ns) / 2;
    t0_ns = c - kMinWindowNs / 2, t1_ns = c + kMinWindowNs / 2;
  }
  t0_ = t0_ns, t1_ = t1_ns;
}

void TimelineView::fit() {
  if (!model_) return;
  const double a = static_cast<double>(model_->t_min()), b = static_cast<double>(model_->t_max());
  const double margin = std::max((b - a) * 0.01, 50.0);
  zoom_to(a - margin, b + margin);
}

void TimelineView::search(const std::string& needle) {
  needle_ = needle;
  needle_box_ = needle;
  matches_.clear();
  match_strings_.clear();
  current_match_ = -1;
  if (!model_ || needle.empty()) return;
  matches_ = model_->search(needle);
  match_strings_ = model_->matching_strings(needle);
}

void TimelineView::next_match(int direction) {
  if (matches_.empty()) return;
  const int n = static_cast<int>(matches_.size());
  current_match_ = current_match_ < 0 ? (direction >= 0 ? 0 : n - 1)
                                      : ((current_match_ + direction) % n + n) % n;
  centre_on(matches_[static_cast<size_t>(current_match_)]);
}

void TimelineView::centre_on(const SpanRef& r) {
  const Track& t = model_->track(r);
  const double s = static_cast<double>(t.start_ns[r.index]),
               e = static_cast<double>(t.end_ns[r.index]);
  const double d = std::max(e - s, 1.0);
  double w = t1_ - t0_;
  if (d > 0.8 * w || d < w / 20)
    w = d * 10;  // too wide to see whole, or too narrow to read its label: 10% of the view
  const double c = (s + e) / 2;
  zoom_to(c - w / 2, c + w / 2);
  selected_ = r;
  scroll_to_lane_ = static_cast<int>(r.lane);
}

SelectedSpan TimelineView::selected(const SpanRef& r) const {
  const Track& t = model_->track(r);
  const Lane& lane = model_->lanes()[r.lane];
  const StringTable& st = model_->strings();
  SelectedSpan s;
  s.ref = r;
  s.node = t.node[r.index];
  s.name = st.text(t.name[r.index]);
  s.op = st.text(t.op[r.index]);
  s.detail = st.text(t.detail[r.index]);
  s.device = st.text(lane.device);
  s.thread = lane.thread;
  s.start_ns = t.start_ns[r.index];
  s.end_ns = t.end_ns[r.index];
  return s;
}

uint32_t TimelineView::colour_of(StringId id) const {
  return id < colours_.size() ? colours_[id] : kFoldColour;
}

bool TimelineView::span_rect(const SpanRef& r, float* x0, float* y0, float* x1, float* y1) const {
  for (const Hit& h : hits_)
    if (h.count == 1 && h.ref == r) {
      *x0 = h.x0, *y0 = h.y0, *x1 = h.x1, *y1 = h.y1;
      return true;
    }
  return false;
}

void TimelineView::draw(const char* window_title) {
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse;
  ImGui::Begin(window_title, nullptr, flags);
  frame_ = {};
  hits_.clear();
  if (!model_) {
    ImGui::PushStyleColor(ImGuiCol_Text, message_is_error_ ? IM_COL32(255, 120, 110, 255) : IM_COL32(200, 200, 200, 255));
    ImGui::TextWrapped("%s", message_.empty() ? "nothing to show" : message_.c_str());
    ImGui::PopStyleColor();
    ImGui::End();
    return;
  }
  if (!message_.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 205, 90, 255));
    ImGui::TextWrapped("%s", message_.c_str());
    ImGui::PopStyleColor();
  }
  draw_toolbar();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float x0 = ImGui::GetCursorScreenPos().x + kLabelWidth;
  const float width = std::max(avail.x - kLabelWidth, 50.0f);
  last_width_ = width;
  const size_t counters = std::min<size_t>(model_->counters().size(), 4);
  const float counters_h = static_cast<float>(counters) * (kCounterHeight + 4.0f);
  const float lanes_h = std::max(
      avail.y - kRulerHeight - counters_h - kStatsHeight - 3 * ImGui::GetStyle().ItemSpacing.y,
      60.0f);
  draw_ruler(x0, width);
  ImGui::BeginChild("lanes", ImVec2(avail.x, lanes_h), false, ImGuiWindowFlags_NoScrollWithMouse);
  draw_lanes(x0, width, lanes_h);
  ImGui::EndChild();
  if (counters) draw_counters(x0, width);
  draw_stats();
  ImGui::End();
}

void TimelineView::draw_toolbar() {
  if (ImGui::Button("Fit")) fit();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(220);
  if (ImGui::InputTextWithHint("##search", "search name or op", &needle_box_))
    search(std::string(needle_box_));
  search_[0] = ImGui::GetItemRectMin().x;
  search_[1] = ImGui::GetItemRectMin().y;
  search_[2] = ImGui::GetItemRectMax().x;
  search_[3] = ImGui::GetItemRectMax().y;
  // Enter in the field jumps to the next match, as the canvas's search does; the field keeps the
  // keyboard for the next Enter.
  const ImGuiIO& io = ImGui::GetIO();
  const auto pressed = [&](ImGuiKey_ key) {
    const int index = io.KeyMap[key];
    return index >= 0 && ImGui::IsKeyPressed(index, false);
  };
  if (ImGui::IsItemDeactivated() && (pressed(ImGuiKey_Enter) || pressed(ImGuiKey_KeyPadEnter))) {
    next_match(+1);
    ImGui::SetKeyboardFocusHere(-1);
  }
  ImGui::SameLine();
  if (ImGui::Button("<")) next_match(-1);
  ImGui::SameLine();
  if (ImGui::Button(">")) next_match(+1);
  ImGui::SameLine();
  if (!needle_.empty())
    ImGui::Text("%d of %zu", current_match_ + 1, matches_.size());
  else
    ImGui::TextDisabled("%zu spans, %zu lanes", model_->span_count(), model_->lanes().size());
  ImGui::SameLine();
  ImGui::TextDisabled("| window %s | drag: pan, wheel: zoom, W/S/A/D",
                      format_duration(t1_ - t0_).c_str());
}

void TimelineView::draw_ruler(float x0, float width) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::Dummy(ImVec2(width + kLabelWidth, kRulerHeight));
  const double npp = ns_per_px(width);
  const double step = nice_step(npp * 90);
  const double base = static_cast<double>(model_->t_min());
  dl->AddRectFilled(ImVec2(x0, p.y), ImVec2(x0 + width, p.y + kRulerHeight),
                    IM_COL32(40, 40, 48, 255));
  double t = std::ceil((t0_ - base) / step) * step + base;
  for (int guard = 0; t < t1_ && guard < 1000; t += step, ++guard) {
    const float x = x0 + static_cast<float>((t - t0_) / npp);
    dl->AddLine(ImVec2(x, p.y + kRulerHeight - 7), ImVec2(x, p.y + kRulerHeight),
                IM_COL32(200, 200, 200, 255));
    const std::string label = format_tick(t - base, step);
    dl->AddText(ImVec2(x + 3, p.y + 2), IM_COL32(220, 220, 220, 255), label.c_str());
  }
}

void TimelineView::draw_lanes(float x0, float width, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  float total = 0;
  for (const Lane& lane : model_->lanes())
    total += kLaneHeader + kRowHeight * static_cast<float>(lane.depths.size());
  ImGui::InvisibleButton("canvas", ImVec2(width + kLabelWidth, std::max(total, height - 4)));
  const bool hovered = ImGui::IsItemHovered();
  const bool deactivated = ImGui::IsItemDeactivated();
  handle_input(x0, width, hovered, ImGui::IsItemActivated(), ImGui::IsItemActive());
  if (hovered && ImGui::GetIO().KeyShift && ImGui::GetIO().MouseWheel != 0)
    ImGui::SetScrollY(ImGui::GetScrollY() - ImGui::GetIO().MouseWheel * 3 * kRowHeight);
  const ImVec2 clip0 = ImGui::GetWindowPos();
  const float clip_y0 = clip0.y, clip_y1 = clip0.y + ImGui::GetWindowSize().y;
  if (scroll_to_lane_ >= 0) {  // bring the lane of a search match into view
    float lane_y = 0;
    for (int l = 0; l < scroll_to_lane_ && l < static_cast<int>(model_->lanes().size()); ++l)
      lane_y +=
          kLaneHeader +
          kRowHeight * static_cast<float>(model_->lanes()[static_cast<size_t>(l)].depths.size());
    if (lane_y < ImGui::GetScrollY() ||
        lane_y + kLaneHeader + kRowHeight > ImGui::GetScrollY() + height)
      ImGui::SetScrollY(lane_y);
    scroll_to_lane_ = -1;
  }
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const double npp = ns_per_px(width);
  const int64_t t0 = static_cast<int64_t>(std::floor(t0_)),
                t1 = static_cast<int64_t>(std::ceil(t1_));
  const StringTable& st = model_->strings();
  const Hit* hover = nullptr;
  float y = origin.y;
  for (uint32_t l = 0; l < model_->lanes().size(); ++l) {
    const Lane& lane = model_->lanes()[l];
    const float lane_h = kLaneHeader + kRowHeight * static_cast<float>(lane.depths.size());
    if (y + lane_h < clip_y0 || y > clip_y1) {
      y += lane_h;
      continue;
    }
    dl->AddRectFilled(ImVec2(origin.x, y), ImVec2(x0 + width, y + kLaneHeader),
                      IM_COL32(50, 54, 64, 255));
    dl->AddText(ImVec2(origin.x + 4, y + 2), IM_COL32(235, 235, 235, 255), lane.label.c_str());
    y += kLaneHeader;
    dl->PushClipRect(ImVec2(x0, clip_y0), ImVec2(x0 + width, clip_y1), true);
    for (uint32_t d = 0; d < lane.depths.size(); ++d, y += kRowHeight) {
      if (y + kRowHeight < clip_y0 || y > clip_y1) continue;
      const Track& tr = lane.depths[d];
      items_.clear();
      model_->layout(l, d, t0, t1, npp, kMinPx, items_);
      for (const DrawItem& it : items_) {
        float a = x0 + static_cast<float>((static_cast<double>(it.start_ns) - t0_) / npp);
        float b = x0 + static_cast<float>((static_cast<double>(it.end_ns) - t0_) / npp);
        a = std::max(a, x0 - 2), b = std::min(b, x0 + width + 2);
        if (b - a < 1) b = a + 1;
        const ImVec2 p0(a, y + 1), p1(b, y + kRowHeight - 1);
        ++frame_.items;
        Hit h{a, p0.y, b, p1.y, SpanRef{l, d, it.first}, it.count, it.start_ns, it.end_ns};
        if (it.count == 1) {
          const uint32_t i = it.first;
          const StringId key = tr.op[i] ? tr.op[i] : tr.name[i];
          dl->AddRectFilled(p0, p1, colour_of(key));
          const bool match =
              !match_strings_.empty() && (match_strings_[tr.name[i]] || match_strings_[tr.op[i]]);
          if (selected_ && *selected_ == h.ref)
            dl->AddRect(p0, p1, IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
          else if (selected_node_ >= 0 && tr.node[i] == selected_node_)
            dl->AddRect(p0, p1, IM_COL32(255, 230, 0, 255), 0, 0, 2.0f);
          else if (match)
            dl->AddRect(p0, p1, IM_COL32(255, 140, 0, 255), 0, 0, 2.0f);
          if (b - a > 24) {
            const std::string& name = st.text(tr.name[i]);
            const ImVec4 clip(std::max(a, x0) + 2, p0.y, std::min(b, x0 + width) - 2, p1.y);
            const char* label = fitting_suffix(name, clip.z - clip.x - 2);
            dl->AddText(nullptr, 0.0f, ImVec2(std::max(a, x0) + 3, y + 2), kTextColour,
                        label, name.c_str() + name.size(), 0.0f, &clip);
          }
        } else {
          ++frame_.folds;
          frame_.folded_spans += it.count;
          dl->AddRectFilled(p0, p1, kFoldColour);
          if (b - a > 30) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%u", it.count);
            const ImVec4 clip(std::max(a, x0) + 1, p0.y, std::min(b, x0 + width) - 1, p1.y);
            dl->AddText(nullptr, 0.0f, ImVec2(std::max(a, x0) + 3, y + 2),
                        IM_COL32(235, 235, 235, 255), buf, nullptr, 0.0f, &clip);
          }
        }
        hits_.push_back(h);
      }
    }
    dl->PopClipRect();
  }
  for (const Hit& h : hits_)
    if (hovered && mouse.x >= h.x0 && mouse.x < h.x1 && mouse.y >= h.y0 && mouse.y < h.y1 &&
        mouse.x >= x0)
      hover = &h;
  if (hover && !pressed_) tooltip(*hover);
  if (deactivated && pressed_) {
    pressed_ = false;
    if (std::fabs(mouse.x - press_x_) < 3 && std::fabs(mouse.y - press_y_) < 3) {
      if (hover && hover->count == 1) {
        selected_ = hover->ref;
        clicked_ = selected(hover->ref);
      } else if (hover) {  // a fold: zoom to it when small, else 8x around the click
        if (hover->x1 - hover->x0 <= 40) {
          const double pad = static_cast<double>(hover->end_ns - hover->start_ns) * 0.05;
          zoom_to(static_cast<double>(hover->start_ns) - pad,
                  static_cast<double>(hover->end_ns) + pad);
        } else {
          const double at = t0_ + (mouse.x - x0) * ns_per_px(width);
          zoom_to(at - (at - t0_) / 8, at + (t1_ - at) / 8);
        }
      } else {
        selected_.reset();
      }
    }
  }
}

void TimelineView::handle_input(float x0, float width, bool hovered, bool activated, bool active) {
  ImGuiIO& io = ImGui::GetIO();
  const double npp = ns_per_px(width);
  if (activated) {
    pressed_ = true;
    press_x_ = io.MousePos.x, press_y_ = io.MousePos.y;
    press_t0_ = t0_, press_t1_ = t1_;
  }
  if (pressed_ && active) {
    const double dx = io.MousePos.x - press_x_;
    if (std::fabs(dx) >= 3) zoom_to(press_t0_ - dx * npp, press_t1_ - dx * npp);
  }
  if (hovered && io.MouseWheel != 0 && !io.KeyShift) {
    const double at = t0_ + (io.MousePos.x - x0) * npp;
    const double f = std::pow(1.25, -io.MouseWheel);
    zoom_to(at - (at - t0_) * f, at + (t1_ - at) * f);
  }
  if (!io.WantTextInput) {
    const double dt = std::clamp(static_cast<double>(io.DeltaTime), 0.001, 0.1);
    const double w = t1_ - t0_, c = (t0_ + t1_) / 2;
    if (ImGui::IsKeyDown('W')) zoom_to(c - w / 2 * (1 - 2 * dt), c + w / 2 * (1 - 2 * dt));
    if (ImGui::IsKeyDown('S')) zoom_to(c - w / 2 * (1 + 2 * dt), c + w / 2 * (1 + 2 * dt));
    if (ImGui::IsKeyDown('A')) zoom_to(t0_ - w * dt, t1_ - w * dt);
    if (ImGui::IsKeyDown('D')) zoom_to(t0_ + w * dt, t1_ + w * dt);
  }
}

void TimelineView::tooltip(const Hit& h) const {
  ImGui::BeginTooltip();
  if (h.count > 1) {
    ImGui::Text("%u spans (folded: each narrower than %.0f px)", h.count, kMinPx);
    ImGui::Text("%s .. %s", format_duration(h.start_ns - model_->t_min()).c_str(),
                format_duration(h.end_ns - model_->t_min()).c_str());
    ImGui::TextDisabled("click or zoom in to see them");
    ImGui::EndTooltip();
    return;
  }
  const Track& t = model_->track(h.ref);
  const uint32_t i = h.ref.index;
  const StringTable& st = model_->strings();
  const double d = static_cast<double>(t.end_ns[i] - t.start_ns[i]);
  ImGui::Text("%s", st.text(t.name[i]).c_str());
  if (t.op[i]) ImGui::Text("op: %s", st.text(t.op[i]).c_str());
  if (t.node[i] >= 0) ImGui::Text("node: #%d", t.node[i]);
  const Lane& lane = model_->lanes()[h.ref.lane];
  ImGui::Text("device: %s, thread %lld", st.text(lane.device).c_str(),
              static_cast<long long>(lane.thread));
  if (t.detail[i]) ImGui::Text("detail: %s", st.text(t.detail[i]).c_str());
  ImGui::Text("duration: %s (at %s)", format_duration(d).c_str(),
              format_duration(t.start_ns[i] - model_->t_min()).c_str());
  if (t.bytes[i]) ImGui::Text("bytes: %s", format_bytes(static_cast<double>(t.bytes[i])).c_str());
  if (t.flops[i] > 0)
    ImGui::Text("flops: %.4g (%.3g GFLOP/s)", static_cast<double>(t.flops[i]),
                d > 0 ? t.flops[i] / d : 0.0);
  ImGui::EndTooltip();
}

void TimelineView::draw_counters(float x0, float width) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const double npp = ns_per_px(width);
  const size_t n = std::min<size_t>(model_->counters().size(), 4);
  for (size_t k = 0; k < n; ++k) {
    const Counter& c = model_->counters()[k];
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::Dummy(ImVec2(width + kLabelWidth, kCounterHeight));
    dl->AddRectFilled(ImVec2(x0, p.y), ImVec2(x0 + width, p.y + kCounterHeight),
                      IM_COL32(30, 34, 40, 255));
    dl->AddText(ImVec2(p.x + 4, p.y + 2), IM_COL32(235, 235, 235, 255), c.name.c_str());
    const std::string peak =
        "peak " +
        (c.name.rfind("memory", 0) == 0 ? format_bytes(c.max_value) : std::to_string(c.max_value));
    dl->AddText(ImVec2(p.x + 4, p.y + 20), IM_COL32(170, 170, 170, 255), peak.c_str());
    if (c.time_ns.empty()) continue;
    const double lo = std::min(c.min_value, 0.0), hi = std::max(c.max_value, lo + 1);
    auto y_of = [&](double v) {
      return p.y + kCounterHeight - 2 -
             static_cast<float>((v - lo) / (hi - lo)) * (kCounterHeight - 6);
    };
    // Step curve, one min/max pair per pixel column.
    size_t i = static_cast<size_t>(
        std::lower_bound(c.time_ns.begin(), c.time_ns.end(), static_cast<int64_t>(t0_)) -
        c.time_ns.begin());
    if (i > 0) --i;
    dl->PushClipRect(ImVec2(x0, p.y), ImVec2(x0 + width, p.y + kCounterHeight), true);
    auto x_of = [&](size_t q) {
      return x0 + static_cast<float>((static_cast<double>(c.time_ns[q]) - t0_) / npp);
    };
    const ImU32 col = IM_COL32(90, 200, 255, 255), fill = IM_COL32(90, 200, 255, 60);
    const float bottom = y_of(lo);
    float prev_x = x0 - 1, prev_y = 0;
    bool first = true;
    while (i < c.time_ns.size()) {
      const float x = std::max(x0 - 1, x_of(i));
      float y = y_of(c.value[i]);
      if (!first) {
        if (x - prev_x >= 1) dl->AddRectFilled(ImVec2(prev_x, prev_y), ImVec2(x, bottom), fill);
        dl->AddLine(ImVec2(prev_x, prev_y), ImVec2(x, prev_y), col);
        dl->AddLine(ImVec2(x, prev_y), ImVec2(x, y), col);
      }
      size_t j = i + 1;  // the points in the same pixel column: one vertical min..max line
      float ymin = y, ymax = y;
      for (; j < c.time_ns.size() && x_of(j) < x + 1; ++j)
        ymin = std::min(ymin, y_of(c.value[j])), ymax = std::max(ymax, y_of(c.value[j]));
      if (j > i + 1) dl->AddLine(ImVec2(x, ymin), ImVec2(x, ymax), col), y = y_of(c.value[j - 1]);
      first = false;
      prev_x = x, prev_y = y;
      if (x > x0 + width) break;
      i = j;
    }
    if (prev_x < x0 + width) {
      dl->AddRectFilled(ImVec2(prev_x, prev_y), ImVec2(x0 + width, bottom), fill);
      dl->AddLine(ImVec2(prev_x, prev_y), ImVec2(x0 + width, prev_y), col);
    }
    dl->PopClipRect();
  }
}

void TimelineView::draw_stats() {
  ImGui::Text("Statistics");
  ImGui::SameLine();
  ImGui::RadioButton("by op", &stats_by_, 0);
  ImGui::SameLine();
  ImGui::RadioButton("by node", &stats_by_, 1);
  ImGui::SameLine();
  ImGui::Checkbox("visible window only", &stats_window_only_);
  const double a = stats_window_only_ ? t0_ : -9.2e18, b = stats_window_only_ ? t1_ : 9.2e18;
  const int key = stats_by_ * 2 + (stats_window_only_ ? 1 : 0);
  // The window's statistics rescan its spans: only once it has stayed put for a few frames.
  window_still_frames_ = (a == stats_t0_ && b == stats_t1_)
                             ? 0
                             : (t0_ == last_t0_ && t1_ == last_t1_ ? window_still_frames_ + 1 : 0);
  last_t0_ = t0_, last_t1_ = t1_;
  if (key != stats_key_ || ((a != stats_t0_ || b != stats_t1_) && !pressed_ &&
                            (!stats_window_only_ || window_still_frames_ >= 6))) {
    stats_ = model_->stats(stats_by_ ? GroupBy::kNode : GroupBy::kOp, static_cast<int64_t>(a),
                           static_cast<int64_t>(b));
    stats_key_ = key, stats_t0_ = a, stats_t1_ = b;
  }
  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_Resizable;
  const float h = std::max(ImGui::GetContentRegionAvail().y, 40.0f);
  if (!ImGui::BeginTable("stats", 7, flags, ImVec2(0, h))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(stats_by_ ? "node" : "op", ImGuiTableColumnFlags_WidthStretch, 0, 0);
  ImGui::TableSetupColumn("count", ImGuiTableColumnFlags_WidthFixed, 80, 1);
  ImGui::TableSetupColumn("total",
                          ImGuiTableColumnFlags_WidthFixed | ImGuiTableColumnFlags_DefaultSort |
                              ImGuiTableColumnFlags_PreferSortDescending,
                          90, 2);
  ImGui::TableSetupColumn("self", ImGuiTableColumnFlags_WidthFixed, 90, 6);  // exclusive time
  ImGui::TableSetupColumn("mean", ImGuiTableColumnFlags_WidthFixed, 90, 3);
  ImGui::TableSetupColumn("min", ImGuiTableColumnFlags_WidthFixed, 90, 4);
  ImGui::TableSetupColumn("max", ImGuiTableColumnFlags_WidthFixed, 90, 5);
  ImGui::TableHeadersRow();
  if (ImGuiTableSortSpecs* sort = ImGui::TableGetSortSpecs(); sort && sort->SpecsCount > 0) {
    const ImGuiTableColumnSortSpecs& s = sort->Specs[0];
    const bool asc = s.SortDirection == ImGuiSortDirection_Ascending;
    const int col = static_cast<int>(s.ColumnUserID);
    std::stable_sort(stats_.begin(), stats_.end(), [&](const GroupStats& x, const GroupStats& y) {
      auto v = [&](const GroupStats& g) -> double {
        switch (col) {
          case 1:
            return static_cast<double>(g.count);
          case 2:
            return static_cast<double>(g.total_ns);
          case 3:
            return g.mean_ns();
          case 4:
            return static_cast<double>(g.min_ns);
          case 5:
            return static_cast<double>(g.max_ns);
          case 6:
            return static_cast<double>(g.self_ns);
          default:
            return 0;
        }
      };
      if (col == 0) return asc ? x.key < y.key : x.key > y.key;
      return asc ? v(x) < v(y) : v(x) > v(y);
    });
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(stats_.size()));
  while (clipper.Step())
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const GroupStats& g = stats_[static_cast<size_t>(r)];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (g.node >= 0) {
        if (ImGui::Selectable(g.key.c_str(), selected_node_ == g.node)) select_node(g.node);
      } else {
        ImGui::TextUnformatted(g.key.c_str());
      }
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(g.count));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(static_cast<double>(g.total_ns)).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(static_cast<double>(g.self_ns)).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(g.mean_ns()).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(static_cast<double>(g.min_ns)).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(static_cast<double>(g.max_ns)).c_str());
    }
  ImGui::EndTable();
}

}  // namespace tessera::insight::timeline
