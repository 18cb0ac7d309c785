// mixle error hierarchy. Every error mixle throws derives from mixle::Error; messages name the
// offending value (file, row, column, field) and say what would be accepted.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mixle {

/// Root of all mixle errors.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Data, model or option values that break a documented rule (shape, range, finiteness, …).
class InvalidInput : public Error {
 public:
  using Error::Error;
};

/// A command-line usage mistake (unknown flag, missing argument); the CLI exits 2 on it.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// Rows whose log-density is −inf under every component: no responsibility can be assigned.
class ImpossibleEvidence : public Error {
 public:
  using Error::Error;
  /// `rows`: the global indices of the rows the message names, ascending (the first few bad
  /// rows of the pass; rows with a NaN log-density found in the same pass are among them).
  ImpossibleEvidence(const std::string& message, std::vector<std::size_t> rows)
      : Error(message), rows_(std::move(rows)) {}
  const std::vector<std::size_t>& rows() const noexcept { return rows_; }

 private:
  std::vector<std::size_t> rows_;
};

/// A placement the planner produced but no executor can run (reference: UnrealizedModelPlacementError).
class UnrealizedModelPlacement : public Error {
 public:
  using Error::Error;
  /// `plan`: what the planner chose, as JSON (auto_parallel_estimator: the model shards, an
  /// array of ModelShard objects), or empty when the error carries no plan.
  UnrealizedModelPlacement(const std::string& message, std::string plan) : Error(message), plan_(std::move(plan)) {}
  const std::string& plan() const noexcept { return plan_; }

 private:
  std::string plan_;
};

/// Encoding controls passed together with an already-encoded data handle.
class EncodedDataControlConflict : public Error {
 public:
  using Error::Error;
};

/// A collective, rendezvous or peer failure (lost rank, timeout, refused connection).
class CommunicationError : public Error {
 public:
  using Error::Error;
};

/// A plan or allocation that does not fit the memory available; the message carries the numbers.
class MemoryError : public Error {
 public:
  using Error::Error;
};

/// An error reported by the CUDA runtime, cuBLAS or NCCL.
class DeviceError : public Error {
 public:
  using Error::Error;
};

/// A feature this build of mixle was compiled without (e.g. NotCompiled("cuda")).
class NotCompiled : public Error {
 public:
  explicit NotCompiled(const std::string& feature)
      : Error("mixle was built without " + feature +
              " support; rebuild with it enabled "
              "(see README: build options)"),
        feature_(feature) {}
  /// The same error with another message (another rank's NotCompiled, reported here).
  NotCompiled(const std::string& feature, const std::string& message) : Error(message), feature_(feature) {}
  const std::string& feature() const noexcept { return feature_; }

 private:
  std::string feature_;
};

}  // namespace mixle
