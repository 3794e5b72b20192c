// Device memory shared between processes by file descriptor (see shareable_memory.cpp).
#pragma once

#include <cstddef>

#include "runtime/core/buffer.hpp"

namespace edgevla::backends::cuda {

// The size unit of shareable blocks on device `index` (2 MiB on current GPUs); an error names
// what the device or driver lacks.
Expected<std::size_t> shareable_granularity(int index);
// `size` bytes (rounded up to the granularity) on device `index`, mapped here, with an exported
// descriptor owned by the buffer.
Expected<Allocator::Shareable> allocate_shareable_block(int index, std::size_t size);
// Maps the block another process exported as `fd` (`size`: the exporter's rounded size).
Expected<BufferPtr> import_shareable_block(int fd, std::size_t size, int index);

}  // namespace edgevla::backends::cuda
