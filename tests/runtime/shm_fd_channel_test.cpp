// File descriptors handed between processes over the fd channel: a memfd served by name is
// mapped by the requester (in this process and in a forked child) with the owner's bytes;
// unknown names, peers the policy refuses, a second server on a taken name and a vanished owner
// are each one clear error.
#include "runtime/shm/fd_channel.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "tests/support/test_util.hpp"

namespace edgevla::shm {
namespace {

std::string channel_name(const char* tag) {
  return "edgevla.test." + std::to_string(::getpid()) + "." + tag;
}

// A memfd of `size` bytes holding `text` at its start.
UniqueFd memfd_with(const std::string& text, std::size_t size = 4096) {
  UniqueFd fd(::memfd_create("edgevla-fd-test", MFD_CLOEXEC));
  EXPECT_TRUE(fd);
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  EXPECT_EQ(::pwrite(fd.get(), text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
  return fd;
}

std::string read_mapped(int fd, std::size_t n) {
  void* p = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return "<mmap failed>";
  std::string s(static_cast<const char*>(p), n);
  ::munmap(p, 4096);
  return s;
}

TEST(FdChannel, ServedDescriptorMapsTheOwnersBytes) {
  UniqueFd block = memfd_with("device block 7");
  std::string asked;
  auto server = FdServer::start(channel_name("serve"), [&](std::string_view key, const FdPeer& peer) -> Expected<UniqueFd> {
    asked = std::string(key);
    EXPECT_EQ(peer.uid, ::geteuid());
    if (key != "block/7") return not_found("no block '" + std::string(key) + "' here");
    return duplicate_fd(block.get());
  });
  ASSERT_OK(server.status());
  auto got = request_fd((*server)->name(), "block/7");
  ASSERT_OK(got.status());
  EXPECT_NE(got->get(), block.get());  // a new descriptor for the same memory
  EXPECT_EQ(read_mapped(got->get(), 14), "device block 7");
  EXPECT_EQ(asked, "block/7");
  EXPECT_EQ((*server)->served(), 1u);

  // A forked child (another process) gets it too.
  const std::string name = (*server)->name();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto fd = request_fd(name, "block/7");
    _exit(fd && read_mapped(fd->get(), 14) == "device block 7" ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ((*server)->served(), 2u);

  // An unknown name: the owner's reason comes back.
  auto missing = request_fd((*server)->name(), "block/8");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find("no block 'block/8' here"), std::string::npos) << missing.status().to_string();
  EXPECT_EQ((*server)->refused(), 1u);
}

TEST(FdChannel, RefusedPeersTakenNamesAndVanishedOwnersAreClearErrors) {
  UniqueFd block = memfd_with("secret");
  auto closed = FdServer::start(
      channel_name("closed"), [&](std::string_view, const FdPeer&) -> Expected<UniqueFd> { return duplicate_fd(block.get()); },
      [](const FdPeer&) { return false; });
  ASSERT_OK(closed.status());
  auto refused = request_fd((*closed)->name(), "anything");
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("not admitted"), std::string::npos) << refused.status().to_string();
  EXPECT_EQ((*closed)->served(), 0u);

  auto twice = FdServer::start(channel_name("closed"), [&](std::string_view, const FdPeer&) -> Expected<UniqueFd> {
    return duplicate_fd(block.get());
  });
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.status().message().find("already serves"), std::string::npos) << twice.status().to_string();

  const std::string name = (*closed)->name();
  closed->reset();  // the owner goes away: its name goes with it, nothing is left on disk
  auto gone = request_fd(name, "anything");
  ASSERT_FALSE(gone.has_value());
  EXPECT_NE(gone.status().message().find("has exited"), std::string::npos) << gone.status().to_string();
  auto again = FdServer::start(name, [&](std::string_view, const FdPeer&) -> Expected<UniqueFd> { return duplicate_fd(block.get()); });
  EXPECT_OK(again.status());

  EXPECT_FALSE(request_fd(name, "").has_value());
  EXPECT_FALSE(FdServer::start("", {}).has_value());
}

}  // namespace
}  // namespace edgevla::shm
