// Only the owner on the bus: a registry directory or shared-memory segment that another local
// user made (or opened to others) is refused with an error naming it, its owner, its mode and
// the fix; a node's ipc socket cannot be reached by another uid, and a process of another uid
// that reaches one anyway (root can) gets nothing from a bus unless its group is allowed;
// neither does a bus take data from another uid's endpoint. The tests that need a second uid
// make one by changing a file's owner or the child's uid, which needs root (CI runs as root);
// elsewhere they report themselves as not run.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstring>
#include <filesystem>

#include "runtime/bus/bus.hpp"
#include "runtime/bus/control_client.hpp"
#include "runtime/bus/peer_credentials.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;
constexpr uid_t kOther = 65534;  // nobody

fs::path scratch(const std::string& tag) {
  fs::path p = fs::path(::testing::TempDir()) / ("own_" + std::to_string(::getpid()) + "_" + tag);
  fs::remove_all(p);
  fs::create_directories(p);
  ::chmod(p.c_str(), 0700);
  return p;
}

Expected<std::unique_ptr<Bus>> bus_in(const std::string& registry_dir) {
  BusOptions o;
  o.domain = testing::unique_domain("own");
  o.registry_dir = registry_dir;
  return Bus::create(o);
}

TEST(OwnerOnly, ARegistryDirectoryOpenToOthersIsRefused) {
  const fs::path base = scratch("mode");
  const fs::path dir = base / ("edgevla-" + std::to_string(::getuid()));
  fs::create_directories(dir / "dom");
  ::chmod(dir.c_str(), 0777);  // as another user pre-creating it for everyone would leave it
  auto bus = bus_in((dir / "dom").string());
  ASSERT_FALSE(bus.has_value());
  const std::string m = bus.status().message();
  EXPECT_NE(m.find(dir.string()), std::string::npos) << m;
  EXPECT_NE(m.find("mode 0777"), std::string::npos) << m;
  EXPECT_NE(m.find("remove it"), std::string::npos) << m;
  // Fixed: the same path works.
  ::chmod(dir.c_str(), 0700);
  ::chmod((dir / "dom").c_str(), 0700);
  auto ok = bus_in((dir / "dom").string());
  EXPECT_TRUE(ok.has_value()) << ok.status().to_string();
  fs::remove_all(base);
}

TEST(OwnerOnly, ASymlinkedRegistryDirectoryIsRefused) {
  const fs::path base = scratch("link");
  fs::create_directories(base / "elsewhere");
  ::chmod((base / "elsewhere").c_str(), 0700);
  fs::create_directory_symlink(base / "elsewhere", base / "reg");
  auto bus = bus_in((base / "reg").string());
  ASSERT_FALSE(bus.has_value());
  EXPECT_NE(bus.status().message().find("symbolic link"), std::string::npos) << bus.status().message();
  fs::remove_all(base);
}

TEST(OwnerOnly, ARegistryDirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another uid (CI runs as root)";
  const fs::path base = scratch("owner");
  const fs::path dir = base / ("edgevla-" + std::to_string(::getuid()));
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0700);
  ASSERT_EQ(::chown(dir.c_str(), kOther, kOther), 0);  // another user made it first
  auto bus = bus_in((dir / "dom").string());
  ASSERT_FALSE(bus.has_value());
  const std::string m = bus.status().message();
  EXPECT_NE(m.find("owned by uid " + std::to_string(kOther)), std::string::npos) << m;
  EXPECT_NE(m.find(dir.string()), std::string::npos) << m;
  fs::remove_all(base);
}

TEST(OwnerOnly, AnotherUidCannotReachANodesSocket) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another uid (CI runs as root)";
  const fs::path base = scratch("peer");
  auto bus = bus_in((base / ("edgevla-" + std::to_string(::getuid())) / "dom").string());
  ASSERT_TRUE(bus.has_value()) << bus.status().to_string();
  // The bus's data socket is in the private directory.
  std::string sock;
  for (const auto& e : fs::recursive_directory_iterator(base)) {
    if (e.is_socket()) sock = e.path().string();
  }
  ASSERT_FALSE(sock.empty());
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(kOther) != 0 || ::setuid(kOther) != 0) _exit(2);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    _exit(rc == 0 ? 0 : (errno == EACCES ? 1 : 3));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << "another uid connected to the node's socket (exit 0) or failed otherwise";
  // The owner can.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  ::close(fd);
  bus->reset();
  fs::remove_all(base);
}

TEST(OwnerOnly, PeerCredentialsComeFromTheEndOfTheZapAddress) {
  const auto c = parse_zap_address("localhost:65534:65533:4242");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->uid, 65534u);
  EXPECT_EQ(c->gid, 65533u);
  EXPECT_EQ(c->pid, 4242u);
  EXPECT_FALSE(parse_zap_address("127.0.0.1").has_value());
  EXPECT_FALSE(parse_zap_address("localhost:1:2").has_value());
  EXPECT_FALSE(parse_zap_address("localhost:1:x:2").has_value());
  EXPECT_FALSE(parse_zap_address("localhost:1:2:").has_value());
  EXPECT_FALSE(parse_zap_address("localhost:99999999999:2:3").has_value());
  const std::vector<std::uint32_t> video{44};
  EXPECT_TRUE(peer_allowed({1000, 1000, 1}, 1000, {}));
  EXPECT_FALSE(peer_allowed({1001, 1000, 1}, 1000, {}));
  EXPECT_TRUE(peer_allowed({1001, 44, 1}, 1000, video));
  EXPECT_FALSE(peer_allowed({1001, 45, 1}, 1000, video));
}

// A bus run by another uid (nobody) in a child process (tests/runtime/owner_only_child.cpp),
// publishing a RobotState on kPeerTopic every 20 ms; its statistics are read from a file,
// since its control endpoint may refuse us. Its registry directory is its own, so this
// process meets it only through a copy of its registry entry (see introduce_to).
constexpr const char* kPeerTopic = "/peer/state";

class OtherUidBus {
 public:
  OtherUidBus(const fs::path& base, const std::vector<std::uint32_t>& allowed_gids)
      : dir_(base / "child") {
    fs::create_directories(dir_);
    EXPECT_EQ(::chown(dir_.c_str(), kOther, kOther), 0);
    ::chmod(dir_.c_str(), 0700);
    // The time limit is a backstop: the destructor stops the child.
    const int seconds = static_cast<int>(60 * testing::time_scale());
    std::vector<std::string> args = {testing::bin_dir() + "/owner_only_child", std::to_string(kOther),
                                     std::to_string(kOther), (dir_ / "reg").string(), kPeerTopic,
                                     (dir_ / "stats.yaml").string(), std::to_string(seconds)};
    for (std::uint32_t g : allowed_gids) args.push_back(std::to_string(g));
    process_ = std::make_unique<testing::Process>(args, std::vector<std::string>{},
                                                  (base / "child").string());
  }
  ~OtherUidBus() {
    process_->signal(SIGTERM);
    process_->wait(std::chrono::seconds(10));
  }

  // Its registry entry, once its bus is up; empty when it did not come up in time.
  fs::path registry_file() const {
    fs::path found;
    testing::eventually(
        [&] {
          std::error_code ec;
          for (const auto& e : fs::directory_iterator(dir_ / "reg", ec)) {
            if (e.path().extension() == ".yaml") found = e.path();
          }
          return !found.empty();
        },
        wait_for(10));
    return found;
  }
  // Lets `bus` see this bus as a peer: a copy of its registry entry in the bus's directory.
  void introduce_to(const Bus& bus) const {
    const fs::path entry = registry_file();
    ASSERT_FALSE(entry.empty()) << "the child's bus did not come up: " << log();
    fs::copy_file(entry, fs::path(bus.options().registry_dir) / entry.filename());
  }
  std::string control_endpoint() const {
    return YAML::LoadFile(registry_file().string())["control"].as<std::string>();
  }

  std::uint64_t transport(const char* counter) const {
    return stats()["transport"][counter].as<std::uint64_t>(0);
  }
  std::uint64_t published() const {
    return stats()["topics"][kPeerTopic]["publishers"][0]["published"].as<std::uint64_t>(0);
  }
  std::string log() const { return process_->err(); }

  static std::chrono::milliseconds wait_for(int seconds) {
    return std::chrono::milliseconds(
        static_cast<std::int64_t>(seconds * 1000 * testing::time_scale()));
  }

 private:
  YAML::Node stats() const {
    try {
      return YAML::LoadFile((dir_ / "stats.yaml").string());
    } catch (const YAML::Exception&) {
      return YAML::Node();  // not written yet
    }
  }

  fs::path dir_;
  std::unique_ptr<testing::Process> process_;
};

struct PeerTest {
  fs::path base;
  std::unique_ptr<Bus> bus;  // this process's (root's) bus, subscribed to kPeerTopic
  std::shared_ptr<SubscriptionQueue> queue;

  PeerTest(const std::string& tag, const std::vector<std::uint32_t>& allowed_gids)
      : base(scratch(tag)) {
    ::chmod(base.c_str(), 0755);  // the child (nobody) reaches its own directory through it
    BusOptions o;
    o.registry_dir = (base / "parent").string();
    o.allowed_gids = allowed_gids;
    auto b = Bus::create(o);
    EXPECT_TRUE(b.has_value()) << b.status().to_string();
    if (b) bus = std::move(*b);
    queue = std::make_shared<SubscriptionQueue>(kPeerTopic, "RobotState", QoS::keep_last(1000),
                                                "test", std::make_shared<Waker>());
    if (bus) EXPECT_OK(bus->attach(queue));
  }
  ~PeerTest() {
    bus.reset();
    fs::remove_all(base);
  }
  std::uint64_t transport(const char* counter) const {
    return YAML::Load(bus->stats_yaml())["transport"][counter].as<std::uint64_t>(0);
  }
};

// The child's refusal is what is under test: this process lets the child's group in.
// While the child goes on publishing (20 more), nothing reaches our bus and our subscription
// never reaches the child.
void expect_nothing_crossed(PeerTest& t, OtherUidBus& child) {
  const std::uint64_t published = child.published();
  ASSERT_TRUE(testing::eventually([&] { return child.published() >= published + 20; },
                                  OtherUidBus::wait_for(10)));
  EXPECT_EQ(t.queue->size(), 0u);
  EXPECT_EQ(t.transport("received"), 0u);
  EXPECT_EQ(child.transport("sent_ipc"), 0u) << "our subscription reached the child";
}

TEST(OwnerOnly, ABusGivesAnotherUidNoDataAndNoControlReplies) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to run a child as another uid (CI runs as root)";
  PeerTest t("refuse", {kOther});
  ASSERT_TRUE(t.bus);
  OtherUidBus child(t.base, {});
  child.introduce_to(*t.bus);
  // Whether libzmq then retries depends on which side's handshake ends first; either way no
  // subscription gets through while the child goes on publishing.
  ASSERT_TRUE(testing::eventually([&] { return child.transport("peers_refused") >= 1; },
                                  OtherUidBus::wait_for(10)))
      << child.log();
  expect_nothing_crossed(t, child);
  auto reply = control_request(child.control_endpoint(), "bus", "", OtherUidBus::wait_for(1));
  EXPECT_FALSE(reply.has_value()) << "the child answered a control request of another uid";
  EXPECT_EQ(t.transport("peers_refused"), 0u);
}

TEST(OwnerOnly, AnAllowedGroupOfAnotherUidGetsData) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to run a child as another uid (CI runs as root)";
  PeerTest t("allow", {kOther});
  ASSERT_TRUE(t.bus);
  OtherUidBus child(t.base, {static_cast<std::uint32_t>(::getegid())});
  child.introduce_to(*t.bus);
  ASSERT_TRUE(testing::eventually([&] { return t.queue->size() >= 3; }, OtherUidBus::wait_for(10)))
      << child.log();
  MessagePtr m = t.queue->pop();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->header().topic, kPeerTopic);
  EXPECT_EQ(m->tensor("position")->numel(), 3);
  auto reply = control_request(child.control_endpoint(), "bus", "", OtherUidBus::wait_for(3));
  ASSERT_TRUE(reply.has_value()) << reply.status().to_string();
  EXPECT_TRUE(YAML::Load(*reply)["transport"]["peers_refused"].IsScalar());
  EXPECT_EQ(child.transport("peers_refused"), 0u);
  EXPECT_EQ(t.transport("peers_refused"), 0u);
}

// The connecting side checks too: a bus does not take data from an endpoint another uid
// serves (e.g. a socket planted where it looks for peers), though that process would let it in.
TEST(OwnerOnly, ABusTakesNoDataFromAnotherUidsEndpoint) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to run a child as another uid (CI runs as root)";
  PeerTest t("sub", {});
  ASSERT_TRUE(t.bus);
  OtherUidBus child(t.base, {static_cast<std::uint32_t>(::getegid())});
  child.introduce_to(*t.bus);
  ASSERT_TRUE(testing::eventually([&] { return t.transport("peers_refused") >= 1; },
                                  OtherUidBus::wait_for(10)))
      << child.log();
  expect_nothing_crossed(t, child);
}

TEST(OwnerOnly, ASegmentOpenToOthersIsNotMapped) {
  auto pool = shm::Pool::create({shm::segment_prefix() + std::to_string(::getpid()) + ".own", 1 << 20, 2'000'000'000});
  auto b = *pool->allocate(4096);
  const ShmLocation loc = *b->shm();
  pool->mark_sent(*b, {1, 0});
  ASSERT_EQ(::chmod(("/dev/shm" + loc.segment).c_str(), 0666), 0);
  shm::Mapper m;
  auto r = m.acquire(loc);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("mode 0666"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(loc.segment), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace edgevla
