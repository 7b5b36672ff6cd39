#include "context/reference_budget.hpp"

namespace spe {
namespace {

/// A kept body and its share of the budget, given back when the last fan-out holding it is done.
struct BudgetedBody : ReferenceBody {
    BudgetedBody(ReferenceBody body, ReferenceBudget& from, std::uint64_t share)
        : ReferenceBody(std::move(body)), budget(from), taken(share) {}
    ~BudgetedBody() { budget.give_back(taken); }
    BudgetedBody(const BudgetedBody&) = delete;
    BudgetedBody& operator=(const BudgetedBody&) = delete;

    ReferenceBudget& budget;
    std::uint64_t taken;
};

}  // namespace

bool ReferenceBudget::take(std::uint64_t n) {
    auto used = used_.load(std::memory_order_relaxed);
    do {
        if (n > limit_ - std::min(used, limit_)) return false;
    } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    return true;
}

KeptBody::KeptBody(ReferenceBudget& budget, std::optional<std::uint64_t> length) : budget_(budget) {
    if (!length) return;
    if (*length > budget_.per_body() || !budget_.take(*length)) {
        keeping_ = false;
        return;
    }
    taken_ = *length;
    bytes_.reserve(static_cast<std::size_t>(*length));
}

KeptBody::~KeptBody() {
    budget_.give_back(taken_);
}

void KeptBody::give_up() {
    digest_.update(bytes_.data(), bytes_.size());  // the part kept so far, before it goes
    keeping_ = false;
    budget_.give_back(taken_);
    taken_ = 0;
    std::string().swap(bytes_);
}

void KeptBody::append(const char* data, std::size_t size) {
    const auto needed = bytes_.size() + size;
    // A body of unknown length takes its bytes as they come.
    if (keeping_ && needed > taken_ && (needed > budget_.per_body() || !budget_.take(needed - taken_))) give_up();
    if (!keeping_) {
        digest_.update(data, size);
        return;
    }
    taken_ = std::max<std::uint64_t>(taken_, needed);
    bytes_.append(data, size);
}

std::string KeptBody::md5() {
    if (keeping_) digest_.update(bytes_.data(), bytes_.size());
    return digest_.hex_final();
}

std::shared_ptr<const ReferenceBody> KeptBody::finish(std::string md5) {
    if (!keeping_) return nullptr;
    // A body shorter than its header said (a HEAD, a 304) gives the rest back now.
    budget_.give_back(taken_ - bytes_.size());
    const std::uint64_t kept = bytes_.size();
    taken_ = 0;
    keeping_ = false;
    return std::make_shared<const BudgetedBody>(ReferenceBody{std::move(bytes_), std::move(md5)}, budget_, kept);
}

}  // namespace spe
