// Colours and fonts of the graph canvas, in one place so that a theme (a later issue) changes
// them here only. Sizes are scene pixels: the canvas zooms, so point sizes would mean nothing.
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

inline const QColor kCanvasBackground{0xf4, 0xf5, 0xf7};
inline const QColor kBoxFill{0xff, 0xff, 0xff};
inline const QColor kBoxBorder{0x8a, 0x93, 0xa0};
inline const QColor kTerminalFill{0xe6, 0xec, 0xf3};
inline const QColor kTerminalBorder{0x5b, 0x67, 0x78};
inline const QColor kText{0x1f, 0x25, 0x2d};
inline const QColor kMutedText{0x6b, 0x74, 0x80};
inline const QColor kEdge{0x5f, 0x68, 0x75};
inline const QColor kUntypedEdge{0xa8, 0xae, 0xb6};
inline const QColor kError{0xd0, 0x21, 0x21};

// The canvas font at a pixel size (the application's family, so it matches the menus).
QFont canvas_font(int pixel_size, bool bold = false);
// A fixed-pitch font for types and shapes ("f32[N, 6, 24, 24]").
QFont type_font(int pixel_size);

inline constexpr int kTitlePx = 14;   // op name in a node header
inline constexpr int kNamePx = 12;    // node name, terminal names
inline constexpr int kDetailPx = 11;  // param rows, edge labels, captions

}  // namespace tessera::studio::style
