// The device chooser of the Run and Train panels: "auto" (the first GPU when there is one, else
// the CPU), "cpu", and each CUDA device found; without a GPU, the tooltip says why there is none.
#pragma once

#include <string>

class QComboBox;
class QWidget;

namespace tessera::studio {

// A combo box of the device choices, "auto" selected.
QComboBox* make_device_choice(QWidget* parent);
// The choice as SessionOptions::device takes it ("auto", "cpu", "cuda:0").
std::string device_choice(const QComboBox* box);

}  // namespace tessera::studio
