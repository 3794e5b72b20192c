// Device memory other processes can map (Allocator::allocate_shareable / import_shareable for
// the cuda allocator): CUDA virtual memory management with POSIX file descriptors as the
// shareable handle. Unlike the legacy cudaIpc* handles this works on Jetson (Orin, Thor) as on
// discrete GPUs. The owner creates a physical allocation, maps it into its address space and
// exports a descriptor; an importer turns the descriptor back into the allocation and maps it
// at an address of its own. The physical memory lives until the last process unmaps it, so a
// crashed importer (its mappings die with it) or owner pins nothing once the other lets go.
// The driver functions are looked up at run time (no link against libcuda).
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <string>

#include "runtime/backends/cuda/shareable_memory.hpp"

namespace edgevla::backends::cuda {
namespace {

struct Driver {
  CUresult (*get_granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*export_handle)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long) = nullptr;
  CUresult (*import_handle)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType) = nullptr;
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*free_address)(CUdeviceptr, size_t) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  std::string missing;  // the first function not found
};

template <class F>
void lookup(const char* name, F& fn, std::string& missing) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
      q == cudaDriverEntryPointSuccess && p != nullptr) {
    fn = reinterpret_cast<F>(p);
  } else if (missing.empty()) {
    missing = name;
  }
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    lookup("cuMemGetAllocationGranularity", r.get_granularity, r.missing);
    lookup("cuMemCreate", r.create, r.missing);
    lookup("cuMemRelease", r.release, r.missing);
    lookup("cuMemExportToShareableHandle", r.export_handle, r.missing);
    lookup("cuMemImportFromShareableHandle", r.import_handle, r.missing);
    lookup("cuMemAddressReserve", r.reserve, r.missing);
    lookup("cuMemAddressFree", r.free_address, r.missing);
    lookup("cuMemMap", r.map, r.missing);
    lookup("cuMemUnmap", r.unmap, r.missing);
    lookup("cuMemSetAccess", r.set_access, r.missing);
    return r;
  }();
  return d;
}

std::string result_text(CUresult r) { return "CUresult " + std::to_string(static_cast<int>(r)); }

CUmemAllocationProp properties(int index) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = index;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Maps `handle` (size bytes) at a fresh address readable and writable from device `index`.
Expected<CUdeviceptr> map_handle(const Driver& d, CUmemGenericAllocationHandle handle, std::size_t size, int index) {
  CUdeviceptr at = 0;
  CUresult r = d.reserve(&at, size, 0, 0, 0);
  if (r != CUDA_SUCCESS) return resource_exhausted("cuda:" + std::to_string(index) + ": no address range for a shared block (" + result_text(r) + ")");
  r = d.map(at, size, 0, handle, 0);
  if (r != CUDA_SUCCESS) {
    d.free_address(at, size);
    return unavailable("cuda:" + std::to_string(index) + ": cannot map a shared block (" + result_text(r) + ")");
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = index;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = d.set_access(at, size, &access, 1);
  if (r != CUDA_SUCCESS) {
    d.unmap(at, size);
    d.free_address(at, size);
    return unavailable("cuda:" + std::to_string(index) + ": cannot make a shared block accessible (" + result_text(r) + ")");
  }
  return at;
}

// A buffer over a mapping; releasing it unmaps, frees the address range and drops this
// process's reference to the allocation (and closes the owner's descriptor, if any).
BufferPtr wrap(int index, CUdeviceptr at, std::size_t mapped, std::size_t size, CUmemGenericAllocationHandle handle, int fd) {
  Buffer::Options o;
  o.kind = BufferKind::kDevice;
  o.device = Device::cuda(index);
  o.writable = true;
  o.release = [at, mapped, handle, fd] {
    const Driver& d = driver();
    d.unmap(at, mapped);
    d.free_address(at, mapped);
    d.release(handle);
    if (fd >= 0) ::close(fd);
  };
  return std::make_shared<Buffer>(reinterpret_cast<std::byte*>(at), size, std::move(o));
}

}  // namespace

Expected<std::size_t> shareable_granularity(int index) {
  const Driver& d = driver();
  if (!d.missing.empty()) return failed_precondition("the CUDA driver lacks " + d.missing + " (shared device memory needs CUDA 12+)");
  const CUmemAllocationProp prop = properties(index);
  std::size_t g = 0;
  const CUresult r = d.get_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || g == 0) {
    return failed_precondition("cuda:" + std::to_string(index) + " cannot make shareable memory (" + result_text(r) +
                               "): the device or driver has no virtual memory management with descriptors");
  }
  return g;
}

Expected<Allocator::Shareable> allocate_shareable_block(int index, std::size_t size) {
  EDGEVLA_ASSIGN_OR_RETURN(const std::size_t g, shareable_granularity(index));
  const Driver& d = driver();
  const std::size_t rounded = std::max<std::size_t>(g, (size + g - 1) / g * g);
  const CUmemAllocationProp prop = properties(index);
  CUmemGenericAllocationHandle handle = 0;
  CUresult r = d.create(&handle, rounded, &prop, 0);
  if (r != CUDA_SUCCESS) {
    return resource_exhausted("cuda:" + std::to_string(index) + ": no device memory for a " + std::to_string(rounded) +
                              "-byte shared block (" + result_text(r) + ")");
  }
  int fd = -1;
  r = d.export_handle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (r != CUDA_SUCCESS) {
    d.release(handle);
    return unavailable("cuda:" + std::to_string(index) + ": cannot export a shared block (" + result_text(r) + ")");
  }
  auto at = map_handle(d, handle, rounded, index);
  if (!at) {
    d.release(handle);
    ::close(fd);
    return at.status();
  }
  return Allocator::Shareable{wrap(index, *at, rounded, size, handle, fd), fd, rounded};
}

Expected<BufferPtr> import_shareable_block(int fd, std::size_t size, int index) {
  EDGEVLA_ASSIGN_OR_RETURN(const std::size_t g, shareable_granularity(index));
  if (fd < 0 || size == 0 || size % g != 0) {
    return invalid_argument("a shared device block descriptor needs a descriptor and a size that is a multiple of " +
                            std::to_string(g) + " (got fd " + std::to_string(fd) + ", " + std::to_string(size) + " bytes)");
  }
  const Driver& d = driver();
  CUmemGenericAllocationHandle handle = 0;
  // The descriptor travels as the handle's value (the driver's convention for POSIX fds).
  const CUresult r = d.import_handle(&handle, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)),
                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (r != CUDA_SUCCESS) {
    return unavailable("cuda:" + std::to_string(index) + ": the descriptor is not a shared device block of this machine (" +
                       result_text(r) + "); its owner may have exited");
  }
  auto at = map_handle(d, handle, size, index);
  if (!at) {
    d.release(handle);
    return at.status();
  }
  return wrap(index, *at, size, size, handle, -1);
}

}  // namespace edgevla::backends::cuda
