// The value view: one tensor of the last run, as MindInsight's debugger and Netron's tensor view
// show it. Click an edge on the canvas after a run (Run panel, "Keep every value") and the dock
// shows the value's name, type and shape; its statistics (min, max, mean, standard deviation,
// zeros, NaN and infinities); a histogram of its finite values (64 bins); a heatmap of one 2-D
// slice (the last two dims; a spin box picks the slice among the leading dims); and Save as .npy.
//
// Usage:
//   ValueView view;
//   view.set_value(QStringLiteral("/conv1/Conv_output_0"), tensor);   // a copy is kept
//   view.stats().max;  view.histogram();  view.heatmap();            // what is drawn
//   view.save(QStringLiteral("/tmp/x.npy"));                          // errors name the file
#pragma once

#include <QImage>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

class QLabel;
class QPushButton;
class QSpinBox;

namespace tessera::studio {

struct ValueStats {
  int64_t count = 0, finite = 0, nans = 0, infs = 0, zeros = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;  // over the finite values
};

// Statistics and a histogram (`bins` equal bins from min to max of the finite values; all in the
// first bin when they are equal) of a tensor of any dtype.
ValueStats value_stats(const Tensor& t);
std::vector<int64_t> value_histogram(const Tensor& t, const ValueStats& stats, int bins);

class ValueView : public QWidget {
  Q_OBJECT

 public:
  explicit ValueView(QWidget* parent = nullptr);

  void set_value(const QString& name, const Tensor& value);
  void clear(const QString& note = {});  // nothing shown; `note` says why
  bool has_value() const { return has_value_; }
  const QString& name() const { return name_; }
  const ValueStats& stats() const { return stats_; }
  const std::vector<int64_t>& histogram() const { return histogram_; }
  // The 2-D slice shown (rank >= 2: the last two dims; rank 1: one row; scalars: none) and which
  // of the leading slices it is.
  const QImage& heatmap() const { return heatmap_; }
  int slice_count() const { return slices_; }
  void set_slice(int index);
  QString summary_text() const;  // the lines above the pictures (without a value: the note)
  // The histogram's axis (the highest count, then the values at its left end, middle and right
  // end) and the heatmap's colour scale (its lowest, middle and highest value; -b, 0, b when
  // diverging), as drawn; empty when nothing is shown.
  QStringList histogram_axis() const;
  QStringList colour_scale() const;
  Status save(const QString& path) const;

  static constexpr int kBins = 64;

 private:
  void draw_slice();

  QString name_;
  Tensor value_;
  bool has_value_ = false;
  ValueStats stats_;
  std::vector<int64_t> histogram_;
  QImage heatmap_;
  int slices_ = 0;
  QLabel* summary_ = nullptr;
  QWidget* histogram_view_ = nullptr;
  QLabel* heatmap_view_ = nullptr;
  QWidget* colour_bar_ = nullptr;
  QSpinBox* slice_box_ = nullptr;
  QLabel* slice_label_ = nullptr;
  QPushButton* save_button_ = nullptr;
};

}  // namespace tessera::studio
