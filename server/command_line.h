#ifndef SCATTER_SERVER_COMMAND_LINE_H_
#define SCATTER_SERVER_COMMAND_LINE_H_

// Command-line parsing, and reading the files that arguments name, shared
// by scatterd and the scatter CLI.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace scatter::server {

// absl::ParseCommandLine, with two differences:
//  - --help, --helpfull, --helpshort and the other usage flags list the
//    flags defined in the file whose path ends with `flags_file` (Abseil's
//    default looks for a file named after the program), and
//  - after printing help the process exits with status 0, as a help
//    request is not an error (Abseil 20220623, Debian 12's, exits with 1).
// Scatter's release ("0.1.0"), as --version and scatter_build_info say it.
const char* ScatterVersion();

// With `only_check_args`, --only_check_args does not exit 0 here (Abseil
// would, having parsed the flags but checked none of their values): it
// sets *only_check_args, and the caller checks its flags and exits 0 or 2.
// Returns the positional arguments, argv[0] first.
std::vector<char*> ParseCommandLine(int argc, char** argv,
                                    absl::string_view flags_file,
                                    bool* only_check_args = nullptr);

// The whole content of the file at `path` (one a symlink names too), or
// of the pipe or device it names (`<(...)`, /dev/stdin) up to its end, at
// most kMaxStreamBytes. Anything else fails with a message that names the
// path and why: "cannot read PATH: No such file or directory", "...: is a
// directory". (An ifstream over a directory opens, and its first read
// throws std::ios_base::failure, which ended the process.)
inline constexpr std::size_t kMaxStreamBytes = std::size_t{1} << 30;
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);
// The same for callers that word the error themselves: nullptr when the
// whole file is in *content, else why not ("No such file or directory", "is
// a directory"), with *content empty.
const char* ReadWholeFile(const std::string& path, std::string* content);

}  // namespace scatter::server

#endif  // SCATTER_SERVER_COMMAND_LINE_H_
