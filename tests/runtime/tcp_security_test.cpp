// tcp between buses: CURVE keys, the allow list, tampering, plaintext only when asked for,
// and the key files themselves.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "msgs/types.hpp"
#include "runtime/bus/bus.hpp"
#include "tests/support/test_util.hpp"

namespace edgevla {
namespace {

namespace fs = std::filesystem;
using testing::eventually;
using testing::unique_domain;

std::unique_ptr<Bus> make_bus(const std::string& tag, TcpOptions tcp) {
  BusOptions o;
  o.domain = unique_domain(tag);  // one domain per bus: they meet over tcp only
  o.tcp = std::move(tcp);
  auto bus = Bus::create(o);
  EXPECT_TRUE(bus.has_value()) << bus.status().to_string();
  return bus ? std::move(*bus) : nullptr;
}

Message image(int side, std::uint8_t fill) {
  Tensor px = *Tensor::empty(DType::kU8, Shape{side, side, 3});
  std::memset(px.raw_data(), fill, px.nbytes());
  return *msgs::Image::make(px, "rgb8", "base");
}

std::uint64_t transport(const Bus& bus, const char* counter) {
  return YAML::Load(bus.stats_yaml())["transport"][counter].as<std::uint64_t>();
}

struct Collector {
  std::shared_ptr<SubscriptionQueue> queue = std::make_shared<SubscriptionQueue>(
      "/cam", "Image", QoS::keep_last(1000), "collector", std::make_shared<Waker>());
};

CurveKeyPair key_pair() { return *generate_curve_key_pair(); }

TcpOptions listener(const CurveKeyPair& own, std::vector<std::string> allowed) {
  return {.listen = "*", .key = own, .allowed_keys = std::move(allowed)};
}
TcpOptions peer(const std::string& endpoint, const std::string& server_key,
                const CurveKeyPair& own) {
  return {.peers = {{endpoint, server_key}}, .key = own};
}

// Publishes for `ms` while nothing may arrive; true when nothing did.
bool nothing_arrives(Bus& pub, TopicWriter& w, Collector& c, int ms) {
  for (int i = 0; i < ms / 10; ++i) {
    EXPECT_OK(pub.publish(w, image(8, 1)));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return c.queue->size() == 0 && c.queue->counters().received.get() == 0;
}

TEST(TcpSecurity, TheRightKeysWorkEndToEnd) {
  const CurveKeyPair server = key_pair(), client = key_pair();
  auto pub = make_bus("keys-pub", listener(server, {client.public_key}));
  auto sub = make_bus("keys-sub", peer(pub->tcp_endpoint(), server.public_key, client));
  auto w = *pub->advertise("/cam", "Image", "src");
  Collector c;
  ASSERT_OK(sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK(pub->publish(*w, image(32, 7)));
    return c.queue->size() > 0;
  }));
  MessagePtr got = c.queue->pop();
  const Tensor& px = *got->tensor("pixels");
  for (std::int64_t i = 0; i < px.numel(); ++i) ASSERT_EQ(px.data<std::uint8_t>()[i], 7);
  EXPECT_GE(transport(*pub, "sent_tcp"), 1u);
  for (const Bus* b : {pub.get(), sub.get()}) {
    EXPECT_EQ(transport(*b, "tcp_keys_refused"), 0u);
    EXPECT_EQ(transport(*b, "tcp_handshakes_failed"), 0u);
    EXPECT_EQ(transport(*b, "tcp_frames_rejected"), 0u);
  }
  const YAML::Node y = YAML::Load(pub->stats_yaml());
  EXPECT_EQ(y["tcp_security"].as<std::string>(), "curve");
  EXPECT_EQ(y["tcp_public_key"].as<std::string>(), server.public_key);
}

TEST(TcpSecurity, AClientWithoutAKeyGetsNothingAndIsCounted) {
  const CurveKeyPair server = key_pair(), client = key_pair();
  auto pub = make_bus("nokey-pub", listener(server, {client.public_key}));
  TcpOptions plain{.peers = {{pub->tcp_endpoint(), ""}}, .insecure = true};
  auto sub = make_bus("nokey-sub", plain);
  auto w = *pub->advertise("/cam", "Image", "src");
  Collector c;
  ASSERT_OK(sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] { return transport(*pub, "tcp_handshakes_failed") > 0; }));
  EXPECT_TRUE(nothing_arrives(*pub, *w, c, 1000));
  EXPECT_EQ(transport(*pub, "sent_tcp"), 0u);  // its subscription never reached the publisher
  EXPECT_EQ(transport(*sub, "received"), 0u);
  EXPECT_GE(transport(*sub, "tcp_handshakes_failed"), 1u);
}

TEST(TcpSecurity, AClientWithAnotherKeyGetsNothingAndIsCounted) {
  const CurveKeyPair server = key_pair(), client = key_pair(), stranger = key_pair();
  auto pub = make_bus("otherkey-pub", listener(server, {client.public_key}));
  // It knows the server's key, but its own is not on the list.
  auto sub = make_bus("otherkey-sub", peer(pub->tcp_endpoint(), server.public_key, stranger));
  auto w = *pub->advertise("/cam", "Image", "src");
  Collector c;
  ASSERT_OK(sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] { return transport(*pub, "tcp_keys_refused") > 0; }));
  EXPECT_TRUE(nothing_arrives(*pub, *w, c, 1000));
  EXPECT_EQ(transport(*pub, "sent_tcp"), 0u);
  EXPECT_EQ(transport(*sub, "received"), 0u);
  // The refused side is told too (ZAP's answer), so it can say which key to add.
  EXPECT_GE(transport(*sub, "tcp_handshakes_failed"), 1u);
}

TEST(TcpSecurity, AListenerWithAnotherServerKeyFeedsNothing) {
  // An impostor on the port the subscriber expects: it even allows the subscriber's key, but
  // it does not hold the secret of the server key the subscriber was given.
  const CurveKeyPair server = key_pair(), impostor = key_pair(), client = key_pair();
  auto fake = make_bus("impostor-pub", listener(impostor, {client.public_key}));
  auto sub = make_bus("impostor-sub", peer(fake->tcp_endpoint(), server.public_key, client));
  auto w = *fake->advertise("/cam", "Image", "src");
  Collector c;
  ASSERT_OK(sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] { return transport(*sub, "tcp_handshakes_failed") > 0; }));
  EXPECT_TRUE(nothing_arrives(*fake, *w, c, 1000));
  EXPECT_EQ(transport(*fake, "sent_tcp"), 0u);
  EXPECT_EQ(transport(*sub, "received"), 0u);
  // The impostor could not open the subscriber's hello, sealed for the real server's key.
  EXPECT_GE(transport(*fake, "tcp_frames_rejected"), 1u);
}

// A free tcp port on 127.0.0.1 (bound, read and released).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

TEST(TcpSecurity, ARefusedClientIsRetriedAndGetsInOnceAllowed) {
  // libzmq gives up on a connection refused during the handshake; the bus retries it, so a
  // listener restarted with a corrected allow list is reached without restarting the client.
  const CurveKeyPair server = key_pair(), client = key_pair();
  const std::string port = std::to_string(free_port());
  TcpOptions wrong_list = listener(server, {key_pair().public_key});
  wrong_list.listen = port;
  auto wrong = make_bus("retry-wrong", wrong_list);
  auto sub = make_bus("retry-sub", peer("tcp://127.0.0.1:" + port, server.public_key, client));
  Collector c;
  ASSERT_OK(sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] { return transport(*wrong, "tcp_keys_refused") > 0; }));
  wrong.reset();
  TcpOptions right_list = listener(server, {client.public_key});
  right_list.listen = port;
  auto right = make_bus("retry-right", right_list);
  auto w = *right->advertise("/cam", "Image", "src");
  ASSERT_TRUE(eventually(
      [&] {
        EXPECT_OK(right->publish(*w, image(8, 5)));
        return c.queue->size() > 0;
      },
      std::chrono::seconds(20)));
  EXPECT_GE(transport(*sub, "tcp_handshakes_failed"), 1u);
}

// A raw tcp relay between a subscriber and a listener that, once armed, flips one bit of
// the listener's stream `flip_after` bytes later: an attacker on the path.
class TamperingRelay {
 public:
  explicit TamperingRelay(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~TamperingRelay() {
    stop_ = true;
    thread_.join();
    for (auto [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
    ::close(listen_fd_);
  }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  void arm(std::uint64_t flip_after) { flip_at_ = downstream_bytes_.load() + flip_after; }
  int flips() const { return flips_.load(); }

 private:
  static int connect_to(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
  static bool write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w <= 0) return false;
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }
  void run() {
    std::vector<char> buf(1 << 16);
    while (!stop_) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto [client, upstream] : pairs_) {
        fds.push_back({client, POLLIN, 0});
        fds.push_back({upstream, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        const int upstream = client >= 0 ? connect_to(upstream_port_) : -1;
        if (upstream >= 0) {
          pairs_.emplace_back(client, upstream);
        } else if (client >= 0) {
          ::close(client);
        }
        continue;
      }
      for (std::size_t i = 0; i < pairs_.size(); ++i) {
        for (int side = 0; side < 2; ++side) {
          if (!(fds[1 + 2 * i + side].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          const auto [client, upstream] = pairs_[i];
          const int from = side == 0 ? client : upstream, to = side == 0 ? upstream : client;
          const ssize_t n = ::read(from, buf.data(), buf.size());
          bool ok = n > 0;
          if (ok && side == 1) {  // the listener's stream: encrypted messages
            const std::uint64_t start = downstream_bytes_.fetch_add(static_cast<std::uint64_t>(n));
            const std::uint64_t at = flip_at_.load();
            if (at != 0 && at >= start && at < start + static_cast<std::uint64_t>(n)) {
              buf[at - start] ^= 0x01;
              flip_at_ = 0;
              ++flips_;
            }
          }
          ok = ok && write_all(to, buf.data(), static_cast<std::size_t>(n));
          if (!ok) {  // either end closed: drop the pair (the subscriber reconnects)
            ::close(client);
            ::close(upstream);
            pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(i));
            goto next_poll;
          }
        }
      }
    next_poll:;
    }
  }

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<std::pair<int, int>> pairs_;  // (subscriber side, listener side)
  std::atomic<std::uint64_t> downstream_bytes_{0};
  std::atomic<std::uint64_t> flip_at_{0};
  std::atomic<int> flips_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(TcpSecurity, ATamperedFrameIsDroppedAndCounted) {
  const CurveKeyPair server = key_pair(), client = key_pair();
  auto pub = make_bus("tamper-pub", listener(server, {client.public_key}));
  const std::string ep = pub->tcp_endpoint();
  TamperingRelay relay(std::stoi(ep.substr(ep.rfind(':') + 1)));
  auto sub = make_bus("tamper-sub", peer(relay.endpoint(), server.public_key, client));
  auto w = *pub->advertise("/cam", "Image", "src");
  Collector c;
  ASSERT_OK(sub->attach(c.queue));
  std::uint8_t fill = 0;
  std::uint64_t published = 0;  // = the last message's seq
  const auto publish = [&] {
    EXPECT_OK(pub->publish(*w, image(64, ++fill == 0 ? ++fill : fill)));
    ++published;
  };
  std::vector<MessagePtr> got;
  const auto take = [&] {
    while (auto m = c.queue->pop()) got.push_back(m);
  };
  // Through the relay untouched first.
  ASSERT_TRUE(eventually([&] {
    publish();
    take();
    return !got.empty();
  }));
  // Then one bit flipped 4000 bytes on: inside the next message's 12 KB pixel frame.
  relay.arm(4000);
  ASSERT_TRUE(eventually([&] {
    publish();
    take();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return transport(*sub, "tcp_frames_rejected") > 0 && relay.flips() == 1;
  }));
  const std::uint64_t tampered_by = published;  // the tampered message is among these
  // The connection comes back and messages flow again.
  ASSERT_TRUE(eventually([&] {
    publish();
    take();
    return !got.empty() && got.back()->header().seq > tampered_by;
  }));
  EXPECT_EQ(relay.flips(), 1);
  EXPECT_EQ(transport(*sub, "tcp_frames_rejected"), 1u);
  EXPECT_EQ(transport(*sub, "decode_errors"), 0u);
  // What was lost (the tampered message and those sent while reconnecting) is counted.
  EXPECT_GE(c.queue->counters().lost.get(), 1u);
  // Nothing altered was delivered: every received image is one fill value throughout.
  for (const MessagePtr& m : got) {
    const Tensor& px = *m->tensor("pixels");
    const auto v = px.data<std::uint8_t>()[0];
    for (std::int64_t i = 0; i < px.numel(); ++i) ASSERT_EQ(px.data<std::uint8_t>()[i], v);
  }
}

TEST(TcpSecurity, PlaintextNeedsInsecureTrue) {
  BusOptions o;
  o.domain = unique_domain("plain");
  o.tcp.listen = "*";
  auto refused = Bus::create(o);
  ASSERT_FALSE(refused.has_value());
  const std::string msg = refused.status().message();
  EXPECT_NE(msg.find("secret_key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("edgevla keys generate"), std::string::npos) << msg;
  EXPECT_NE(msg.find("insecure: true"), std::string::npos) << msg;

  // A peer without its server key is refused the same way.
  o.tcp = {.peers = {{"tcp://127.0.0.1:7447", ""}}, .key = key_pair()};
  refused = Bus::create(o);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("server_key"), std::string::npos)
      << refused.status().message();

  // Keys and insecure together: one or the other.
  o.tcp = {
      .listen = "*", .key = key_pair(), .allowed_keys = {key_pair().public_key}, .insecure = true};
  EXPECT_FALSE(Bus::create(o).has_value());

  // Plaintext when asked for: it works, and says so in its statistics.
  o.tcp = {.listen = "*", .insecure = true};
  auto plain_pub = Bus::create(o);
  ASSERT_TRUE(plain_pub.has_value()) << plain_pub.status().to_string();
  EXPECT_EQ(YAML::Load((*plain_pub)->stats_yaml())["tcp_security"].as<std::string>(), "insecure");
  auto plain_sub =
      make_bus("plain-sub", {.peers = {{(*plain_pub)->tcp_endpoint(), ""}}, .insecure = true});
  auto w = *(*plain_pub)->advertise("/cam", "Image", "src");
  Collector c;
  ASSERT_OK(plain_sub->attach(c.queue));
  ASSERT_TRUE(eventually([&] {
    EXPECT_OK((*plain_pub)->publish(*w, image(8, 3)));
    return c.queue->size() > 0;
  }));
}

TEST(TcpSecurity, ListensOnLoopbackUnlessAHostIsNamed) {
  EXPECT_EQ(*tcp_bind_endpoint("7447"), "tcp://127.0.0.1:7447");
  EXPECT_EQ(*tcp_bind_endpoint("*"), "tcp://127.0.0.1:*");
  EXPECT_EQ(*tcp_bind_endpoint("tcp://192.168.1.20:7447"), "tcp://192.168.1.20:7447");
  for (const char* bad :
       {"", "0", "70000", "localhost:7447", "tcp://:7447", "tcp://host", "udp://1.2.3.4:5"}) {
    auto e = tcp_bind_endpoint(bad);
    ASSERT_FALSE(e.has_value()) << bad;
    EXPECT_NE(e.status().message().find("127.0.0.1"), std::string::npos) << e.status().message();
  }
  const CurveKeyPair server = key_pair();
  auto bus = make_bus("loopback", listener(server, {key_pair().public_key}));
  EXPECT_TRUE(bus->tcp_endpoint().starts_with("tcp://127.0.0.1:")) << bus->tcp_endpoint();
}

class KeyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("keys_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static mode_t mode_of(const fs::path& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 07777;
  }
  fs::path dir_;
};

TEST_F(KeyFiles, APairIsWrittenOwnerOnlyAndReadBack) {
  const std::string prefix = (dir_ / "robot").string();
  const CurveKeyPair pair = key_pair();
  const mode_t old = ::umask(0);  // the secret is 0600 whatever the umask lets through
  const Status written = write_key_pair(prefix, pair, /*force=*/false);
  ::umask(old);
  ASSERT_OK(written);
  EXPECT_EQ(mode_of(prefix + ".secret"), 0600u);
  EXPECT_EQ(mode_of(prefix + ".public"), 0644u);
  auto back = read_secret_key_file(prefix + ".secret");
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  EXPECT_EQ(back->secret_key, pair.secret_key);
  EXPECT_EQ(back->public_key, pair.public_key);  // derived from the secret
  EXPECT_EQ(*read_public_key_file(prefix + ".public"), pair.public_key);
}

TEST_F(KeyFiles, AnExistingPairIsReplacedOnlyWithForce) {
  const std::string prefix = (dir_ / "robot").string();
  const CurveKeyPair first = key_pair(), second = key_pair();
  ASSERT_OK(write_key_pair(prefix, first, false));
  const Status again = write_key_pair(prefix, second, false);
  ASSERT_FALSE(again.is_ok());
  EXPECT_NE(again.message().find("--force"), std::string::npos) << again.message();
  EXPECT_EQ(read_secret_key_file(prefix + ".secret")->secret_key, first.secret_key);
  // Forced over a secret someone opened up: the new file is 0600 again.
  fs::permissions(prefix + ".secret", fs::perms(0644));
  ASSERT_OK(write_key_pair(prefix, second, true));
  EXPECT_EQ(mode_of(prefix + ".secret"), 0600u);
  EXPECT_EQ(read_secret_key_file(prefix + ".secret")->secret_key, second.secret_key);
}

TEST_F(KeyFiles, ASecretOthersCanReadIsRefusedWithTheFix) {
  const std::string prefix = (dir_ / "robot").string();
  ASSERT_OK(write_key_pair(prefix, key_pair(), false));
  for (unsigned mode : {0644u, 0640u, 0604u, 0660u}) {
    fs::permissions(prefix + ".secret", fs::perms(mode));
    auto r = read_secret_key_file(prefix + ".secret");
    ASSERT_FALSE(r.has_value()) << std::oct << mode;
    EXPECT_NE(r.status().message().find(prefix + ".secret"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("chmod 600 " + prefix + ".secret"), std::string::npos)
        << r.status().message();
  }
  fs::permissions(prefix + ".secret", fs::perms(0400));
  EXPECT_TRUE(read_secret_key_file(prefix + ".secret").has_value());
}

TEST_F(KeyFiles, BadKeyFilesAreRefusedByName) {
  const auto write = [&](const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    fs::permissions(p, fs::perms(0600));
    return p.string();
  };
  const std::string garbage = write("garbage.public", "not a key\n");
  auto r = read_public_key_file(garbage);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find(garbage), std::string::npos) << r.status().message();
  const CurveKeyPair pair = key_pair();
  const std::string two = write("two.public", pair.public_key + "\n" + pair.public_key + "\n");
  EXPECT_FALSE(read_public_key_file(two).has_value());
  // A secret where a public key belongs is refused before it is read.
  const std::string secret = write("robot.secret", pair.secret_key + "\n");
  r = read_public_key_file(secret);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("robot.public"), std::string::npos) << r.status().message();
  EXPECT_FALSE(read_secret_key_file((dir_ / "absent.secret").string()).has_value());
}

TEST_F(KeyFiles, AKeyMayStartWithAHash) {
  // '#' is one of z85's characters; only '# ' starts a comment.
  const std::string key = "#" + key_pair().public_key.substr(1);
  const auto p = dir_ / "hash.public";
  std::ofstream(p) << "# a comment\n" << key << "\n";
  auto r = read_public_key_file(p.string());
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(*r, key);
}

}  // namespace
}  // namespace edgevla
