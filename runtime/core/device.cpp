#include "runtime/core/device.hpp"

#include <charconv>

namespace edgevla {

std::string Device::to_string() const {
  if (type == DeviceType::kCpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

Expected<Device> parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.starts_with("cuda:")) {
    int index = -1;
    const auto digits = text.substr(5);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && ptr == digits.data() + digits.size() && index >= 0) {
      return Device::cuda(index);
    }
  }
  return invalid_argument("unknown device '" + std::string(text) +
                          "' (expected cpu, cuda or cuda:N)");
}

}  // namespace edgevla
