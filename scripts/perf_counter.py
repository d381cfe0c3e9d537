"""One perf_event_open(2) from Python, for the scripts that need to know about or keep the
kernel's per-task perf hooks: test/postprocess/e2e/lit.cfg.py (is perf_event_open allowed
here?) and bench/accuracy.py (hold the hooks on for the whole bench, as the driver does
during a profiled run, driver/process.c perf_hooks_hold)."""
import ctypes
import platform
import struct

_SYSCALL = {"x86_64": 298, "AMD64": 298, "aarch64": 241}  # __NR_perf_event_open
PERF_FLAG_FD_CLOEXEC = 8


def open_idle_task_clock():
    """A disabled, counting-only, user-mode task-clock counter on the calling process, or
    None where perf_event_open is refused (perf_event_paranoid 3, a seccomp filter) or the
    architecture is not known here. The caller owns the descriptor (close-on-exec)."""
    nr = _SYSCALL.get(platform.machine())
    if nr is None:
        return None
    # struct perf_event_attr (PERF_ATTR_SIZE_VER5, 112 bytes): type PERF_TYPE_SOFTWARE (1),
    # size, config PERF_COUNT_SW_TASK_CLOCK (1); the flags word at byte 40: disabled
    # (bit 0), exclude_kernel (bit 5), exclude_hv (bit 6).
    attr = bytearray(112)
    struct.pack_into("<IIQ", attr, 0, 1, 112, 1)
    struct.pack_into("<Q", attr, 40, (1 << 0) | (1 << 5) | (1 << 6))
    buf = ctypes.create_string_buffer(bytes(attr), len(attr))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(nr), buf, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1),
                      ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC))
    return fd if fd >= 0 else None
