// Tests for the timeline view (insight/timeline/view.cpp) in a headless ImGui context (fonts built,
// NewFrame/draw/Render, no GL): clicking a span's pixel returns exactly that span, clicking empty
// space nothing; wheel zoom keeps the time under the cursor; drag pans; search centres; folding.
#include <gtest/gtest.h>

#include <imgui.h>
#include <imgui_internal.h>  // FindWindowByName: is the tooltip open

#include <algorithm>
#include <cmath>

#include "insight/timeline/view.h"

namespace tessera::insight::timeline {
namespace {

using Kind = observe::Span::Kind;

class Headless {
 public:
  Headless() {
    ctx_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1280, 800);
    io.DeltaTime = 1.0f / 60;
    unsigned char* px = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&px, &w, &h);
    io.Fonts->SetTexID(reinterpret_cast<ImTextureID>(1));
  }
  ~Headless() { ImGui::DestroyContext(ctx_); }
  void frame(TimelineView& v) {
    ImGui::NewFrame();
    v.draw("Timeline");
    ImGui::Render();
  }
  // Press and release the left button at (x, y), a frame each.
  void click(TimelineView& v, float x, float y) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = ImVec2(x, y);
    frame(v);
    io.MouseDown[0] = true;
    frame(v);
    io.MouseDown[0] = false;
    frame(v);
  }

 private:
  ImGuiContext* ctx_;
};

std::shared_ptr<const TimelineModel> small_model() {
  TimelineBuilder b;
  b.add_span(Kind::kStep, "step", "", "cpu", "", -1, 0, 0, 1000000);
  b.add_span(Kind::kKernel, "conv1", "Conv", "cpu", "onednn", 3, 0, 100000, 400000, 4096, 1e6);
  b.add_span(Kind::kKernel, "relu1", "Relu", "cpu", "ref", 4, 0, 450000, 600000);
  b.add_span(Kind::kKernel, "fc", "Gemm", "cpu", "ref", 7, 1, 200000, 900000);
  return std::make_shared<TimelineModel>(std::move(b).build());
}

TEST(TimelineView, ClickingASpansPixelReturnsExactlyThatSpan) {
  Headless h;
  auto model = small_model();
  TimelineView view(model);
  h.frame(view);
  // relu1: lane 0 (cpu / thread 0), depth 1, index 1.
  const SpanRef relu{0, 1, 1};
  float x0, y0, x1, y1;
  ASSERT_TRUE(view.span_rect(relu, &x0, &y0, &x1, &y1));
  // The rectangle is where the times say: relu1 is 150 us of the ~1 ms window.
  const float px_per_ns = (x1 - x0) / 150000.0f;
  EXPECT_NEAR(px_per_ns * static_cast<float>(view.view_t1() - view.view_t0()), 1280 - 180 - 16, 20);
  float c0, cy0, c1, cy1;
  ASSERT_TRUE(
      view.span_rect(SpanRef{0, 1, 0}, &c0, &cy0, &c1, &cy1));  // conv1, same row, to the left
  EXPECT_LT(c1, x0);
  EXPECT_FLOAT_EQ(cy0, y0);
  h.click(view, (x0 + x1) / 2, (y0 + y1) / 2);
  auto s = view.take_clicked();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "relu1");
  EXPECT_EQ(s->op, "Relu");
  EXPECT_EQ(s->node, 4);
  EXPECT_EQ(s->device, "cpu");
  EXPECT_EQ(s->start_ns, 450000);
  EXPECT_EQ(s->end_ns, 600000);
  EXPECT_TRUE(s->ref == relu);
  EXPECT_FALSE(view.take_clicked().has_value()) << "taken once";
  // The step span above it (depth 0).
  float sx0, sy0, sx1, sy1;
  ASSERT_TRUE(view.span_rect(SpanRef{0, 0, 0}, &sx0, &sy0, &sx1, &sy1));
  h.click(view, (x0 + x1) / 2, (sy0 + sy1) / 2);
  auto step = view.take_clicked();
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(step->name, "step");
  // Empty space: between conv1 and relu1 on the kernel row, and below every lane.
  h.click(view, (c1 + x0) / 2, (y0 + y1) / 2);
  EXPECT_FALSE(view.take_clicked().has_value());
  h.click(view, (x0 + x1) / 2, 450);
  EXPECT_FALSE(view.take_clicked().has_value());
}

TEST(TimelineView, WheelZoomKeepsTheTimeUnderTheCursorAndDragPans) {
  Headless h;
  TimelineView view(small_model());
  h.frame(view);
  float x0, y0, x1, y1;
  ASSERT_TRUE(view.span_rect(SpanRef{0, 1, 1}, &x0, &y0, &x1, &y1));
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2(x0, (y0 + y1) / 2);  // the start of relu1: t = 450000
  const double w_before = view.view_t1() - view.view_t0();
  h.frame(view);
  io.MouseWheel = 2;
  h.frame(view);
  io.MouseWheel = 0;
  const double w_after = view.view_t1() - view.view_t0();
  EXPECT_NEAR(w_after, w_before / 1.5625, w_before * 1e-6);
  h.frame(view);
  float nx0, ny0, nx1, ny1;
  ASSERT_TRUE(view.span_rect(SpanRef{0, 1, 1}, &nx0, &ny0, &nx1, &ny1));
  EXPECT_NEAR(nx0, x0, 1.0);  // still under the cursor
  EXPECT_NEAR(nx1 - nx0, (x1 - x0) * 1.5625, 2.0);
  // Drag 100 px to the right: the view moves 100 px worth of time to the left.
  const double t0 = view.view_t0();
  const double ns_per_px = 150000.0 / (nx1 - nx0);
  io.MousePos = ImVec2(nx0 + 5, ny0 + 5);
  h.frame(view);
  io.MouseDown[0] = true;
  h.frame(view);
  io.MousePos = ImVec2(nx0 + 105, ny0 + 5);
  h.frame(view);
  io.MouseDown[0] = false;
  h.frame(view);
  EXPECT_NEAR(view.view_t0(), t0 - 100 * ns_per_px, ns_per_px * 2);
  EXPECT_FALSE(view.take_clicked().has_value()) << "a drag is not a click";
}

TEST(TimelineView, SearchNextCentresTheViewOnTheMatch) {
  Headless h;
  TimelineView view(small_model());
  view.zoom_to(0, 50000);
  view.search("gemm");
  ASSERT_EQ(view.matches().size(), 1u);
  view.next_match(+1);
  EXPECT_EQ(view.current_match(), 0);
  EXPECT_NEAR((view.view_t0() + view.view_t1()) / 2, 550000, 1);
  EXPECT_GT(view.view_t1() - view.view_t0(), 700000);  // fc is 700 us wide: zoomed out to show it
  h.frame(view);
  float x0, y0, x1, y1;
  EXPECT_TRUE(view.span_rect(SpanRef{1, 0, 0}, &x0, &y0, &x1, &y1));
}

TEST(TimelineView, DenseSpansFoldIntoBlocksAndAFoldClickZoomsIn) {
  Headless h;
  TimelineBuilder b;
  for (int i = 0; i < 100000; ++i)
    b.add_span(Kind::kKernel, "k", "Op", "cpu", "", i % 50, 0, i * 100, i * 100 + 60);
  TimelineView view(std::make_shared<TimelineModel>(std::move(b).build()));
  view.zoom_to(0, 1000);  // first find the row's y where the spans are drawn one by one
  h.frame(view);
  float x0, y0, x1, y1;
  ASSERT_TRUE(view.span_rect(SpanRef{0, 0, 0}, &x0, &y0, &x1, &y1));
  const float row_y = (y0 + y1) / 2;
  view.fit();
  h.frame(view);
  const auto& f = view.last_frame();
  EXPECT_EQ(f.items, f.folds);        // 100 000 spans over ~1100 px: all folded
  EXPECT_EQ(f.folded_spans, 100000);  // every span in exactly one fold
  EXPECT_LT(f.items, 1100 / 3 + 5);   // O(pixels)
  const double w = view.view_t1() - view.view_t0();
  h.click(view, 600, row_y);  // the row is one wide fold: a click zooms 8x around the cursor
  EXPECT_FALSE(view.take_clicked().has_value());
  EXPECT_NEAR(view.view_t1() - view.view_t0(), w / 8, w * 1e-9);
  int zooms = 1;
  h.frame(view);  // a click acts after its frame is drawn: draw the zoomed one
  for (; view.last_frame().folds > 0 && zooms < 10; ++zooms)
    h.click(view, 600, row_y), h.frame(view);
  EXPECT_NEAR(view.view_t1() - view.view_t0(), w / std::pow(8.0, zooms),
              w * 1e-9);  // each click 8x
  EXPECT_EQ(view.last_frame().folds, 0);
  EXPECT_GE(view.last_frame().items, 2);
}

TEST(TimelineView, WithoutAModelTheMessageIsShown) {
  Headless h;
  TimelineView view(nullptr);
  view.set_message("no insight database here");
  h.frame(view);
  h.click(view, 100, 100);
  EXPECT_FALSE(view.take_clicked().has_value());
  ImDrawData* dd = ImGui::GetDrawData();
  ASSERT_NE(dd, nullptr);
  EXPECT_GT(dd->TotalVtxCount, 4 * 20);  // the text was drawn (about 4 vertices a glyph)
}

TEST(TimelineView, HoveringASpanOpensATooltipAndKeysZoomAndPan) {
  Headless h;
  TimelineView view(small_model());
  h.frame(view);
  float x0, y0, x1, y1;
  ASSERT_TRUE(view.span_rect(SpanRef{0, 1, 0}, &x0, &y0, &x1, &y1));
  ImGuiIO& io = ImGui::GetIO();
  auto tooltip_open = [] {
    ImGuiWindow* w = ImGui::FindWindowByName("##Tooltip_00");
    return w != nullptr && w->Active;
  };
  io.MousePos = ImVec2(1270, 795);  // the statistics table's corner: no span
  h.frame(view);
  EXPECT_FALSE(tooltip_open());
  io.MousePos = ImVec2((x0 + x1) / 2, (y0 + y1) / 2);
  h.frame(view);
  EXPECT_TRUE(tooltip_open());
  io.MousePos = ImVec2(1270, 795);
  const double w = view.view_t1() - view.view_t0(), c = (view.view_t0() + view.view_t1()) / 2;
  io.KeysDown['W'] = true;  // zoom in about the centre
  for (int i = 0; i < 10; ++i) h.frame(view);
  io.KeysDown['W'] = false;
  EXPECT_LT(view.view_t1() - view.view_t0(), w * 0.9);
  EXPECT_NEAR((view.view_t0() + view.view_t1()) / 2, c, w * 1e-6);
  io.KeysDown['D'] = true;  // pan right
  h.frame(view);
  io.KeysDown['D'] = false;
  EXPECT_GT((view.view_t0() + view.view_t1()) / 2, c);
}

// Issue 40, item 8: typing in the search field and pressing Enter goes to the first match, Enter
// again to the next (Enter did nothing).
TEST(TimelineView, EnterInTheSearchFieldJumpsToTheNextMatch) {
  Headless h;
  ImGuiIO& io = ImGui::GetIO();
  io.KeyMap[ImGuiKey_Enter] = 300;
  TimelineView view(small_model());
  h.frame(view);
  ASSERT_GT(view.search_field_x1(), view.search_field_x0());
  h.click(view, (view.search_field_x0() + view.search_field_x1()) / 2,
          (view.search_field_y0() + view.search_field_y1()) / 2);  // the field takes the keyboard
  io.AddInputCharacter('c');
  h.frame(view);
  ASSERT_EQ(view.matches().size(), 2u);  // conv1 and fc
  EXPECT_EQ(view.current_match(), -1);
  io.KeysDown[300] = true;
  h.frame(view);
  io.KeysDown[300] = false;
  h.frame(view);
  EXPECT_EQ(view.current_match(), 0);
  io.KeysDown[300] = true;
  h.frame(view);
  io.KeysDown[300] = false;
  h.frame(view);
  EXPECT_EQ(view.current_match(), 1);
}

// Issue 40, item 8: a run's first view is its execution, not mostly compilation.
TEST(TimelineView, FirstViewIsTheExecution) {
  Headless h;
  TimelineBuilder b;
  b.add_span(Kind::kStage, "optimise", "", "host", "", -1, 0, 0, 900000);
  b.add_span(Kind::kKernel, "conv1", "Conv", "cpu", "onednn", 3, 0, 950000, 990000);
  b.add_span(Kind::kKernel, "relu1", "Relu", "cpu", "ref", 4, 0, 990000, 1000000);
  TimelineView view(std::make_shared<TimelineModel>(std::move(b).build()));
  h.frame(view);
  EXPECT_GT(view.view_t0(), 900000.0);
  EXPECT_LT(view.view_t1(), 1010000.0);
  view.fit();  // the Fit button still shows everything
  EXPECT_LT(view.view_t0(), 0.0 + 1);
}

// Vertices of the last frame in colour `col`, and their bounding box.
int vertices_in_colour(ImU32 col, float* x0, float* x1) {
  int n = 0;
  *x0 = 1e9f, *x1 = -1e9f;
  ImDrawData* dd = ImGui::GetDrawData();
  for (int l = 0; l < dd->CmdListsCount; ++l)
    for (const ImDrawVert& v : dd->CmdLists[l]->VtxBuffer)
      if (v.col == col) ++n, *x0 = std::min(*x0, v.pos.x), *x1 = std::max(*x1, v.pos.x);
  return n;
}

TEST(TimelineView, SelectNodeOutlinesThatNodesSpansAndFitShowsEverything) {
  Headless h;
  auto model = small_model();
  TimelineView view(model);
  view.zoom_to(0, 1000);
  view.fit();
  EXPECT_LT(view.view_t0(), static_cast<double>(model->t_min()));
  EXPECT_GT(view.view_t1(), static_cast<double>(model->t_max()));
  EXPECT_LT(view.view_t1() - view.view_t0(),
            1.1 * static_cast<double>(model->t_max() - model->t_min()));
  const ImU32 kYellow = IM_COL32(255, 230, 0, 255);  // the node outline
  float a, b;
  h.frame(view);
  EXPECT_EQ(vertices_in_colour(kYellow, &a, &b), 0);
  view.select_node(4);  // relu1
  h.frame(view);
  EXPECT_GT(vertices_in_colour(kYellow, &a, &b), 0);
  float x0, y0, x1, y1;
  ASSERT_TRUE(view.span_rect(SpanRef{0, 1, 1}, &x0, &y0, &x1, &y1));
  EXPECT_NEAR(a, x0, 2.0f);
  EXPECT_NEAR(b, x1, 2.0f);
}

}  // namespace
}  // namespace tessera::insight::timeline
