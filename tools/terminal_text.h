// What the CLI writes to a terminal: text from outside the program (node,
// input, output and dim names read from a model file, fields of a recompile
// log, paths) escaped, error lines in one format, JSON that cannot throw, and
// the check that standard output was really written.
//
// Why escape: a corrupted or hostile model can name a node
// "\x1b]0;owned\x07" or put invalid UTF-8 in an input name; echoed raw, the
// bytes retitle or reprogram the user's terminal, or forge output lines. The
// library's Status messages keep names exactly as the model spells them (a
// caller matching on them needs the real bytes); the CLI escapes at the one
// place they reach a person — every model-derived string it prints and every
// error message — with Escaped().
#ifndef SHAPESHIFT_TOOLS_TERMINAL_TEXT_H_
#define SHAPESHIFT_TOOLS_TERMINAL_TEXT_H_

#include <cstdio>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace shapeshift::tools {

// `untrusted` with everything a terminal would act on made visible:
// control bytes as \n, \r, \t or \xNN (0x7f included), bytes that are not
// valid UTF-8 as \xNN, and the C1 controls (U+0080..U+009F) and bidirectional
// overrides (U+200E/F, U+202A..U+202E, U+2066..U+2069) as \uNNNN. Printable
// ASCII and other valid UTF-8 are kept, so ordinary names read as they are.
std::string Escaped(absl::string_view untrusted);

// Escaped() line by line: the '\n's of a multi-line text we composed around
// model-derived strings (the IR printout) are kept, everything else escaped.
std::string EscapedLines(absl::string_view text);

// `shapeshift COMMAND: MESSAGE` on stderr, MESSAGE escaped (error messages
// quote names from the model); returns `exit_code`.
int ReportError(absl::string_view command, int exit_code, absl::string_view message);

// `j` as JSON text; a string that is not valid UTF-8 (a corrupted name) has
// the bad bytes replaced by U+FFFD instead of making the dump throw.
std::string JsonText(const nlohmann::ordered_json& j, int indent = -1);
std::string JsonText(const nlohmann::json& j, int indent = -1);

// An ostream that writes each line to `out` Escaped(), for text the library
// prints as it goes with model names in it (the IR after a pass, for
// `run --print-after`). A last line without '\n' is written on destruction.
class EscapedLineStream : public std::ostream {
 public:
  explicit EscapedLineStream(FILE* out);
  ~EscapedLineStream() override;

 private:
  class LineBuffer : public std::streambuf {
   public:
    explicit LineBuffer(FILE* out) : out_(out) {}
    void WritePending();

   protected:
    int_type overflow(int_type c) override;

   private:
    FILE* out_;
    std::mutex mu_;  // compiles in the background print too
    std::string line_;
  };
  LineBuffer buffer_;
};

// Flushes `out` and says whether everything written to it arrived; false
// (with errno-based `*why`) after any failed write, e.g. `> /dev/full`.
bool FlushedCleanly(FILE* out, std::string* why);

}  // namespace shapeshift::tools

#endif  // SHAPESHIFT_TOOLS_TERMINAL_TEXT_H_
