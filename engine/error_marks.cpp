// Failures carried through collectives (engine/error_marks.hpp).
#include "engine/error_marks.hpp"

#include <mixle/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace mixle::engine {
namespace {

/// mixle's error types, as one rank tells the others which one it raised.
enum class ErrorKind : std::int32_t {
  error,  // mixle::Error itself, or an exception from outside mixle
  invalid_input,
  usage,
  impossible_evidence,
  unrealized_placement,
  control_conflict,
  communication,
  memory,
  device,
  not_compiled,
};

/// What the lowest failing rank broadcasts: its error's type, message and (ImpossibleEvidence)
/// rows, or (NotCompiled) feature. Trivially copyable: it travels as bytes.
struct CarriedError {
  ErrorKind kind = ErrorKind::error;
  std::int32_t num_rows = 0;
  std::array<std::uint64_t, 16> rows{};
  std::array<char, 64> feature{};
  std::array<char, 1024> message{};
};

template <std::size_t N>
void copy_text(std::array<char, N>& to, const std::string& text) {
  std::snprintf(to.data(), to.size(), "%s", text.c_str());
}

ErrorKind kind_of(const std::exception& e) {
  if (dynamic_cast<const InvalidInput*>(&e)) return ErrorKind::invalid_input;
  if (dynamic_cast<const UsageError*>(&e)) return ErrorKind::usage;
  if (dynamic_cast<const UnrealizedModelPlacement*>(&e)) return ErrorKind::unrealized_placement;
  if (dynamic_cast<const EncodedDataControlConflict*>(&e)) return ErrorKind::control_conflict;
  if (dynamic_cast<const CommunicationError*>(&e)) return ErrorKind::communication;
  if (dynamic_cast<const MemoryError*>(&e)) return ErrorKind::memory;
  if (dynamic_cast<const DeviceError*>(&e)) return ErrorKind::device;
  return ErrorKind::error;
}

CarriedError describe(const std::exception_ptr& error) {
  CarriedError c;
  try {
    std::rethrow_exception(error);
  } catch (const ImpossibleEvidence& e) {
    c.kind = ErrorKind::impossible_evidence;
    c.num_rows = static_cast<std::int32_t>(std::min(e.rows().size(), c.rows.size()));
    std::copy_n(e.rows().begin(), c.num_rows, c.rows.begin());
    copy_text(c.message, e.what());
  } catch (const NotCompiled& e) {
    c.kind = ErrorKind::not_compiled;
    copy_text(c.feature, e.feature());
    copy_text(c.message, e.what());
  } catch (const std::exception& e) {
    c.kind = kind_of(e);
    copy_text(c.message, e.what());
  } catch (...) {}
  return c;
}

/// Throws an error of `c`'s type with `text` as its message.
[[noreturn]] void throw_as(const CarriedError& c, const std::string& text) {
  switch (c.kind) {
    case ErrorKind::invalid_input: throw InvalidInput(text);
    case ErrorKind::usage: throw UsageError(text);
    case ErrorKind::impossible_evidence: {
      const auto n =
          static_cast<std::size_t>(std::clamp<std::int32_t>(c.num_rows, 0, static_cast<std::int32_t>(c.rows.size())));
      throw ImpossibleEvidence(text, std::vector<std::size_t>(c.rows.begin(), c.rows.begin() + n));
    }
    case ErrorKind::unrealized_placement: throw UnrealizedModelPlacement(text);
    case ErrorKind::control_conflict: throw EncodedDataControlConflict(text);
    case ErrorKind::communication: throw CommunicationError(text);
    case ErrorKind::memory: throw MemoryError(text);
    case ErrorKind::device: throw DeviceError(text);
    case ErrorKind::not_compiled: throw NotCompiled(c.feature.data(), text);
    case ErrorKind::error: break;
  }
  throw Error(text);
}

}  // namespace

double error_mark(const std::exception_ptr& error, int rank) {
  return error ? (rank < 52 ? std::ldexp(1.0, rank) : 1.0) : 0.0;
}

void raise_marks(double failed, const std::exception_ptr& error, comms::Communicator& comm, const char* what) {
  if (failed == 0.0) return;
  std::string ranks;
  int first = -1;  // unknown beyond 52 ranks (the marks are then all 1)
  if (comm.size() <= 52) {
    for (int r = 0; r < comm.size(); ++r)
      if (std::fmod(std::floor(failed / std::ldexp(1.0, r)), 2.0) == 1.0) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
        if (first < 0) first = r;
      }
  } else {
    ranks = "some rank";
  }
  CarriedError carried;
  if (first >= 0) {
    if (comm.rank() == first && error) carried = describe(error);
    std::array<char, sizeof(CarriedError)> bytes{};
    std::memcpy(bytes.data(), &carried, sizeof carried);
    comm.broadcast(std::span<char>(bytes), first);
    std::memcpy(&carried, bytes.data(), sizeof carried);
    carried.message.back() = '\0';
    carried.feature.back() = '\0';
  }
  if (error) std::rethrow_exception(error);
  throw_as(carried, std::string(what) + " failed on rank " + ranks +
                        (carried.message[0] ? " (rank " + std::to_string(first) + ": " + carried.message.data() + ")"
                                            : " (its own message says why)") +
                        "; rank " + std::to_string(comm.rank()) + " stops too");
}

void all_reduce_with_marks(comms::Communicator& comm, std::vector<double>& values, const std::function<void()>& local,
                           const char* what, const MarkedAllReduce& all_reduce) {
  std::exception_ptr error;
  try {
    local();
  } catch (...) {
    error = std::current_exception();
  }
  // One extra slot: Σ 2^rank over the failing ranks — the reduce stays a single collective and
  // names who failed.
  values.push_back(error_mark(error, comm.rank()));
  if (all_reduce)
    all_reduce(values, error != nullptr);
  else
    comm.all_reduce_sum(std::span<double>(values));
  const double failed = values.back();
  values.pop_back();
  raise_marks(failed, error, comm, what);
}

}  // namespace mixle::engine
