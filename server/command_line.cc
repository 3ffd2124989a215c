#include "server/command_line.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sampler/version.h"

namespace scatter::server {

const char* ScatterVersion() { return SCATTER_VERSION; }

std::vector<char*> ParseCommandLine(int argc, char** argv,
                                    absl::string_view flags_file,
                                    bool* only_check_args) {
  absl::FlagsUsageConfig usage;
  const std::string file(flags_file);
  usage.contains_help_flags = [file](absl::string_view path) {
    return absl::EndsWith(path, file);
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  // --version: Abseil's default names the build type of its own library.
  std::string program = argc > 0 ? argv[0] : "scatter";
  program.erase(0, program.find_last_of('/') + 1);
  usage.version_string = [program] {
    return absl::StrCat(program, " (Scatter ", ScatterVersion(),
                        "), algorithm_version ", sampler::kAlgorithmVersion,
                        "\n");
  };
  absl::SetFlagsUsageConfig(usage);
  // What absl::ParseCommandLine does, with the usage flags handled here:
  // Abseil 20220623 has no public way to change their exit status. (Later
  // Abseil releases exit 0 after --help themselves.)
  std::vector<char*> args = absl::flags_internal::ParseCommandLineImpl(
      argc, argv, absl::flags_internal::ArgvListAction::kRemoveParsedArgs,
      absl::flags_internal::UsageFlagsAction::kIgnoreUsage,
      absl::flags_internal::OnUndefinedFlag::kAbortIfUndefined);
  if (only_check_args != nullptr) {
    *only_check_args = absl::flags_internal::GetFlagsHelpMode() ==
                       absl::flags_internal::HelpMode::kOnlyCheckArgs;
    if (*only_check_args) return args;
  }
  // 1: help was printed; 0: --version or --only_check_args was handled;
  // -1: no usage flag.
  const int handled = absl::flags_internal::HandleUsageFlags(
      std::cout, absl::ProgramUsageMessage());
  if (handled != -1) {
    std::cout.flush();
    std::exit(0);
  }
  return args;
}

const char* ReadWholeFile(const std::string& path, std::string* content) {
  std::string& out = *content;
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  struct stat info;
  const char* error = nullptr;
  if (::fstat(fd, &info) != 0) {
    error = std::strerror(errno);
  } else if (S_ISDIR(info.st_mode)) {
    error = "is a directory";
  } else {
    // A pipe or a device (`scatter run <(...)`, /dev/stdin from a pipe)
    // has no size: read to its end, as far as kMaxStreamBytes (/dev/zero
    // has none).
    const bool regular = S_ISREG(info.st_mode);
    out.resize(regular ? static_cast<std::size_t>(info.st_size) : 0);
    std::size_t at = 0;
    // A file that grows or shrinks while read gives what read() returned.
    for (;;) {
      if (!regular && at >= kMaxStreamBytes) {
        static_assert(kMaxStreamBytes == std::size_t{1} << 30,
                      "the message below gives the bound");
        error =
            "gives more than 1 GiB (1073741824 bytes), and it is not a "
            "regular file";
        break;
      }
      if (at == out.size()) out.resize(out.size() + 65536);
      const ssize_t n = ::read(fd, out.data() + at, out.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error = std::strerror(errno);
        break;
      }
      if (n == 0) break;
      at += static_cast<std::size_t>(n);
    }
    out.resize(at);
  }
  ::close(fd);
  if (error != nullptr) out.clear();
  return error;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::string out;
  const char* why = ReadWholeFile(path, &out);
  if (why != nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", why));
  }
  return out;
}

}  // namespace scatter::server
