#include "client/preview.h"

#include <png.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/local.h"
#include "client/output.h"
#include "server/convert.h"

namespace scatter::client {
namespace {

using Rgb = std::array<std::uint8_t, 3>;

// Distinct, print-safe colours for layers in placement order.
constexpr Rgb kPalette[] = {{27, 94, 32},  {121, 85, 72}, {139, 195, 74},
                            {33, 150, 243}, {255, 152, 0}, {156, 39, 176},
                            {0, 150, 136}, {233, 30, 99}};

class Canvas {
 public:
  Canvas(int width, int height)
      : width_(width), height_(height),
        pixels_(static_cast<std::size_t>(width) * height, Rgb{255, 255, 255}) {}
  int width() const { return width_; }
  int height() const { return height_; }
  Rgb& at(int x, int y) { return pixels_[static_cast<std::size_t>(y) * width_ + x]; }
  void Disk(double cx, double cy, double r, Rgb colour) {
    const int x0 = std::max(0, static_cast<int>(std::floor(cx - r)));
    const int x1 = std::min(width_ - 1, static_cast<int>(std::ceil(cx + r)));
    const int y0 = std::max(0, static_cast<int>(std::floor(cy - r)));
    const int y1 = std::min(height_ - 1, static_cast<int>(std::ceil(cy + r)));
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) {
        const double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
        if (dx * dx + dy * dy <= r * r) at(x, y) = colour;
      }
    }
  }
  // The outline where it crosses each row and each column of the canvas
  // within r of the centre: time in the part of the canvas it spans,
  // whatever r is (8 r steps around it took 57 s for an obstacle of
  // 2.6e8 pixels whose edge crossed the picture, and 8 r overflowed an int
  // past that; found by a review helper).
  void Circle(double cx, double cy, double r, Rgb colour) {
    auto plot = [&](double x, double y) {
      if (x >= 0 && y >= 0 && x < width_ && y < height_) {
        at(static_cast<int>(x), static_cast<int>(y)) = colour;
      }
    };
    // Pixel centres within r of c along one axis: [first, last], clipped
    // to [0, size).
    auto span = [&](double c, int size, int* first, int* last) {
      const double lo = std::max(0.0, std::ceil(c - r - 0.5));
      const double hi = std::min(size - 1.0, std::floor(c + r - 0.5));
      if (!(lo <= hi)) return false;
      *first = static_cast<int>(lo);
      *last = static_cast<int>(hi);
      return true;
    };
    const double r2 = r * r;
    int first = 0, last = 0;
    if (span(cy, height_, &first, &last)) {
      for (int y = first; y <= last; ++y) {
        const double dy = y + 0.5 - cy;
        const double w = std::sqrt(std::max(0.0, r2 - dy * dy));
        plot(cx - w, y);
        plot(cx + w, y);
      }
    }
    if (span(cx, width_, &first, &last)) {
      for (int x = first; x <= last; ++x) {
        const double dx = x + 0.5 - cx;
        const double h = std::sqrt(std::max(0.0, r2 - dx * dx));
        plot(x, cy - h);
        plot(x, cy + h);
      }
    }
    // A circle under a pixel: its centre.
    if (r < 1) plot(cx, cy);
  }
  // Through a temporary file renamed over `path` (output.h), so `path`
  // keeps its old picture until the new one is whole.
  absl::Status Save(const std::string& path) const {
    absl::StatusOr<std::string> target = WritePathFor(path);
    if (!target.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--preview: ", target.status().message()));
    }
    absl::Status written = SaveTo(*target, path);
    if (!written.ok()) {
      DiscardTemporary(*target, path);
      return written;
    }
    return CommitTemporary(*target, path);
  }

 private:
  // Writes the picture to `path`; errors name `shown` (the file the user
  // asked for, not its temporary stand-in) and why.
  absl::Status SaveTo(const std::string& path, const std::string& shown) const {
    bool stream = false;
    std::FILE* file = OpenForWriting(path, &stream);
    if (file == nullptr) {
      return absl::UnavailableError(absl::StrCat(
          "--preview: cannot write ", shown, ": ", std::strerror(errno)));
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr,
                                              nullptr);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
      png_destroy_write_struct(&png, &info);
      std::fclose(file);
      return absl::UnavailableError(
          absl::StrCat("--preview: cannot write the PNG ", shown));
    }
    png_init_io(png, file);
    png_set_IHDR(png, info, static_cast<png_uint_32>(width_),
                 static_cast<png_uint_32>(height_), 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < height_; ++y) {
      png_write_row(png, reinterpret_cast<png_const_bytep>(
                             &pixels_[static_cast<std::size_t>(y) * width_]));
    }
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    return std::fclose(file) == 0 ? absl::OkStatus()
                                  : absl::UnavailableError(absl::StrCat(
                                        "--preview: cannot write ", shown, ": ",
                                        std::strerror(errno)));
  }

  int width_, height_;
  std::vector<Rgb> pixels_;
};

Rgb Mix(Rgb a, Rgb b, double t) {
  Rgb out;
  for (int i = 0; i < 3; ++i) {
    out[i] = static_cast<std::uint8_t>(std::lround(a[i] * (1 - t) + b[i] * t));
  }
  return out;
}

}  // namespace

absl::Status CheckPreviewSize(int size) {
  if (size < 16 || size > 8192) {
    return absl::InvalidArgumentError(
        absl::StrCat("--preview_size: expected 16 to 8192, got ", size));
  }
  return absl::OkStatus();
}

absl::Status CheckPreviewWritable(const std::string& path) {
  absl::StatusOr<std::string> target = WritePathFor(path);
  if (!target.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--preview: ", target.status().message()));
  }
  // A device or a FIFO is written in place, when the picture is ready (a
  // FIFO would block here until someone reads it).
  if (*target == path) return absl::OkStatus();
  std::FILE* file = std::fopen(target->c_str(), "wb");
  const int error = errno;
  const bool opened = file != nullptr;
  if (opened) std::fclose(file);
  DiscardTemporary(*target, path);
  if (!opened) {
    return absl::UnavailableError(absl::StrCat("--preview: cannot write ", path,
                                               ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::Status WritePreview(const std::string& path, const v1::ScatterRequest& request,
                          const v1::PointBatch& points, int size) {
  const absl::Status size_ok = CheckPreviewSize(size);
  if (!size_ok.ok()) return size_ok;
  absl::StatusOr<server::ScatterJob> job = LocalJob(request);
  if (!job.ok()) return job.status();
  const sampler::Region& region = job->region;
  const sampler::Box& box = region.bounds();
  const int dims = region.dims();
  const double scale = size / std::max(box.extent(0), box.extent(1));
  Canvas canvas(std::max(1, static_cast<int>(std::lround(box.extent(0) * scale))),
                std::max(1, static_cast<int>(std::lround(box.extent(1) * scale))));
  auto world = [&](int x, int y, double out[3]) {
    out[0] = box.min(0) + (x + 0.5) / scale;
    out[1] = box.max(1) - (y + 0.5) / scale;  // Row 0 is the top (north).
  };

  // The region: inside shaded (any of 8 depths in 3D), outline where inside
  // meets outside.
  std::vector<char> inside(static_cast<std::size_t>(canvas.width()) * canvas.height());
  for (int y = 0; y < canvas.height(); ++y) {
    for (int x = 0; x < canvas.width(); ++x) {
      double p[3];
      world(x, y, p);
      bool in = false;
      for (int k = 0; k < (dims == 3 ? 8 : 1) && !in; ++k) {
        p[2] = dims == 3 ? box.min(2) + (k + 0.5) * box.extent(2) / 8 : 0;
        in = region.Contains(p);
      }
      inside[static_cast<std::size_t>(y) * canvas.width() + x] = in;
      if (in) canvas.at(x, y) = {236, 240, 232};
    }
  }
  // A density raster underlay (the first layer that has one): greener where
  // denser.
  for (const sampler::LayerSpec& spec : job->layers) {
    if (spec.options.density == nullptr) continue;
    for (int y = 0; y < canvas.height(); ++y) {
      for (int x = 0; x < canvas.width(); ++x) {
        if (!inside[static_cast<std::size_t>(y) * canvas.width() + x]) continue;
        double p[3];
        world(x, y, p);
        const double d = std::clamp(spec.options.density->Sample(p[0], p[1]), 0.0, 1.0);
        canvas.at(x, y) = Mix({244, 246, 240}, {176, 206, 150}, d);
      }
    }
    break;
  }
  for (int y = 0; y < canvas.height(); ++y) {
    for (int x = 0; x < canvas.width(); ++x) {
      const bool in = inside[static_cast<std::size_t>(y) * canvas.width() + x];
      const bool edge =
          (x + 1 < canvas.width() &&
           inside[static_cast<std::size_t>(y) * canvas.width() + x + 1] != in) ||
          (y + 1 < canvas.height() &&
           inside[static_cast<std::size_t>(y + 1) * canvas.width() + x] != in);
      if (edge) canvas.at(x, y) = {60, 60, 60};
    }
  }
  for (const sampler::Obstacle& o : job->shared.obstacles) {
    canvas.Circle((o.center[0] - box.min(0)) * scale, (box.max(1) - o.center[1]) * scale,
                  o.radius * scale, {200, 40, 40});
  }

  // Layers in placement order get palette colours.
  std::vector<std::uint32_t> order;
  for (const sampler::LayerSpec& spec : job->layers) order.push_back(spec.layer);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    auto spacing = [&](std::uint32_t id) {
      for (const auto& s : job->layers) if (s.layer == id) return s.options.radius;
      return 0.0;
    };
    return spacing(a) > spacing(b);
  });
  const int n = points.id_size();
  std::vector<int> draw(static_cast<std::size_t>(n));
  std::iota(draw.begin(), draw.end(), 0);
  const double z_mid = dims == 3 ? box.min(2) + box.extent(2) / 2 : 0;
  if (dims == 3) {
    // Faint dots first, the slab over them.
    auto slab = [&](int i) {
      return std::abs(points.coords(3 * i + 2) - z_mid) <= 0.5 * points.radius(i);
    };
    std::stable_partition(draw.begin(), draw.end(), [&](int i) { return !slab(i); });
  }
  for (int i : draw) {
    const auto at = std::find(order.begin(), order.end(), points.layer(i));
    Rgb colour = kPalette[static_cast<std::size_t>(at - order.begin()) % 8];
    double r = std::max(0.75, 0.35 * points.radius(i) * scale);
    if (dims == 3) {
      // A slab through the middle depth at full colour, the rest
      // faint dots: exclusions inside the volume then show.
      if (std::abs(points.coords(3 * i + 2) - z_mid) > 0.5 * points.radius(i)) {
        colour = Mix(colour, {255, 255, 255}, 0.8);
        r = 0.75;
      }
    }
    canvas.Disk((points.coords(dims * i) - box.min(0)) * scale,
                (box.max(1) - points.coords(dims * i + 1)) * scale, r, colour);
  }
  return canvas.Save(path);
}

}  // namespace scatter::client
