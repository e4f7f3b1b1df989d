// The files an executable needs to start, for the Landlock grants: the
// executable's real path, its ELF interpreter, and the shared libraries the
// interpreter resolves for it — found the way ldd finds them, by running the
// interpreter in list mode (`ld.so --list EXE`, which loads nothing and runs
// nothing of EXE) with an empty environment, as the sandbox child has.
// A statically linked executable (no PT_INTERP) needs only itself.
#pragma once

#include <string>
#include <vector>

#include "taskyon/base/error.h"

namespace taskyon::hardening {

struct RuntimeFiles {
  std::string executable;                // real path of the executable
  std::string interpreter;               // real path of its ELF interpreter; empty when static
  std::vector<std::string> libraries;    // real paths of the shared libraries, in load order
  // Every path above as the runtime names it when it starts (the executable as
  // given, PT_INTERP, the loader's paths): what its mount namespace must resolve.
  std::vector<std::string> named;
};

// Errc::runtime_missing when `executable` is not a readable ELF file;
// Errc::internal when the interpreter's list cannot be obtained.
Result<RuntimeFiles> runtime_files(const std::string& executable);

// The PT_INTERP path of an ELF file: empty for a static executable.
// Errc::runtime_missing when the file is not a readable 64- or 32-bit ELF file.
Result<std::string> elf_interpreter(const std::string& path);

}  // namespace taskyon::hardening
