// The memory plan chart: for one device, every planned buffer as a rectangle with its arena
// offset on the y axis (0 at the bottom) over its lifetime on the x axis (steps, from the step
// that writes it to its last reader; a pinned buffer lives to the end), with the arena size (the
// plan's peak) and the lifetime lower bound as labelled horizontal lines. A device selector
// above the plot picks the device; hovering a rectangle shows the buffer's label and size.
//
// Usage:
//   MemoryPlanChart chart;
//   chart.set_plans({{"cpu", plan.requests[0], plan.memory[0], int(plan.steps.size())}});
//   chart.buffer_rect(3);   // where buffer 3 is drawn (widget coordinates)
#pragma once

#include <QRectF>
#include <QWidget>
#include <string>
#include <vector>

#include "engine/stages/memory_plan.h"

class QComboBox;

namespace tessera::studio {

// One device's requests and their plan (stages::ExecutionPlan::requests / memory).
struct DeviceMemory {
  std::string device;
  std::vector<stages::BufferRequest> requests;
  stages::MemoryPlan plan;
  int num_steps = 0;  // steps of the whole execution plan (the x axis)
};

class MemoryPlanChart : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryPlanChart(QWidget* parent = nullptr);

  // Replaces the plans; shows the first device (none: an empty chart saying so).
  void set_plans(std::vector<DeviceMemory> plans);
  const std::vector<DeviceMemory>& plans() const { return plans_; }
  int current_device() const { return current_; }  // -1 when there is none
  void set_current_device(int index);
  QComboBox* device_selector() const { return selector_; }

  // Geometry, in widget coordinates, for the current device at the current size:
  // the plot area; request `i`'s rectangle (empty when out of range); the y of a byte offset.
  QRectF plot_rect() const;
  QRectF buffer_rect(int request) const;
  double y_of(size_t bytes) const;
  // The request under `pos` (the last drawn wins), -1 when none.
  int buffer_at(QPointF pos) const;

  static constexpr double kMarginLeft = 72, kMarginRight = 12, kMarginTop = 36, kMarginBottom = 28;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // tooltips

 private:
  const DeviceMemory* current() const;
  size_t y_max() const;  // bytes at the top of the plot

  std::vector<DeviceMemory> plans_;
  int current_ = -1;
  QComboBox* selector_;
};

// "1.5 MiB", "640 B".
QString format_bytes(size_t bytes);

}  // namespace tessera::studio
