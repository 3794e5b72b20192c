#include "runtime/shm/segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace edgevla::shm {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

std::string segment_prefix() { return "/edgevla." + std::to_string(::getuid()) + "."; }

Expected<std::unique_ptr<Segment>> Segment::create(const std::string& name, std::size_t capacity) {
  Fd f{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600)};
  if (f.fd < 0) {
    return unavailable("cannot create shared memory segment '" + name + "': " + errno_text(errno));
  }
  const std::size_t total = kDataOffset + capacity;
  if (::ftruncate(f.fd, static_cast<off_t>(total)) != 0) {
    const int err = errno;
    ::shm_unlink(name.c_str());
    return resource_exhausted("cannot size shared memory segment '" + name + "' to " +
                              std::to_string(total) + " bytes: " + errno_text(err));
  }
  if (const int err = ::posix_fallocate(f.fd, 0, static_cast<off_t>(total)); err != 0) {
    ::shm_unlink(name.c_str());
    return resource_exhausted("shared memory is full: cannot reserve " + std::to_string(total) +
                              " bytes for '" + name + "' (" + errno_text(err) +
                              "); enlarge /dev/shm (docker: --shm-size) or lower the bus pool size");
  }
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, f.fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    ::shm_unlink(name.c_str());
    return unavailable("cannot map shared memory segment '" + name + "': " + errno_text(err));
  }
  auto* h = new (base) SegmentHeader{};
  h->magic = kMagic;
  h->layout_version = kLayoutVersion;
  h->owner_pid = static_cast<std::uint32_t>(::getpid());
  h->data_offset = kDataOffset;
  h->data_capacity = capacity;
  h->state.store(State{1, 0, 0}.pack());
  for (auto& s : h->holders) s.store(0);
  return std::unique_ptr<Segment>(new Segment(name, base, total, /*owner=*/true));
}

Expected<std::unique_ptr<Segment>> Segment::create_device(const std::string& name, Device device,
                                                          std::size_t device_bytes, const std::string& fd_channel) {
  if (device.is_cpu()) return invalid_argument("create_device: '" + name + "' is on the CPU (use create)");
  if (fd_channel.empty() || fd_channel.size() >= sizeof(SegmentHeader::fd_channel)) {
    return invalid_argument("create_device: descriptor channel name '" + fd_channel + "' is empty or too long");
  }
  EDGEVLA_ASSIGN_OR_RETURN(auto seg, create(name, 0));
  SegmentHeader& h = seg->header();
  h.device_type = static_cast<std::int32_t>(device.type);
  h.device_index = device.index;
  h.device_bytes = device_bytes;
  std::memcpy(h.fd_channel, fd_channel.data(), fd_channel.size());
  h.fd_channel[fd_channel.size()] = '\0';
  return seg;
}

Device Segment::device() const {
  const SegmentHeader& h = header();
  if (h.device_type == 0) return Device::cpu();
  return Device{static_cast<DeviceType>(h.device_type), h.device_index};
}

std::string Segment::fd_channel() const {
  const SegmentHeader& h = header();
  return std::string(h.fd_channel, ::strnlen(h.fd_channel, sizeof(h.fd_channel)));
}

Expected<std::unique_ptr<Segment>> Segment::open(const std::string& name) {
  Fd f{::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0)};
  if (f.fd < 0) {
    if (errno == ENOENT) {
      return not_found("shared memory segment '" + name +
                       "' has vanished (its publisher exited or freed it)");
    }
    return unavailable("cannot open shared memory segment '" + name + "': " + errno_text(errno));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    return unavailable("cannot stat shared memory segment '" + name + "': " + errno_text(errno));
  }
  // Only segments of this user, private to it: another local user could otherwise hand this
  // process a segment of theirs under an edgevla name.
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return failed_precondition("shared memory segment '" + name + "' is owned by uid " + std::to_string(st.st_uid) +
                               " with mode " + mode + "; edgevla maps only segments owned by uid " +
                               std::to_string(::geteuid()) + " with mode 0600 (remove /dev/shm" + name + ")");
  }
  const auto total = static_cast<std::size_t>(st.st_size);
  if (total < kDataOffset) {
    return data_loss("shared memory segment '" + name + "' is " + std::to_string(total) +
                     " bytes, too small to be an edgevla segment");
  }
  // No MAP_POPULATE here: pre-faulting a 64 MB segment takes tens of ms, and a subscriber
  // stuck mapping falls behind its publisher (which then needs more segments, which need
  // mapping...). Pages fault in as the consumer reads them, once per segment.
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
  if (base == MAP_FAILED) {
    return unavailable("cannot map shared memory segment '" + name + "': " + errno_text(errno));
  }
  auto seg = std::unique_ptr<Segment>(new Segment(name, base, total, /*owner=*/false));
  const SegmentHeader& h = seg->header();
  const bool device_ok = h.device_type == 0 ||
                         (h.device_type == static_cast<std::int32_t>(DeviceType::kCuda) && h.data_capacity == 0 &&
                          h.device_index >= 0 && ::strnlen(h.fd_channel, sizeof(h.fd_channel)) < sizeof(h.fd_channel));
  if (h.magic != kMagic || h.layout_version != kLayoutVersion || h.data_offset != kDataOffset ||
      h.data_capacity > total - kDataOffset || !device_ok) {
    return data_loss("shared memory segment '" + name +
                     "' has a bad header (not an edgevla segment, or another release)");
  }
  return seg;
}

Segment::~Segment() {
  header_mapping_ = {};  // a device's registration of the header goes before the pages do
  ::munmap(base_, map_size_);
  if (owner_) ::shm_unlink(name_.c_str());
}

int Segment::claim_slot(std::uint32_t pid) const {
  for (int i = 0; i < kMaxHolders; ++i) {
    std::uint32_t expected = 0;
    if (header().holders[i].compare_exchange_strong(expected, pid)) return i;
  }
  return -1;
}

void Segment::release_slot(int slot) const { header().holders[slot].store(0); }

bool Segment::any_holder() const {
  for (const auto& s : header().holders) {
    if (s.load() != 0) return true;
  }
  return false;
}

int Segment::clear_dead_holders() const {
  int cleared = 0;
  for (auto& s : header().holders) {
    std::uint32_t pid = s.load();
    if (pid != 0 && !process_alive(static_cast<pid_t>(pid)) && s.compare_exchange_strong(pid, 0)) {
      ++cleared;
    }
  }
  return cleared;
}

int remove_stale_segments() {
  // Names look like /edgevla.<uid>.<pid>.<bus>.<block>; /dev/shm lists them without '/'.
  const std::string prefix = segment_prefix().substr(1);
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  int removed = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view n(e->d_name);
    if (!n.starts_with(prefix)) continue;
    const auto rest = n.substr(prefix.size());
    const auto dot = rest.find('.');
    if (dot == std::string_view::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(std::string(rest.substr(0, dot)).c_str()));
    if (!process_alive(pid)) {
      if (::shm_unlink(("/" + std::string(n)).c_str()) == 0) ++removed;
    }
  }
  ::closedir(dir);
  return removed;
}

}  // namespace edgevla::shm
