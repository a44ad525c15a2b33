// ImGuiWidget: Dear ImGui inside a QOpenGLWidget (studio/imgui_widget.h).
#include "studio/insight/imgui_widget.h"

#include <imgui.h>
#include <imgui_impl_opengl3.h>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QSurfaceFormat>
#include <QWheelEvent>
#include <array>
#include <cfloat>
#include <utility>

namespace tessera::studio {

namespace {

// ImGui 1.86 reads keys from io.KeysDown[512] through io.KeyMap: letters keep their ASCII index
// (Qt::Key_A == 'A', as GLFW's codes), the keys ImGui needs for navigation and text editing get
// indices from 256 on.
constexpr std::array<std::pair<ImGuiKey_, int>, 16> kSpecialKeys = {{
    {ImGuiKey_Tab, Qt::Key_Tab},         {ImGuiKey_LeftArrow, Qt::Key_Left},
    {ImGuiKey_RightArrow, Qt::Key_Right}, {ImGuiKey_UpArrow, Qt::Key_Up},
    {ImGuiKey_DownArrow, Qt::Key_Down},  {ImGuiKey_PageUp, Qt::Key_PageUp},
    {ImGuiKey_PageDown, Qt::Key_PageDown}, {ImGuiKey_Home, Qt::Key_Home},
    {ImGuiKey_End, Qt::Key_End},         {ImGuiKey_Insert, Qt::Key_Insert},
    {ImGuiKey_Delete, Qt::Key_Delete},   {ImGuiKey_Backspace, Qt::Key_Backspace},
    {ImGuiKey_Space, Qt::Key_Space},     {ImGuiKey_Enter, Qt::Key_Return},
    {ImGuiKey_Escape, Qt::Key_Escape},   {ImGuiKey_KeyPadEnter, Qt::Key_Enter},
}};
constexpr int kSpecialBase = 256;

int key_index(int qt_key) {
  if (qt_key >= Qt::Key_A && qt_key <= Qt::Key_Z) return qt_key;  // 'A'..'Z'
  if (qt_key >= Qt::Key_0 && qt_key <= Qt::Key_9) return qt_key;  // '0'..'9'
  for (size_t i = 0; i < kSpecialKeys.size(); ++i)
    if (kSpecialKeys[i].second == qt_key) return kSpecialBase + static_cast<int>(i);
  return -1;
}

int mouse_button(Qt::MouseButton b) {
  switch (b) {
    case Qt::LeftButton: return 0;
    case Qt::RightButton: return 1;
    case Qt::MiddleButton: return 2;
    default: return -1;
  }
}

// Makes `context` current for the scope and restores the previous one.
class ContextScope {
 public:
  explicit ContextScope(ImGuiContext* context) : previous_(ImGui::GetCurrentContext()) {
    ImGui::SetCurrentContext(context);
  }
  ~ContextScope() { ImGui::SetCurrentContext(previous_); }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  ImGuiContext* previous_;
};

}  // namespace

void ImGuiWidget::set_default_format() {
  QSurfaceFormat format;
  format.setRenderableType(QSurfaceFormat::OpenGL);
  format.setVersion(3, 3);
  format.setProfile(QSurfaceFormat::CoreProfile);
  QSurfaceFormat::setDefaultFormat(format);
}

ImGuiWidget::ImGuiWidget(std::function<void()> draw, QWidget* parent)
    : QOpenGLWidget(parent), draw_(std::move(draw)) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(320, 200);
  ticker_.setInterval(16);
  connect(&ticker_, &QTimer::timeout, this, [this] {
    if (pending_frames_ <= 0) {
      ticker_.stop();
      return;
    }
    --pending_frames_;
    update();
  });
  clock_.start();
}

ImGuiWidget::~ImGuiWidget() {
  if (!context_) return;
  makeCurrent();
  {
    ContextScope scope(context_);
    if (ready_) ImGui_ImplOpenGL3_Shutdown();
  }
  ImGui::DestroyContext(context_);
  doneCurrent();
}

void ImGuiWidget::initializeGL() {
  IMGUI_CHECKVERSION();
  ImGuiContext* previous = ImGui::GetCurrentContext();
  context_ = ImGui::CreateContext();
  ImGui::SetCurrentContext(context_);
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // nothing written to the working folder
  io.LogFilename = nullptr;
  for (size_t i = 0; i < kSpecialKeys.size(); ++i)
    io.KeyMap[kSpecialKeys[i].first] = kSpecialBase + static_cast<int>(i);
  io.KeyMap[ImGuiKey_A] = 'A';
  io.KeyMap[ImGuiKey_C] = 'C';
  io.KeyMap[ImGuiKey_V] = 'V';
  io.KeyMap[ImGuiKey_X] = 'X';
  io.KeyMap[ImGuiKey_Y] = 'Y';
  io.KeyMap[ImGuiKey_Z] = 'Z';
  ImGui::StyleColorsDark();
  const QSurfaceFormat format = context()->format();
  if (format.majorVersion() * 10 + format.minorVersion() < 33 || context()->isOpenGLES()) {
    failure_ = tr("The profiler needs OpenGL 3.3; this display offers %1.%2%3")
                   .arg(format.majorVersion())
                   .arg(format.minorVersion())
                   .arg(context()->isOpenGLES() ? QStringLiteral(" ES") : QString());
  } else if (!ImGui_ImplOpenGL3_Init("#version 330 core")) {
    failure_ = tr("ImGui's OpenGL 3 renderer could not start");
  } else {
    ready_ = true;
  }
  ImGui::SetCurrentContext(previous);
}

void ImGuiWidget::paintGL() {
  QOpenGLFunctions* gl = context()->functions();
  gl->glClearColor(0.11f, 0.11f, 0.12f, 1.0f);
  gl->glClear(GL_COLOR_BUFFER_BIT);
  if (!ready_) return;
  ContextScope scope(context_);
  ImGuiIO& io = ImGui::GetIO();
  const qreal ratio = devicePixelRatioF();
  io.DisplaySize = ImVec2(static_cast<float>(width()), static_cast<float>(height()));
  io.DisplayFramebufferScale = ImVec2(static_cast<float>(ratio), static_cast<float>(ratio));
  const double elapsed = static_cast<double>(clock_.nsecsElapsed()) * 1e-9;
  clock_.restart();
  io.DeltaTime = static_cast<float>(elapsed > 1e-4 ? elapsed : 1e-4);
  apply_button_events();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui::NewFrame();
  if (draw_) draw_();
  ImGui::Render();
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  ++frames_;
  Q_EMIT frame_drawn();
}

void ImGuiWidget::animate() {
  pending_frames_ = 6;
  if (!ticker_.isActive()) ticker_.start();
  update();
}

void ImGuiWidget::mousePressEvent(QMouseEvent* event) {
  if (!context_) return;
  ContextScope scope(context_);
  ImGuiIO& io = ImGui::GetIO();
  if (int b = mouse_button(event->button()); b >= 0) queue_button(b, true, event->position());
  else io.MousePos = ImVec2(static_cast<float>(event->position().x()), static_cast<float>(event->position().y()));
  animate();
}

void ImGuiWidget::mouseReleaseEvent(QMouseEvent* event) {
  if (!context_) return;
  ContextScope scope(context_);
  ImGuiIO& io = ImGui::GetIO();
  if (int b = mouse_button(event->button()); b >= 0) queue_button(b, false, event->position());
  else io.MousePos = ImVec2(static_cast<float>(event->position().x()), static_cast<float>(event->position().y()));
  animate();
}

void ImGuiWidget::mouseMoveEvent(QMouseEvent* event) {
  if (!context_) return;
  ContextScope scope(context_);
  // While button changes wait for their frame, the move waits behind them (a drag starts where
  // its press was).
  if (button_events_.empty())
    ImGui::GetIO().MousePos =
        ImVec2(static_cast<float>(event->position().x()), static_cast<float>(event->position().y()));
  else
    button_events_.push_back({-1, false, static_cast<float>(event->position().x()),
                              static_cast<float>(event->position().y())});
  animate();
}

void ImGuiWidget::queue_button(int button, bool down, QPointF at) {
  button_events_.push_back({button, down, static_cast<float>(at.x()), static_cast<float>(at.y())});
}

void ImGuiWidget::apply_button_events() {
  ImGuiIO& io = ImGui::GetIO();
  bool changed[IM_ARRAYSIZE(io.MouseDown)] = {};
  size_t used = 0;
  for (; used < button_events_.size(); ++used) {
    const ButtonEvent& e = button_events_[used];
    if (e.button >= 0 && changed[e.button]) break;  // the next frame sees this one
    io.MousePos = ImVec2(e.x, e.y);
    if (e.button >= 0) {
      io.MouseDown[e.button] = e.down;
      changed[e.button] = true;
    }
  }
  button_events_.erase(button_events_.begin(), button_events_.begin() + static_cast<std::ptrdiff_t>(used));
  if (!button_events_.empty()) update();  // another frame for what is left
}

void ImGuiWidget::leaveEvent(QEvent* event) {
  QOpenGLWidget::leaveEvent(event);
  if (!context_) return;
  ContextScope scope(context_);
  ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  animate();
}

void ImGuiWidget::wheelEvent(QWheelEvent* event) {
  if (!context_) return;
  ContextScope scope(context_);
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = ImVec2(static_cast<float>(event->position().x()), static_cast<float>(event->position().y()));
  io.MouseWheel += static_cast<float>(event->angleDelta().y()) / 120.0f;
  io.MouseWheelH += static_cast<float>(event->angleDelta().x()) / 120.0f;
  event->accept();
  animate();
}

void ImGuiWidget::key(QKeyEvent* event, bool down) {
  if (!context_) return;
  ContextScope scope(context_);
  ImGuiIO& io = ImGui::GetIO();
  const Qt::KeyboardModifiers mods = event->modifiers();
  io.KeyCtrl = mods.testFlag(Qt::ControlModifier);
  io.KeyShift = mods.testFlag(Qt::ShiftModifier);
  io.KeyAlt = mods.testFlag(Qt::AltModifier);
  io.KeySuper = mods.testFlag(Qt::MetaModifier);
  if (int k = key_index(event->key()); k >= 0 && k < IM_ARRAYSIZE(io.KeysDown)) io.KeysDown[k] = down;
  if (down && !event->text().isEmpty() && event->text().at(0).isPrint())
    io.AddInputCharactersUTF8(event->text().toUtf8().constData());
  event->accept();
  animate();
}

bool ImGuiWidget::event(QEvent* event) {
  // Single-key shortcuts of the window (F: fit, Delete, ...) would steal typing in ImGui's search
  // box and the W/S/A/D keys: keys without Ctrl/Alt/Meta stay with this widget.
  if (event->type() == QEvent::ShortcutOverride) {
    auto* key_event = static_cast<QKeyEvent*>(event);
    // While ImGui edits text (the search box), its editing keys stay here too: Ctrl+A selects the
    // field's text, not every node of the canvas (Edit › Select All); Ctrl+C/V/X/Z likewise.
    bool typing = false;
    if (context_) {
      ContextScope scope(context_);
      typing = ImGui::GetIO().WantTextInput;
    }
    const bool editing_key = key_event->modifiers() == Qt::ControlModifier &&
                             (key_event->key() == Qt::Key_A || key_event->key() == Qt::Key_C ||
                              key_event->key() == Qt::Key_V || key_event->key() == Qt::Key_X ||
                              key_event->key() == Qt::Key_Z || key_event->key() == Qt::Key_Y);
    if (!(key_event->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier)) ||
        (typing && editing_key)) {
      event->accept();
      return true;
    }
  }
  return QOpenGLWidget::event(event);
}

void ImGuiWidget::keyPressEvent(QKeyEvent* event) { key(event, true); }
void ImGuiWidget::keyReleaseEvent(QKeyEvent* event) { key(event, false); }

}  // namespace tessera::studio
