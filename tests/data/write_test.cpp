// write_matrix argument checks and write_file_atomic's all-or-nothing behaviour.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "data_test_util.hpp"
#include "host/data/atomic_file.hpp"
#include "host/data/matrix_stream.hpp"

namespace mixle {
namespace {

using test::TempDir;

/// No temporary files may remain next to the destination.
void expect_only(const TempDir& dir, std::size_t n_files) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++count;
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos)
        << "temporary left behind: " << entry.path();
  }
  EXPECT_EQ(count, n_files);
}

TEST(DataAtomicWrite, ReplacesContents) {
  TempDir dir;
  const std::string path = dir.file("out.txt");
  write_file_atomic(path, "first");
  write_file_atomic(path, "second, longer");
  EXPECT_EQ(test::read_bytes(path), "second, longer");
  expect_only(dir, 1);
}

// With standard input closed, open() hands out descriptor 0 — a valid one.
TEST(DataAtomicWrite, WorksWhenTheTemporaryFileGetsDescriptorZero) {
  TempDir dir;
  const std::string path = dir.file("out.txt");
  const int saved = ::dup(0);
  ASSERT_GE(saved, 0);
  ::close(0);
  errno = 0;
  std::string error;
  try {
    write_file_atomic(path, "written through fd 0");
  } catch (const std::exception& e) {
    error = e.what();
  }
  const bool zero_was_used = ::fcntl(0, F_GETFD) == -1;  // closed again after the write
  ::dup2(saved, 0);
  ::close(saved);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(zero_was_used);
  EXPECT_EQ(test::read_bytes(path), "written through fd 0");
  expect_only(dir, 1);
}

TEST(DataAtomicWrite, DestinationIsADirectory) {
  TempDir dir;
  const std::string sub = dir.file("sub");
  std::filesystem::create_directory(sub);
  try {
    write_file_atomic(sub, "x");
    ADD_FAILURE() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(sub), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_directory(sub));
  expect_only(dir, 1);
}

TEST(DataAtomicWrite, MissingFolderNamesPath) {
  TempDir dir;
  const std::string path = dir.file("no/such/folder/out.npy");
  const std::vector<double> v = {1, 2};
  try {
    write_matrix(path, v.data(), 1, 2);
    ADD_FAILURE() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
    // … and the folder it could not create the temporary file in.
    EXPECT_NE(std::string(e.what()).find("temporary file in " + dir.file("no/such/folder")), std::string::npos)
        << e.what();
  }
  expect_only(dir, 0);
}

// Writers killed mid-write leave their temporary files behind. The temporary names carry the
// writer's process id, so no number of such leftovers — here 102 writers, each a child forked
// from this process (the same counter of temporary names) and killed by SIGXFSZ part-way
// through its write — can block a later write by another process.
TEST(DataAtomicWrite, LeftoversOfKilledWritersDoNotBlockLaterWrites) {
  TempDir dir;
  const std::string path = dir.file("checkpoint.bin");
  constexpr int kKilled = 102;  // more than write_file_atomic's 100 retries on a taken name
  for (int i = 0; i < kKilled; ++i) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      struct rlimit no_core {
        0, 0
      }, small{1024, 1024};
      ::setrlimit(RLIMIT_CORE, &no_core);
      ::setrlimit(RLIMIT_FSIZE, &small);  // the write past 1 KiB raises SIGXFSZ: killed
      try {
        write_file_atomic(path, std::string(1 << 16, 'x'));
      } catch (...) {}
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << "writer " << i << " status " << status;
  }
  write_file_atomic(path, "written after the leftovers");
  EXPECT_EQ(test::read_bytes(path), "written after the leftovers");
  std::size_t leftovers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    leftovers += entry.path().filename().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(leftovers, static_cast<std::size_t>(kKilled));
}

// A write that fails half-way (file size limit; works even as root, unlike permissions) must
// leave the previous file untouched and no temporary behind.
TEST(DataAtomicWrite, FailedWriteKeepsOldFile) {
  TempDir dir;
  const std::string path = dir.file("model.npy");
  write_file_atomic(path, "old contents");
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  struct rlimit small = saved;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string message;
  try {
    write_file_atomic(path, std::string(1 << 20, 'x'));
  } catch (const Error& e) {
    threw = true;
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_EQ(test::read_bytes(path), "old contents");
  expect_only(dir, 1);
}

// The same failure when the temporary file got descriptor 0: that descriptor is closed too, not
// leaked because it is 0.
TEST(DataAtomicWrite, AFailedWriteClosesDescriptorZero) {
  TempDir dir;
  const std::string path = dir.file("model.npy");
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 1024;
  const int stdin_copy = ::dup(0);
  ASSERT_GE(stdin_copy, 0);
  ::close(0);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    write_file_atomic(path, std::string(1 << 20, 'x'));
  } catch (const Error&) {
    threw = true;
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  const bool zero_closed = ::fcntl(0, F_GETFD) == -1;
  ::dup2(stdin_copy, 0);
  ::close(stdin_copy);
  EXPECT_TRUE(threw);
  EXPECT_TRUE(zero_closed) << "the temporary file's descriptor 0 was left open";
  expect_only(dir, 0);
}

// An atomic file abandoned before its commit (an error on the way) on descriptor 0: the
// descriptor is closed and the temporary file removed, leaving nothing behind.
TEST(DataAtomicWrite, AnAbandonedFileOnDescriptorZeroClosesIt) {
  TempDir dir;
  const int stdin_copy = ::dup(0);
  ASSERT_GE(stdin_copy, 0);
  ::close(0);
  bool on_zero = false;
  {
    host::AtomicFile file(dir.file("out.txt"));
    file.write("never committed");
    on_zero = ::fcntl(0, F_GETFD) != -1;
  }
  const bool zero_closed = ::fcntl(0, F_GETFD) == -1;
  ::dup2(stdin_copy, 0);
  ::close(stdin_copy);
  EXPECT_TRUE(on_zero) << "the temporary file should have got descriptor 0";
  EXPECT_TRUE(zero_closed) << "the abandoned file's descriptor 0 was left open";
  expect_only(dir, 0);
}

TEST(DataWriteMatrix, ArgumentChecks) {
  TempDir dir;
  const std::vector<double> v = {1, 2, 3, 4};
  const std::string csv = dir.file("m.csv");
  test::expect_invalid_input([&] { write_matrix(csv, v.data(), 2, 2, DataFormat::csv, {"only_one"}); },
                             {csv, "1 column names", "2 columns"});
  const std::string unknown = dir.file("m.xyz");
  test::expect_invalid_input([&] { write_matrix(unknown, v.data(), 2, 2); }, {unknown, "format"});
  expect_only(dir, 0);
  // An explicit format wins over the extension.
  write_matrix(unknown, v.data(), 2, 2, DataFormat::npy);
  ReadOptions o;
  o.format = DataFormat::npy;
  EXPECT_EQ(read_data(unknown, o).at(1, 0), 3.0);
  EXPECT_EQ(read_data(unknown).at(1, 1), 4.0);  // sniffed by the .npy magic
}

// The delimiter follows the extension: tabs for .tsv, commas for .csv; both read back exactly.
TEST(DataWriteMatrix, TsvUsesTabsAndCsvCommas) {
  TempDir dir;
  const std::vector<double> v = {1.5, -2, 3, 4.25};
  for (const auto& [name, delimiter, other] : {std::tuple{"m.tsv", '\t', ','}, std::tuple{"m.csv", ',', '\t'}}) {
    SCOPED_TRACE(name);
    const std::string path = dir.file(name);
    write_matrix(path, v.data(), 2, 2, DataFormat::automatic, {"a", "b"});
    const std::string text = test::read_bytes(path);
    EXPECT_EQ(text.rfind(std::string("a") + delimiter + "b\n", 0), 0u) << text;
    EXPECT_EQ(text.find(other), std::string::npos) << text;
    const Dataset d = read_data(path);
    ASSERT_EQ(d.cols(), 2u);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(d.at(i / 2, i % 2), v[i]) << i;
  }
}

// A file named just ".tsv" (in the working folder; no extension to std::filesystem, so the format
// is named) is written with tabs and read back as TSV: the reader and the writer agree on the
// delimiter rule at its shortest. A comma in a column name makes the name, not the sniffed first
// line, decide the delimiter.
TEST(DataWriteMatrix, AFileNamedOnlyDotTsvRoundTrips) {
  TempDir dir;
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  const std::vector<double> v = {1.5, -2, 3, 4.25};
  std::string text;
  Dataset d;
  try {
    write_matrix(".tsv", v.data(), 2, 2, DataFormat::csv, {"a,1", "b"});
    text = test::read_bytes(".tsv");
    ReadOptions csv;
    csv.format = DataFormat::csv;
    d = read_data(".tsv", csv);
  } catch (...) {
    std::filesystem::current_path(before);
    throw;
  }
  std::filesystem::current_path(before);
  EXPECT_EQ(text.rfind("a,1\tb\n", 0), 0u) << text;
  ASSERT_EQ(d.cols(), 2u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(d.at(i / 2, i % 2), v[i]) << i;
}

// The extension decides in any case, for the writer as for the reader: D.TSV and d.Tsv are
// written and read with tabs, D.NPY is NumPy.
TEST(DataWriteMatrix, ExtensionsCountInAnyCase) {
  TempDir dir;
  const std::vector<double> v = {1.5, -2, 3, 4.25};
  for (const char* name : {"D.TSV", "d.Tsv"}) {
    const std::string path = dir.file(name);
    write_matrix(path, v.data(), 2, 2);
    EXPECT_EQ(test::read_bytes(path), "1.5\t-2\n3\t4.25\n") << name;
    const Dataset d = read_data(path);
    ASSERT_EQ(d.cols(), 2u) << name;
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(d.at(i / 2, i % 2), v[i]) << name << " " << i;
  }
  // Written chunk by chunk (as `mixle score` writes its outputs), the same bytes, tabs included.
  host::MatrixStream<double> stream(dir.file("S.TSV"), 2, 2, DataFormat::automatic);
  stream.append(v.data(), 1);
  stream.append(v.data() + 2, 1);
  stream.commit();
  EXPECT_EQ(test::read_bytes(dir.file("S.TSV")), test::read_bytes(dir.file("D.TSV")));
  const std::string npy = dir.file("D.NPY");
  write_matrix(npy, v.data(), 2, 2);
  EXPECT_EQ(test::read_bytes(npy).rfind("\x93NUMPY", 0), 0u);
  const Dataset d = read_data(npy);
  ASSERT_EQ(d.rows(), 2u);
  EXPECT_EQ(d.at(1, 1), 4.25);
}

}  // namespace
}  // namespace mixle
