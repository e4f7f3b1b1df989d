// Text from tools (and anything they may have shaped: audit targets and
// reasons, logs, results, error messages, task content) made safe to print on
// a terminal (issue 12.7). The one escaping function of the CLI's text output;
// `--json` output is escaped by JSON itself.
//
// Escaped, as JSON-style \uXXXX (or \xNN for a byte that is not UTF-8):
//   C0 controls U+0000-U+001F (ESC, BEL, CR, LF, TAB, BS, ...) and DEL U+007F:
//     no CSI/OSC/DCS sequence, bell, carriage return or forged line survives;
//   C1 controls U+0080-U+009F (8-bit CSI U+009B, OSC U+009D, ...);
//   bidirectional and invisible format characters (U+200B-U+200F,
//     U+202A-U+202E, U+2060-U+2069, U+FEFF): text cannot reorder or hide itself;
//   the backslash itself (as \\), so an escape in the output is always ours.
// Everything else (printable ASCII and other valid UTF-8) is kept.
#pragma once

#include <string>
#include <string_view>

namespace taskyon {

// Newlines::keep leaves LF as a line break (for multi-line text the CLI made
// itself, e.g. an indented JSON dump whose strings are escaped already);
// escape turns LF into \n too. Every other rule applies either way.
enum class Newlines { escape, keep };

std::string escape_terminal(std::string_view text, Newlines newlines = Newlines::escape);

// For a JSON document the CLI dumped (nlohmann, ensure_ascii off, indented or
// not): C0 controls cannot occur raw in it but as line breaks, so only C1
// controls, the format characters above and bytes that are not UTF-8 are
// escaped, as JSON \uXXXX escapes (\ufffd for a bad byte): the output stays
// the same JSON value, and safe to print.
std::string escape_json_dump(std::string_view dump);

}  // namespace taskyon
