#include "log/result_log.hpp"

#include "core/config.hpp"
#include "log/record_json.hpp"
#include "log/rope_lines.hpp"

#include <unistd.h>

namespace spe {

ResultLog::ResultLog(const Config& config, RecordTallySink* tallies)
    : json_(!config.log_path.empty()),
      rope_(!config.rope_log_path.empty()),
      tally_(tallies != nullptr),
      name_(config.name),
      writer_(config.log_path, config.rope_log_path, config.log_queue_bytes, tallies) {
    if (!config.capture_dir.empty())
        captures_.emplace(config.capture_dir, config.capture_max_bytes, config.capture_secrets);
}

void ResultLog::write(const RequestRecord& record) {
    RecordWrite out;
    if (json_) out.json = to_json_line(record, name_) + '\n';
    if (rope_) out.rope = to_rope_lines(record, static_cast<long>(::getpid()));
    if (captures_) captures_->capture_mismatches(record, out.captures);
    if (tally_) out.tally = tally_of(record);
    writer_.submit(std::move(out));
}

}  // namespace spe
