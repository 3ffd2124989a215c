#include "client/job.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "server/command_line.h"

namespace scatter::client {
namespace {

// The RasterInput a target names: "region.mask" or "layers[i].density".
// Request is a ScatterRequest or a ScatterTilesRequest.
template <typename Request>
absl::StatusOr<v1::RasterInput*> Target(const std::string& target,
                                        Request* request) {
  if (target == "region.mask") return request->mutable_region()->mutable_mask();
  int index = -1;
  if (absl::StartsWith(target, "layers[") && absl::EndsWith(target, "].density") &&
      absl::SimpleAtoi(target.substr(7, target.size() - 7 - 9), &index) &&
      index >= 0 && index < request->layers_size()) {
    return request->mutable_layers(index)->mutable_density();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "target: expected \"region.mask\" or \"layers[i].density\" with i < ",
      request->layers_size(), ", got \"", target, "\""));
}

// Where a raster file is read from: relative paths from `base_dir`.
std::string RasterPath(const v1::RasterFile& file,
                       const std::string& base_dir) {
  if (absl::StartsWith(file.path(), "/") || base_dir.empty()) {
    return file.path();
  }
  return absl::StrCat(base_dir, absl::EndsWith(base_dir, "/") ? "" : "/",
                      file.path());
}

template <typename Request>
absl::StatusOr<Request> ResolveInto(Request request, const v1::Job& job,
                                    const std::string& base_dir) {
  // Each file is read once, however many fields it fills (a density map
  // shared by two layers).
  std::map<std::string, std::string> read;
  // The entry that filled each target: a second one for the same field
  // replaced the first without a word.
  std::map<const v1::RasterInput*, int> filled;
  for (int i = 0; i < job.raster_files_size(); ++i) {
    const v1::RasterFile& file = job.raster_files(i);
    const std::string field = absl::StrCat("rasterFiles[", i, "]");
    absl::StatusOr<v1::RasterInput*> input = Target(file.target(), &request);
    if (!input.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".", input.status().message()));
    }
    if (auto first = filled.find(*input); first != filled.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".target: ", file.target(), " is filled by rasterFiles[",
          first->second, "] already; give each raster field one file"));
    }
    if ((*input)->source_case() != v1::RasterInput::SOURCE_NOT_SET) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".target: the job's ", job.has_world() ? "world" : "request",
          " sets ", file.target(),
          " itself (data or digest); give it one or the other"));
    }
    filled.emplace(*input, i);
    const std::string path = RasterPath(file, base_dir);
    auto known = read.find(path);
    if (known == read.end()) {
      std::string bytes;
      if (const char* why = server::ReadWholeFile(path, &bytes)) {
        return absl::NotFoundError(absl::StrCat(
            field, ".path: raster file ", path, " cannot be read: ", why));
      }
      known = read.emplace(path, std::move(bytes)).first;
    }
    v1::RasterData data;
    data.set_format(file.format() == v1::RASTER_FORMAT_UNSPECIFIED
                        ? v1::RASTER_FORMAT_PNG
                        : file.format());
    data.set_width(file.width());
    data.set_height(file.height());
    data.set_pixels(known->second);
    (*input)->set_x0(file.x0());
    (*input)->set_y0(file.y0());
    (*input)->set_x1(file.x1());
    (*input)->set_y1(file.y1());
    *(*input)->mutable_data() = std::move(data);
  }
  return request;
}

// Codes about the connection or the call (the server unreachable, the
// deadline, cancelled, credentials), not about the data it carried.
bool IsCallError(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return true;
    default:
      return false;
  }
}

// The server's message about an upload, as the field the raster fills:
// PutRaster names its data "chunks" ("chunks: not a PNG file", "chunks[3]
// .pixels: ..."), the client's own cut of the data, where the same raster
// sent inline (or run --local) is "region.mask.data: not a PNG file".
std::string UploadMessage(const std::string& field, absl::string_view message) {
  if (!absl::ConsumePrefix(&message, "chunks")) {
    return absl::StrCat(field, ": ", message);
  }
  if (absl::StartsWith(message, "[")) {
    const std::size_t close = message.find(']');
    if (close != absl::string_view::npos) message.remove_prefix(close + 1);
  }
  return absl::StrCat(field, ".data", message);
}

template <typename Request>
absl::StatusOr<Request> UploadInto(Request request, Client& client,
                                  const CallOptions& call) {
  // Rasters uploaded so far and their digests: a file that fills two
  // fields (two layers' density) is sent once.
  std::vector<std::pair<v1::RasterData, std::string>> sent;
  auto upload = [&](const std::string& field, v1::RasterInput* input) -> absl::Status {
    if (input->source_case() != v1::RasterInput::kData) return absl::OkStatus();
    for (const auto& [data, digest] : sent) {
      const v1::RasterData& mine = input->data();
      if (data.format() == mine.format() && data.width() == mine.width() &&
          data.height() == mine.height() && data.pixels() == mine.pixels()) {
        input->set_digest(digest);
        return absl::OkStatus();
      }
    }
    absl::StatusOr<v1::RasterRef> ref = client.PutRaster(input->data(), call);
    // A failed call is about the server; "cannot reach scatterd at ..."
    // says so already.
    if (!ref.ok() && ref.status().code() == absl::StatusCode::kUnavailable) {
      return ref.status();
    }
    // A busy server ("concurrent streams: the limit max_streams = 1 is
    // reached; retry later", or its memory budget taken by other calls)
    // is no more about the raster than a failed call: the refusal named
    // the file and the field.
    const bool busy =
        !ref.ok() &&
        ref.status().code() == absl::StatusCode::kResourceExhausted &&
        absl::EndsWith(ref.status().message(), "; retry later");
    if (!ref.ok() && (IsCallError(ref.status().code()) || busy)) {
      // The client's own words ("scatterd at A: deadline passed") name the
      // server already; the server's (an expired client certificate) do
      // not.
      const absl::string_view message = ref.status().message();
      const bool named = absl::StrContains(
          message, absl::StrCat("scatterd at ", client.address()));
      return absl::Status(
          ref.status().code(),
          absl::StrCat(
              "uploading the job's rasters",
              named ? "" : absl::StrCat(" to scatterd at ", client.address()),
              ": ", message));
    }
    if (!ref.ok()) {
      return absl::Status(ref.status().code(),
                          UploadMessage(field, ref.status().message()));
    }
    sent.emplace_back(std::move(*input->mutable_data()), ref->digest());
    input->set_digest(ref->digest());
    return absl::OkStatus();
  };
  if (request.region().has_mask()) {
    absl::Status status = upload("region.mask", request.mutable_region()->mutable_mask());
    if (!status.ok()) return status;
  }
  for (int i = 0; i < request.layers_size(); ++i) {
    if (!request.layers(i).has_density()) continue;
    absl::Status status = upload(absl::StrCat("layers[", i, "].density"),
                                 request.mutable_layers(i)->mutable_density());
    if (!status.ok()) return status;
  }
  return request;
}

absl::Status ParseJob(absl::string_view text, v1::Job* job) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(text.data(), text.size()), job, options);
  return absl::Status(static_cast<absl::StatusCode>(status.code()),
                      status.message().as_string());
}

// The first line of the parser's message that is not blank.
absl::string_view FirstLine(absl::string_view message) {
  for (absl::string_view line : absl::StrSplit(message, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) return line;
  }
  return message;
}

// "line L, column C: " of byte `at` of the text. Columns count
// characters, not UTF-8 bytes, from 1.
std::string LineColumn(absl::string_view text, std::size_t at) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return absl::StrCat("line ", line, ", column ", column, ": ");
}

// Whether the first `size` bytes of the text fail to parse with the
// reason `reason` (FirstLine of the error).
bool PrefixFailsSo(absl::string_view text, std::size_t size,
                   absl::string_view reason) {
  v1::Job scratch;
  const absl::Status status = ParseJob(text.substr(0, size), &scratch);
  return !status.ok() && FirstLine(status.message()) == reason;
}

// "line L, column C: " of a syntax error, or "" for other errors. The
// parser gives no offset, but shows up to 20 bytes either side of the
// byte it stopped on and a caret under that byte. The place is where
// those bytes stand in the text, and where they recur (in a string, say),
// the first prefix of the text that fails for the same reason ends there:
// shorter ones fail only for ending early. So the parses are as many as
// the halvings of the places found, none when the bytes stand once (the
// search over every prefix length took about 25 parses of the whole
// text: 54 s for a typo at the end of a 25 MB polygon, found by a review
// helper); it is the fallback when they stand nowhere.
std::string SyntaxErrorAt(absl::string_view text, const absl::Status& error) {
  // Only syntax errors show the text; a field's error names its path.
  const absl::string_view message = error.message();
  if (!absl::StrContains(message, '\n')) return "";
  const absl::string_view reason = FirstLine(message);
  if (absl::StartsWith(reason, "Unexpected end of string")) {
    return LineColumn(text, text.size());
  }
  // The message is the reason's line, the shown bytes (which may hold
  // line breaks themselves), and a line of spaces ending in the caret.
  const std::size_t shown_from = message.find('\n') + 1;
  const std::size_t caret_line = message.rfind('\n');
  std::vector<std::size_t> places;
  if (caret_line >= shown_from) {
    const absl::string_view shown =
        message.substr(shown_from, caret_line - shown_from);
    const absl::string_view caret = message.substr(caret_line + 1);
    const std::size_t offset = caret.size() - 1;
    if (!shown.empty() && absl::EndsWith(caret, "^") && offset < shown.size()) {
      for (std::size_t at = text.find(shown); at != absl::string_view::npos;
           at = text.find(shown, at + 1)) {
        places.push_back(at + offset);
      }
    }
  }
  if (places.size() == 1) return LineColumn(text, places[0]);
  std::size_t at = text.size() - 1;
  if (!places.empty()) {
    // The first place whose prefix through it fails so.
    std::size_t lo = 0, hi = places.size() - 1;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (PrefixFailsSo(text, places[mid] + 1, reason)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    at = places[lo];
  } else {
    std::size_t lo = 0, hi = text.size();  // The prefix of hi bytes fails so.
    while (lo + 1 < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (PrefixFailsSo(text, mid, reason)) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    at = hi - 1;
  }
  return LineColumn(text, at);
}

// A key as the parser reads it: escapes decoded (names are ASCII), and
// snake_case as lowerCamelCase ("max_points" and "maxPoints" name one
// field).
std::string FieldName(absl::string_view raw) {
  std::string name;
  bool upper = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '\\' && i + 1 < raw.size()) {
      c = raw[++i];
      if (c == 'u' && i + 4 < raw.size()) {
        int code = 0;
        for (int k = 1; k <= 4; ++k) {
          const char h = raw[i + static_cast<std::size_t>(k)];
          code = code * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
        }
        i += 4;
        // Not ASCII: no field has it; keep it apart from every other key.
        c = code < 0x80 ? static_cast<char>(code) : '\x7f';
      }
    }
    if (c == '_') {
      upper = true;
      continue;
    }
    name += upper ? absl::ascii_toupper(static_cast<unsigned char>(c)) : c;
    upper = false;
  }
  return name;
}

// "line L, column C: PATH is given twice" for the first key that one
// object of `text` (JSON the parser took) gives twice, or "" when none
// does. The parser takes them: the last value wins, and lists add up (two
// "layers" ran both lists' layers; found by a review helper).
std::string DuplicateKey(absl::string_view text) {
  struct Frame {
    bool object;
    std::string path;
    // An object's keys: as the parser reads them (FieldName), and as
    // written.
    std::vector<std::pair<std::string, std::string>> keys;
    int index = 0;  // array
  };
  std::vector<Frame> stack;
  std::string key;  // The key whose value comes next.
  bool expect_key = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (expect_key && !stack.empty() && stack.back().object) {
        Frame& object = stack.back();
        key = std::string(text.substr(start + 1, i - start - 1));
        const std::string name = FieldName(key);
        const std::string path =
            object.path.empty() ? key : absl::StrCat(object.path, ".", key);
        for (const auto& [seen, written] : object.keys) {
          if (seen != name) continue;
          return absl::StrCat(
              LineColumn(text, start), path, " is given twice",
              written == key ? "" : absl::StrCat(" (also as ", written, ")"));
        }
        object.keys.emplace_back(name, key);
        expect_key = false;
      }
    } else if (c == '{' || c == '[') {
      std::string path;
      if (!stack.empty()) {
        const Frame& parent = stack.back();
        path = parent.object
                   ? (parent.path.empty() ? key
                                          : absl::StrCat(parent.path, ".", key))
                   : absl::StrCat(parent.path, "[", parent.index, "]");
      }
      stack.push_back({c == '{', std::move(path), {}, 0});
      expect_key = c == '{';
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      expect_key = false;
    } else if (c == ',' && !stack.empty()) {
      if (stack.back().object) {
        expect_key = true;
      } else {
        ++stack.back().index;
      }
    }
  }
  return "";
}

}  // namespace

std::string JobDir(const std::string& job_path) {
  const std::size_t slash = job_path.rfind('/');
  if (slash == std::string::npos) return "";
  // A job at the root: its rasters are there too, not in the current
  // directory.
  if (slash == 0) return "/";
  return job_path.substr(0, slash);
}

absl::StatusOr<v1::Job> LoadJob(const std::string& path) {
  absl::StatusOr<std::string> read = server::ReadWholeFile(path);
  if (!read.ok()) return read.status();
  absl::string_view text = *read;
  // Editors on Windows may start UTF-8 with a byte order mark, which JSON
  // allows a reader to skip; the parser said "Expected a value." there.
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");
  if (absl::StartsWith(text, "\xFF\xFE") ||
      absl::StartsWith(text, "\xFE\xFF")) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": not a scatter job: the file is UTF-16 (it starts with a "
        "UTF-16 byte order mark); save it as UTF-8"));
  }
  v1::Job job;
  const absl::Status status = ParseJob(text, &job);
  if (!status.ok()) {
    // The parser's message can run over several lines (the text, a caret
    // under it); errors here are one line.
    const absl::string_view first = FirstLine(status.message());
    const std::string where = SyntaxErrorAt(text, status);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a scatter job: ", where, first));
  }
  const std::string twice = DuplicateKey(text);
  if (!twice.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a scatter job: ", twice));
  }
  if (job.has_request() && job.has_world()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a job holds a request or a world, not both"));
  }
  return job;
}

absl::StatusOr<v1::ScatterRequest> ResolveRasters(const v1::Job& job,
                                                  const std::string& base_dir) {
  return ResolveInto(job.request(), job, base_dir);
}

absl::StatusOr<v1::ScatterTilesRequest> ResolveWorldRasters(
    const v1::Job& job, const std::string& base_dir) {
  return ResolveInto(job.world(), job, base_dir);
}

absl::Status NameRasterFile(const v1::Job& job, const std::string& base_dir,
                            const absl::Status& status) {
  if (IsCallError(status.code())) return status;
  const absl::string_view message = status.message();
  // One file per target (ResolveInto refuses a second).
  for (int i = job.raster_files_size() - 1; i >= 0; --i) {
    const v1::RasterFile& file = job.raster_files(i);
    const std::string& field = file.target();
    // "region.mask: ..." or "region.mask.data: ...", not
    // "region.mask_threshold".
    if (field.empty() || !absl::StartsWith(message, field) ||
        (message.size() > field.size() && message[field.size()] != ':' &&
         message[field.size()] != '.')) {
      continue;
    }
    return absl::Status(status.code(), absl::StrCat("rasterFiles[", i, "] (",
                                                    RasterPath(file, base_dir),
                                                    "): ", message));
  }
  return status;
}

absl::StatusOr<v1::ScatterRequest> UploadRasters(v1::ScatterRequest request,
                                                 Client& client,
                                                 const CallOptions& call) {
  return UploadInto(std::move(request), client, call);
}

absl::StatusOr<v1::ScatterTilesRequest> UploadRasters(
    v1::ScatterTilesRequest request, Client& client, const CallOptions& call) {
  return UploadInto(std::move(request), client, call);
}

}  // namespace scatter::client
