// taskyon-init: PID 1 of a sandbox's PID namespace once its runtime has exec'd
// (hardening/contain.cc run_init, docs/sandbox.md "The PID namespace").
//
// The host's child is the namespace's init: a fork of the host that clones the
// runtime and must then stay, as PID 1, until the runtime ends. Waiting as that
// fork would keep a copy-on-write snapshot of the whole host for the sandbox's
// lifetime (every page the host writes afterwards is copied once per live
// sandbox). So the init execs this program, which maps a few pages of its own
// and does only what is left: tell the host it runs, reap, report the
// runtime's wait status on the report socket, exit with the runtime's code.
//
//   taskyon-init REPORT_FD RUNTIME_PID      (both decimal, as the init sees them)
//
// Freestanding (no libc, raw system calls; the headers give constants only): it
// runs in the sandbox's mount namespace, where no loader or library need exist,
// and is executed from a sealed memfd (hardening/init_image.h).
#include <linux/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

namespace {

long sys(long number, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
#if defined(__x86_64__)
  long result;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return result;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = number;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
  return x0;
#else
#error "taskyon-init: no system call sequence for this architecture"
#endif
}

[[noreturn]] void exit_with(int code) {
  for (;;) sys(SYS_exit_group, code);
}

// A non-negative decimal number, or -1.
long parse(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  long value = 0;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9' || value > 0x7fffffffL / 10) return -1;
    value = value * 10 + (*text - '0');
  }
  return value;
}

}  // namespace

extern "C" [[noreturn]] void taskyon_init_main(long* stack) {
  // Exec made the process dumpable again; nothing in the namespace may ptrace PID 1.
  sys(SYS_prctl, PR_SET_DUMPABLE, 0);
  const long argc = stack[0];
  char** argv = reinterpret_cast<char**>(stack + 1);
  const long report = argc == 3 ? parse(argv[1]) : -1;
  const long runtime = argc == 3 ? parse(argv[2]) : -1;
  if (report < 0 || runtime <= 0) exit_with(125);
  // The exec is done (contain.h kReportInitRunning): the host may take back its pages.
  const unsigned char running = 'I';
  sys(SYS_sendto, report, reinterpret_cast<long>(&running), 1, MSG_NOSIGNAL, 0, 0);
  for (;;) {
    int status = 0;
    const long reaped = sys(SYS_wait4, -1, reinterpret_cast<long>(&status), 0, 0);
    if (reaped == -4) continue;       // EINTR
    if (reaped < 0) exit_with(125);   // ECHILD: the runtime is not ours
    if (reaped != runtime) continue;  // an orphan re-parented to PID 1
    // The same datagram the waiting init sends (contain.h kReportStatus): 'S', then the status.
    unsigned char message[1 + sizeof status];
    message[0] = 'S';
    const auto* bytes = reinterpret_cast<const unsigned char*>(&status);
    for (unsigned i = 0; i < sizeof status; ++i) message[1 + i] = bytes[i];
    sys(SYS_sendto, report, reinterpret_cast<long>(message), sizeof message, MSG_NOSIGNAL, 0, 0);
    // For a parent that reads no report: the runtime's exit code, or 128 + its signal.
    exit_with(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 125);
  }
}

// The entry point: the kernel leaves argc, argv and envp on the stack.
#if defined(__x86_64__)
__asm__(".text\n.global _start\n.type _start,@function\n_start:\n"
        "  xor %ebp, %ebp\n  mov %rsp, %rdi\n  and $-16, %rsp\n  call taskyon_init_main\n  ud2\n");
#elif defined(__aarch64__)
__asm__(".text\n.global _start\n.type _start,%function\n_start:\n"
        "  mov x29, #0\n  mov x30, #0\n  mov x0, sp\n  bl taskyon_init_main\n  brk #0\n");
#endif
