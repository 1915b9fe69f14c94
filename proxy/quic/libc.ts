/**
 * The few C library functions the QUIC side calls through Deno's FFI
 * (`Deno.dlopen`: stable in Deno 2, allowed by `-A` or `--allow-ffi`):
 * `setsockopt`/`getsockopt` to size the QUIC socket's receive buffer, which
 * `Deno.QuicEndpoint` has no option for (`udp_buffer.ts`), and glibc's
 * `malloc_trim` to hand freed memory back to the kernel after a flood
 * (`memory_release.ts`). Opened once, on first use; never throws: a runtime
 * without FFI permission, or a system without `libc.so.6`, gets the cause.
 *
 * @module
 */

const SYMBOLS = {
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
  // glibc only (musl has none): optional, so that the socket calls still load.
  // On a thread of its own: trimming a few hundred MB takes 50-500 ms.
  malloc_trim: { parameters: ["usize"], result: "i32", optional: true, nonblocking: true },
} as const;

/** The bound functions (`malloc_trim` is `null` where the C library has none). */
export type LibcSymbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

/** The C library, or why it cannot be used. */
export type LibcResult = { libc: LibcSymbols } | { error: string };

let opened: LibcResult | undefined;

/**
 * The C library's functions, opened on first call (`libc.so.6`, Linux), or
 * the reason they are unavailable (not Linux, no FFI permission, no library).
 *
 * @example
 * ```ts
 * const c = openLibc();
 * if ("libc" in c) await c.libc.malloc_trim?.(0n);
 * else console.log(c.error);
 * ```
 */
export function openLibc(): LibcResult {
  if (opened) return opened;
  if (Deno.build.os !== "linux") {
    return opened = { error: `not available on ${Deno.build.os} (Linux only)` };
  }
  try {
    opened = { libc: Deno.dlopen("libc.so.6", SYMBOLS).symbols };
  } catch (err) {
    opened = { error: `cannot open libc.so.6 through FFI: ${(err as Error).message}` };
  }
  return opened;
}

/** Names of the errno values these calls report (Linux numbering). */
const ERRNO_NAMES: Record<number, string> = {
  1: "EPERM",
  9: "EBADF",
  13: "EACCES",
  14: "EFAULT",
  22: "EINVAL",
  88: "ENOTSOCK",
  92: "ENOPROTOOPT",
};

/** The calling thread's `errno` right after a failed call, as `EPERM (1)`. */
export function lastErrno(libc: LibcSymbols): string {
  const at = libc.__errno_location();
  if (at === null) return "errno unknown";
  const n = new Deno.UnsafePointerView(at).getInt32();
  return `${ERRNO_NAMES[n] ?? "errno"} (${n})`;
}
