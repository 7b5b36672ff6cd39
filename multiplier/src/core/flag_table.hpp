// The Multiplier's flags as one table: each flag's name, the kind of value it
// takes, its default, its help and how it sets the Config. The --help text and
// the program_options description, the parsing into Config (config.cpp) and
// --list-flags (what the lab and the tests check their arguments against) all
// come from it; a new flag is one entry here (and its field in Config).
#pragma once

#include "core/config.hpp"

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace spe {

enum class FlagKind {
    action,  // does something instead of running (--help, --version, --list-flags ...); no value
    on_off,  // a switch: given means on; no value
    text,    // one value: a word, an address, a path, a duration
    number,  // one whole number
    list,    // a value each time it is given (repeatable)
};

struct Flag {
    std::string name;     // as on the command line, without "--"
    char short_name = 0;  // -h for --help; 0: none
    FlagKind kind = FlagKind::text;
    std::string
        default_text;  // the value when the flag is not given, as written; empty: none, or one the help explains
    std::string help;
    std::string field;            // the Config member the flag sets; empty for actions and --config
    std::string example;          // a valid value other than the default (empty for actions and switches)
    Action action = Action::run;  // what an action flag asks for
    /// The program_options value of the flag (nullptr for an action).
    std::function<boost::program_options::value_semantic*()> semantic;
    /// Sets the Config from the flag's value (given, or its default); null for actions and --config.
    std::function<void(Config&, const boost::program_options::variable_value&)> set;
    /// Whether two configs differ in `field` (the tests: parsing the flag sets what it names).
    std::function<bool(const Config&, const Config&)> differs;

    bool takes_value() const { return kind == FlagKind::text || kind == FlagKind::number || kind == FlagKind::list; }
};

/// Every flag, in the order --help lists them.
const std::vector<Flag>& flag_table();

/// The table as program_options options (the --help text's body, what argv and --config FILE are parsed by).
boost::program_options::options_description describe_flags();

/// The table as JSON (--list-flags): [{"name", "takes_value", "kind", "default", "help", "field", "example"}, ...].
std::string flag_table_json();

}  // namespace spe
