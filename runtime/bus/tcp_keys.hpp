// Keys of the bus's tcp endpoints: ZeroMQ CURVE key pairs kept as z85 text files.
//
//   edgevla keys generate --out keys/robot   ->  keys/robot.public  (the z85 public key)
//                                                keys/robot.secret  (the z85 secret key, 0600)
//
// A process proves who it is with its secret key; the processes it talks to know it by its
// public key (a listener's `allowed_keys`, a connecting process's `server_key`).
#pragma once

#include <string>
#include <string_view>

#include "runtime/core/status.hpp"

namespace edgevla {

inline constexpr std::size_t kCurveKeyZ85Chars = 40;  // 32 bytes in z85

// z85 text of both halves of a CURVE key pair (empty when not set).
struct CurveKeyPair {
  std::string public_key;
  std::string secret_key;
  bool empty() const { return public_key.empty() && secret_key.empty(); }
};

// Ok when this libzmq can do CURVE (built with libsodium); else one error saying what to install.
Status check_curve_available();

// A fresh random key pair.
Expected<CurveKeyPair> generate_curve_key_pair();

// Whether `text` is a z85 CURVE key (40 characters of z85's alphabet).
bool is_curve_key(std::string_view text);

// The public key that belongs to the z85 secret key `secret`.
Expected<std::string> curve_public_key(const std::string& secret);

// `prefix`.public and `prefix`.secret.
std::string public_key_path(const std::string& prefix);
std::string secret_key_path(const std::string& prefix);

// Writes the pair as `prefix`.public (0644) and `prefix`.secret (0600, created with that mode).
// Refuses to replace either file unless `force`.
Status write_key_pair(const std::string& prefix, const CurveKeyPair& pair, bool force);

// Reads a secret key file (and derives its public key). Refused when group or others may
// read or write the file (the error names the file and the chmod that fixes it), or when it
// belongs to another user.
Expected<CurveKeyPair> read_secret_key_file(const std::string& path);

// Reads a public key file.
Expected<std::string> read_public_key_file(const std::string& path);

}  // namespace edgevla
