#include "server/command_line.h"

#include <cstdlib>
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

std::vector<char*> ParseCommandLine(int argc, char** argv,
                                    absl::string_view flags_file) {
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
    return absl::StrCat(program, " (Scatter ", SCATTER_VERSION,
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

}  // namespace scatter::server
