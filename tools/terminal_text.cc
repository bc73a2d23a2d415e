#include "tools/terminal_text.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace shapeshift::tools {
namespace {

// The length of the valid UTF-8 sequence at the start of `s` and its code
// point, or 0 when the bytes there are not one (overlong forms, surrogates
// and code points past U+10FFFF included).
size_t DecodeUtf8(absl::string_view s, char32_t* code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, cp = lead & 0x1f, min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, cp = lead & 0x0f, min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  *code_point = cp;
  return length;
}

// Code points a terminal acts on or that reorder what is shown.
bool IsInvisibleControl(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void AppendEscapedByte(unsigned char c, std::string* out) {
  switch (c) {
    case '\n': out->append("\\n"); return;
    case '\r': out->append("\\r"); return;
    case '\t': out->append("\\t"); return;
    default: absl::StrAppendFormat(out, "\\x%02x", c);
  }
}

}  // namespace

std::string Escaped(absl::string_view untrusted) {
  std::string out;
  out.reserve(untrusted.size());
  for (size_t i = 0; i < untrusted.size();) {
    const unsigned char c = static_cast<unsigned char>(untrusted[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    char32_t cp = 0;
    const size_t length = c >= 0x80 ? DecodeUtf8(untrusted.substr(i), &cp) : 0;
    if (length == 0) {
      AppendEscapedByte(c, &out);
      ++i;
    } else if (IsInvisibleControl(cp)) {
      absl::StrAppendFormat(&out, "\\u%04x", static_cast<uint32_t>(cp));
      i += length;
    } else {
      out.append(untrusted.data() + i, length);
      i += length;
    }
  }
  return out;
}

std::string EscapedLines(absl::string_view text) {
  std::string out;
  bool first = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!first) out.push_back('\n');
    first = false;
    out += Escaped(line);
  }
  return out;
}

int ReportError(absl::string_view command, int exit_code, absl::string_view message) {
  const std::string line =
      absl::StrCat("shapeshift", command.empty() ? "" : " ", Escaped(command), ": ", Escaped(message), "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
  return exit_code;
}

std::string JsonText(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string JsonText(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

EscapedLineStream::EscapedLineStream(FILE* out) : std::ostream(nullptr), buffer_(out) { rdbuf(&buffer_); }

EscapedLineStream::~EscapedLineStream() { buffer_.WritePending(); }

std::streambuf::int_type EscapedLineStream::LineBuffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  std::lock_guard<std::mutex> lock(mu_);
  if (traits_type::to_char_type(c) != '\n') {
    line_.push_back(traits_type::to_char_type(c));
    return c;
  }
  const std::string text = Escaped(line_) + "\n";
  line_.clear();
  std::fwrite(text.data(), 1, text.size(), out_);
  return c;
}

void EscapedLineStream::LineBuffer::WritePending() {
  std::lock_guard<std::mutex> lock(mu_);
  if (line_.empty()) return;
  const std::string text = Escaped(line_) + "\n";
  line_.clear();
  std::fwrite(text.data(), 1, text.size(), out_);
}

bool FlushedCleanly(FILE* out, std::string* why) {
  errno = 0;
  const bool flushed = std::fflush(out) == 0;
  const int flush_errno = errno;
  if (flushed && !std::ferror(out)) return true;
  *why = flush_errno != 0 ? std::strerror(flush_errno) : "an earlier write failed";
  return false;
}

}  // namespace shapeshift::tools
