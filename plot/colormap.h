// Colours for figures: colormaps that turn a value into a colour, and the palette that tells line
// series apart.
#pragma once

#include "plot/image.h"

namespace qkv::plot {

enum class Colormap {
  Viridis,       // sequential, dark purple to yellow; perceptually uniform (matplotlib's default)
  Blues,         // sequential, near-white to dark blue (ColorBrewer "Blues"); suits counts
  BlueWhiteRed,  // diverging, blue (low) through white (middle) to red (high), for signed data
                 // such as positional encodings (ColorBrewer "RdBu", reversed)
};

// The colour at position t of a colormap; t = 0 is the low end, 1 the high end, and t is clamped
// to [0, 1] (NaN counts as 0).
Rgb colormap_color(Colormap map, double t);

// The colour of line series i (i >= 0): matplotlib's "tab10" palette, repeating after ten.
Rgb series_color(int i);

}  // namespace qkv::plot
