// Plain-words explanations of command-line parse errors: an unknown or missing
// subcommand is named, with the nearest known one ("did you mean") and the
// list to choose from, as git and gh do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace tycli {

// A message for people: a leading contract id ("R6: …") becomes a pointer to
// the page that explains it ("… (rule R6, docs/contracts.md)"), whose table
// every id has a row in.
std::string plain_words(std::string message);

// The known name nearest to `word`: a prefix of it, or at most 2 edits away
// (Levenshtein; a third of the word's length for short words). Empty if none.
std::string nearest_name(std::string_view word, const std::vector<std::string>& names);

// After `app.parse` threw `error` (not CLI::Success): the message to print
// instead of CLI11's bare text. An unknown or missing subcommand of the
// deepest command reached, or an unknown option, is named with the nearest
// known one; any other error keeps CLI11's words, pointed at that command's
// --help. Never empty.
std::string explain_parse_error(const CLI::App& app, const CLI::ParseError& error);

}  // namespace tycli
