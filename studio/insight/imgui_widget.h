// A QOpenGLWidget hosting one Dear ImGui (1.86) context rendered with ImGui's OpenGL3 backend:
// the studio's bridge to the profiler timeline (insight/timeline/view.h), which only produces
// ImGui draw lists. Qt has no ImGui platform backend, so this widget is one: it forwards the mouse,
// the wheel, keys and text to ImGuiIO and feeds display size, scale and time each frame.
//
// Each widget owns its context (ImGui::SetCurrentContext around every use), so several can live
// side by side. A frame is drawn on every Qt repaint; input schedules one, and a short timer keeps
// drawing while ImGui animates (hover, tooltips) after the last event.
//
// Needs a real OpenGL surface (xcb, Xvfb with llvmpipe); the `offscreen` platform cannot host it.
// main() sets QSurfaceFormat's default to OpenGL 3.3 core before the QApplication exists.
//
// Usage:
//   auto* w = new ImGuiWidget([&view] { view.draw("Timeline"); });
//   w->grabFramebuffer().save("shot.png");
#pragma once

#include <QElapsedTimer>
#include <QOpenGLWidget>
#include <QTimer>
#include <functional>
#include <vector>

struct ImGuiContext;

namespace tessera::studio {

class ImGuiWidget : public QOpenGLWidget {
  Q_OBJECT

 public:
  // `draw` runs each frame between ImGui::NewFrame() and ImGui::Render(), with this widget's
  // context current.
  explicit ImGuiWidget(std::function<void()> draw, QWidget* parent = nullptr);
  ~ImGuiWidget() override;

  // Asks for OpenGL 3.3 core on every GL surface; call before the QApplication exists (main() and
  // GUI tests do).
  static void set_default_format();

  // Whether the GL context and the ImGui renderer came up (false: the message says why).
  bool is_ready() const { return ready_; }
  const QString& failure() const { return failure_; }
  // Frames drawn so far (tests wait for a few).
  int frames() const { return frames_; }

 Q_SIGNALS:
  void frame_drawn();

 protected:
  void initializeGL() override;
  void paintGL() override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void keyReleaseEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;  // plain keys go to ImGui, not to the window's shortcuts

 private:
  void key(QKeyEvent* event, bool down);
  void animate();  // a few more frames after input, for hover and tooltips
  // Dear ImGui 1.86 samples io.MouseDown once per frame, so a press and a release that arrive
  // between two frames (a touchpad tap, a loaded machine, QTest::mouseClick) would never be seen
  // as a click. Button changes are queued and applied at most one per button per frame.
  struct ButtonEvent {
    int button;
    bool down;
    float x, y;
  };
  void queue_button(int button, bool down, QPointF at);
  void apply_button_events();  // before NewFrame
  std::vector<ButtonEvent> button_events_;

  std::function<void()> draw_;
  ImGuiContext* context_ = nullptr;
  bool ready_ = false;
  QString failure_;
  int frames_ = 0;
  int pending_frames_ = 0;
  QElapsedTimer clock_;
  QTimer ticker_;
};

}  // namespace tessera::studio
