#include "client/output.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace scatter::client {
namespace {

constexpr char kRawMagic[8] = {'S', 'C', 'A', 'T', 'R', 'A', 'W', '1'};

// The directory for temporary files: $TMPDIR when set, else /tmp.
std::string TemporaryDirectory() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

// A stream on descriptor `fd`, which it then owns; null (fd closed,
// errno kept) when fdopen fails.
std::FILE* StreamOf(int fd, const char* mode) {
  std::FILE* file = fdopen(fd, mode);
  if (file == nullptr) {
    const int error = errno;
    close(fd);
    errno = error;
  }
  return file;
}

// An unnamed temporary file in TemporaryDirectory(), removed from it at
// once (std::tmpfile would ignore TMPDIR and fill /tmp), on a descriptor
// of 3 or more (with stdout closed, mkstemp took descriptor 1, and a PLY
// body meant for stdout went into the deleted file, with status 0). Null
// with errno set when it cannot be made.
std::FILE* UnnamedTemporaryFile() {
  std::string path = TemporaryDirectory() + "/scatter-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) return nullptr;
  unlink(path.c_str());
  if (fd <= STDERR_FILENO) {
    const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    const int error = errno;
    close(fd);
    if (moved < 0) {
      errno = error;
      return nullptr;
    }
    fd = moved;
  }
  return StreamOf(fd, "w+b");
}

absl::Status IoError(const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
}

template <typename T>
void PutLittleEndian(T value, std::string* out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // x86-64 and ARM64 are little-endian.
  out->append(bytes, sizeof(T));
}

template <typename T>
T GetLittleEndian(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

// The PLY header for `count` points, of one length for every count: the
// comment line is padded to make up for the count's digits, so the header
// written first (count 0) is rewritten in place at the end.
std::string PlyHeader(std::uint64_t count) {
  const std::string digits = absl::StrCat(count);
  return absl::StrCat(
      "ply\nformat binary_little_endian 1.0\ncomment scatter points",
      std::string(20 - digits.size(), ' '), "\nelement vertex ", digits,
      "\nproperty double x\nproperty double y\nproperty double z\n"
      "property uint layer\nproperty double radius\nproperty uint id_lo\n"
      "property uint id_hi\nproperty double yaw\nproperty double scale\n"
      "end_header\n");
}

// Whether `file` is a regular file, which a PLY header can be rewritten in
// (stdout is not asked: redirected to a file, it may start past offset 0 or
// append).
bool Seekable(std::FILE* file) {
  struct stat info;
  return fstat(fileno(file), &info) == 0 && S_ISREG(info.st_mode);
}

class FileWriter : public PointWriter {
 public:
  // `stream`: a descriptor the process was given (stdout, /dev/fd/N),
  // written where it stands, which may be past offset 0 or appending.
  FileWriter(Format format, std::string path, std::FILE* file, int dims,
             bool stream = false)
      : format_(format),
        path_(std::move(path)),
        file_(file),
        run_dims_(dims),
        ply_in_place_(format == Format::kPly && file != stdout && !stream &&
                      Seekable(file)) {}
  ~FileWriter() override {
    Close();
    if (body_file_ != nullptr) std::fclose(body_file_);
  }

  absl::Status Write(const v1::PointBatch& batch) override {
    const int dims = static_cast<int>(batch.dims());
    if (dims_ == 0) Start(dims);
    const int n = batch.id_size();
    if (batch.radius_size() != n || batch.layer_size() != n ||
        batch.yaw_size() != n || batch.scale_size() != n ||
        batch.coords_size() != n * dims) {
      return absl::InvalidArgumentError("a batch without every per-point array");
    }
    char number[32];
    auto put = [&](double v) {
      // The shortest text that reads back as the same double (and 4x faster
      // than printf's %.17g).
      const std::to_chars_result end = std::to_chars(number, number + sizeof number, v);
      buffer_.append(number, end.ptr);
    };
    for (int i = 0; i < n; ++i) {
      const double* c = batch.coords().data() + i * dims;
      switch (format_) {
        case Format::kCsv:
          for (int d = 0; d < dims; ++d) {
            put(c[d]);
            buffer_ += ',';
          }
          absl::StrAppend(&buffer_, batch.layer(i), ",");
          put(batch.radius(i));
          absl::StrAppend(&buffer_, ",", batch.id(i), ",");
          put(batch.yaw(i));
          buffer_ += ',';
          put(batch.scale(i));
          buffer_ += '\n';
          break;
        case Format::kJsonLines: {
          static constexpr const char* kAxes[] = {"{\"x\":", ",\"y\":", ",\"z\":"};
          for (int d = 0; d < dims; ++d) {
            buffer_ += kAxes[d];
            put(c[d]);
          }
          absl::StrAppend(&buffer_, ",\"layer\":", batch.layer(i), ",\"radius\":");
          put(batch.radius(i));
          // A string, as protobuf's JSON mapping writes 64-bit integers: JSON
          // readers that hold numbers as doubles (JavaScript, jq) would
          // round an id past 2^53.
          absl::StrAppend(&buffer_, ",\"id\":\"", batch.id(i), "\",\"yaw\":");
          put(batch.yaw(i));
          buffer_ += ",\"scale\":";
          put(batch.scale(i));
          buffer_ += "}\n";
          break;
        }
        case Format::kPly:
          for (int d = 0; d < 3; ++d) {
            PutLittleEndian<double>(d < dims ? c[d] : 0, &buffer_);
          }
          PutLittleEndian<std::uint32_t>(batch.layer(i), &buffer_);
          PutLittleEndian<double>(batch.radius(i), &buffer_);
          PutLittleEndian<std::uint32_t>(
              static_cast<std::uint32_t>(batch.id(i)), &buffer_);
          PutLittleEndian<std::uint32_t>(
              static_cast<std::uint32_t>(batch.id(i) >> 32), &buffer_);
          PutLittleEndian<double>(batch.yaw(i), &buffer_);
          PutLittleEndian<double>(batch.scale(i), &buffer_);
          break;
        case Format::kRaw:
          for (int d = 0; d < dims; ++d) PutLittleEndian<double>(c[d], &buffer_);
          PutLittleEndian<std::uint32_t>(batch.layer(i), &buffer_);
          PutLittleEndian<double>(batch.radius(i), &buffer_);
          PutLittleEndian<std::uint64_t>(batch.id(i), &buffer_);
          PutLittleEndian<double>(batch.yaw(i), &buffer_);
          PutLittleEndian<double>(batch.scale(i), &buffer_);
          break;
      }
    }
    count_ += static_cast<std::uint64_t>(n);
    return Flush(false);
  }

  absl::Status Finish() override {
    // A run without points still gets its header.
    if (dims_ == 0) Start(run_dims_);
    absl::Status status = Flush(true);
    if (!status.ok()) return status;
    if (format_ == Format::kPly) {
      // The header counts the points: rewritten over the first one, or
      // written before the points kept aside.
      const std::string header = PlyHeader(count_);
      if (ply_in_place_) {
        if (std::fseek(file_, 0, SEEK_SET) != 0 ||
            std::fwrite(header.data(), 1, header.size(), file_) !=
                header.size()) {
          return IoError(path_);
        }
      } else {
        if (std::fwrite(header.data(), 1, header.size(), file_) !=
            header.size()) {
          return IoError(path_);
        }
        // No temporary file when no point came (Flush makes it for the
        // first): the header is the whole file. (Read from none, every such
        // run to a pipe crashed.)
        if (body_file_ != nullptr) {
          absl::Status copied = CopyBody();
          if (!copied.ok()) return copied;
        }
      }
    }
    if (std::fflush(file_) != 0) return IoError(path_);
    return absl::OkStatus();
  }

  // Closes the file (never stdout). False when the close failed.
  bool Close() {
    const bool closed =
        file_ == nullptr || file_ == stdout || std::fclose(file_) == 0;
    file_ = nullptr;
    return closed;
  }

 private:
  // Appends the PLY points kept in the temporary file to the file.
  absl::Status CopyBody() {
    const absl::Status unreadable = absl::UnavailableError(
        "cannot read back the PLY points kept in a temporary file");
    if (std::fseek(body_file_, 0, SEEK_SET) != 0) return unreadable;
    std::vector<char> block(std::size_t{1} << 20);
    for (;;) {
      const std::size_t n =
          std::fread(block.data(), 1, block.size(), body_file_);
      if (n > 0 && std::fwrite(block.data(), 1, n, file_) != n) {
        return IoError(path_);
      }
      if (n < block.size()) break;
    }
    return std::ferror(body_file_) ? unreadable : absl::OkStatus();
  }

  // The header a format opens with; PLY's counts no point yet, and is
  // rewritten by Finish (or, not in place, written there).
  void Start(int dims) {
    dims_ = dims;
    if (ply_in_place_) buffer_ = PlyHeader(0);
    if (format_ == Format::kCsv) {
      buffer_ = dims == 3 ? "x,y,z" : "x,y";
      buffer_ += ",layer,radius,id,yaw,scale\n";
    } else if (format_ == Format::kRaw) {
      buffer_.append(kRawMagic, 8);
      PutLittleEndian<std::uint32_t>(static_cast<std::uint32_t>(dims), &buffer_);
    }
  }

  // Writes the buffer out once it holds 1 MiB, or `all` of it: to the
  // file, or the points of a PLY file that is not written in place to an
  // unnamed temporary file (UnnamedTemporaryFile), which Finish copies after
  // the header.
  absl::Status Flush(bool all) {
    if (!all && buffer_.size() < (std::size_t{1} << 20)) return absl::OkStatus();
    if (buffer_.empty()) return absl::OkStatus();
    std::FILE* to = file_;
    if (format_ == Format::kPly && !ply_in_place_) {
      if (body_file_ == nullptr) body_file_ = UnnamedTemporaryFile();
      if (body_file_ == nullptr) {
        return absl::UnavailableError(absl::StrCat(
            "cannot make a temporary file in ", TemporaryDirectory(),
            " (set TMPDIR to choose another directory) for the PLY points of ",
            path_, ": ", std::strerror(errno)));
      }
      to = body_file_;
    }
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), to) != buffer_.size()) {
      return to == file_ ? IoError(path_)
                         : absl::UnavailableError(absl::StrCat(
                               "cannot write the PLY points of ", path_,
                               " to a temporary file: ", std::strerror(errno)));
    }
    buffer_.clear();
    return absl::OkStatus();
  }

  const Format format_;
  const std::string path_;
  std::FILE* file_;
  const int run_dims_;  // For the header of a file without points.
  int dims_ = 0;
  // PLY into a regular file: header first (PlyHeader(0)), rewritten at the
  // end. Otherwise the points wait in body_file_.
  const bool ply_in_place_;
  std::FILE* body_file_ = nullptr;
  std::uint64_t count_ = 0;
  std::string buffer_;
};

void AddPoint(v1::PointBatch* out, const double* c, int dims, std::uint32_t layer,
              double radius, std::uint64_t id, double yaw, double scale) {
  for (int d = 0; d < dims; ++d) out->add_coords(c[d]);
  out->add_layer(layer);
  out->add_radius(radius);
  out->add_id(id);
  out->add_yaw(yaw);
  out->add_scale(scale);
}

absl::StatusOr<v1::PointBatch> ReadText(Format format, const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  v1::PointBatch out;
  std::string line;
  int dims = 0;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::vector<std::string> fields;
    if (format == Format::kCsv) {
      if (number == 1) {
        dims = absl::StartsWith(line, "x,y,z,") ? 3 : 2;
        continue;
      }
      fields = absl::StrSplit(line, ',');
    } else {
      // {"x":1,"y":2,...}: the values in order, keys checked by count.
      for (absl::string_view part : absl::StrSplit(line, ',')) {
        const std::size_t colon = part.find(':');
        std::string value(part.substr(colon + 1));
        if (!value.empty() && value.back() == '}') value.pop_back();
        // The id is a quoted string.
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
          value = value.substr(1, value.size() - 2);
        }
        fields.push_back(value);
      }
      dims = absl::StrContains(line, "\"z\":") ? 3 : 2;
    }
    if (fields.size() != static_cast<std::size_t>(dims) + 5) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", number, ": expected ", dims + 5, " fields"));
    }
    double c[3], radius, yaw, scale;
    std::uint32_t layer;
    std::uint64_t id;
    bool ok = true;
    for (int d = 0; d < dims; ++d) ok &= absl::SimpleAtod(fields[d], &c[d]);
    ok &= absl::SimpleAtoi(fields[dims], &layer) &&
          absl::SimpleAtod(fields[dims + 1], &radius) &&
          absl::SimpleAtoi(fields[dims + 2], &id) &&
          absl::SimpleAtod(fields[dims + 3], &yaw) &&
          absl::SimpleAtod(fields[dims + 4], &scale);
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", number, ": bad number"));
    }
    AddPoint(&out, c, dims, layer, radius, id, yaw, scale);
  }
  out.set_dims(static_cast<std::uint32_t>(dims == 0 ? 2 : dims));
  return out;
}

}  // namespace

absl::StatusOr<Format> ParseFormat(const std::string& name) {
  if (name == "csv") return Format::kCsv;
  if (name == "jsonl") return Format::kJsonLines;
  if (name == "ply") return Format::kPly;
  if (name == "raw") return Format::kRaw;
  return absl::InvalidArgumentError(
      absl::StrCat("--format: expected csv, jsonl, ply or raw, got \"", name, "\""));
}

namespace {

// The temporary files being written (WritePathFor to CommitTemporary or
// DiscardTemporary), for RemoveTemporariesOnSignals: a process killed by
// Ctrl-C or SIGTERM runs no destructor, and left a hidden file of up to
// the whole output behind, under a name no later run reuses. Fixed slots,
// so the handler only reads memory and calls unlink; a path that finds no
// slot (more than kTempSlots at once, or too long) is only left to the
// writer's own clean-up, as before.
constexpr int kTempSlots = 64;
constexpr std::size_t kTempPathMax = 4096;
char temp_paths[kTempSlots][kTempPathMax];
std::atomic<bool> temp_used[kTempSlots];
ABSL_CONST_INIT absl::Mutex temp_mu(absl::kConstInit);  // Not the handler's.

void RegisterTemporary(const std::string& path) {
  if (path.size() >= kTempPathMax) return;
  absl::MutexLock lock(&temp_mu);
  for (int i = 0; i < kTempSlots; ++i) {
    if (temp_used[i].load()) continue;
    std::memcpy(temp_paths[i], path.c_str(), path.size() + 1);
    temp_used[i].store(true);  // After the path: the handler reads it whole.
    return;
  }
}

void UnregisterTemporary(const std::string& path) {
  absl::MutexLock lock(&temp_mu);
  for (int i = 0; i < kTempSlots; ++i) {
    if (temp_used[i].load() && path == temp_paths[i]) {
      temp_used[i].store(false);
      return;
    }
  }
}

extern "C" void RemoveTemporariesAndDie(int signal_number) {
  for (int i = 0; i < kTempSlots; ++i) {
    if (temp_used[i].load()) unlink(temp_paths[i]);
  }
  // Then die of the signal, as without the handler (the exit status says
  // which). As process 1 (a container's `exec scatter`), the kernel
  // ignores a signal whose action is the default, so the export went on
  // until SIGKILL (found by a review helper): exit with the status a
  // shell gives a command killed by it.
  if (getpid() == 1) _exit(128 + signal_number);
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

// A FileWriter on a hidden temporary file beside `path` (unique to this
// writer), renamed over `path` by Finish after an fsync: `path` holds the
// old file or the whole new one, never a part of it, even across a crash.
// Destroyed unfinished (the run failed), it removes the temporary file.
class ReplacingWriter final : public PointWriter {
 public:
  ReplacingWriter(std::unique_ptr<FileWriter> file, std::string temp,
                  std::string path)
      : file_(std::move(file)), temp_(std::move(temp)), path_(std::move(path)) {}
  ~ReplacingWriter() override {
    if (file_ == nullptr) return;
    file_.reset();
    DiscardTemporary(temp_, path_);
  }

  absl::Status Write(const v1::PointBatch& batch) override {
    return file_->Write(batch);
  }

  absl::Status Finish() override {
    absl::Status done = file_->Finish();
    if (done.ok() && !file_->Close()) done = IoError(path_);
    file_.reset();
    if (!done.ok()) {
      DiscardTemporary(temp_, path_);
      return done;
    }
    return CommitTemporary(temp_, path_);
  }

 private:
  std::unique_ptr<FileWriter> file_;  // Null once finished.
  const std::string temp_;
  const std::string path_;
};

}  // namespace

namespace {

// One step of FollowLinks: what the link `path` names, or `path` itself
// when it is not a link or cannot be read.
std::string FollowLinks1(const std::string& path) {
  struct stat info;
  if (lstat(path.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return path;
  // /proc's links say a size of 0 (or 64): read into room enough.
  std::string target(
      std::max<std::size_t>(static_cast<std::size_t>(info.st_size), 4096) + 1,
      '\0');
  const ssize_t n = readlink(path.c_str(), target.data(), target.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) return path;
  target.resize(static_cast<std::size_t>(n));
  const std::size_t slash = path.rfind('/');
  return target[0] == '/' || slash == std::string::npos
             ? target
             : absl::StrCat(path.substr(0, slash + 1), target);
}

// `path` with the symlinks it ends in followed (a chain of them, each
// relative to its own directory), so a file replaced through a link is
// the link's target and the link stays. A dangling link gives the path its
// target would have; a loop gives up after 40 steps, as the kernel does.
std::string FollowLinks(std::string path) {
  for (int step = 0; step < 40; ++step) {
    const std::string next = FollowLinks1(path);
    if (next == path) break;
    path = next;
  }
  return path;
}

// The descriptor N when `path` is /dev/fd/N, /proc/self/fd/N or
// /proc/PID/fd/N of this process.
std::optional<int> DescriptorIn(const std::string& path) {
  absl::string_view rest = path;
  if (!absl::ConsumePrefix(&rest, "/dev/fd/")) {
    if (!absl::ConsumePrefix(&rest, "/proc/")) return std::nullopt;
    const std::size_t slash = rest.find('/');
    if (slash == absl::string_view::npos) return std::nullopt;
    const absl::string_view process = rest.substr(0, slash);
    if (process != "self" && process != absl::StrCat(getpid())) {
      return std::nullopt;
    }
    rest.remove_prefix(slash);
    if (!absl::ConsumePrefix(&rest, "/fd/")) return std::nullopt;
  }
  int fd = -1;
  if (rest.empty() ||
      !absl::ascii_isdigit(static_cast<unsigned char>(rest[0])) ||
      !absl::SimpleAtoi(rest, &fd)) {
    return std::nullopt;
  }
  return fd;
}

}  // namespace

std::optional<int> OwnDescriptor(const std::string& given) {
  // The chain of links step by step, as FollowLinks takes it: /dev/stdout
  // is a link to /proc/self/fd/1, which "links" to the file behind it.
  std::string path = given;
  for (int step = 0; step < 40; ++step) {
    if (std::optional<int> fd = DescriptorIn(path)) return fd;
    const std::string next = FollowLinks1(path);
    if (next == path) break;
    path = next;
  }
  return std::nullopt;
}

std::FILE* OpenForWriting(const std::string& path, bool* stream) {
  *stream = false;
  if (std::optional<int> fd = OwnDescriptor(path)) {
    // Written where the descriptor stands: opening the path again would
    // truncate the file behind it (a log the caller appends to), and
    // renaming over it would leave the descriptor writing to a deleted
    // file.
    *stream = true;
    const int copy = dup(*fd);
    if (copy < 0) return nullptr;
    return StreamOf(copy, "wb");
  }
  return std::fopen(path.c_str(), "wb");
}

bool WriteOneFile(const std::string& a, const std::string& b) {
  // What each would write: the file behind a descriptor ("-" is stdout),
  // or the file at the end of its links (which may not exist yet).
  struct Target {
    bool exists = false;
    struct stat info = {};
    std::string path;
  };
  auto target = [](const std::string& given) {
    Target t;
    const std::optional<int> fd =
        given == "-" ? std::optional<int>(STDOUT_FILENO) : OwnDescriptor(given);
    if (fd) {
      t.exists = fstat(*fd, &t.info) == 0;
      return t;
    }
    t.path = FollowLinks(given);
    t.exists = stat(t.path.c_str(), &t.info) == 0;
    return t;
  };
  const Target x = target(a), y = target(b);
  if (x.exists && y.exists) {
    // /dev/null takes both writes; a file, a pipe or a terminal would hold
    // them one after the other in one stream (--preview=/dev/stdout into a
    // pipe gave CSV lines and then a PNG, exit 0; found by a review
    // helper).
    const bool null_device =
        S_ISCHR(x.info.st_mode) && x.info.st_rdev == makedev(1, 3);
    return !null_device && x.info.st_dev == y.info.st_dev &&
           x.info.st_ino == y.info.st_ino;
  }
  // One or both to be made: the same name, as absolute paths with the
  // parts that exist resolved ("pts.csv" and "./pts.csv").
  if (x.path.empty() || y.path.empty()) return false;
  std::error_code error;
  auto canonical = [&error](const std::string& path) {
    return std::filesystem::weakly_canonical(std::filesystem::absolute(path),
                                             error);
  };
  return canonical(x.path) == canonical(y.path);
}

absl::StatusOr<std::string> WritePathFor(const std::string& given) {
  // A descriptor of this process (--out=/dev/stdout, /dev/fd/3) is written
  // in place (OpenForWriting).
  if (OwnDescriptor(given)) return given;
  struct stat info;
  if (stat(given.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat(given, " is a directory, not a file"));
    }
    // A device or a pipe (/dev/null, a FIFO) is written in place: renaming
    // a file over it would replace it.
    if (!S_ISREG(info.st_mode)) return given;
  }
  // Beside the file a symlink names: the rename stays within its file
  // system and replaces the file, not the link.
  const std::string path = FollowLinks(given);
  // A file the user may not write is not replaced (the rename needs only
  // the directory): as the shell's `>`, which refuses it.
  if (stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
      access(path.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", given, ": ", std::strerror(errno)));
  }
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", given, "\" names a directory, not a file"));
  }
  // Unique to this call, not only to this process: in containers every
  // export is process 1, and two pods of one Job index on a shared volume
  // (a retry beside a pod still running) truncated and renamed each
  // other's file, leaving a tile of the right size with a run of zeros
  // in it (found by a review helper). 64 random bits besides the pid.
  std::uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce) {
    nonce = static_cast<std::uint64_t>(absl::ToUnixNanos(absl::Now())) ^
            reinterpret_cast<std::uintptr_t>(&nonce);
  }
  std::string temp =
      absl::StrCat(dir, slash == std::string::npos ? "/" : "", ".", name, ".",
                   getpid(), "-", absl::Hex(nonce, absl::kZeroPad16), ".tmp");
  RegisterTemporary(temp);
  return temp;
}

void DiscardTemporary(const std::string& temp, const std::string& path) {
  if (temp == path) return;
  std::remove(temp.c_str());
  UnregisterTemporary(temp);
}

void RemoveTemporariesOnSignals() {
  struct sigaction action = {};
  action.sa_handler = RemoveTemporariesAndDie;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    sigaction(signal_number, &action, nullptr);
  }
}

absl::Status CommitTemporary(const std::string& temp,
                             const std::string& given) {
  if (temp == given) return absl::OkStatus();
  const std::string path = FollowLinks(given);
  absl::Status done;
  // The data reaches the disk before the name does.
  // Errors name the file asked for, not its hidden stand-in.
  const int fd = open(temp.c_str(), O_RDONLY);
  if (fd < 0 || fsync(fd) != 0) done = IoError(given);
  // A file replaced keeps its permissions (a new one gets the umask's).
  struct stat old;
  if (done.ok() && stat(path.c_str(), &old) == 0 &&
      fchmod(fd, old.st_mode & 07777) != 0) {
    done = IoError(given);
  }
  if (fd >= 0) close(fd);
  if (done.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    done = IoError(path);
  }
  if (!done.ok()) std::remove(temp.c_str());
  UnregisterTemporary(temp);
  return done;
}

absl::StatusOr<std::unique_ptr<PointWriter>> OpenWriter(Format format,
                                                        const std::string& path,
                                                        int dims) {
  if (path == "-" || OwnDescriptor(path) == STDOUT_FILENO) {
    // A closed stdout fails here, before any point: every format then
    // says so alike (the PLY writer buffers its body elsewhere).
    if (fcntl(STDOUT_FILENO, F_GETFD) < 0) return IoError(path);
    return std::make_unique<FileWriter>(format, path, stdout, dims);
  }
  absl::StatusOr<std::string> target = WritePathFor(path);
  if (!target.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out: ", target.status().message()));
  }
  bool stream = false;
  std::FILE* file = OpenForWriting(*target, &stream);
  if (file == nullptr && *target != path) {
    // The file itself may be writable: what failed is the temporary file
    // beside it (a directory the user may not write).
    const int error = errno;
    const std::size_t slash = target->rfind('/');
    return absl::UnavailableError(absl::StrCat(
        "cannot write ", path, ": cannot make a temporary file in ",
        slash == std::string::npos ? "." : target->substr(0, slash),
        " to replace it whole: ", std::strerror(error)));
  }
  if (file == nullptr) return IoError(path);
  if (*target == path) {
    return std::make_unique<FileWriter>(format, path, file, dims, stream);
  }
  // The writer's errors name the file asked for, not its hidden stand-in
  // (".tile_0_0.csv.8048.tmp: No space left on device"; found by a review
  // helper).
  return std::make_unique<ReplacingWriter>(
      std::make_unique<FileWriter>(format, path, file, dims),
      *std::move(target), path);
}

const char* FormatExtension(Format format) {
  switch (format) {
    case Format::kCsv:
      return "csv";
    case Format::kJsonLines:
      return "jsonl";
    case Format::kPly:
      return "ply";
    case Format::kRaw:
      return "raw";
  }
  return "out";
}

std::string TileFileName(std::int64_t x, std::int64_t y, Format format) {
  return absl::StrCat("tile_", x, "_", y, ".", FormatExtension(format));
}

absl::StatusOr<std::unique_ptr<TileFiles>> TileFiles::Open(Format format,
                                                           const std::string& dir) {
  // mkdir -p: every prefix that ends before a slash, then the whole path.
  for (std::size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string prefix = dir.substr(0, at);
    if (mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      return absl::UnavailableError(absl::StrCat("cannot create the directory ",
                                                 prefix, ": ", std::strerror(errno)));
    }
    if (at == std::string::npos) break;
  }
  struct stat info;
  if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return absl::UnavailableError(absl::StrCat(dir, " is not a directory"));
  }
  return std::unique_ptr<TileFiles>(new TileFiles(format, dir));
}

absl::Status TileFiles::Write(const v1::TileResponse& part) {
  if (part.part() == 0) {
    if (open_ != nullptr) {
      return absl::InternalError(absl::StrCat("tile ", final_, " was never finished"));
    }
    final_ = absl::StrCat(
        dir_, "/", TileFileName(part.tile().x(), part.tile().y(), format_));
    // OpenWriter writes a hidden temporary file unique to this process (two
    // exports of the same tile, a retried shard still running, never share
    // one) and renames it over the tile's file when the last part is in.
    absl::StatusOr<std::unique_ptr<PointWriter>> writer = OpenWriter(
        format_, final_, static_cast<int>(part.points().dims()));
    if (!writer.ok()) return writer.status();
    open_ = *std::move(writer);
  } else if (open_ == nullptr) {
    return absl::InternalError(absl::StrCat("part ", part.part(), " of tile ",
                                            part.tile().x(), ", ", part.tile().y(),
                                            " came without part 0"));
  }
  absl::Status written = open_->Write(part.points());
  if (!written.ok()) return written;
  if (!part.last_part()) return absl::OkStatus();
  written = open_->Finish();
  open_.reset();
  if (!written.ok()) return written;
  ++tiles_;
  return absl::OkStatus();
}

absl::StatusOr<v1::PointBatch> ReadPoints(Format format, const std::string& path) {
  if (format == Format::kCsv || format == Format::kJsonLines) {
    return ReadText(format, path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream all;
  all << in.rdbuf();
  const std::string data = all.str();
  v1::PointBatch out;
  std::size_t at = 0;
  int dims = 3;
  std::uint64_t count = 0;
  if (format == Format::kRaw) {
    if (data.size() < 12 || std::memcmp(data.data(), kRawMagic, 8) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a SCATRAW1 file"));
    }
    dims = static_cast<int>(GetLittleEndian<std::uint32_t>(data.data() + 8));
    at = 12;
    const std::size_t record = 8 * static_cast<std::size_t>(dims) + 36;
    if (dims < 2 || dims > 3 || (data.size() - at) % record != 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": truncated"));
    }
    count = (data.size() - at) / record;
  } else {
    const std::size_t end = data.find("end_header\n");
    const std::size_t element = data.find("element vertex ");
    if (end == std::string::npos || element == std::string::npos ||
        !absl::SimpleAtoi(data.substr(element + 15, data.find('\n', element) -
                                                        element - 15),
                          &count)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a scatter PLY"));
    }
    at = end + 11;
    if (data.size() - at != count * 60) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": truncated"));
    }
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    double c[3];
    for (int d = 0; d < dims; ++d, at += 8) c[d] = GetLittleEndian<double>(&data[at]);
    const auto layer = GetLittleEndian<std::uint32_t>(&data[at]);
    const double radius = GetLittleEndian<double>(&data[at + 4]);
    at += 12;
    std::uint64_t id;
    if (format == Format::kRaw) {
      id = GetLittleEndian<std::uint64_t>(&data[at]);
    } else {
      id = GetLittleEndian<std::uint32_t>(&data[at]) |
           (std::uint64_t{GetLittleEndian<std::uint32_t>(&data[at + 4])} << 32);
    }
    at += 8;
    const double yaw = GetLittleEndian<double>(&data[at]);
    const double scale = GetLittleEndian<double>(&data[at + 8]);
    at += 16;
    AddPoint(&out, c, dims, layer, radius, id, yaw, scale);
  }
  out.set_dims(static_cast<std::uint32_t>(dims));
  return out;
}

}  // namespace scatter::client
