// Rasters by digest, TLS and the metrics endpoint.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <png.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sampler/raster.h"
#include "sampler/version.h"
#include "server/command_line.h"
#include "server/raster_cache.h"
#include "tests/sampler/png_encode.h"
#include "tests/server/service_test_util.h"
#include "tests/server/tls_util.h"

namespace scatter::server::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A mask: left half dark (0), right half bright (255).
std::string HalfBright(std::uint32_t width, std::uint32_t height) {
  std::string pixels(static_cast<std::size_t>(width) * height, '\0');
  for (std::uint32_t j = 0; j < height; ++j) {
    for (std::uint32_t i = width / 2; i < width; ++i) {
      pixels[static_cast<std::size_t>(j) * width + i] = '\xff';
    }
  }
  return pixels;
}

// SHA-256 of the canonical encoding, computed here independently of the
// server's code: format byte, width, height (u32 LE), byte count (u64 LE).
std::string ExpectedDigest(v1::RasterFormat format, std::uint32_t width,
                           std::uint32_t height, const std::string& pixels) {
  std::string data;
  data.push_back(static_cast<char>(format));
  for (int i = 0; i < 4; ++i) data.push_back(static_cast<char>(width >> (8 * i)));
  for (int i = 0; i < 4; ++i) data.push_back(static_cast<char>(height >> (8 * i)));
  const std::uint64_t n = pixels.size();
  for (int i = 0; i < 8; ++i) data.push_back(static_cast<char>(n >> (8 * i)));
  data += pixels;
  unsigned char digest[32];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), length));
}

v1::RasterRef Upload(v1::ScatterService::Stub& stub, v1::RasterFormat format,
                     std::uint32_t width, std::uint32_t height,
                     const std::string& pixels, grpc::Status* status) {
  grpc::ClientContext context;
  v1::RasterRef ref;
  auto writer = stub.PutRaster(&context, &ref);
  constexpr std::size_t kChunk = 1 << 20;
  for (std::size_t at = 0; at < pixels.size() || at == 0; at += kChunk) {
    v1::RasterChunk chunk;
    if (at == 0) {
      chunk.set_format(format);
      chunk.set_width(width);
      chunk.set_height(height);
    }
    chunk.set_pixels(pixels.substr(at, kChunk));
    if (!writer->Write(chunk)) break;
    if (pixels.empty()) break;
  }
  writer->WritesDone();
  *status = writer->Finish();
  return ref;
}

TEST(RasterTest, ChunkedUploadThenReferenceByDigest) {
  LoopbackServer server;
  auto stub = server.TcpStub();
  // 3000 x 2000 u8 = 6 MB, over gRPC's 4 MiB message limit: chunks only.
  const std::uint32_t width = 3000, height = 2000;
  const std::string pixels = HalfBright(width, height);
  grpc::Status status;
  const v1::RasterRef ref =
      Upload(*stub, v1::RASTER_FORMAT_U8, width, height, pixels, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  // The server computed the digest itself, over the content.
  EXPECT_EQ(ref.digest(), ExpectedDigest(v1::RASTER_FORMAT_U8, width, height, pixels));
  EXPECT_EQ(ref.pixel_bytes(), pixels.size());
  EXPECT_EQ(ref.width(), width);
  // Idempotent: the same content, the same digest, nothing new stored.
  const std::size_t stored = server.server().service().rasters().size();
  EXPECT_EQ(Upload(*stub, v1::RASTER_FORMAT_U8, width, height, pixels, &status)
                .digest(),
            ref.digest());
  EXPECT_EQ(server.server().service().rasters().size(), stored);

  v1::ScatterRequest request = BoxRequest(10, 0.1);
  v1::RasterInput* mask = request.mutable_region()->mutable_mask();
  mask->set_digest(ref.digest());
  mask->set_x1(10);
  mask->set_y1(10);
  request.mutable_region()->set_mask_threshold(0.5);
  const Received got = Collect(*stub, request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_GT(got.size(), 3000u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_GE(got.coords[2 * i], 4.99) << "point on the dark half";
  }
}

TEST(RasterTest, DifferentContentDifferentDigestAndUnknownDigestIsNotFound) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  grpc::Status status;
  const std::string a(64, 'a'), b(64, 'b');
  const auto ref_a = Upload(*stub, v1::RASTER_FORMAT_U8, 8, 8, a, &status);
  ASSERT_TRUE(status.ok());
  const auto ref_b = Upload(*stub, v1::RASTER_FORMAT_U8, 8, 8, b, &status);
  ASSERT_TRUE(status.ok());
  EXPECT_NE(ref_a.digest(), ref_b.digest());
  // The same bytes read as another shape are other content.
  const auto ref_c = Upload(*stub, v1::RASTER_FORMAT_U8, 16, 4, a, &status);
  ASSERT_TRUE(status.ok());
  EXPECT_NE(ref_a.digest(), ref_c.digest());

  v1::ScatterRequest request = BoxRequest(1, 0.1);
  v1::RasterInput* mask = request.mutable_region()->mutable_mask();
  const std::string unknown = ExpectedDigest(v1::RASTER_FORMAT_U8, 8, 8, std::string(64, 'c'));
  mask->set_digest(unknown);
  mask->set_x1(1);
  mask->set_y1(1);
  const Received got = Collect(*stub, request);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(got.status.error_message(), HasSubstr(unknown));

  // Inline data is stored as well, so its digest works afterwards.
  mask->mutable_data()->set_format(v1::RASTER_FORMAT_U8);
  mask->mutable_data()->set_width(8);
  mask->mutable_data()->set_height(8);
  mask->mutable_data()->set_pixels(std::string(64, 'c'));
  ASSERT_TRUE(Collect(*stub, request).status.ok());
  mask->set_digest(unknown);
  EXPECT_TRUE(Collect(*stub, request).status.ok());
}

TEST(RasterTest, BadUploadsGetTheirCodes) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.limits.max_raster_bytes = 4 * 100 * 100;
  LoopbackServer server(options);
  auto stub = server.InProcessStub();
  grpc::Status status;
  Upload(*stub, v1::RASTER_FORMAT_U8, 10, 10, std::string(99, 'x'), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("chunks"));
  Upload(*stub, v1::RASTER_FORMAT_UNSPECIFIED, 10, 10, std::string(100, 'x'), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("format"));
  // The format before the size: a raster of no format and a size past the
  // limit was told it was too big (found by a review helper).
  Upload(*stub, v1::RASTER_FORMAT_UNSPECIFIED, 100000, 100000,
         std::string(100, 'x'), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr(".format: must be U8, U16, F32 or PNG, got 0"));
  // Its bytes past the limit too: the first chunk's format is asked first.
  Upload(*stub, v1::RASTER_FORMAT_UNSPECIFIED, 250, 200,
         std::string(50000, 'x'), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(
      status.error_message(),
      HasSubstr("chunks[0].format: must be U8, U16, F32 or PNG, got 0"));
  Upload(*stub, v1::RASTER_FORMAT_U8, 101, 100, std::string(10100, 'x'), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("max_raster_bytes = 40000"));
}

// The server's log once it holds `count` PutRaster lines (or after 10 s):
// a call gRPC cancels ends for the client before its handler returns.
std::string LogWithUploads(const LoopbackServer& server, int count) {
  const absl::Time until = absl::Now() + absl::Seconds(10);
  std::string log = server.log();
  for (;;) {
    int lines = 0;
    for (std::size_t at = log.find("PutRaster peer="); at != std::string::npos;
         at = log.find("PutRaster peer=", at + 1)) {
      ++lines;
    }
    if (lines >= count || absl::Now() >= until) return log;
    absl::SleepFor(absl::Milliseconds(5));
    log = server.log();
  }
}

// gRPC refuses a chunk over max_request_bytes before the handler sees it,
// and its Read() is then false as at the end of an upload: the handler
// logged and counted the call as INVALID_ARGUMENT "an upload needs at
// least one chunk" (or, when the first chunks had come, as the raster they
// made being too short). It says the upload was cut short now.
TEST(RasterTest, AChunkOverMaxRequestBytesIsLoggedAsAnUploadCutShort) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.max_request_bytes = kMinRequestBytes;
  LoopbackServer server(options);
  auto stub = server.TcpStub();
  grpc::Status status;
  // One chunk of 1 200 000 bytes, refused whole.
  Upload(*stub, v1::RASTER_FORMAT_U8, 1200, 1000, std::string(1'200'000, 'x'),
         &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(),
              HasSubstr("Received message larger than max"));
  std::string log = LogWithUploads(server, 1);
  EXPECT_THAT(log, HasSubstr("code=CANCELLED"));
  EXPECT_THAT(log, HasSubstr("message=chunks[0]: the upload ended after 0 "
                             "chunks and 0 pixel bytes: the client cancelled "
                             "it, or gRPC refused chunks[0] for passing "
                             "max_request_bytes = 524288"));
  EXPECT_THAT(log, Not(HasSubstr("needs at least one chunk")));

  // A chunk that fits, then one that does not.
  grpc::ClientContext context;
  v1::RasterRef ref;
  auto writer = stub->PutRaster(&context, &ref);
  v1::RasterChunk chunk;
  chunk.set_format(v1::RASTER_FORMAT_U8);
  chunk.set_width(1200);
  chunk.set_height(1000);
  chunk.set_pixels(std::string(1000, 'x'));
  ASSERT_TRUE(writer->Write(chunk));
  chunk.Clear();
  chunk.set_pixels(std::string(600'000, 'x'));
  writer->Write(chunk);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  log = LogWithUploads(server, 2);
  EXPECT_THAT(log, HasSubstr("message=chunks[1]: the upload ended after 1 "
                             "chunks and 1000 pixel bytes: the client "
                             "cancelled it, or gRPC refused chunks[1]"));
  EXPECT_EQ(log.find("code=INVALID_ARGUMENT"), std::string::npos) << log;
}

// A size past max_raster_bytes is refused at the chunk that says it, before
// the bytes come: the first for raw pixels, the one that completes a PNG's
// header. It was refused once the whole upload had come and been held
// (found by a review helper).
TEST(RasterTest, AnUploadTooLargeToDecodeIsRefusedAtItsSize) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.limits.max_raster_bytes = 4 * 100 * 100;
  LoopbackServer server(options);
  auto stub = server.InProcessStub();
  // PNG's signature, IHDR's length and name, then 4000 x 4000 big-endian.
  std::string png = std::string("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16);
  for (const std::uint32_t side : {4000u, 4000u}) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      png.push_back(static_cast<char>((side >> shift) & 0xff));
    }
  }
  for (const bool raw : {true, false}) {
    SCOPED_TRACE(raw ? "U8" : "PNG");
    grpc::ClientContext context;
    v1::RasterRef ref;
    auto writer = stub->PutRaster(&context, &ref);
    v1::RasterChunk chunk;
    chunk.set_format(raw ? v1::RASTER_FORMAT_U8 : v1::RASTER_FORMAT_PNG);
    chunk.set_width(raw ? 4000 : 0);
    chunk.set_height(raw ? 4000 : 0);
    chunk.set_pixels(raw ? std::string(1000, 'x') : png.substr(0, 20));
    ASSERT_TRUE(writer->Write(chunk));
    chunk.Clear();
    chunk.set_pixels(raw ? std::string(1000, 'x') : png.substr(20));
    writer->Write(chunk);  // Refused already, or by this one (PNG).
    writer->WritesDone();
    const grpc::Status status = writer->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(),
                HasSubstr(absl::StrCat(raw ? "chunks[0]" : "chunks[1]",
                                       ": 4000 x 4000 pixels decode to more "
                                       "bytes (4 per pixel) than the limit "
                                       "max_raster_bytes = 40000")));
  }
}

// The bytes an upload may send are capped as it comes (scatterd sets that
// cap from --max_raster_bytes): the error names the chunk and the flag.
TEST(RasterTest, AnUploadPastTheByteLimitNamesTheChunkAndTheFlag) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.max_upload_bytes = 5000;
  LoopbackServer server(options);
  auto stub = server.InProcessStub();
  grpc::Status status;
  Upload(*stub, v1::RASTER_FORMAT_U8, 101, 100, std::string(10100, 'x'),
         &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(),
              HasSubstr("chunks[0].pixels: the upload passes 10100 pixel "
                        "bytes, over the limit max_raster_bytes = 5000"));
}

// The bytes an upload receives count against memory_budget_bytes as they
// grow: max_streams uploads held up to max_raster_bytes each (twice that
// in string growth) that no budget counted.
TEST(RasterTest, AnUploadHoldsItsBytesAgainstTheMemoryBudget) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.memory_budget_bytes = 1 << 20;
  LoopbackServer server(options);
  auto stub = server.InProcessStub();
  grpc::Status status;
  // Two chunks of 1 MiB: the second would hold 2 MiB.
  const std::string pixels(std::size_t{1448} * 1448, 'x');
  Upload(*stub, v1::RASTER_FORMAT_U8, 1448, 1448, pixels, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The first chunk's buffer and the new one for both chunks' 2096704
  // bytes, while the first moves.
  EXPECT_THAT(status.error_message(),
              HasSubstr("chunks[1].pixels: the upload would hold 3145280 "
                        "bytes while its buffer grows to 2096704, over the "
                        "limit memory_budget_bytes = 1048576"));
  // What it held is given back.
  const v1::RasterRef small =
      Upload(*stub, v1::RASTER_FORMAT_U8, 1000, 1000,
             std::string(std::size_t{1000} * 1000, 'x'), &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(small.pixel_bytes(), 1000000u);
}

// An upload whose buffer cannot double within the budget grows it to
// what its bytes need: 1 MiB held, then 1 MiB + 2096704 bytes while they
// move (doubling would hold 1 MiB + 2 MiB, 3145728 bytes).
TEST(RasterTest, AnUploadThatCannotDoubleItsBufferGrowsItToFit) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.memory_budget_bytes = 3145500;
  LoopbackServer server(options);
  auto stub = server.InProcessStub();
  grpc::Status status;
  const v1::RasterRef ref =
      Upload(*stub, v1::RASTER_FORMAT_U8, 1448, 1448,
             std::string(std::size_t{1448} * 1448, 'x'), &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(ref.pixel_bytes(), std::uint64_t{1448} * 1448);
}

TEST(RasterTest, UploadsWhileDrainingAreTurnedAway) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  server.server().service().StartDraining();
  grpc::Status status;
  Upload(*stub, v1::RASTER_FORMAT_U8, 8, 8, std::string(64, 'd'), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("server shutting down"));
}

// The first chunk of an 8 x 8 u8 upload, with half its pixels.
v1::RasterChunk FirstHalfOf8x8() {
  v1::RasterChunk chunk;
  chunk.set_format(v1::RASTER_FORMAT_U8);
  chunk.set_width(8);
  chunk.set_height(8);
  chunk.set_pixels(std::string(32, 'u'));
  return chunk;
}

// A later chunk that names another format or size was once ignored, and
// the raster stored was not the one the client meant.
TEST(RasterTest, LaterChunksKeepTheFirstChunksFormatAndSize) {
  LoopbackServer server;
  auto stub = server.InProcessStub();
  auto upload = [&](const v1::RasterChunk& second) {
    grpc::ClientContext context;
    v1::RasterRef ref;
    auto writer = stub->PutRaster(&context, &ref);
    writer->Write(FirstHalfOf8x8());
    writer->Write(second);
    writer->WritesDone();
    return writer->Finish();
  };
  v1::RasterChunk same;
  same.set_pixels(std::string(32, 'u'));
  EXPECT_TRUE(upload(same).ok());
  same.set_format(v1::RASTER_FORMAT_U8);
  same.set_width(8);
  same.set_height(8);
  EXPECT_TRUE(upload(same).ok());
  v1::RasterChunk other = same;
  other.set_format(v1::RASTER_FORMAT_U16);
  const grpc::Status format = upload(other);
  EXPECT_EQ(format.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(format.error_message(),
              HasSubstr("chunks[1]: format, width and height belong to the "
                        "first chunk"));
  EXPECT_THAT(format.error_message(),
              HasSubstr("the first said RASTER_FORMAT_U8 8 x 8, this one "
                        "RASTER_FORMAT_U16 8 x 8"));
  other = same;
  other.set_height(4);
  EXPECT_EQ(upload(other).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(RasterTest, ConcurrentUploadsCountAgainstMaxStreams) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.max_streams = 1;
  LoopbackServer server(options);
  auto stub = server.TcpStub();
  // An upload in progress: one chunk sent, more to come.
  grpc::ClientContext context;
  v1::RasterRef ref;
  auto writer = stub->PutRaster(&context, &ref);
  ASSERT_TRUE(writer->Write(FirstHalfOf8x8()));
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  while (server.server().stats().in_flight.load() == 0 &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(server.server().stats().in_flight.load(), 1);

  grpc::Status status;
  Upload(*stub, v1::RASTER_FORMAT_U8, 8, 8, std::string(64, 'v'), &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("max_streams = 1"));
  const Received scatter = Collect(*stub, BoxRequest(1, 0.1));
  EXPECT_EQ(scatter.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // The first upload completes, and frees its slot.
  v1::RasterChunk rest;
  rest.set_pixels(std::string(32, 'u'));
  ASSERT_TRUE(writer->Write(rest));
  writer->WritesDone();
  const grpc::Status first = writer->Finish();
  EXPECT_TRUE(first.ok()) << first.error_message();
  WaitIdle(server.server(), absl::Seconds(5));
  Upload(*stub, v1::RASTER_FORMAT_U8, 8, 8, std::string(64, 'v'), &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// The uploads running, which StopInFlight waits for (a second at most),
// were counted up and down by hand: an exception out of an upload's
// handler (gRPC answers UNKNOWN and serves on) left each counted for good,
// and every shutdown after it waited its full second for uploads that had
// ended.
TEST(RasterTest, AnUploadThatThrowsIsNoLongerCountedAsRunning) {
  auto throws = std::make_shared<std::atomic<bool>>(true);
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.start_thread = [throws](std::function<void()> body) {
    if (throws->load()) throw std::runtime_error("not a thread limit");
    return std::thread(std::move(body));
  };
  LoopbackServer server(options);
  auto stub = server.TcpStub();
  grpc::Status status;
  for (int call = 0; call < 5; ++call) {
    Upload(*stub, v1::RASTER_FORMAT_U8, 8, 8, std::string(64, 'v'), &status);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  }
  throws->store(false);
  Upload(*stub, v1::RASTER_FORMAT_U8, 8, 8, std::string(64, 'v'), &status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  WaitIdle(server.server(), absl::Seconds(5));
  const absl::Time start = absl::Now();
  server.server().service().StopInFlight();
  EXPECT_LT(absl::Now() - start,
            SCATTER_TEST_SLOWDOWN * absl::Milliseconds(500));
}

// A gray PNG of `width` x `height` at `depth` bits, every pixel mid-gray.
std::string GrayPng(std::uint32_t width, std::uint32_t height, int depth) {
  const std::vector<std::uint8_t> png = test::EncodePng(
      width, height, depth, PNG_COLOR_TYPE_GRAY,
      std::vector<std::uint16_t>(static_cast<std::size_t>(width) * height,
                                 depth == 16 ? 0x8080 : 0x80));
  return std::string(png.begin(), png.end());
}

TEST(RasterTest, PngLimitIsOnDecodedPixelsAtAnyDepth) {
  // Room for 100 decoded pixels (4 bytes each).
  constexpr std::size_t kLimit = 4 * 100;
  for (const int depth : {8, 16}) {
    SCOPED_TRACE(absl::StrCat(depth, "-bit"));
    auto fits = DecodeRaster("mask", v1::RASTER_FORMAT_PNG, 0, 0,
                             GrayPng(10, 10, depth), kLimit);
    ASSERT_TRUE(fits.ok()) << fits.status();
    EXPECT_EQ(fits->width(), 10u);
    auto over = DecodeRaster("mask", v1::RASTER_FORMAT_PNG, 0, 0,
                             GrayPng(10, 11, depth), kLimit);
    EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(over.status().message(),
              "mask: 10 x 11 pixels decode to more bytes (4 per pixel) than "
              "the limit max_raster_bytes = 400");
  }
}

// The sampler's grid limit is --max_grid_bytes to whoever runs scatterd:
// errors name the flag, not the sampler's option.
TEST(LimitsTest, GridLimitErrorsNameTheFlag) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.limits.max_grid_bytes = 100000;
  LoopbackServer server(options);
  const Received got = Collect(*server.InProcessStub(), BoxRequest(100, 0.5));
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(got.status.error_message(),
              HasSubstr("over the limit max_grid_bytes = 100000"));
  EXPECT_THAT(got.status.error_message(),
              ::testing::Not(HasSubstr("max_memory_bytes")));
}

// The estimate leaves out the cells a mask darkens throughout, however fine
// the mask: over 1000 x 1000 pixels (about 250 a cell of the estimate's
// 64 x 64) it counted every cell, as if unmasked, and refused this request
// (128 300 points could fit the box, 50 000 allowed) where a 100 x 100 mask
// of the same picture passed (found by a review helper).
TEST(LimitsTest, AFineMaskCountsInThePointEstimate) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.limits.max_points = 50'000;
  LoopbackServer server(options);
  v1::ScatterRequest request = BoxRequest(1, 0.003);
  std::string pixels(1000 * 1000, '\0');
  for (int j = 400; j < 600; ++j) {
    std::fill_n(pixels.begin() + j * 1000 + 400, 200, '\xff');
  }
  v1::RasterInput* mask = request.mutable_region()->mutable_mask();
  mask->mutable_data()->set_format(v1::RASTER_FORMAT_U8);
  mask->mutable_data()->set_width(1000);
  mask->mutable_data()->set_height(1000);
  mask->mutable_data()->set_pixels(pixels);
  mask->set_x1(1);
  mask->set_y1(1);
  request.mutable_region()->set_mask_threshold(0.5);
  const Received got = Collect(*server.TcpStub(), request);
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  // The bright 0.2 x 0.2 square holds 2 / (sqrt(3) r^2) * 0.04 = 5 132 at
  // most; dense packing makes about 0.7 of that.
  EXPECT_GT(got.size(), 3000u);
  EXPECT_LT(got.size(), 5200u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    for (int a = 0; a < 2; ++a) {
      ASSERT_GT(got.coords[2 * i + a], 0.399) << "point " << i;
      ASSERT_LT(got.coords[2 * i + a], 0.601) << "point " << i;
    }
  }
}

TEST(LimitsTest, OversizedRequestMessageIsRefused) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.max_request_bytes = 1 << 20;
  LoopbackServer server(options);
  v1::ScatterRequest request = BoxRequest(1, 0.1);
  v1::RasterInput* mask = request.mutable_region()->mutable_mask();
  mask->mutable_data()->set_format(v1::RASTER_FORMAT_U8);
  mask->mutable_data()->set_width(2000);
  mask->mutable_data()->set_height(1000);
  mask->mutable_data()->set_pixels(std::string(2'000'000, '\xff'));
  mask->set_x1(1);
  mask->set_y1(1);
  const Received got = Collect(*server.TcpStub(), request);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(got.size(), 0u);
}

TEST(RasterCacheTest, EvictsLeastRecentlyUsedButNeverAPinnedRaster) {
  // Room for two 32 x 32 rasters (4 KiB decoded each, and their block
  // bounds).
  RasterCache cache(2 * (4096 + sampler::Raster::BlockLevelsBytes(32, 32)));
  auto put = [&](char fill) {
    return cache.Put("r", v1::RASTER_FORMAT_U8, 32, 32, std::string(1024, fill),
                     1 << 20);
  };
  auto a = put('a');
  ASSERT_TRUE(a.ok());
  auto pinned = cache.Get(a->digest);  // Held, as a running request would.
  a->raster.reset();
  auto b = put('b');
  ASSERT_TRUE(b.ok());
  const std::string b_digest = b->digest;
  b->raster.reset();
  auto c = put('c');  // Evicts b: a is pinned.
  ASSERT_TRUE(c.ok());
  EXPECT_NE(cache.Get(a->digest), nullptr);
  EXPECT_EQ(cache.Get(b_digest), nullptr);
  // Both slots pinned: a fourth cannot fit, and says which limit.
  auto d = put('d');
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("raster_cache_bytes"));
}

// Bytes that will not decode make no room: the rasters the cache holds
// stay (a PNG header saying a size and nothing after it emptied the cache).
TEST(RasterCacheTest, BytesThatDoNotDecodeEvictNothing) {
  RasterCache cache(2 * (4096 + sampler::Raster::BlockLevelsBytes(32, 32)));
  auto put = [&](char fill) {
    return cache.Put("r", v1::RASTER_FORMAT_U8, 32, 32, std::string(1024, fill),
                     1 << 20);
  };
  auto a = put('a');
  auto b = put('b');
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string a_digest = a->digest, b_digest = b->digest;
  a->raster.reset();
  b->raster.reset();
  const std::string png = GrayPng(32, 32, 8);
  const std::string cut = png.substr(0, png.size() - 20);
  std::string nan_f32(4 * 32 * 32, '\0');
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&nan_f32[4 * 100], &nan, sizeof nan);
  const absl::StatusOr<RasterCache::Entry> refused[] = {
      cache.Put("r", v1::RASTER_FORMAT_PNG, 0, 0, cut, 1 << 20),
      cache.Put("r", v1::RASTER_FORMAT_F32, 32, 32, nan_f32, 1 << 20)};
  for (const auto& bad : refused) {
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument)
        << bad.status();
  }
  EXPECT_THAT(std::string(refused[0].status().message()),
              HasSubstr("r: corrupt or truncated PNG"));
  EXPECT_THAT(std::string(refused[1].status().message()),
              HasSubstr("r: pixel 4, 3 is NaN"));
  EXPECT_NE(cache.Get(a_digest), nullptr);
  EXPECT_NE(cache.Get(b_digest), nullptr);
  // Good bytes still make room: the least recently used goes (a: b was
  // asked for last).
  auto c = cache.Put("r", v1::RASTER_FORMAT_PNG, 0, 0, png, 1 << 20);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(cache.Get(a_digest), nullptr);
  EXPECT_NE(cache.Get(b_digest), nullptr);
}

// A PNG's request gives no size (0 x 0): the cache charges its block
// bounds by the decoded size all the same.
TEST(RasterCacheTest, ChargesAPngItsBlockBoundsToo) {
  const std::size_t bytes = 4 * 32 * 32 + sampler::Raster::BlockLevelsBytes(32, 32);
  ASSERT_GT(bytes, 4u * 32 * 32);
  const std::string png = GrayPng(32, 32, 8);
  RasterCache fits(bytes);
  EXPECT_TRUE(fits.Put("r", v1::RASTER_FORMAT_PNG, 0, 0, png, 1 << 20).ok());
  RasterCache short_by_one(bytes - 1);
  auto over = short_by_one.Put("r", v1::RASTER_FORMAT_PNG, 0, 0, png, 1 << 20);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()),
              HasSubstr(absl::StrCat("a raster of ", bytes, " bytes")));
}

// A PNG's size is the file's: a request may say 0 x 0 or that size, with
// one digest for both (PutRaster is idempotent on content), and another
// size is refused rather than stored under its own digest.
TEST(RasterCacheTest, APngHasOneDigestAndOnlyItsOwnSize) {
  const std::string png = GrayPng(3, 2, 8);
  RasterCache cache(1 << 20);
  auto plain = cache.Put("r", v1::RASTER_FORMAT_PNG, 0, 0, png, 1 << 20);
  ASSERT_TRUE(plain.ok()) << plain.status();
  auto sized = cache.Put("r", v1::RASTER_FORMAT_PNG, 3, 2, png, 1 << 20);
  ASSERT_TRUE(sized.ok()) << sized.status();
  EXPECT_EQ(sized->digest, plain->digest);
  EXPECT_EQ(plain->digest, RasterDigest(v1::RASTER_FORMAT_PNG, 0, 0, png));
  for (const auto& [width, height] : {std::pair{99u, 99u}, std::pair{3u, 0u}}) {
    auto wrong =
        cache.Put("r", v1::RASTER_FORMAT_PNG, width, height, png, 1 << 20);
    EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(
        std::string(wrong.status().message()),
        HasSubstr(absl::StrCat("r: width and height ", width, " x ", height,
                               " are not the PNG's own 3 x 2")));
  }
}

// Calls that bring one new raster at once (as clients resend inline after
// NOT_FOUND) share one decoding: each reserved the raster's room and
// decoded it, so with room for one copy all but one were refused as if
// the cache were full. A decoding error reaches every call, said of its
// own field.
TEST(RasterCacheTest, OneNewRasterBroughtByManyCallsAtOnceIsDecodedOnce) {
  const std::string png = GrayPng(2048, 2048, 16);
  const std::size_t one = RasterCache::DecodedBytes(2048, 2048);
  constexpr int kCalls = 8;
  auto put_at_once = [&](RasterCache& cache, const std::string& content) {
    std::vector<absl::StatusOr<RasterCache::Entry>> got(
        kCalls, absl::UnknownError("not run"));
    std::atomic<int> ready{0};
    std::vector<std::thread> calls;
    for (int i = 0; i < kCalls; ++i) {
      calls.emplace_back([&, i] {
        ++ready;
        while (ready.load() < kCalls) {
        }
        got[static_cast<std::size_t>(i)] = cache.Put(
            absl::StrCat("call", i), v1::RASTER_FORMAT_PNG, 0, 0, content, one);
      });
    }
    for (std::thread& call : calls) call.join();
    return got;
  };
  RasterCache cache(one + one / 2);  // Room for one copy, not two.
  const auto got = put_at_once(cache, png);
  for (int i = 0; i < kCalls; ++i) {
    const auto& entry = got[static_cast<std::size_t>(i)];
    ASSERT_TRUE(entry.ok()) << "call " << i << ": " << entry.status();
    EXPECT_EQ(entry->digest, got[0]->digest);
    EXPECT_EQ(entry->raster, got[0]->raster);
  }
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), one);

  RasterCache fresh(one + one / 2);
  const auto cut = put_at_once(fresh, png.substr(0, png.size() / 2));
  for (int i = 0; i < kCalls; ++i) {
    const auto& entry = cut[static_cast<std::size_t>(i)];
    ASSERT_FALSE(entry.ok());
    EXPECT_EQ(entry.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(entry.status().message(),
                                 absl::StrCat("call", i, ": ")))
        << entry.status();
  }
  EXPECT_EQ(fresh.size(), 0u);
  EXPECT_EQ(fresh.bytes(), 0u);
}

TEST(TlsTest, TlsClientGetsPointsAndPlaintextClientIsRefused) {
  const Pem pem = SelfSigned();
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.tls_cert_pem = pem.cert;
  options.tls_key_pem = pem.key;
  LoopbackServer server(options);

  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pem.cert;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto secure = v1::ScatterService::NewStub(grpc::CreateCustomChannel(
      server.target(), grpc::SslCredentials(ssl), args));
  const Received got = Collect(*secure, BoxRequest(1, 0.02));
  ASSERT_TRUE(got.status.ok()) << got.status.error_message();
  EXPECT_GT(got.size(), 1000u);

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  const Received plain = Collect(*server.TcpStub(), BoxRequest(1, 0.02), &context);
  EXPECT_FALSE(plain.status.ok());
  EXPECT_EQ(plain.size(), 0u);
}

TEST(TlsTest, KeyWithoutCertificateIsRefusedAtStart) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.tls_key_pem = SelfSigned().key;
  auto server = ScatterServer::Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TlsTest, ClientCaWithoutCertificateIsRefusedAtStart) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.tls_client_ca_pem = SelfSigned().cert;
  auto server = ScatterServer::Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("tls_client_ca_pem"));
}

// A call to `target` over TLS from a client that trusts the CA `trusted`
// and shows `identity` (none when null), on a channel of its own.
Received CallOverTls(const std::string& target, const std::string& trusted,
                     const Pem* identity) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = trusted;
  if (identity != nullptr) {
    ssl.pem_private_key = identity->key;
    ssl.pem_cert_chain = identity->cert;
  }
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");
  auto stub = v1::ScatterService::NewStub(
      grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  return Collect(*stub, BoxRequest(1, 0.02), &context);
}

// With a client CA the server takes only clients whose certificate that CA
// signed: one with such a certificate gets points, one without any and one
// with a certificate of its own making are refused, and so is a client that
// trusts another CA than the one that signed the server's certificate.
TEST(TlsTest, MutualTlsTakesOnlyClientsTheCaSigned) {
  const Pem server_pem = SelfSigned();
  const Pem client_pem = SelfSigned();
  const Pem stranger_pem = SelfSigned();
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.tls_cert_pem = server_pem.cert;
  options.tls_key_pem = server_pem.key;
  options.tls_client_ca_pem = client_pem.cert;
  LoopbackServer server(options);

  auto call = [&](const std::string& trusted, const Pem* identity) {
    return CallOverTls(server.target(), trusted, identity);
  };
  const Received signed_client = call(server_pem.cert, &client_pem);
  ASSERT_TRUE(signed_client.status.ok()) << signed_client.status.error_message();
  EXPECT_GT(signed_client.size(), 1000u);

  for (const auto& [name, trusted, identity] : {
           std::tuple{"no client certificate", server_pem.cert,
                      static_cast<const Pem*>(nullptr)},
           std::tuple{"a certificate the CA did not sign", server_pem.cert,
                      &stranger_pem},
           std::tuple{"trusts another CA", stranger_pem.cert, &client_pem},
       }) {
    SCOPED_TRACE(name);
    const Received refused = call(trusted, identity);
    EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << refused.status.error_message();
    EXPECT_EQ(refused.size(), 0u);
  }
}

// The defaults add up to about 10.5 GiB (1 GiB + 512 MiB of caches, an
// 8 GiB budget, 16 requests of 64 MiB): over a 4 GiB container's limit
// scatterd says so at start, naming every term; under a 16 GiB one, or
// with no limit, it says nothing.
TEST(MemoryLimitTest, FlagsOverTheContainersLimitAreNamed) {
  const ServerOptions options;
  const std::string over = MemoryOverLimit(options, std::uint64_t{4} << 30);
  EXPECT_THAT(over, HasSubstr("the memory flags add up to 11274289152 bytes "
                              "(--raster_cache_bytes 1073741824 + "
                              "--tile_cache_bytes 536870912 + "
                              "--memory_budget_bytes 8589934592 + "
                              "--max_streams 16 x --max_request_bytes "
                              "67108864), over 90 % of this container's "
                              "memory limit of 4294967296 bytes"));
  EXPECT_EQ(MemoryOverLimit(options, std::uint64_t{16} << 30), "");
  EXPECT_EQ(MemoryOverLimit(options, 0), "");
}

// Writes `contents` to `path` whole: through a temporary file renamed over
// it, as a Secret's volume or cert-manager replace files.
void ReplaceFile(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".new";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << contents;
  }
  ASSERT_EQ(std::rename(temporary.c_str(), path.c_str()), 0) << path;
}

// Certificates expire and are renewed on disk: a server given its TLS
// files serves the new pair from the next handshake, with no restart (it
// served the one read at start until it stopped), a client CA read from a
// file still turns away clients it did not sign, and files that do not
// check out are not served.
TEST(TlsTest, RenewedTlsFilesAreServedWithoutARestart) {
  const Pem old_pem = SelfSigned();
  const Pem new_pem = SelfSigned();
  const Pem client_pem = SelfSigned();
  const std::string base =
      absl::StrCat(::testing::TempDir(), "/tls_renewed_", getpid());
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.tls_cert_file = base + ".crt";
  options.tls_key_file = base + ".key";
  options.tls_client_ca_file = base + "_ca.crt";
  options.tls_reload_interval = absl::Seconds(1);
  ReplaceFile(options.tls_cert_file, old_pem.cert);
  ReplaceFile(options.tls_key_file, old_pem.key);
  ReplaceFile(options.tls_client_ca_file, client_pem.cert);
  options.tls_cert_pem = old_pem.cert;
  options.tls_key_pem = old_pem.key;
  options.tls_client_ca_pem = client_pem.cert;
  LoopbackServer server(options);

  const Received before =
      CallOverTls(server.target(), old_pem.cert, &client_pem);
  ASSERT_TRUE(before.status.ok()) << before.status.error_message();
  EXPECT_GT(before.size(), 1000u);
  EXPECT_FALSE(CallOverTls(server.target(), old_pem.cert, nullptr).status.ok())
      << "a client with no certificate was served";

  ReplaceFile(options.tls_key_file, new_pem.key);
  ReplaceFile(options.tls_cert_file, new_pem.cert);
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  Received after;
  do {
    absl::SleepFor(absl::Milliseconds(200));
    after = CallOverTls(server.target(), new_pem.cert, &client_pem);
  } while (!after.status.ok() && absl::Now() < give_up);
  ASSERT_TRUE(after.status.ok()) << after.status.error_message();
  EXPECT_EQ(after.size(), before.size());
  // The old certificate is no longer served.
  EXPECT_FALSE(
      CallOverTls(server.target(), old_pem.cert, &client_pem).status.ok());
  EXPECT_FALSE(CallOverTls(server.target(), new_pem.cert, nullptr).status.ok())
      << "a client with no certificate was served";
  // A key that is not the certificate's (a writer caught between the two
  // files), then a CA that is not PEM: refused and logged, and the last
  // good set is served. gRPC's watcher alone served the bad pair, and
  // every handshake failed.
  ReplaceFile(options.tls_key_file, old_pem.key);
  absl::SleepFor(absl::Milliseconds(2500));
  ReplaceFile(options.tls_key_file, new_pem.key);
  ReplaceFile(options.tls_client_ca_file, "not a bundle");
  absl::SleepFor(absl::Milliseconds(2500));
  const Received kept = CallOverTls(server.target(), new_pem.cert, &client_pem);
  EXPECT_TRUE(kept.status.ok()) << kept.status.error_message();
  EXPECT_THAT(server.log(),
              HasSubstr("TLS files not reloaded, the last good ones are "
                        "served: " +
                        options.tls_key_file +
                        ": the key does not belong to the certificate"));
  EXPECT_THAT(server.log(), HasSubstr(options.tls_client_ca_file +
                                      ": no PEM certificate in it"));
  for (const std::string& path : {options.tls_cert_file, options.tls_key_file,
                                  options.tls_client_ca_file}) {
    std::remove(path.c_str());
  }
}

// Watched files must be those the checked PEM came from, and the interval
// whole seconds (gRPC's watcher counts in them).
TEST(TlsTest, WatchedTlsFilesNeedTheirContentsAndAWholeSecondInterval) {
  const Pem pem = SelfSigned();
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.tls_cert_file = "/nonexistent/tls.crt";
  options.tls_key_file = "/nonexistent/tls.key";
  EXPECT_THAT(ScatterServer::Start(options).status().message(),
              HasSubstr("tls_cert_file: give the file's contents in "
                        "tls_cert_pem too"));
  options.tls_cert_pem = pem.cert;
  options.tls_key_pem = pem.key;
  options.tls_key_file.clear();
  EXPECT_THAT(ScatterServer::Start(options).status().message(),
              HasSubstr("tls_cert_file: watching the certificate needs the "
                        "key's file"));
  options = LoopbackServer::DefaultOptions();
  for (const absl::Duration interval :
       {absl::Milliseconds(500), absl::Milliseconds(1500), absl::Hours(25)}) {
    options.tls_reload_interval = interval;
    const absl::Status status = CheckOptions(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(),
                HasSubstr("tls_reload_interval must be whole seconds"));
  }
}

TEST(TlsTest, BadCertificateOrKeyIsInvalidArgumentAtStartNamingIt) {
  const Pem pem = SelfSigned();
  const Pem other = SelfSigned();
  struct Case {
    const char* name;
    std::string cert;
    std::string key;
    std::string message;
  };
  for (const Case& c : {
           Case{"not PEM", "hello", pem.key,
                "tls_cert_pem: no PEM certificate"},
           Case{"key not PEM", pem.cert, "hello",
                "tls_key_pem: no PEM private key"},
           Case{"swapped", pem.key, pem.cert,
                "tls_cert_pem: no PEM certificate"},
           Case{"someone else's key", pem.cert, other.key,
                "tls_key_pem: the key does not belong to the certificate"},
       }) {
    SCOPED_TRACE(c.name);
    ServerOptions options = LoopbackServer::DefaultOptions();
    options.tls_cert_pem = c.cert;
    options.tls_key_pem = c.key;
    auto server = ScatterServer::Start(options);
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(server.status().message(), HasSubstr(c.message));
  }
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.tls_cert_pem = pem.cert;
  options.tls_key_pem = pem.key;
  options.tls_client_ca_pem = "not a bundle";
  EXPECT_THAT(ScatterServer::Start(options).status().message(),
              HasSubstr("tls_client_ca_pem: no PEM certificate"));
}

// GET /metrics over a plain socket.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return "";
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  if (write(fd, request.data(), request.size()) < 0) {
    close(fd);
    return "";
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  // Read to the end of the body (Content-Length), not to the server's close.
  std::size_t want = std::string::npos;
  while (response.size() < want && (n = read(fd, buffer, sizeof buffer)) > 0) {
    response.append(buffer, static_cast<std::size_t>(n));
    const std::size_t end = response.find("\r\n\r\n");
    const std::size_t length = response.find("Content-Length: ");
    if (end != std::string::npos && length != std::string::npos && length < end) {
      want = end + 4 + std::stoul(response.substr(length + 16));
    }
  }
  close(fd);
  return response;
}

// The value on the line `name value` of a Prometheus text page; NaN when
// there is none.
double MetricValue(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

TEST(MetricsTest, EndpointReportsCallsAndPoints) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.metrics_address = "127.0.0.1:0";
  LoopbackServer server(options);
  ASSERT_GT(server.server().metrics_port(), 0);
  auto stub = server.TcpStub();
  const Received a = Collect(*stub, BoxRequest(1, 0.05));
  const Received b = Collect(*stub, BoxRequest(1, 0.05, 99));
  Collect(*stub, BoxRequest(1, 0));
  ASSERT_TRUE(a.status.ok() && b.status.ok());
  // Two tiles of a small world.
  v1::ScatterTilesRequest tiles;
  tiles.set_tile_size(10);
  tiles.add_layers()->set_spacing(1);
  tiles.mutable_rect()->set_x1(2);
  tiles.mutable_rect()->set_y1(1);
  grpc::ClientContext context;
  auto reader = stub->ScatterTiles(&context, tiles);
  v1::TileResponse response;
  std::uint64_t tile_points = 0;
  while (reader->Read(&response)) {
    tile_points += static_cast<std::uint64_t>(response.points().id_size());
  }
  ASSERT_TRUE(reader->Finish().ok());
  // A call with an inline raster: the cache keeps it for its digest.
  v1::ScatterRequest with_raster = BoxRequest(1, 0);
  v1::Layer* layer = with_raster.mutable_layers(0);
  layer->set_radius_min(0.05);
  layer->set_radius_max(0.1);
  SetU8Raster(layer->mutable_density(), 2, 1, std::string("\x00\xff", 2), 1,
              1);
  const Received c = Collect(*stub, with_raster);
  ASSERT_TRUE(c.status.ok()) << c.status.error_message();
  const std::string text = HttpGet(server.server().metrics_port(), "/metrics");
  EXPECT_THAT(text, HasSubstr("scatter_requests_total{code=\"OK\",method=\"Scatter\"} 3"));
  EXPECT_THAT(text, HasSubstr(
      "scatter_requests_total{code=\"INVALID_ARGUMENT\",method=\"Scatter\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("scatter_requests_total{code=\"OK\",method=\"ScatterTiles\"} 1"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("scatter_points_sent_total ",
                                           a.size() + b.size() + c.size() +
                                               tile_points)));
  EXPECT_THAT(text, HasSubstr("scatter_tiles_sent_total 2"));
  // Two cold tiles of one layer need generators, which the cache keeps.
  EXPECT_GT(MetricValue(text, "scatter_tile_generators_computed_total"), 0);
  EXPECT_GT(MetricValue(text, "scatter_tile_cache_bytes"), 0);
  // The raster's 2 pixels and their block bounds.
  EXPECT_GT(MetricValue(text, "scatter_raster_cache_bytes"), 0);
  // No call runs: no memory held against the budget.
  EXPECT_EQ(MetricValue(text, "scatter_memory_held_bytes"), 0);
  EXPECT_THAT(text, HasSubstr("scatter_streams_in_flight 0"));
  // What runs: the release, the algorithm version, the SIMD level.
  EXPECT_THAT(
      text, HasSubstr(absl::StrCat("scatter_build_info{algorithm_version=\"",
                                   sampler::kAlgorithmVersion, "\",simd=\"")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("\",version=\"", ScatterVersion(),
                                           "\"} 1")));
  // The limits the gauges above are measured against.
  EXPECT_EQ(MetricValue(text, "scatter_limit{name=\"max_streams\"}"),
            options.service.max_streams);
  EXPECT_EQ(MetricValue(text, "scatter_limit{name=\"memory_budget_bytes\"}"),
            static_cast<double>(options.service.memory_budget_bytes));
  EXPECT_EQ(MetricValue(text, "scatter_limit{name=\"raster_cache_bytes\"}"),
            static_cast<double>(options.service.raster_cache_bytes));
  EXPECT_EQ(MetricValue(text, "scatter_limit{name=\"tile_cache_bytes\"}"),
            static_cast<double>(options.service.tile_cache_bytes));
  // Every method's calls are timed, each under its own label.
  EXPECT_THAT(text, HasSubstr("scatter_request_duration_seconds_count{method="
                              "\"Scatter\"} 4"));
  EXPECT_THAT(text, HasSubstr("scatter_request_duration_seconds_count{method="
                              "\"ScatterTiles\"} 1"));
}

// Calls refused at the door (max_streams, a drain) are counted apart from
// the calls that ran and are not timed: an operator's alert on overload
// could not tell them from clients' own caps (RESOURCE_EXHAUSTED too), and
// their instant refusals pulled the latency quantiles to 0. Under overload
// they are logged once a second, not once each. Every series is there
// before its first call.
TEST(MetricsTest, RefusedCallsAreCountedApartAndLoggedOnceASecond) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.metrics_address = "127.0.0.1:0";
  options.service.max_streams = 1;
  LoopbackServer server(options);
  const std::string before =
      HttpGet(server.server().metrics_port(), "/metrics");
  for (const char* series :
       {"scatter_requests_total{code=\"OK\",method=\"PutRaster\"} 0",
        "scatter_request_duration_seconds_count{method=\"ScatterTiles\"} 0",
        "scatter_requests_refused_total{method=\"Scatter\",reason="
        "\"max_streams\"} 0"}) {
    EXPECT_THAT(before, HasSubstr(series));
  }
  auto stub = server.TcpStub();
  grpc::ClientContext context;
  auto reader = stub->Scatter(&context, LongRequest());
  v1::ScatterResponse response;
  ASSERT_TRUE(reader->Read(&response));
  constexpr int kRefused = 20;
  for (int i = 0; i < kRefused; ++i) {
    EXPECT_EQ(Collect(*stub, BoxRequest(1, 0.1)).status.error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  absl::SleepFor(absl::Milliseconds(1100));
  // Logged, with the 19 left out; the 3 right after it are left out.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Collect(*stub, BoxRequest(1, 0.1)).status.error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  const std::string text = HttpGet(server.server().metrics_port(), "/metrics");
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "scatter_requests_refused_total{method=\"Scatter\","
                        "reason=\"max_streams\"} ",
                        kRefused + 4)));
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "scatter_requests_total{code=\"RESOURCE_EXHAUSTED\","
                        "method=\"Scatter\"} ",
                        kRefused + 4)));
  // The long call is still running: nothing timed yet.
  EXPECT_THAT(text, HasSubstr("scatter_request_duration_seconds_count{method="
                              "\"Scatter\"} 0"));
  const std::string log = server.log();
  std::size_t lines = 0;
  for (std::size_t at = log.find("code=RESOURCE_EXHAUSTED");
       at != std::string::npos;
       at = log.find("code=RESOURCE_EXHAUSTED", at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 2u);
  EXPECT_LT(lines, static_cast<std::size_t>(kRefused) / 2);
  EXPECT_THAT(log, HasSubstr("more Scatter calls refused for max_streams "
                             "since the last such line; "
                             "scatter_requests_refused_total counts them "
                             "all)"));
  // Those left out after the last line are said at shutdown.
  server.server().Shutdown();
  EXPECT_THAT(server.log(), HasSubstr("3 more Scatter calls refused for "
                                      "max_streams since the last such line"));
  while (reader->Read(&response)) {
  }
  reader->Finish();
}

// civetweb matched the handler's path as a prefix: /metricsx and
// /metrics/x were served the metrics as if they were /metrics.
TEST(MetricsTest, OnlyTheMetricsPathIsServed) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.metrics_address = "127.0.0.1:0";
  LoopbackServer server(options);
  const int port = server.server().metrics_port();
  ASSERT_GT(port, 0);
  const std::string metrics = HttpGet(port, "/metrics");
  EXPECT_TRUE(absl::StartsWith(metrics, "HTTP/1.1 200")) << metrics;
  EXPECT_THAT(metrics, HasSubstr("scatter_streams_in_flight 0"));
  for (const char* path : {"/metricsx", "/metrics/x", "/", "/metric"}) {
    SCOPED_TRACE(path);
    const std::string other = HttpGet(port, path);
    EXPECT_TRUE(absl::StartsWith(other, "HTTP/1.1 404")) << other;
    EXPECT_THAT(other, Not(HasSubstr("scatter_")));
  }
}

// The tile metrics move while a ScatterTiles call runs: they were only
// set when a call ended, so a scrape during a long call read 0 generators
// and an empty tile cache. The client reads one tile of a call too big for
// the connection's buffers and scrapes while the server waits to write.
TEST(MetricsTest, TileMetricsMoveWhileACallRuns) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.metrics_address = "127.0.0.1:0";
  LoopbackServer server(options);
  ASSERT_GT(server.server().metrics_port(), 0);
  auto stub = server.TcpStub();
  v1::ScatterTilesRequest tiles;
  tiles.set_tile_size(20);
  tiles.add_layers()->set_spacing(0.25);  // About 5 000 points a tile.
  tiles.mutable_rect()->set_x1(20);
  tiles.mutable_rect()->set_y1(20);
  grpc::ClientContext context;
  auto reader = stub->ScatterTiles(&context, tiles);
  v1::TileResponse response;
  ASSERT_TRUE(reader->Read(&response));
  // The server counts a tile once its write returns, which may be after
  // the client has it: scrape until the counts show, or 10 s.
  std::string text;
  for (const absl::Time end = absl::Now() + absl::Seconds(10);
       absl::Now() < end; absl::SleepFor(absl::Milliseconds(20))) {
    text = HttpGet(server.server().metrics_port(), "/metrics");
    if (MetricValue(text, "scatter_tile_generators_computed_total") > 0 &&
        MetricValue(text, "scatter_tile_cache_bytes") > 0) {
      break;
    }
  }
  EXPECT_THAT(text, HasSubstr("scatter_streams_in_flight 1"));
  EXPECT_GT(MetricValue(text, "scatter_tile_generators_computed_total"), 0);
  EXPECT_GT(MetricValue(text, "scatter_tile_cache_bytes"), 0);
  context.TryCancel();
  while (reader->Read(&response)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

// A call holds its request message against memory_budget_bytes: calls
// that each sent a big raster inline went on to decode and sample beside
// the others' messages, none of which the budget counted.
TEST(LimitsTest, TheRequestMessageIsHeldAgainstTheMemoryBudget) {
  ServerOptions options = LoopbackServer::DefaultOptions();
  options.service.memory_budget_bytes = 1 << 20;
  LoopbackServer server(options);
  v1::ScatterRequest request = BoxRequest(1, 0.1);
  v1::RasterInput* mask = request.mutable_region()->mutable_mask();
  SetU8Raster(mask, 2000, 1000, std::string(2'000'000, '\xff'), 1, 1);
  const std::size_t bytes = request.ByteSizeLong();
  ASSERT_GT(bytes, 2'000'000u);
  const Received got = Collect(*server.TcpStub(), request);
  EXPECT_EQ(got.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(
      got.status.error_message(),
      HasSubstr(absl::StrCat("the request message would hold about ", bytes,
                             " bytes of memory, over the limit "
                             "memory_budget_bytes = 1048576")));
  EXPECT_EQ(got.size(), 0u);
  // A small message fits, and nothing stays held after either call.
  EXPECT_TRUE(Collect(*server.TcpStub(), BoxRequest(1, 0.1)).status.ok());
}

// The cache takes a raster's room before decoding it: calls that each sent
// a big raster inline decoded them all at once, past raster_cache_bytes,
// and only then learned they did not fit. Here the pixels are too few for
// the size, which decoding would have said (InvalidArgument); the size
// alone does not fit, so that is what is said, unread.
TEST(RasterCacheTest, ARasterThatCannotFitIsRefusedBeforeItIsDecoded) {
  RasterCache cache(1 << 20);
  auto big = cache.Put("r", v1::RASTER_FORMAT_U8, 1000, 1000,
                       std::string(1, 'x'), std::size_t{64} << 20);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(big.status().message()),
              HasSubstr("larger than the whole raster cache "
                        "(raster_cache_bytes = 1048576)"));
  // One that fits but does not decode gives its room back.
  auto bad = cache.Put("r", v1::RASTER_FORMAT_U8, 100, 100, std::string(1, 'x'),
                       std::size_t{64} << 20);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.bytes(), 0u);
  // And one that decodes is counted once, at its decoded size.
  auto good = cache.Put("r", v1::RASTER_FORMAT_U8, 100, 100,
                        std::string(10'000, 'x'), std::size_t{64} << 20);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(cache.bytes(),
            4u * 100 * 100 + sampler::Raster::BlockLevelsBytes(100, 100));
}

}  // namespace
}  // namespace scatter::server::testing
