#include "taskyon/hardening/init_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "taskyon/hardening/fd.h"

// The linked image: CMakeLists.txt builds taskyon-init and names its file in
// TASKYON_INIT_IMAGE; this object depends on it (OBJECT_DEPENDS).
__asm__(".pushsection .rodata.taskyon_init, \"a\"\n"
        ".balign 16\n"
        ".global taskyon_init_image_begin\n"
        "taskyon_init_image_begin:\n"
        ".incbin \"" TASKYON_INIT_IMAGE "\"\n"
        ".global taskyon_init_image_end\n"
        "taskyon_init_image_end:\n"
        ".popsection\n");

extern "C" const unsigned char taskyon_init_image_begin[];
extern "C" const unsigned char taskyon_init_image_end[];

namespace taskyon::hardening {
namespace {

#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020  // Linux 6.3: the mode's exec bits can no longer change
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux 6.3: executable even where vm.memfd_noexec = 1
#endif

Result<int> fail(const char* step) {
  return std::unexpected(Error{Errc::internal, fmt::format("init image: {} failed: {}", step, std::strerror(errno)), {}});
}

Result<int> make_image_fd() {
  const auto image = init_image();
  Fd mem(::memfd_create("taskyon-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC));
  if (!mem && errno == EINVAL) mem = Fd(::memfd_create("taskyon-init", MFD_CLOEXEC | MFD_ALLOW_SEALING));  // before 6.3
  if (!mem) return fail("memfd_create");
  for (std::size_t done = 0; done < image.size();) {
    const ssize_t n = ::write(mem.get(), image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(mem.get(), 0555) != 0) return fail("fchmod");
  // F_SEAL_EXEC (Linux 6.3) also fixes the mode bits; older kernels refuse it.
  constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
  if (::fcntl(mem.get(), F_ADD_SEALS, kSeals | F_SEAL_EXEC) != 0 &&
      (errno != EINVAL || ::fcntl(mem.get(), F_ADD_SEALS, kSeals) != 0))
    return fail("sealing");
  // exec refuses a file open for writing (ETXTBSY): keep a read-only descriptor only.
  const std::string self = "/proc/self/fd/" + std::to_string(mem.get());
  const int read_only = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (read_only < 0) return fail("reopening read-only");
  return read_only;
}

}  // namespace

std::span<const unsigned char> init_image() noexcept {
  return {taskyon_init_image_begin, static_cast<std::size_t>(taskyon_init_image_end - taskyon_init_image_begin)};
}

const Result<int>& init_image_fd() noexcept {
  static const Result<int> fd = make_image_fd();
  return fd;
}

}  // namespace taskyon::hardening
