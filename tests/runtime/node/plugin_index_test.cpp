// Node plugins found by type name: index files in plugin folders, EDGEVLA_PLUGIN_PATH, and the
// registry loading the library an index names.
#include "runtime/node/plugin_index.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/node/node_registry.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;

class NodePluginIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("plugin_index_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    ::unsetenv("EDGEVLA_PLUGIN_PATH");
  }
  void TearDown() override {
    ::unsetenv("EDGEVLA_PLUGIN_PATH");
    fs::remove_all(dir_);
  }

  // Writes `text` to dir_/rel (folders made as needed); returns the absolute path.
  std::string write(const std::string& rel, const std::string& text) {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::string folder(const std::string& rel) {
    fs::create_directories(dir_ / rel);
    return (dir_ / rel).string();
  }
  static void expect_all(const Status& s, const std::vector<std::string>& parts) {
    ASSERT_FALSE(s.is_ok()) << "expected an error";
    for (const auto& p : parts)
      EXPECT_NE(s.message().find(p), std::string::npos)
          << "'" << p << "' missing from: " << s.message();
  }
  static std::string test_plugin() {
    return fs::canonical(testing::bin_dir() + "/../lib/libedgevla_test_plugin.so").string();
  }

  fs::path dir_;
};

TEST_F(NodePluginIndex, IndexNamesTheLibraryBesideIt) {
  const std::string lib = write("a/libgrip.so", "");
  const std::string index =
      write("a/grip.nodes", "library: libgrip.so\ntypes: [my_gripper, my_wrist]\n");
  write("a/unrelated.nodes",
        "library: libother.so\ntypes: [other]\n");  // names another type: not read for it
  auto found = find_node_plugin("my_wrist", {folder("a")});
  ASSERT_TRUE(found.has_value()) << found.status().to_string();
  EXPECT_EQ(found->library, lib);
  EXPECT_EQ(found->index, index);
  // An absolute library path is taken as it is.
  write("b/abs.nodes", "library: " + lib + "\ntypes: [abs_type]\n");
  auto abs = find_node_plugin("abs_type", {folder("b")});
  ASSERT_TRUE(abs.has_value()) << abs.status().to_string();
  EXPECT_EQ(abs->library, lib);
}

TEST_F(NodePluginIndex, MissingLibraryIsNamed) {
  const std::string index = write("a/grip.nodes", "library: libgone.so\ntypes: [my_gripper]\n");
  auto found = find_node_plugin("my_gripper", {folder("a")});
  expect_all(found.status(), {"my_gripper", index, (dir_ / "a/libgone.so").string(),
                              "does not exist", "reinstall"});
}

TEST_F(NodePluginIndex, TwoIndexesOfOneFolderNamingOneTypeIsAnError) {
  write("a/liba.so", "");
  write("a/libb.so", "");
  const std::string ia = write("a/first.nodes", "library: liba.so\ntypes: [my_gripper]\n");
  const std::string ib = write("a/second.nodes", "library: libb.so\ntypes: [x, my_gripper]\n");
  auto found = find_node_plugin("my_gripper", {folder("a")});
  expect_all(found.status(), {"my_gripper", ia, ib, "liba.so", "libb.so", "remove"});
  EXPECT_EQ(found.status().code(), StatusCode::kAlreadyExists);
  // The other type of the second index is not ambiguous.
  auto x = find_node_plugin("x", {folder("a")});
  ASSERT_TRUE(x.has_value()) << x.status().to_string();
  EXPECT_EQ(x->index, ib);
}

TEST_F(NodePluginIndex, FirstFolderOfTheSearchPathProvidesTheType) {
  const std::string la = write("overlay/libgrip.so", "");
  const std::string lb = write("installed/libgrip.so", "");
  write("overlay/grip.nodes", "library: libgrip.so\ntypes: [my_gripper]\n");
  write("installed/grip.nodes", "library: libgrip.so\ntypes: [my_gripper]\n");
  auto first = find_node_plugin("my_gripper", {folder("overlay"), folder("installed")});
  ASSERT_TRUE(first.has_value()) << first.status().to_string();
  EXPECT_EQ(first->library, la);
  auto swapped = find_node_plugin("my_gripper", {folder("installed"), folder("overlay")});
  ASSERT_TRUE(swapped.has_value()) << swapped.status().to_string();
  EXPECT_EQ(swapped->library, lb);
  // A folder that does not exist is skipped, and a later one still provides the type.
  auto skipped = find_node_plugin("my_gripper", {(dir_ / "nothere").string(), folder("installed")});
  ASSERT_TRUE(skipped.has_value()) << skipped.status().to_string();
  EXPECT_EQ(skipped->library, lb);
}

TEST_F(NodePluginIndex, ListingGivesEachTypeItsFirstFolder) {
  const std::string overlay_index =
      write("overlay/grip.nodes", "library: libgrip.so\ntypes: [my_gripper]\n");
  const std::string installed_index =
      write("installed/all.nodes", "library: liball.so\ntypes: [my_wrist, my_gripper]\n");
  auto listed =
      list_node_plugins({folder("overlay"), (dir_ / "nothere").string(), folder("installed")});
  ASSERT_TRUE(listed.has_value()) << listed.status().to_string();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].type, "my_gripper");
  EXPECT_EQ((*listed)[0].where.index, overlay_index);
  EXPECT_EQ((*listed)[0].where.library, (dir_ / "overlay/libgrip.so").string());
  EXPECT_EQ((*listed)[1].type, "my_wrist");
  EXPECT_EQ((*listed)[1].where.index, installed_index);
  // Two indexes of one folder naming one type make the listing an error too.
  const std::string second =
      write("installed/grip.nodes", "library: libgrip.so\ntypes: [my_gripper]\n");
  expect_all(list_node_plugins({folder("installed")}).status(),
             {"my_gripper", installed_index, second});
}

TEST_F(NodePluginIndex, UnknownTypeNamesEveryFolderSearchedAndTheFix) {
  write("a/libgrip.so", "");
  write("a/grip.nodes", "library: libgrip.so\ntypes: [my_gripper]\n");
  const std::string missing = (dir_ / "nothere").string();
  auto found = find_node_plugin("my_grippr", {folder("a"), missing});
  expect_all(found.status(), {"'my_grippr'", folder("a") + ",", missing + " (no such folder)",
                              "EDGEVLA_PLUGIN_PATH", "edgevla_add_node_plugin", "plugins:"});
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
}

TEST_F(NodePluginIndex, MalformedIndexesAreErrorsNamingTheFile) {
  const std::string not_list = write("a/grip.nodes", "library: libgrip.so\ntypes: my_gripper\n");
  expect_all(find_node_plugin("my_gripper", {folder("a")}).status(), {not_list, "'types'"});
  const std::string bad_key =
      write("b/grip.nodes", "library: libgrip.so\ntypes: [my_gripper]\nversion: 2\n");
  expect_all(find_node_plugin("my_gripper", {folder("b")}).status(), {bad_key, "'version'"});
  const std::string no_lib = write("c/grip.nodes", "types: [my_gripper]\n");
  expect_all(find_node_plugin("my_gripper", {folder("c")}).status(), {no_lib, "'library'"});
  const std::string not_yaml = write("d/grip.nodes", "library: [libgrip.so\n");
  expect_all(find_node_plugin("my_gripper", {folder("d")}).status(), {not_yaml, "not valid YAML"});
  const std::string not_map = write("e/grip.nodes", "- libgrip.so\n");
  expect_all(find_node_plugin("my_gripper", {folder("e")}).status(), {not_map, "not a YAML map"});
}

TEST_F(NodePluginIndex, SearchPathIsTheEnvironmentsFoldersThenTheInstalledOne) {
  const auto plain = node_plugin_folders();
  ASSERT_EQ(plain.size(), 1u);
  // The installed package's folder: beside libedgevla_runtime.so (here the build tree's lib/).
  EXPECT_EQ(fs::path(plain[0]),
            fs::canonical(testing::bin_dir() + "/../lib") / "edgevla" / "plugins");
  ::setenv("EDGEVLA_PLUGIN_PATH", "/first::/second/:", 1);
  const auto folders = node_plugin_folders();
  ASSERT_EQ(folders.size(), 3u);
  EXPECT_EQ(folders[0], "/first");
  EXPECT_EQ(folders[1], "/second/");
  EXPECT_EQ(folders[2], plain[0]);
}

TEST_F(NodePluginIndex, RegistryLoadsTheIndexedLibraryForAnUnknownType) {
  ASSERT_FALSE(NodeRegistry::instance().contains("test_relay"));
  write("plugins/relay.nodes", "library: " + test_plugin() + "\ntypes: [test_relay]\n");
  ::setenv("EDGEVLA_PLUGIN_PATH", ((dir_ / "nothere").string() + ":" + folder("plugins")).c_str(),
           1);
  NodeOptions o;
  o.name = "relay";
  o.type = "test_relay";
  auto node = NodeRegistry::instance().create(o);
  ASSERT_TRUE(node.has_value()) << node.status().to_string();
  EXPECT_EQ((*node)->name(), "relay");
  EXPECT_TRUE(NodeRegistry::instance().contains("test_relay"));
}

TEST_F(NodePluginIndex, RegistryReportsAnIndexTheLibraryDoesNotMatch) {
  const std::string index =
      write("plugins/relay.nodes", "library: " + test_plugin() + "\ntypes: [test_relay_typo]\n");
  ::setenv("EDGEVLA_PLUGIN_PATH", folder("plugins").c_str(), 1);
  NodeOptions o;
  o.name = "relay";
  o.type = "test_relay_typo";
  auto node = NodeRegistry::instance().create(o);
  expect_all(node.status(), {"node 'relay'", "test_relay_typo", index, test_plugin(),
                             "registers no such type", "EDGEVLA_REGISTER_NODE"});
}

TEST_F(NodePluginIndex, RegistryErrorForAnUnindexedTypeNamesTheFoldersAndKnownTypes) {
  ::setenv("EDGEVLA_PLUGIN_PATH", folder("plugins").c_str(), 1);
  NodeOptions o;
  o.name = "grip";
  o.type = "my_gripper";
  auto node = NodeRegistry::instance().create(o);
  expect_all(node.status(), {"node 'grip'", "'my_gripper'", folder("plugins"),
                             node_plugin_folders().back(), "EDGEVLA_PLUGIN_PATH", "known types"});
}

}  // namespace
}  // namespace edgevla
