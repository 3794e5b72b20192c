// `edgevla keys generate`: a key pair for the bus's encrypted tcp.
#include <cstdio>

#include "runtime/bus/tcp_keys.hpp"
#include "runtime/cli/cli.hpp"

namespace edgevla::cli {

int keys_generate(const std::string& out, bool force) {
  auto pair = generate_curve_key_pair();
  if (!pair) {
    std::fprintf(stderr, "keys generate: %s\n", pair.status().message().c_str());
    return 2;
  }
  if (Status s = write_key_pair(out, *pair, force); !s.is_ok()) {
    std::fprintf(stderr, "keys generate: %s\n", s.message().c_str());
    return 2;
  }
  std::printf("secret key: %s (mode 0600: this process's tcp secret_key; share it with no one)\n",
              secret_key_path(out).c_str());
  std::printf("public key: %s (name it in other processes' allowed_keys or server_key)\n",
              public_key_path(out).c_str());
  std::printf("%s\n", pair->public_key.c_str());
  return 0;
}

}  // namespace edgevla::cli
