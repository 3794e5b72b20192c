#include "runtime/bus/tcp_keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace edgevla {
namespace {

constexpr std::string_view kZ85Alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Writes `text` to a new file of mode `mode` (an existing one is replaced only when `force`:
// removed first, so the new file gets `mode` whatever the old one had).
Status write_new_file(const std::string& path, const std::string& text, mode_t mode, bool force) {
  if (force && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return failed_precondition("cannot replace '" + path + "': " + std::strerror(errno));
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) {
      return already_exists("'" + path +
                            "' exists; pass --force to replace it (the old key stops working "
                            "wherever it is named)");
    }
    const std::string dir =
        path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
    return failed_precondition("cannot create '" + path + "': " + std::strerror(errno) +
                               (errno == ENOENT && !dir.empty()
                                    ? " (make the folder first: mkdir -p " + dir + ")"
                                    : std::string()));
  }
  // The umask may have taken bits away; never added any.
  bool ok = ::fchmod(fd, mode) == 0;
  std::size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ::fsync(fd) == 0 && ok;
  const int err = errno;
  ::close(fd);
  if (!ok) return failed_precondition("cannot write '" + path + "': " + std::strerror(err));
  return Status::ok();
}

// `path` without `suffix`, for the `keys generate --out` that writes it.
std::string key_prefix(const std::string& path, std::string_view suffix) {
  return path.ends_with(suffix) ? path.substr(0, path.size() - suffix.size()) : "PREFIX";
}

// Reads a key file through one descriptor (what is checked is what is read). Key files are a
// few lines: anything longer is not one.
Expected<std::string> read_key_file(const std::string& path, std::string_view what,
                                    struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    const bool secret = what == "secret key";
    return not_found(
        std::string(what) + " file '" + path + "' cannot be read: " + std::strerror(err) +
        (secret
             ? " (write it with `edgevla keys generate --out " + key_prefix(path, ".secret") + "`)"
             : " (write the pair with `edgevla keys generate --out " + key_prefix(path, ".public") +
                   "` on the host whose key it is, and copy the .public here)"));
  }
  constexpr off_t kMaxBytes = 4096;
  std::string text;
  if (!S_ISREG(st.st_mode) || st.st_size > kMaxBytes) {
    ::close(fd);
    return invalid_argument(
        std::string(what) + " file '" + path + "' is not a key file (" +
        (S_ISREG(st.st_mode) ? std::to_string(st.st_size) + " bytes" : "not a regular file") +
        "); write one with `edgevla keys generate --out PREFIX`");
  }
  text.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(done);
  return text;
}

// The one key line of a key file's text (blank lines and '#' comments aside).
Expected<std::string> parse_key(const std::string& text, const std::string& path,
                                std::string_view what) {
  std::string key;
  int keys = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    const auto b = line.find_first_not_of(" \t\r");
    // '#' is a z85 character: a comment is '#' followed by a blank or nothing.
    if (b == std::string_view::npos ||
        (line[b] == '#' && (b + 1 == line.size() || line[b + 1] == ' ')))
      continue;
    const auto e = line.find_last_not_of(" \t\r");
    key = line.substr(b, e - b + 1);
    ++keys;
  }
  if (keys != 1 || !is_curve_key(key)) {
    return invalid_argument(
        std::string(what) + " file '" + path + "' does not hold one z85 CURVE key (" +
        std::to_string(kCurveKeyZ85Chars) +
        " characters on one line); write it with `edgevla keys generate --out PREFIX`");
  }
  return key;
}

}  // namespace

Status check_curve_available() {
  if (zmq_has("curve") == 1) return Status::ok();
  return failed_precondition(
      "this libzmq has no CURVE security (built without libsodium), so tcp cannot be encrypted; "
      "install a libzmq built with libsodium (Debian: libzmq5), or give the group's tcp section "
      "'insecure: true'");
}

bool is_curve_key(std::string_view text) {
  return text.size() == kCurveKeyZ85Chars &&
         text.find_first_not_of(kZ85Alphabet) == std::string_view::npos;
}

Expected<CurveKeyPair> generate_curve_key_pair() {
  EDGEVLA_RETURN_IF_ERROR(check_curve_available());
  char pub[kCurveKeyZ85Chars + 1] = {};
  char sec[kCurveKeyZ85Chars + 1] = {};
  if (zmq_curve_keypair(pub, sec) != 0) {
    return internal_error(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  }
  CurveKeyPair pair{pub, sec};
  ::explicit_bzero(sec, sizeof sec);
  return pair;
}

Expected<std::string> curve_public_key(const std::string& secret) {
  EDGEVLA_RETURN_IF_ERROR(check_curve_available());
  if (!is_curve_key(secret)) return invalid_argument("not a z85 CURVE secret key");
  char pub[kCurveKeyZ85Chars + 1] = {};
  if (zmq_curve_public(pub, secret.c_str()) != 0) {
    return invalid_argument(std::string("not a z85 CURVE secret key: ") +
                            zmq_strerror(zmq_errno()));
  }
  return std::string(pub);
}

std::string public_key_path(const std::string& prefix) { return prefix + ".public"; }
std::string secret_key_path(const std::string& prefix) { return prefix + ".secret"; }

Status write_key_pair(const std::string& prefix, const CurveKeyPair& pair, bool force) {
  if (prefix.empty()) return invalid_argument("no output prefix given (e.g. --out keys/robot)");
  const std::string pub = public_key_path(prefix), sec = secret_key_path(prefix);
  if (!force) {
    // Checked for both before either is written: never half a pair.
    for (const std::string& p : {pub, sec}) {
      struct stat st {};
      if (::lstat(p.c_str(), &st) == 0) {
        return already_exists("'" + p +
                              "' exists; pass --force to replace the pair (the old key stops "
                              "working wherever it is named)");
      }
    }
  }
  EDGEVLA_RETURN_IF_ERROR(write_new_file(sec,
                                         "# edgevla tcp secret key (ZeroMQ CURVE, z85). Keep it "
                                         "private: mode 0600, never share it.\n" +
                                             pair.secret_key + "\n",
                                         0600, force));
  return write_new_file(pub,
                        "# edgevla tcp public key (ZeroMQ CURVE, z85): name it in other processes' "
                        "allowed_keys or server_key.\n" +
                            pair.public_key + "\n",
                        0644, force);
}

Expected<CurveKeyPair> read_secret_key_file(const std::string& path) {
  struct stat st {};
  EDGEVLA_ASSIGN_OR_RETURN(std::string text, read_key_file(path, "secret key", st));
  // Wiped whatever happens next: the text holds the secret.
  struct Wipe {
    std::string& s;
    ~Wipe() { ::explicit_bzero(s.data(), s.size()); }
  } wipe{text};
  if ((st.st_mode & 077) != 0) {
    return failed_precondition("secret key file '" + path + "' is open to other users (mode " +
                               octal_mode(st.st_mode) + "); run `chmod 600 " + path + "`");
  }
  if (st.st_uid != ::geteuid()) {
    return failed_precondition("secret key file '" + path + "' belongs to uid " +
                               std::to_string(st.st_uid) + ", not to this process's uid " +
                               std::to_string(::geteuid()) + "; run `chown " +
                               std::to_string(::geteuid()) + " " + path + "`");
  }
  EDGEVLA_ASSIGN_OR_RETURN(std::string secret, parse_key(text, path, "secret key"));
  auto pub = curve_public_key(secret);
  if (!pub) return pub.status().with_context("secret key file '" + path + "'");
  return CurveKeyPair{std::move(*pub), std::move(secret)};
}

Expected<std::string> read_public_key_file(const std::string& path) {
  if (path.ends_with(".secret")) {
    return invalid_argument("'" + path + "' is a secret key file; name its public key (" +
                            path.substr(0, path.size() - 7) +
                            ".public) here, and keep the secret where it is");
  }
  struct stat st {};
  EDGEVLA_ASSIGN_OR_RETURN(std::string text, read_key_file(path, "public key", st));
  return parse_key(text, path, "public key");
}

}  // namespace edgevla
