// Only the owner on the bus: a registry directory or shared-memory segment that another local
// user made (or opened to others) is refused with an error naming it, its owner, its mode and
// the fix; a node's ipc socket cannot be reached by another uid. The tests that need a second
// uid make one by changing a file's owner or the child's uid, which needs root (CI runs as
// root); elsewhere they report themselves as not run.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "runtime/bus/bus.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/shm/mapper.hpp"
#include "runtime/shm/pool.hpp"
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
