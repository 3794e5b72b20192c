#include "msgs/wire.hpp"

#include <msgpack.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace edgevla::wire {
namespace {

// msgpack packer sink that appends to a std::string.
struct StringSink {
  std::string* out;
  void write(const char* data, std::size_t n) { out->append(data, n); }
};
using Packer = msgpack::packer<StringSink>;

void pack_str(Packer& p, std::string_view s) {
  p.pack_str(static_cast<std::uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

// Always a msgpack float64, as msgs/README.md specifies. Not packer::pack_double: msgpack-cxx 4
// writes integral doubles as integers (2.0 arrives as int 2, -0.0 as 0, 1e19 as a uint64 the
// decoder rejects) and converts 2^64 to uint64_t, which is undefined behaviour.
void pack_float64(StringSink& sink, double d) {
  const auto bits = std::bit_cast<std::uint64_t>(d);
  char buf[9];
  buf[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i) buf[1 + i] = static_cast<char>((bits >> (56 - 8 * i)) & 0xff);
  sink.write(buf, sizeof buf);
}

// The packer writes straight through to `sink`, so both may append in turn.
void pack_field(Packer& p, StringSink& sink, const FieldValue& v) {
  std::visit(
      [&p, &sink](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          x ? p.pack_true() : p.pack_false();
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          p.pack_int64(x);
        } else if constexpr (std::is_same_v<T, double>) {
          pack_float64(sink, x);
        } else {
          pack_str(p, x);
        }
      },
      v);
}

// Decoding helpers: each returns a Status naming the key that is wrong.
using Obj = msgpack::object;

std::string_view as_sv(const Obj& o) { return {o.via.str.ptr, o.via.str.size}; }

// Each known key may appear once per map; a repeat is malformed (it could also smuggle more
// hops or fields past the limits).
Status check_unique_keys(const Obj& map, std::initializer_list<std::string_view> known, std::string_view what) {
  for (std::string_view k : known) {
    int seen = 0;
    for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
      const auto& key = map.via.map.ptr[i].key;
      if (key.type == msgpack::type::STR && as_sv(key) == k) ++seen;
    }
    if (seen > 1) return data_loss(std::string(what) + " key '" + std::string(k) + "' appears more than once");
  }
  return Status::ok();
}

Expected<std::string_view> get_str(const Obj& o, std::string_view what) {
  if (o.type != msgpack::type::STR) return data_loss("envelope '" + std::string(what) + "' is not a string");
  if (o.via.str.size > kMaxStringBytes) {
    return data_loss("envelope '" + std::string(what) + "' string exceeds " +
                     std::to_string(kMaxStringBytes) + " bytes");
  }
  return as_sv(o);
}

Expected<std::uint64_t> get_uint(const Obj& o, std::string_view what) {
  if (o.type != msgpack::type::POSITIVE_INTEGER) {
    return data_loss("envelope '" + std::string(what) + "' is not a non-negative integer");
  }
  return o.via.u64;
}

Expected<std::int64_t> get_int(const Obj& o, std::string_view what) {
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return o.via.i64;
  if (o.type == msgpack::type::POSITIVE_INTEGER &&
      o.via.u64 <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return static_cast<std::int64_t>(o.via.u64);
  }
  return data_loss("envelope '" + std::string(what) + "' is not a 64-bit integer");
}

Expected<FieldValue> get_field(const Obj& o, std::string_view name) {
  switch (o.type) {
    case msgpack::type::BOOLEAN: return FieldValue(o.via.boolean);
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: {
      EDGEVLA_ASSIGN_OR_RETURN(std::int64_t v, get_int(o, name));
      return FieldValue(v);
    }
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return FieldValue(o.via.f64);
    case msgpack::type::STR: {
      EDGEVLA_ASSIGN_OR_RETURN(std::string_view s, get_str(o, name));
      return FieldValue(std::string(s));
    }
    default:
      return data_loss("envelope field '" + std::string(name) +
                       "' is not a bool, integer, float or string");
  }
}

struct TensorDesc {
  std::string name;
  DType dtype = DType::kU8;
  Shape shape;
  std::uint64_t nbytes = 0;
  bool has_frame = false;
  std::uint32_t frame = 0;
  bool has_shm = false;
  ShmLocation shm;
  bool has_data = false;
  std::span<const std::byte> data;
};

Status decode_shm(const Obj& o, TensorDesc& d) {
  if (o.type != msgpack::type::MAP) return data_loss("tensor '" + d.name + "' shm is not a map");
  EDGEVLA_RETURN_IF_ERROR(check_unique_keys(o, {"segment", "offset", "gen"}, "shm descriptor"));
  bool seg = false, off = false, gen = false;
  for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
    const auto& kv = o.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) continue;
    const auto key = as_sv(kv.key);
    if (key == "segment") {
      EDGEVLA_ASSIGN_OR_RETURN(auto s, get_str(kv.val, "shm.segment"));
      d.shm.segment = std::string(s);
      seg = true;
    } else if (key == "offset") {
      EDGEVLA_ASSIGN_OR_RETURN(d.shm.offset, get_uint(kv.val, "shm.offset"));
      off = true;
    } else if (key == "gen") {
      EDGEVLA_ASSIGN_OR_RETURN(auto g, get_uint(kv.val, "shm.gen"));
      if (g > std::numeric_limits<std::uint32_t>::max()) return data_loss("shm.gen out of range");
      d.shm.generation = static_cast<std::uint32_t>(g);
      gen = true;
    }
  }
  if (!seg || !off || !gen) return data_loss("tensor '" + d.name + "' shm lacks segment, offset or gen");
  d.has_shm = true;
  return Status::ok();
}

Expected<TensorDesc> decode_tensor_desc(const Obj& o) {
  if (o.type != msgpack::type::MAP) return data_loss("tensor descriptor is not a map");
  EDGEVLA_RETURN_IF_ERROR(
      check_unique_keys(o, {"name", "dtype", "shape", "nbytes", "frame", "shm", "data"}, "tensor descriptor"));
  TensorDesc d;
  bool has_name = false, has_dtype = false, has_shape = false, has_nbytes = false;
  for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
    const auto& kv = o.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) continue;
    const auto key = as_sv(kv.key);
    if (key == "name") {
      EDGEVLA_ASSIGN_OR_RETURN(auto s, get_str(kv.val, "tensor.name"));
      d.name = std::string(s);
      has_name = true;
    } else if (key == "dtype") {
      EDGEVLA_ASSIGN_OR_RETURN(auto s, get_str(kv.val, "tensor.dtype"));
      auto dt = parse_dtype(s);
      if (!dt) return data_loss("tensor dtype: " + dt.status().message());
      d.dtype = *dt;
      has_dtype = true;
    } else if (key == "shape") {
      if (kv.val.type != msgpack::type::ARRAY || kv.val.via.array.size > Shape::kMaxRank) {
        return data_loss("tensor shape is not an array of at most " +
                         std::to_string(Shape::kMaxRank) + " dims");
      }
      std::int64_t dims[Shape::kMaxRank];
      for (std::uint32_t j = 0; j < kv.val.via.array.size; ++j) {
        EDGEVLA_ASSIGN_OR_RETURN(auto v, get_uint(kv.val.via.array.ptr[j], "tensor.shape"));
        if (v > static_cast<std::uint64_t>(kMaxTensorBytes)) return data_loss("tensor dim too large");
        dims[j] = static_cast<std::int64_t>(v);
      }
      auto s = Shape::from(std::span<const std::int64_t>(dims, kv.val.via.array.size));
      if (!s) return data_loss("tensor shape: " + s.status().message());
      d.shape = *s;
      has_shape = true;
    } else if (key == "nbytes") {
      EDGEVLA_ASSIGN_OR_RETURN(d.nbytes, get_uint(kv.val, "tensor.nbytes"));
      has_nbytes = true;
    } else if (key == "frame") {
      EDGEVLA_ASSIGN_OR_RETURN(auto f, get_uint(kv.val, "tensor.frame"));
      if (f > kMaxTensors) return data_loss("tensor frame index " + std::to_string(f) + " too large");
      d.frame = static_cast<std::uint32_t>(f);
      d.has_frame = true;
    } else if (key == "shm") {
      EDGEVLA_RETURN_IF_ERROR(decode_shm(kv.val, d));
    } else if (key == "data") {
      if (kv.val.type != msgpack::type::BIN) return data_loss("tensor '" + d.name + "' data is not a msgpack bin");
      d.data = {reinterpret_cast<const std::byte*>(kv.val.via.bin.ptr), kv.val.via.bin.size};
      d.has_data = true;
    }
  }
  if (!has_name || !has_dtype || !has_shape || !has_nbytes) {
    return data_loss("tensor descriptor '" + d.name + "' lacks one of name, dtype, shape, nbytes");
  }
  if (int{d.has_frame} + int{d.has_shm} + int{d.has_data} != 1) {
    return data_loss("tensor '" + d.name + "' must have exactly one of 'frame', 'shm' or 'data'");
  }
  // Checked size: the product of dims times the element size must stay within the limit.
  // Zero dims are left out of the product checked, not let through it: [0, 2^40, 2^40] has
  // no elements, but its row-major strides still overflow int64 (contiguous_strides).
  std::int64_t n = 1;
  bool empty = false;
  const auto esize = static_cast<std::int64_t>(dtype_size(d.dtype));
  for (auto dim : d.shape.dims()) {
    if (dim == 0) {
      empty = true;
      continue;
    }
    if (n > kMaxTensorBytes / esize / dim) return data_loss("tensor '" + d.name + "' is too large");
    n *= dim;
  }
  if (empty) n = 0;
  const auto expect = static_cast<std::uint64_t>(n) * dtype_size(d.dtype);
  if (expect != d.nbytes) {
    return data_loss("tensor '" + d.name + "' " + std::string(dtype_name(d.dtype)) +
                     d.shape.to_string() + " needs " + std::to_string(expect) +
                     " bytes but the descriptor says " + std::to_string(d.nbytes));
  }
  return d;
}

// A tensor over bytes someone else owns: viewed in place when aligned (and owned), else copied.
Expected<Tensor> view_or_copy(const TensorDesc& d, std::span<const std::byte> bytes, const std::shared_ptr<void>& owner,
                              std::string_view where) {
  if (bytes.size() != d.nbytes) {
    return data_loss("tensor '" + d.name + "' " + std::string(dtype_name(d.dtype)) + d.shape.to_string() +
                     " needs " + std::to_string(d.nbytes) + " bytes but its " + std::string(where) + " holds " +
                     std::to_string(bytes.size()));
  }
  const auto addr = reinterpret_cast<std::uintptr_t>(bytes.data());
  if (!owner || addr % dtype_size(d.dtype) != 0) return Tensor::from_bytes(d.dtype, d.shape, bytes);
  auto buffer = Buffer::wrap(const_cast<std::byte*>(bytes.data()), bytes.size(), owner, /*writable=*/false);
  return Tensor::from_buffer(std::move(buffer), d.dtype, d.shape);
}

Expected<Tensor> bind_tensor(const TensorDesc& d, std::span<const Frame> frames,
                             const ShmResolver& resolve, const std::shared_ptr<void>& owner) {
  if (d.has_frame) {
    if (d.frame >= frames.size()) {
      return data_loss("tensor '" + d.name + "' refers to frame " + std::to_string(d.frame) +
                       " but the message has " + std::to_string(frames.size()) + " tensor frames");
    }
    const Frame& f = frames[d.frame];
    return view_or_copy(d, f.bytes, f.owner ? f.owner : owner, "frame");
  }
  if (d.has_data) return view_or_copy(d, d.data, owner, "data");
  if (!resolve) {
    return failed_precondition("tensor '" + d.name + "' is in shared memory segment '" +
                               d.shm.segment + "', which this transport cannot reach");
  }
  ShmLocation loc = d.shm;
  loc.size = d.nbytes;
  auto buffer = resolve(loc);
  if (!buffer) return buffer.status().with_context("tensor '" + d.name + "'");
  return Tensor::from_buffer(std::move(*buffer), d.dtype, d.shape);
}

Status decode_trace(const Obj& o, Header& h) {
  if (o.type != msgpack::type::ARRAY) return data_loss("envelope 'trace' is not an array");
  if (o.via.array.size > kMaxTraceHops) return data_loss("envelope 'trace' has too many hops");
  for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
    const Obj& hop = o.via.array.ptr[i];
    if (hop.type != msgpack::type::ARRAY || hop.via.array.size != 2) {
      return data_loss("trace hop is not [node, stamp_ns]");
    }
    EDGEVLA_ASSIGN_OR_RETURN(auto node, get_str(hop.via.array.ptr[0], "trace.node"));
    EDGEVLA_ASSIGN_OR_RETURN(auto stamp, get_int(hop.via.array.ptr[1], "trace.stamp"));
    h.trace.push_back({std::string(node), stamp});
  }
  return Status::ok();
}

Status decode_inputs(const Obj& o, Header& h) {
  if (o.type != msgpack::type::ARRAY) return data_loss("envelope 'in' is not an array");
  if (o.via.array.size > kMaxTraceHops) return data_loss("envelope 'in' has too many entries");
  for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
    const Obj& e = o.via.array.ptr[i];
    if (e.type != msgpack::type::ARRAY || e.via.array.size != 3 || e.via.array.ptr[2].type != msgpack::type::BOOLEAN) {
      return data_loss("envelope 'in' entry is not [topic, publish_stamp_ns, trigger]");
    }
    EDGEVLA_ASSIGN_OR_RETURN(auto topic, get_str(e.via.array.ptr[0], "in.topic"));
    EDGEVLA_ASSIGN_OR_RETURN(auto stamp, get_int(e.via.array.ptr[1], "in.pub"));
    h.inputs.push_back({std::string(topic), stamp, e.via.array.ptr[2].via.boolean});
  }
  return Status::ok();
}

Status decode_taken(const Obj& o, Header& h) {
  if (o.type != msgpack::type::ARRAY) return data_loss("envelope 'tk' is not an array");
  if (o.via.array.size > kMaxTaken) return data_loss("envelope 'tk' has too many entries");
  for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
    const Obj& e = o.via.array.ptr[i];
    if (e.type != msgpack::type::ARRAY || e.via.array.size != 3) {
      return data_loss("envelope 'tk' entry is not [topic, publish_stamp_ns, callback_stamp_ns]");
    }
    EDGEVLA_ASSIGN_OR_RETURN(auto topic, get_str(e.via.array.ptr[0], "tk.topic"));
    EDGEVLA_ASSIGN_OR_RETURN(auto pub, get_int(e.via.array.ptr[1], "tk.pub"));
    EDGEVLA_ASSIGN_OR_RETURN(auto cb, get_int(e.via.array.ptr[2], "tk.cb"));
    h.taken.push_back({std::string(topic), pub, cb});
  }
  return Status::ok();
}

Expected<Message> decode_object(const Obj& root, std::span<const Frame> frames,
                                const ShmResolver& resolve, const std::shared_ptr<void>& owner) {
  if (root.type != msgpack::type::MAP) return data_loss("envelope is not a msgpack map");
  EDGEVLA_RETURN_IF_ERROR(check_unique_keys(root, {"edgevla", "type", "type_version", "topic", "seq", "src", "pub",
                                                   "publisher", "trace", "rng", "cb", "in", "fields", "tensors"},
                                            "envelope"));
  Message m;
  Header& h = m.header();
  std::string type;
  std::uint64_t type_version = 0;
  bool has_wire = false, has_type = false, has_topic = false, has_seq = false;
  const Obj* tensors = nullptr;
  for (std::uint32_t i = 0; i < root.via.map.size; ++i) {
    const auto& kv = root.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) continue;  // unknown keys are ignored
    const auto key = as_sv(kv.key);
    if (key == "edgevla") {
      EDGEVLA_ASSIGN_OR_RETURN(auto v, get_uint(kv.val, "edgevla"));
      if (v != kWireVersion) {
        return data_loss("envelope wire version " + std::to_string(v) + " is not " +
                         std::to_string(kWireVersion) + "; both ends must run one edgevla release");
      }
      has_wire = true;
    } else if (key == "type") {
      EDGEVLA_ASSIGN_OR_RETURN(auto s, get_str(kv.val, "type"));
      type = std::string(s);
      has_type = true;
    } else if (key == "type_version") {
      EDGEVLA_ASSIGN_OR_RETURN(type_version, get_uint(kv.val, "type_version"));
    } else if (key == "topic") {
      EDGEVLA_ASSIGN_OR_RETURN(auto s, get_str(kv.val, "topic"));
      h.topic = std::string(s);
      has_topic = true;
    } else if (key == "seq") {
      EDGEVLA_ASSIGN_OR_RETURN(h.seq, get_uint(kv.val, "seq"));
      has_seq = true;
    } else if (key == "src") {
      EDGEVLA_ASSIGN_OR_RETURN(h.source_stamp_ns, get_int(kv.val, "src"));
    } else if (key == "pub") {
      EDGEVLA_ASSIGN_OR_RETURN(h.publish_stamp_ns, get_int(kv.val, "pub"));
    } else if (key == "cb") {
      EDGEVLA_ASSIGN_OR_RETURN(h.callback_stamp_ns, get_int(kv.val, "cb"));
    } else if (key == "in") {
      EDGEVLA_RETURN_IF_ERROR(decode_inputs(kv.val, h));
    } else if (key == "tk") {
      EDGEVLA_RETURN_IF_ERROR(decode_taken(kv.val, h));
    } else if (key == "tkl") {
      EDGEVLA_ASSIGN_OR_RETURN(auto lost, get_uint(kv.val, "tkl"));
      h.taken_lost = static_cast<std::uint32_t>(std::min<std::uint64_t>(lost, 0xffffffffu));
    } else if (key == "publisher") {
      EDGEVLA_ASSIGN_OR_RETURN(auto s, get_str(kv.val, "publisher"));
      h.publisher = std::string(s);
    } else if (key == "trace") {
      EDGEVLA_RETURN_IF_ERROR(decode_trace(kv.val, h));
    } else if (key == "rng") {
      if (kv.val.type != msgpack::type::ARRAY || kv.val.via.array.size != 2) {
        return data_loss("envelope 'rng' is not [seed, counter]");
      }
      RngState r;
      EDGEVLA_ASSIGN_OR_RETURN(r.seed, get_uint(kv.val.via.array.ptr[0], "rng.seed"));
      EDGEVLA_ASSIGN_OR_RETURN(r.counter, get_uint(kv.val.via.array.ptr[1], "rng.counter"));
      h.rng = r;
    } else if (key == "fields") {
      if (kv.val.type != msgpack::type::MAP) return data_loss("envelope 'fields' is not a map");
      if (kv.val.via.map.size > kMaxFields) return data_loss("envelope has too many fields");
      for (std::uint32_t j = 0; j < kv.val.via.map.size; ++j) {
        const auto& f = kv.val.via.map.ptr[j];
        EDGEVLA_ASSIGN_OR_RETURN(auto name, get_str(f.key, "field name"));
        EDGEVLA_ASSIGN_OR_RETURN(auto value, get_field(f.val, name));
        m.set_field(std::string(name), std::move(value));
      }
    } else if (key == "tensors") {
      if (kv.val.type != msgpack::type::ARRAY) return data_loss("envelope 'tensors' is not an array");
      if (kv.val.via.array.size > kMaxTensors) return data_loss("envelope has too many tensors");
      tensors = &kv.val;
    }
  }
  if (!has_wire || !has_type || !has_topic || !has_seq) {
    return data_loss("envelope lacks one of the keys edgevla, type, topic, seq");
  }
  if (type_version > std::numeric_limits<std::uint32_t>::max()) {
    return data_loss("envelope type_version out of range");
  }
  m.set_type(std::move(type), static_cast<std::uint32_t>(type_version));
  if (tensors != nullptr) {
    for (std::uint32_t i = 0; i < tensors->via.array.size; ++i) {
      EDGEVLA_ASSIGN_OR_RETURN(TensorDesc d, decode_tensor_desc(tensors->via.array.ptr[i]));
      if (m.tensor(d.name) != nullptr) return data_loss("tensor '" + d.name + "' appears twice");
      EDGEVLA_ASSIGN_OR_RETURN(Tensor t, bind_tensor(d, frames, resolve, owner));
      m.set_tensor(std::move(d.name), std::move(t));
    }
  }
  return m;
}

}  // namespace

std::string topic_frame(std::string_view topic) {
  std::string s(topic);
  s.push_back('\0');
  return s;
}

std::string observer_frame(std::string_view topic) {
  std::string s(1, '\x01');
  s.append(topic);
  s.push_back('\0');
  return s;
}

Expected<std::string_view> parse_topic_frame(std::span<const std::byte> frame) {
  if (frame.empty() || frame.back() != std::byte{0}) {
    return data_loss("topic frame is not NUL-terminated");
  }
  return std::string_view(reinterpret_cast<const char*>(frame.data()), frame.size() - 1);
}

Status encode_envelope(const Message& m, std::span<const TensorPlacement> placements,
                       std::string& out) {
  out.clear();
  return append_envelope(m, placements, out);
}

Status append_envelope(const Message& m, std::span<const TensorPlacement> placements,
                       std::string& out) {
  if (placements.size() != m.tensors().size()) {
    return internal_error("encode_envelope: " + std::to_string(placements.size()) +
                          " placements for " + std::to_string(m.tensors().size()) + " tensors");
  }
  const std::size_t start = out.size();
  StringSink sink{&out};
  Packer p(sink);
  const Header& h = m.header();
  p.pack_map(11 + (h.rng ? 1 : 0) + (h.callback_stamp_ns != 0 ? 1 : 0) + (h.inputs.empty() ? 0 : 1) +
             (h.taken.empty() ? 0 : 1) + (h.taken_lost != 0 ? 1 : 0));
  pack_str(p, "edgevla");
  p.pack_uint32(kWireVersion);
  pack_str(p, "type");
  pack_str(p, m.type());
  pack_str(p, "type_version");
  p.pack_uint32(m.version());
  pack_str(p, "topic");
  pack_str(p, h.topic);
  pack_str(p, "seq");
  p.pack_uint64(h.seq);
  pack_str(p, "src");
  p.pack_int64(h.source_stamp_ns);
  pack_str(p, "pub");
  p.pack_int64(h.publish_stamp_ns);
  pack_str(p, "publisher");
  pack_str(p, h.publisher);
  if (h.callback_stamp_ns != 0) {
    pack_str(p, "cb");
    p.pack_int64(h.callback_stamp_ns);
  }
  if (!h.inputs.empty()) {
    pack_str(p, "in");
    p.pack_array(static_cast<std::uint32_t>(h.inputs.size()));
    for (const auto& in : h.inputs) {
      p.pack_array(3);
      pack_str(p, in.topic);
      p.pack_int64(in.publish_stamp_ns);
      if (in.trigger) p.pack_true(); else p.pack_false();
    }
  }
  if (!h.taken.empty()) {
    pack_str(p, "tk");
    p.pack_array(static_cast<std::uint32_t>(h.taken.size()));
    for (const auto& t : h.taken) {
      p.pack_array(3);
      pack_str(p, t.topic);
      p.pack_int64(t.publish_stamp_ns);
      p.pack_int64(t.callback_stamp_ns);
    }
  }
  if (h.taken_lost != 0) {
    pack_str(p, "tkl");
    p.pack_uint32(h.taken_lost);
  }
  if (h.rng) {
    pack_str(p, "rng");
    p.pack_array(2);
    p.pack_uint64(h.rng->seed);
    p.pack_uint64(h.rng->counter);
  }
  pack_str(p, "trace");
  p.pack_array(static_cast<std::uint32_t>(h.trace.size()));
  for (const auto& hop : h.trace) {
    p.pack_array(2);
    pack_str(p, hop.node);
    p.pack_int64(hop.stamp_ns);
  }
  pack_str(p, "fields");
  p.pack_map(static_cast<std::uint32_t>(m.fields().size()));
  for (const auto& [k, v] : m.fields()) {
    pack_str(p, k);
    pack_field(p, sink, v);
  }
  pack_str(p, "tensors");
  p.pack_array(static_cast<std::uint32_t>(m.tensors().size()));
  for (std::size_t i = 0; i < m.tensors().size(); ++i) {
    const NamedTensor& t = m.tensors()[i];
    if (!t.tensor.defined()) {
      out.resize(start);  // leave `out` as it was
      return invalid_argument("tensor '" + t.name + "' is undefined");
    }
    p.pack_map(5);
    pack_str(p, "name");
    pack_str(p, t.name);
    pack_str(p, "dtype");
    pack_str(p, dtype_name(t.tensor.dtype()));
    pack_str(p, "shape");
    p.pack_array(static_cast<std::uint32_t>(t.tensor.rank()));
    for (auto d : t.tensor.shape().dims()) p.pack_uint64(static_cast<std::uint64_t>(d));
    pack_str(p, "nbytes");
    p.pack_uint64(t.tensor.nbytes());
    if (const auto* f = std::get_if<InlineFrame>(&placements[i])) {
      pack_str(p, "frame");
      p.pack_uint32(f->index);
    } else if (std::holds_alternative<InlineBytes>(placements[i])) {
      const auto bytes = t.tensor.bytes();
      if (bytes.size() != t.tensor.nbytes()) {
        out.resize(start);
        return invalid_argument("tensor '" + t.name + "' is a strided view; make it contiguous to inline it");
      }
      if (bytes.size() > std::numeric_limits<std::uint32_t>::max()) {
        out.resize(start);
        return invalid_argument("tensor '" + t.name + "' is over 4 GiB, too large to inline");
      }
      pack_str(p, "data");
      p.pack_bin(static_cast<std::uint32_t>(bytes.size()));
      p.pack_bin_body(reinterpret_cast<const char*>(bytes.data()), static_cast<std::uint32_t>(bytes.size()));
    } else {
      const auto& loc = std::get<ShmLocation>(placements[i]);
      pack_str(p, "shm");
      p.pack_map(3);
      pack_str(p, "segment");
      pack_str(p, loc.segment);
      pack_str(p, "offset");
      p.pack_uint64(loc.offset);
      pack_str(p, "gen");
      p.pack_uint32(loc.generation);
    }
  }
  return Status::ok();
}

Expected<Message> decode(std::span<const std::byte> envelope, std::span<const Frame> tensor_frames,
                         const ShmResolver& resolve) {
  if (envelope.size() > kMaxEnvelopeBytes) {
    return data_loss("envelope of " + std::to_string(envelope.size()) + " bytes exceeds " +
                     std::to_string(kMaxEnvelopeBytes));
  }
  try {
    const msgpack::unpack_limit limit(/*array=*/kMaxTensors, /*map=*/kMaxFields,
                                      /*str=*/kMaxStringBytes, /*bin=*/kMaxStringBytes,
                                      /*ext=*/0, /*depth=*/8);
    std::size_t offset = 0;
    msgpack::object_handle oh =
        msgpack::unpack(reinterpret_cast<const char*>(envelope.data()), envelope.size(), offset,
                        nullptr, nullptr, limit);
    if (offset != envelope.size()) {
      return data_loss("envelope has " + std::to_string(envelope.size() - offset) +
                       " trailing bytes after the msgpack map");
    }
    return decode_object(oh.get(), tensor_frames, resolve, nullptr);
  } catch (const std::exception& e) {
    return data_loss(std::string("envelope is not valid msgpack: ") + e.what());
  }
}

Expected<SequenceId> peek_sequence(std::span<const std::byte> envelope) {
  if (envelope.size() > kMaxEnvelopeBytes) return data_loss("envelope too large");
  try {
    const msgpack::unpack_limit limit(kMaxTensors, kMaxFields, kMaxStringBytes, kMaxStringBytes, 0, 8);
    std::size_t offset = 0;
    msgpack::object_handle oh = msgpack::unpack(reinterpret_cast<const char*>(envelope.data()), envelope.size(),
                                                offset, nullptr, nullptr, limit);
    const Obj& root = oh.get();
    if (root.type != msgpack::type::MAP) return data_loss("envelope is not a msgpack map");
    SequenceId id;
    bool has_seq = false;
    for (std::uint32_t i = 0; i < root.via.map.size; ++i) {
      const auto& kv = root.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR) continue;
      const auto key = as_sv(kv.key);
      if (key == "seq") {
        EDGEVLA_ASSIGN_OR_RETURN(id.seq, get_uint(kv.val, "seq"));
        has_seq = true;
      } else if (key == "publisher") {
        EDGEVLA_ASSIGN_OR_RETURN(auto p, get_str(kv.val, "publisher"));
        id.publisher = std::string(p);
      }
    }
    if (!has_seq) return data_loss("envelope has no 'seq'");
    return id;
  } catch (const std::exception& e) {
    return data_loss(std::string("envelope is not valid msgpack: ") + e.what());
  }
}

Expected<Message> decode_record(std::span<const std::byte> record, std::shared_ptr<void> owner) {
  try {
    const msgpack::unpack_limit limit(/*array=*/kMaxTensors, /*map=*/kMaxFields,
                                      /*str=*/kMaxStringBytes, /*bin=*/std::numeric_limits<std::uint32_t>::max(),
                                      /*ext=*/0, /*depth=*/8);
    // Tensor bins are referenced in `record`, not copied into the unpacker's zone.
    const auto reference_bins = [](msgpack::type::object_type type, std::size_t, void*) {
      return type == msgpack::type::BIN;
    };
    std::size_t offset = 0;
    msgpack::object_handle oh = msgpack::unpack(reinterpret_cast<const char*>(record.data()), record.size(), offset,
                                                reference_bins, nullptr, limit);
    if (offset != record.size()) {
      return data_loss("bag record has " + std::to_string(record.size() - offset) + " trailing bytes");
    }
    return decode_object(oh.get(), {}, nullptr, owner);
  } catch (const std::exception& e) {
    return data_loss(std::string("bag record is not valid msgpack: ") + e.what());
  }
}

}  // namespace edgevla::wire
