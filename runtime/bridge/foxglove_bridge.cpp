#include "runtime/bridge/foxglove_bridge.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "msgs/types.hpp"
#include "runtime/bus/registry.hpp"
#include "runtime/util/clock.hpp"
#include "runtime/util/log.hpp"

namespace edgevla::bridge {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using nlohmann::json;

constexpr std::uint8_t kOpMessageData = 0x01;

// Whether a Sec-WebSocket-Protocol request header offers `protocol` (a comma-separated list).
bool offers(std::string_view header, std::string_view protocol) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == protocol) return true;
    if (comma == std::string_view::npos) break;
    header.remove_prefix(comma + 1);
  }
  return false;
}

std::shared_ptr<const std::string> status_message(int level, const std::string& message) {
  return std::make_shared<const std::string>(json{{"op", "status"}, {"level", level}, {"message", message}}.dump());
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

class Bridge;

// One client connection. Lives on the io thread; the bridge holds it while it is open.
class Session final : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Bridge& bridge) : ws_(std::move(socket)), bridge_(bridge) {}
  void start();
  // Queues a frame; a binary frame over the client's queue bound is dropped (returns false).
  bool send(std::shared_ptr<const std::string> data, bool text);
  void close();
  std::map<std::uint32_t, std::uint32_t>& subscriptions() { return subs_; }  // subscription -> channel
  struct ClientChannel {
    std::string topic, type;
    std::shared_ptr<TopicWriter> writer;
  };
  std::map<std::uint32_t, ClientChannel>& client_channels() { return client_channels_; }  // client id -> it

 private:
  void on_request(beast::error_code ec);
  void on_accept(beast::error_code ec);
  void read();
  void on_read(beast::error_code ec);
  void write_next();
  void finish();

  websocket::stream<tcp::socket> ws_;
  Bridge& bridge_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  struct Frame {
    std::shared_ptr<const std::string> data;
    bool text = false;
  };
  std::deque<Frame> queue_;
  std::size_t queued_bytes_ = 0;
  bool open_ = false;
  bool finished_ = false;
  bool closing_ = false;
  std::map<std::uint32_t, std::uint32_t> subs_;
  std::map<std::uint32_t, ClientChannel> client_channels_;
};

class Bridge final : public FoxgloveBridge {
 public:
  Bridge(Bus& bus, FoxgloveBridgeOptions options) : bus_(bus), options_(std::move(options)), acceptor_(io_) {}
  ~Bridge() override { stop(); }

  Status listen() {
    beast::error_code ec;
    const auto address = asio::ip::make_address(options_.host, ec);
    if (ec) {
      return invalid_argument("foxglove bridge: '" + options_.host + "' is not an IP address (use 127.0.0.1, or 0.0.0.0 for every interface)");
    }
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
    const std::string where = options_.host + ":" + std::to_string(options_.port);
    if (acceptor_.open(endpoint.protocol(), ec); ec) return unavailable("foxglove bridge: cannot open a socket: " + ec.message());
    acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (acceptor_.bind(endpoint, ec); ec) {
      return unavailable("foxglove bridge: cannot listen on " + where + ": " + ec.message() +
                         " (another bridge running? pick another --port, or 0 for any free one)");
    }
    if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
      return unavailable("foxglove bridge: cannot listen on " + where + ": " + ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    return Status::ok();
  }

  void run() {
    running_.store(true);
    accept();
    io_thread_ = std::thread([this] { io_.run(); });
    for (const auto& t : options_.topics) subscribe(t);
    bus_thread_ = std::thread([this] { observe(); });
  }

  int port() const override { return port_; }

  FoxgloveBridgeStats stats() const override {
    FoxgloveBridgeStats s;
    s.clients = clients_.load();
    s.channels = channel_count_.load();
    s.sent = sent_.load();
    s.dropped_slow = dropped_slow_.load();
    s.skipped = skipped_.load();
    s.client_published = client_published_.load();
    s.client_rejected = client_rejected_.load();
    return s;
  }

  void stop() override {
    if (!running_.exchange(false)) return;
    waker_->notify();
    if (bus_thread_.joinable()) bus_thread_.join();
    for (auto& [topic, q] : queues_) bus_.detach(q);
    asio::post(io_, [this] {
      beast::error_code ec;
      acceptor_.close(ec);
      for (const auto& s : std::set(sessions_)) s->close();
    });
    // Close handshakes get a moment; then whatever is left is cut.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (clients_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    io_.stop();
    if (io_thread_.joinable()) io_thread_.join();
  }

  // io thread --------------------------------------------------------------------------------

  void on_open(const std::shared_ptr<Session>& s) {
    sessions_.insert(s);
    clients_.store(sessions_.size());
    json info{{"op", "serverInfo"},
              {"name", "edgevla (domain " + bus_.options().domain + ")"},
              {"capabilities", options_.publish_topics.empty() ? json::array() : json::array({"clientPublish"})},
              {"supportedEncodings", options_.publish_topics.empty() ? json::array() : json::array({"json"})},
              {"metadata", {{"domain", bus_.options().domain}}},
              {"sessionId", std::to_string(::getpid()) + "-" + std::to_string(started_ns_)}};
    s->send(std::make_shared<const std::string>(info.dump()), true);
    json channels = json::array();
    for (const auto& [id, c] : channels_) channels.push_back(advertisement(c));
    if (!channels.empty()) {
      s->send(std::make_shared<const std::string>(json{{"op", "advertise"}, {"channels", channels}}.dump()), true);
    }
  }

  void on_close(const std::shared_ptr<Session>& s) {
    for (const auto& [id, c] : s->client_channels()) bus_.unadvertise(c.writer);
    s->client_channels().clear();
    for (const auto& [sub, channel] : s->subscriptions()) unsubscribed(channel);
    s->subscriptions().clear();
    sessions_.erase(s);
    clients_.store(sessions_.size());
  }

  void on_text(Session& s, const std::string& text) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("op") || !j["op"].is_string()) {
      s.send(status_message(2, "not a Foxglove WebSocket request (JSON with an 'op'): " + text.substr(0, 80)), true);
      return;
    }
    const std::string op = j["op"];
    if (op == "subscribe" && j.contains("subscriptions") && j["subscriptions"].is_array()) {
      for (const auto& sub : j["subscriptions"]) {
        if (!sub.is_object() || !sub.contains("id") || !sub.contains("channelId") || !sub["id"].is_number_unsigned() ||
            !sub["channelId"].is_number_unsigned()) {
          s.send(status_message(2, "subscribe: each subscription needs an unsigned 'id' and 'channelId'"), true);
          continue;
        }
        const auto id = sub["id"].get<std::uint32_t>();
        const auto channel = sub["channelId"].get<std::uint32_t>();
        if (!channels_.contains(channel)) {
          s.send(status_message(2, "subscribe: no channel " + std::to_string(channel) + " (see the advertise messages)"), true);
        } else if (s.subscriptions().contains(id)) {
          s.send(status_message(2, "subscribe: subscription id " + std::to_string(id) + " is already in use"), true);
        } else {
          s.subscriptions()[id] = channel;
          ++channels_.at(channel).subscribers;
          update_wanted();
        }
      }
    } else if (op == "unsubscribe" && j.contains("subscriptionIds") && j["subscriptionIds"].is_array()) {
      for (const auto& v : j["subscriptionIds"]) {
        if (!v.is_number_unsigned()) continue;
        auto it = s.subscriptions().find(v.get<std::uint32_t>());
        if (it == s.subscriptions().end()) {
          s.send(status_message(1, "unsubscribe: no subscription " + v.dump()), true);
          continue;
        }
        unsubscribed(it->second);
        s.subscriptions().erase(it);
      }
    } else if (op == "advertise" && !options_.publish_topics.empty() && j.contains("channels") &&
               j["channels"].is_array()) {
      for (const auto& ch : j["channels"]) client_advertise(s, ch);
    } else if (op == "unadvertise" && !options_.publish_topics.empty() && j.contains("channelIds") &&
               j["channelIds"].is_array()) {
      for (const auto& v : j["channelIds"]) {
        if (!v.is_number_unsigned()) continue;
        auto it = s.client_channels().find(v.get<std::uint32_t>());
        if (it == s.client_channels().end()) continue;
        bus_.unadvertise(it->second.writer);
        s.client_channels().erase(it);
      }
    } else {
      s.send(status_message(2, options_.publish_topics.empty()
                                   ? "edgevla's Foxglove bridge is read-only: it does not take '" + op +
                                         "' (subscribe and unsubscribe are what it takes; start it with "
                                         "--allow-publish TOPIC to let clients publish)"
                                   : "edgevla's Foxglove bridge does not take '" + op +
                                         "' (subscribe, unsubscribe, advertise, unadvertise)"),
             true);
    }
  }

  // A client's channel: json on an allowed topic, as a Prompt or RobotState.
  void client_advertise(Session& s, const json& ch) {
    const auto refuse = [&](const std::string& why) {
      client_rejected_.fetch_add(1);
      s.send(status_message(2, "advertise: " + why), true);
    };
    if (!ch.is_object() || !ch.contains("id") || !ch["id"].is_number_unsigned() || !ch.contains("topic") ||
        !ch["topic"].is_string() || !ch.contains("encoding") || !ch["encoding"].is_string()) {
      return refuse("each channel needs an unsigned 'id', a 'topic' and an 'encoding'");
    }
    const std::string topic = ch["topic"];
    const std::string schema = ch.value("schemaName", "");
    if (std::find(options_.publish_topics.begin(), options_.publish_topics.end(), topic) ==
        options_.publish_topics.end()) {
      return refuse("clients may not publish to '" + topic + "' (allowed: " + join(options_.publish_topics) + ")");
    }
    if (ch["encoding"] != "json") return refuse("'" + topic + "': only the json encoding is taken");
    if (schema != "Prompt" && schema != "RobotState") {
      return refuse("'" + topic + "': schemaName must be Prompt ({\"text\": ...}) or RobotState "
                    "({\"position\": [...]}), not '" + schema + "'");
    }
    auto writer = bus_.advertise(topic, schema, "foxglove_bridge");
    if (!writer) return refuse("'" + topic + "': " + writer.status().message());
    s.client_channels()[ch["id"].get<std::uint32_t>()] = {topic, schema, std::move(*writer)};
  }

  // A client's message frame: opcode 0x01, channel id (u32 LE), the JSON.
  void on_binary(Session& s, const std::string& data) {
    const auto refuse = [&](const std::string& why) {
      client_rejected_.fetch_add(1);
      s.send(status_message(2, why), true);
    };
    if (options_.publish_topics.empty()) {
      return refuse("edgevla's Foxglove bridge is read-only: it takes no client messages (start it with "
                    "--allow-publish TOPIC)");
    }
    if (data.size() < 5 || static_cast<std::uint8_t>(data[0]) != kOpMessageData) {
      return refuse("a client message frame is opcode 0x01, a channel id (u32) and the message");
    }
    std::uint32_t id = 0;
    for (int i = 0; i < 4; ++i) id |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(data[1 + i])) << (8 * i);
    auto it = s.client_channels().find(id);
    if (it == s.client_channels().end()) {
      return refuse("client message on channel " + std::to_string(id) + ", which the client did not advertise");
    }
    const Session::ClientChannel& c = it->second;
    const json j = json::parse(data.substr(5), nullptr, false);
    Expected<Message> m = invalid_argument("");
    if (c.type == "Prompt") {
      if (j.is_discarded() || !j.is_object() || !j.contains("text") || !j["text"].is_string()) {
        return refuse("'" + c.topic + "': a Prompt is {\"text\": \"...\"}");
      }
      m = msgs::Prompt::make(j["text"].get<std::string>());
    } else {
      if (j.is_discarded() || !j.is_object() || !j.contains("position") || !j["position"].is_array() ||
          j["position"].empty() || j["position"].size() > 4096) {
        return refuse("'" + c.topic + "': a RobotState is {\"position\": [numbers]} (1 to 4096 of them)");
      }
      std::vector<float> v;
      for (const auto& x : j["position"]) {
        if (!x.is_number() || !std::isfinite(x.get<double>())) {
          return refuse("'" + c.topic + "': RobotState position holds a value that is not a finite number");
        }
        v.push_back(x.get<float>());
      }
      auto t = Tensor::from_values(std::span<const float>(v), Shape{static_cast<std::int64_t>(v.size())});
      if (!t) return refuse(t.status().message());
      m = msgs::RobotState::make(std::move(*t));
    }
    if (!m) return refuse("'" + c.topic + "': " + m.status().message());
    m->header().source_stamp_ns = wall_now_ns();
    if (Status st = bus_.publish(*it->second.writer, std::move(*m)); !st.is_ok()) {
      return refuse("'" + c.topic + "': " + st.message());
    }
    client_published_.fetch_add(1);
  }

  void dropped_slow() { dropped_slow_.fetch_add(1); }
  std::size_t max_queue_bytes() const { return options_.max_client_queue_bytes; }

 private:
  struct Channel {
    std::uint32_t id = 0;
    std::string topic, source, schema_name, schema;
    int subscribers = 0;
  };

  static json advertisement(const Channel& c) {
    return json{{"id", c.id},
                {"topic", c.topic},
                {"encoding", bag::kFoxgloveMessageEncoding},
                {"schemaName", c.schema_name},
                {"schema", c.schema},
                {"schemaEncoding", bag::kFoxgloveSchemaEncoding}};
  }

  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed by stop()
      std::make_shared<Session>(std::move(socket), *this)->start();
      accept();
    });
  }

  void unsubscribed(std::uint32_t channel) {
    if (auto it = channels_.find(channel); it != channels_.end()) --it->second.subscribers;
    update_wanted();
  }

  // The topics whose Foxglove messages someone wants, for the bus thread.
  void update_wanted() {
    std::set<std::string> wanted;
    for (const auto& [id, c] : channels_) {
      if (c.subscribers > 0) wanted.insert(c.source);
    }
    std::lock_guard lock(wanted_mu_);
    wanted_ = std::move(wanted);
  }

  // Registers the channels of new derived topics (advertising them), then sends each message
  // to the subscriptions of its channel.
  void deliver(const std::string& source, std::int64_t stamp_ns, std::vector<bag::FoxgloveMessage> messages) {
    json fresh = json::array();
    for (const auto& m : messages) {
      auto it = by_topic_.find(m.topic);
      if (it != by_topic_.end()) continue;
      Channel c{next_channel_++, m.topic, source, m.schema_name, bag::foxglove_schema(m), 0};
      fresh.push_back(advertisement(c));
      by_topic_[m.topic] = c.id;
      channels_[c.id] = std::move(c);
    }
    channel_count_.store(channels_.size());
    if (!fresh.empty()) {
      const auto adv = std::make_shared<const std::string>(json{{"op", "advertise"}, {"channels", fresh}}.dump());
      for (const auto& s : sessions_) s->send(adv, true);
    }
    for (const auto& m : messages) {
      const Channel& c = channels_.at(by_topic_.at(m.topic));
      if (c.subscribers == 0) continue;
      for (const auto& s : sessions_) {
        for (const auto& [sub, channel] : s->subscriptions()) {
          if (channel != c.id) continue;
          auto frame = std::make_shared<std::string>();
          frame->reserve(13 + m.data.size());
          frame->push_back(static_cast<char>(kOpMessageData));
          for (int i = 0; i < 4; ++i) frame->push_back(static_cast<char>((sub >> (8 * i)) & 0xff));
          const auto t = static_cast<std::uint64_t>(stamp_ns);
          for (int i = 0; i < 8; ++i) frame->push_back(static_cast<char>((t >> (8 * i)) & 0xff));
          frame->append(m.data);
          if (s->send(std::move(frame), false)) sent_.fetch_add(1);
        }
      }
    }
  }

  // bus thread -------------------------------------------------------------------------------

  void subscribe(const std::string& topic) {
    if (queues_.contains(topic)) return;
    // An observer that keeps the newest two: a viewer wants the latest, never a backlog.
    const QoS qos = QoS::keep_last(2).as_observer().taking_device_tensors();
    auto q = std::make_shared<SubscriptionQueue>(topic, "", qos, "foxglove_bridge", waker_);
    if (Status s = bus_.attach(q); !s.is_ok()) {
      rate_log_.warn("attach:" + topic, "foxglove bridge cannot subscribe to '" + topic + "': " + s.message());
      return;
    }
    queues_[topic] = std::move(q);
  }

  void discover() {
    if (!options_.topics.empty()) return;
    auto reg = Registry::open(bus_.options().registry_dir);
    if (!reg) return;
    for (const auto& e : reg->list()) {
      for (const auto& p : e.publishers) subscribe(p.topic);
    }
  }

  void observe() {
    std::int64_t last_discovery = 0;
    std::set<std::string> converted;  // topics whose channels the io thread knows of
    bag::FoxgloveSkips skips;
    std::set<std::string> warned;
    while (running_.load()) {
      const std::uint32_t seen = waker_->epoch();
      const std::int64_t now = steady_now_ns();
      if (now - last_discovery > options_.discovery_period.count() * 1'000'000) {
        discover();
        last_discovery = now;
      }
      bool any = false;
      for (auto& [topic, q] : queues_) {
        // Checked per message: a publisher faster than the conversion never empties the queue,
        // and stop() must not wait for that.
        while (running_.load(std::memory_order_relaxed)) {
          auto s = q->pop_stamped();
          if (!s.message) break;
          any = true;
          bool wanted = false;
          {
            std::lock_guard lock(wanted_mu_);
            wanted = wanted_.contains(topic);
          }
          // A topic's first message makes its channels known; later ones are converted only
          // while a client subscribes to one of them (a jpeg per frame costs milliseconds).
          if (!wanted && converted.contains(topic)) continue;
          converted.insert(topic);
          std::vector<bag::FoxgloveMessage> out;
          bag::to_foxglove(*s.message, topic, options_.foxglove, out, skips);
          asio::post(io_, [this, topic, stamp = s.message->header().publish_stamp_ns, out = std::move(out)]() mutable {
            deliver(topic, stamp, std::move(out));
          });
        }
      }
      std::uint64_t skipped = 0;
      for (const auto& [why, n] : skips) {
        skipped += n;
        if (warned.insert(why).second) rate_log_.warn("skip:" + why, "foxglove bridge: skipped " + why);
      }
      skipped_.store(skipped);
      if (!any) waker_->wait(seen, steady_now_ns() + 100'000'000);
    }
  }

  Bus& bus_;
  FoxgloveBridgeOptions options_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  int port_ = 0;
  std::int64_t started_ns_ = wall_now_ns();
  std::atomic<bool> running_{false};
  std::thread io_thread_, bus_thread_;
  // io thread only.
  std::set<std::shared_ptr<Session>> sessions_;
  std::map<std::uint32_t, Channel> channels_;
  std::map<std::string, std::uint32_t> by_topic_;
  std::uint32_t next_channel_ = 1;
  // bus thread only.
  std::map<std::string, std::shared_ptr<SubscriptionQueue>> queues_;
  std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  RateLimitedLog rate_log_;
  // Shared.
  std::mutex wanted_mu_;
  std::set<std::string> wanted_;
  std::atomic<std::uint64_t> clients_{0}, channel_count_{0}, sent_{0}, dropped_slow_{0}, skipped_{0};
  std::atomic<std::uint64_t> client_published_{0}, client_rejected_{0};
};

void Session::start() {
  http::async_read(ws_.next_layer(), buffer_, request_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_request(ec); });
}

void Session::on_request(beast::error_code ec) {
  if (ec) return;
  if (!websocket::is_upgrade(request_) ||
      !offers([&] {
        const auto v = request_[http::field::sec_websocket_protocol];
        return std::string_view(v.data(), v.size());
      }(),
              kFoxgloveSubprotocol)) {
    // A browser or a client without the subprotocol: say what this is and how to connect.
    auto res = std::make_shared<http::response<http::string_body>>(http::status::bad_request, request_.version());
    res->set(http::field::server, "edgevla");
    res->set(http::field::content_type, "text/plain");
    res->body() = std::string("edgevla's Foxglove bridge speaks the WebSocket subprotocol ") + kFoxgloveSubprotocol +
                  ": in Foxglove, Open connection > Foxglove WebSocket, and give this address as ws://HOST:PORT\n";
    res->keep_alive(false);
    res->prepare_payload();
    http::async_write(ws_.next_layer(), *res, [self = shared_from_this(), res](beast::error_code, std::size_t) {
      beast::error_code e;
      self->ws_.next_layer().shutdown(tcp::socket::shutdown_both, e);
    });
    return;
  }
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& r) {
    r.set(http::field::sec_websocket_protocol, kFoxgloveSubprotocol);
    r.set(http::field::server, "edgevla");
  }));
  ws_.async_accept(request_, [self = shared_from_this()](beast::error_code e) { self->on_accept(e); });
}

void Session::on_accept(beast::error_code ec) {
  if (ec) return;
  open_ = true;
  bridge_.on_open(shared_from_this());
  buffer_.consume(buffer_.size());
  read();
}

void Session::read() {
  ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void Session::on_read(beast::error_code ec) {
  if (ec) {
    finish();
    return;
  }
  if (ws_.got_text()) {
    bridge_.on_text(*this, beast::buffers_to_string(buffer_.data()));
  } else {
    bridge_.on_binary(*this, beast::buffers_to_string(buffer_.data()));
  }
  buffer_.consume(buffer_.size());
  read();
}

bool Session::send(std::shared_ptr<const std::string> data, bool text) {
  if (!open_ || finished_ || closing_) return false;
  if (!text && queued_bytes_ + data->size() > bridge_.max_queue_bytes()) {
    bridge_.dropped_slow();
    return false;
  }
  queued_bytes_ += data->size();
  queue_.push_back({std::move(data), text});
  if (queue_.size() == 1) write_next();
  return true;
}

void Session::write_next() {
  const Frame& f = queue_.front();
  ws_.text(f.text);
  ws_.async_write(asio::buffer(*f.data), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    self->queued_bytes_ -= self->queue_.front().data->size();
    self->queue_.pop_front();
    if (ec) {
      self->finish();
      return;
    }
    if (!self->queue_.empty()) self->write_next();
  });
}

// At shutdown: the socket is closed outright (a close handshake may not overlap a write in
// progress); the pending read then fails and finish() runs.
void Session::close() {
  closing_ = true;
  beast::error_code ec;
  ws_.next_layer().shutdown(tcp::socket::shutdown_both, ec);
  ws_.next_layer().close(ec);
}

void Session::finish() {
  if (finished_) return;
  finished_ = true;
  if (open_) bridge_.on_close(shared_from_this());
}

}  // namespace

Expected<std::unique_ptr<FoxgloveBridge>> FoxgloveBridge::start(Bus& bus, FoxgloveBridgeOptions options) {
  if (options.port < 0 || options.port > 65535) {
    return invalid_argument("foxglove bridge: port " + std::to_string(options.port) + " is out of range (0..65535)");
  }
  auto b = std::make_unique<Bridge>(bus, std::move(options));
  EDGEVLA_RETURN_IF_ERROR(b->listen());
  b->run();
  return std::unique_ptr<FoxgloveBridge>(std::move(b));
}

}  // namespace edgevla::bridge
