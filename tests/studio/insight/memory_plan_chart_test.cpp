// Tests of studio/memory_plan_chart.cpp: the rectangles of a hand-made plan at a known widget
// size (x = steps, y = offsets from the bottom), a pinned buffer living to the end, the peak line,
// hit testing, the device selector, and byte formatting.
#include <QComboBox>
#include <QTest>

#include "tests/studio/qtest_main.h"
#include "studio/insight/memory_plan_chart.h"

using tessera::stages::BufferRequest;
using tessera::stages::MemoryPlan;
using tessera::studio::DeviceMemory;
using tessera::studio::format_bytes;
using tessera::studio::MemoryPlanChart;

namespace {

// 4 steps; A [0,1] at 0, B [1,2] at 1000, C [2,3] at 0 (A is dead), D pinned from 3 at 800.
DeviceMemory hand_plan() {
  DeviceMemory d;
  d.device = "cpu";
  d.num_steps = 4;
  d.requests = {{1000, 0, {1}, false, "a"}, {600, 1, {2}, false, "b"}, {800, 2, {3}, false, "c"},
                {160, 3, {}, true, "out"}};
  d.plan.offsets = {0, 1000, 0, 800};
  d.plan.arena_bytes = 1600;
  d.plan.lower_bound_bytes = 1600;
  d.plan.total_bytes = 2560;
  return d;
}

// The plot is 400 x 300 pixels at (72, 36): 100 pixels per step, 1600 bytes = 300 pixels.
void size_for_plot(MemoryPlanChart& c) {
  c.resize(static_cast<int>(MemoryPlanChart::kMarginLeft + MemoryPlanChart::kMarginRight + 400),
           static_cast<int>(MemoryPlanChart::kMarginTop + MemoryPlanChart::kMarginBottom + 300));
}

}  // namespace

class MemoryPlanChartTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void rectangles_follow_steps_and_offsets() {
    MemoryPlanChart c;
    c.set_plans({hand_plan()});
    size_for_plot(c);
    QCOMPARE(c.plot_rect(), QRectF(72, 36, 400, 300));
    // A: steps 0..1 -> x 72..272; bytes 0..1000 -> y 336 - 187.5 .. 336
    QCOMPARE(c.buffer_rect(0), QRectF(QPointF(72, 148.5), QPointF(272, 336)));
    // B: steps 1..2 -> x 172..372; bytes 1000..1600 -> y 36 .. 148.5
    QCOMPARE(c.buffer_rect(1), QRectF(QPointF(172, 36), QPointF(372, 148.5)));
    // C: steps 2..3 -> x 272..472; bytes 0..800 -> y 186 .. 336
    QCOMPARE(c.buffer_rect(2), QRectF(QPointF(272, 186), QPointF(472, 336)));
    // D, pinned: from step 3 to the end -> x 372..472; bytes 800..960 -> y 156 .. 186
    QCOMPARE(c.buffer_rect(3), QRectF(QPointF(372, 156), QPointF(472, 186)));
    QVERIFY(c.buffer_rect(4).isNull());
    QVERIFY(c.buffer_rect(-1).isNull());
    QCOMPARE(c.y_of(1600), 36.0);  // the peak line at the top of the plot
    QCOMPARE(c.y_of(0), 336.0);
  }

  void hit_testing_finds_the_buffer() {
    MemoryPlanChart c;
    c.set_plans({hand_plan()});
    size_for_plot(c);
    QCOMPARE(c.buffer_at(QPointF(300, 100)), 1);  // inside B
    QCOMPARE(c.buffer_at(QPointF(100, 300)), 0);  // inside A
    QCOMPARE(c.buffer_at(QPointF(420, 170)), 3);  // inside D
    QCOMPARE(c.buffer_at(QPointF(100, 60)), -1);  // free space above A
  }

  void device_selector_switches_plans() {
    MemoryPlanChart c;
    QCOMPARE(c.current_device(), -1);
    QVERIFY(c.buffer_rect(0).isNull());
    DeviceMemory other = hand_plan();
    other.device = "cuda:0";
    other.plan.arena_bytes = 3200;  // twice as tall: A's top at 336 - 300 * 1000 / 3200
    c.set_plans({hand_plan(), other});
    size_for_plot(c);
    QCOMPARE(c.device_selector()->count(), 2);
    QCOMPARE(c.current_device(), 0);
    c.device_selector()->setCurrentIndex(1);
    QCOMPARE(c.current_device(), 1);
    QCOMPARE(c.buffer_rect(0).top(), 336 - 300 * 1000.0 / 3200);
    c.set_current_device(0);
    QCOMPARE(c.device_selector()->currentText(), QString("cpu"));
    QCOMPARE(c.buffer_rect(0).top(), 148.5);
    c.set_plans({});
    QCOMPARE(c.current_device(), -1);
    QCOMPARE(c.device_selector()->count(), 0);
  }

  void paints_without_crashing() {
    MemoryPlanChart c;
    c.set_plans({hand_plan()});
    size_for_plot(c);
    QImage img = c.grab().toImage();
    QCOMPARE(img.size(), c.size());
    // B's fill is not the background.
    QVERIFY(img.pixelColor(300, 100) != img.pixelColor(100, 60));
  }

  void formats_bytes() {
    QCOMPARE(format_bytes(640), QString("640 B"));
    QCOMPARE(format_bytes(1536), QString("1.5 KiB"));
    QCOMPARE(format_bytes(3 * 1024 * 1024 / 2), QString("1.50 MiB"));
  }
};

TESSERA_QTEST(MemoryPlanChartTest)
#include "memory_plan_chart_test.moc"
