// Environment variables checked against the knobs a component reads (runtime/util/env_check.hpp),
// and the cuda backend's knob list against the variables its sources read, so that a knob added
// or renamed in the code cannot be missing from the list the backend checks at load. Runs without
// a GPU: the list is a header and the sources are read as text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "runtime/backends/cuda/env_knobs.hpp"
#include "runtime/util/env_check.hpp"

namespace edgevla {
namespace {

constexpr std::string_view kPrefixes[] = {"APP_A_", "APP_B_"};
constexpr EnvKnob kKnobs[] = {{"APP_A_NARROW", "n"}, {"APP_A_TILES", "t"}, {"APP_B_PLAN_FILE", "p"}};

TEST(EnvCheck, NamesEachUnreadVariableUnderThePrefixesWithTheNearestKnob) {
  const char* env[] = {"PATH=/usr/bin",       "APP_A_NARROWW=1", "APP_A_TILES=3", "APP_C_ANY=1",
                       "APP_B_SOMETHING_ELSE=x", "APP_A_NAROW=2",  "APP_B_PLAN_FILE=/tmp/p", "APP_A_=1",
                       nullptr};
  const EnvCheck c = check_env(kPrefixes, kKnobs, env);
  ASSERT_EQ(c.unknown.size(), 4u);
  EXPECT_NE(c.unknown[0].find("APP_A_NARROWW is set but edgevla reads no such variable"), std::string::npos)
      << c.unknown[0];
  EXPECT_NE(c.unknown[0].find("did you mean APP_A_NARROW?"), std::string::npos) << c.unknown[0];
  EXPECT_NE(c.unknown[1].find("APP_B_SOMETHING_ELSE"), std::string::npos) << c.unknown[1];
  EXPECT_NE(c.unknown[1].find("unset it"), std::string::npos) << c.unknown[1];  // no knob within a few edits
  EXPECT_NE(c.unknown[2].find("did you mean APP_A_NARROW?"), std::string::npos) << c.unknown[2];
  EXPECT_NE(c.unknown[3].find("APP_A_ is set"), std::string::npos) << c.unknown[3];
  // The knobs that are set, as they are set.
  EXPECT_EQ(c.set, (std::vector<std::string>{"APP_A_TILES=3", "APP_B_PLAN_FILE=/tmp/p"}));
}

TEST(EnvCheck, NothingSetOrOnlyKnownVariablesSaysNothingUnknown) {
  const char* none[] = {nullptr};
  EXPECT_TRUE(check_env(kPrefixes, kKnobs, none).unknown.empty());
  EXPECT_TRUE(check_env(kPrefixes, kKnobs, nullptr).unknown.empty());
  const char* known[] = {"APP_A_NARROW=0", "APP_A_TILES=", "APP_B_PLAN_FILE", "HOME=/root", nullptr};
  const EnvCheck c = check_env(kPrefixes, kKnobs, known);
  EXPECT_TRUE(c.unknown.empty());
  EXPECT_EQ(c.set, (std::vector<std::string>{"APP_A_NARROW=0"}));  // empty ones change nothing
}

TEST(EnvCheck, ReadsThisProcesssEnvironment) {
  ASSERT_EQ(::setenv("APP_A_TILESS", "4", 1), 0);
  ASSERT_EQ(::setenv("APP_A_NARROW", "1", 1), 0);
  const EnvCheck c = check_env(kPrefixes, kKnobs);
  ::unsetenv("APP_A_TILESS");
  ::unsetenv("APP_A_NARROW");
  ASSERT_EQ(c.unknown.size(), 1u);
  EXPECT_NE(c.unknown[0].find("did you mean APP_A_TILES?"), std::string::npos) << c.unknown[0];
  EXPECT_EQ(c.set, (std::vector<std::string>{"APP_A_NARROW=1"}));
}

// Every environment variable the cuda backend's sources read (through env_int or getenv) is in
// its knob list with a meaning and under one of its prefixes, and every listed knob is read.
TEST(CudaEnvKnobs, TheListIsWhatTheSourcesRead) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(EDGEVLA_TEST_SOURCE_DIR) / "runtime" / "backends" / "cuda";
  ASSERT_TRUE(fs::is_directory(root)) << root;
  const std::regex read(R"re((env_int|getenv)\(\s*"(EDGEVLA_[A-Z0-9_]+)")re");
  std::set<std::string> in_sources;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (auto it = std::sregex_iterator(s.begin(), s.end(), read); it != std::sregex_iterator(); ++it) {
      in_sources.insert((*it)[2].str());
    }
  }
  ASSERT_GT(in_sources.size(), 20u) << "the scan found too few reads to be the cuda backend's";
  std::set<std::string> listed;
  for (const EnvKnob& k : backends::cuda::kEnvKnobs) {
    EXPECT_TRUE(listed.insert(std::string(k.name)).second) << k.name << " is listed twice";
    EXPECT_FALSE(k.meaning.empty()) << k.name << " has no meaning";
    bool prefixed = false;
    for (std::string_view p : backends::cuda::kEnvPrefixes) prefixed = prefixed || k.name.starts_with(p);
    EXPECT_TRUE(prefixed) << k.name << " is under none of the prefixes the backend checks";
  }
  for (const std::string& n : in_sources) {
    EXPECT_TRUE(listed.count(n) == 1) << n << " is read by runtime/backends/cuda but missing from env_knobs.hpp";
  }
  for (const std::string& n : listed) {
    EXPECT_TRUE(in_sources.count(n) == 1) << n << " is in env_knobs.hpp but no source reads it";
  }
}

}  // namespace
}  // namespace edgevla
