#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "weft/durable_file.hpp"
#include "weft/store/state_dir.hpp"

using namespace weft;
using namespace weft::store;

namespace {

std::string scratch(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() /
           ("weft-state-test-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(StateDir, CreatesTheDirectoryAndRecordsThePid) {
  const std::string d = scratch("create");
  auto s = StateDir::acquire(d + "/sub");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->file("guid2lid"), d + "/sub/guid2lid");
  EXPECT_EQ(slurp(d + "/sub/lock"), std::to_string(getpid()) + "\n");
  struct stat st {};
  ASSERT_EQ(::stat((d + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  std::filesystem::remove_all(d);
}

TEST(StateDir, ASecondHolderIsRefusedWithTheFirstOnesPid) {
  const std::string d = scratch("second");
  auto first = StateDir::acquire(d);
  ASSERT_TRUE(first) << first.error().message;
  // Another process, as a second `weft sm` would be.
  const pid_t child = fork();
  if (child == 0) {
    auto again = StateDir::acquire(d);
    const bool refused =
        !again && again.error().message.find("in use by another weft (pid " +
                                             std::to_string(getppid()) + ")") != std::string::npos;
    _exit(refused ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The refusal left the holder's pid in place.
  EXPECT_EQ(slurp(d + "/lock"), std::to_string(getpid()) + "\n");
  std::filesystem::remove_all(d);
}

TEST(StateDir, TheLockGoesWithItsHolder) {
  const std::string d = scratch("release");
  {
    auto first = StateDir::acquire(d);
    ASSERT_TRUE(first);
    auto moved = std::move(*first);
    auto second = StateDir::acquire(d);  // a second open file: flock refuses it too
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().message.find("each SM needs a state directory of its own"),
              std::string::npos);
  }
  auto after = StateDir::acquire(d);
  EXPECT_TRUE(after) << after.error().message;
  std::filesystem::remove_all(d);
}

TEST(DurableFile, ReplacesTheFileWholeWithTheModeAskedFor) {
  const std::string d = scratch("durable");
  const std::string f = d + "/a/secret";
  ASSERT_TRUE(write_file_durably(f, "one\n", 0600));
  ASSERT_TRUE(write_file_durably(f, "two\n", 0600));
  EXPECT_EQ(slurp(f), "two\n");
  EXPECT_FALSE(std::filesystem::exists(f + ".tmp"));
  struct stat st {};
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::filesystem::remove_all(d);
}

TEST(DurableFile, AnUnwritablePlaceIsAnErrorNamingIt) {
  const std::string d = scratch("unwritable");
  ASSERT_TRUE(write_file_durably(d + "/file", "x"));
  auto r = write_file_durably(d + "/file/below", "y");  // a file is no directory
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::kIo);
  EXPECT_NE(r.error().message.find(d + "/file"), std::string::npos);
  std::filesystem::remove_all(d);
}
