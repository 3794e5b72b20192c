#include "runtime/bus/control_client.hpp"

#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace edgevla {

Expected<std::string> control_request(const std::string& endpoint, const std::string& command,
                                      const std::string& argument, std::chrono::milliseconds timeout) {
  try {
    zmq::context_t ctx(1);
    zmq::socket_t req(ctx, zmq::socket_type::req);
    req.set(zmq::sockopt::linger, 0);
    req.connect(endpoint);
    req.send(zmq::buffer(command), zmq::send_flags::sndmore);
    req.send(zmq::buffer(argument), zmq::send_flags::none);
    zmq::pollitem_t item{req.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) <= 0) {
      return unavailable("no answer from " + endpoint + " within " + std::to_string(timeout.count()) +
                         " ms (process busy or gone)");
    }
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(req, std::back_inserter(parts)) || parts.size() != 2) {
      return data_loss("malformed control reply from " + endpoint);
    }
    if (parts[0].to_string() != "ok") return failed_precondition(parts[1].to_string());
    return parts[1].to_string();
  } catch (const zmq::error_t& e) {
    return unavailable("control request to " + endpoint + " failed: " + e.what());
  }
}

}  // namespace edgevla
