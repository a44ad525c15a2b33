// Colours and fonts of the graph canvas, in one place: the light and dark themes (View > Theme)
// change them here only. Sizes are scene pixels: the canvas zooms, so point sizes would mean nothing.
#pragma once

#include <QColor>
#include <QFont>
#include <string>

namespace tessera::studio::style {

// Header colour of a node box by its op's OpDef::category ("nn", "activation", "math", ...).
// Categories without a colour of their own get a stable one from a small palette; an op the
// registry does not know is grey.
QColor category_colour(const std::string& category);
QColor unknown_op_colour();

// The canvas's colours in one theme. The header colours (category_colour) are the same in both
// themes: white text on them reads on either background.
struct CanvasColours {
  QColor background, box_fill, box_border, terminal_fill, terminal_border, text, muted_text, edge,
      untyped_edge, error, label_plate, accent;
};

enum class Theme { kLight, kDark };

const CanvasColours& colours_for(Theme theme);
// The theme the canvas draws with. Like QApplication's palette (which the window sets with it,
// studio/theme.h) this is process-wide: one studio window per process, and items paint without a
// way to reach their window. Set it only from the UI thread; redraw the scene after a change.
const CanvasColours& colours();
Theme current_theme();
void set_current_theme(Theme theme);

// The canvas font at a pixel size (the application's family, so it matches the menus).
QFont canvas_font(int pixel_size, bool bold = false);
// A fixed-pitch font for types and shapes ("f32[N, 6, 24, 24]").
QFont type_font(int pixel_size);

inline constexpr int kTitlePx = 14;   // op name in a node header
inline constexpr int kNamePx = 12;    // node name, terminal names
inline constexpr int kDetailPx = 11;  // param rows, edge labels, captions

}  // namespace tessera::studio::style
