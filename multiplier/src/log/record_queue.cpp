#include "log/record_queue.hpp"

namespace spe {

std::size_t RecordWrite::bytes() const {
    std::size_t n = json.size() + rope.size();
    for (const auto& c : captures)
        n += c.path.size() + c.text.size();
    return n;
}

bool RecordQueue::push(RecordWrite record) {
    const auto size = record.bytes();
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        if (closed_ || (!records_.empty() && bytes_ + size > max_bytes_)) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        wake = bytes_ <= max_bytes_ / 2 && bytes_ + size > max_bytes_ / 2;
        bytes_ += size;
        records_.push_back(std::move(record));
    }
    if (wake) ready_.notify_one();
    return true;
}

bool RecordQueue::pop_all(std::deque<RecordWrite>& out, std::chrono::milliseconds period) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, period, [this] { return closed_ || bytes_ > max_bytes_ / 2; });
    if (closed_ && records_.empty()) return false;
    out.swap(records_);
    bytes_ = 0;
    return true;
}

void RecordQueue::close() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    ready_.notify_all();
}

std::uint64_t RecordQueue::dropped() const {
    return dropped_.load(std::memory_order_relaxed);
}

std::size_t RecordQueue::queued_bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
}

}  // namespace spe
