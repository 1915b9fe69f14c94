import assert from "node:assert/strict";
import {
  fallbackMaxConnections,
  ListenerStartError,
  listenerStartError,
  startAdminListener,
} from "./tcp_listeners.ts";

Deno.test("tcp listeners: auto sizes the fallback's cap from the open-files limit, 3 descriptors each", () => {
  const limits = (soft: number) =>
    `Limit                     Soft Limit           Hard Limit           Units\n` +
    `Max open files            ${soft}                 ${soft}                 files\n`;
  assert.equal(fallbackMaxConnections(limits(1024), 64), 277); // (1024 - 128 - 64) / 3
  assert.equal(fallbackMaxConnections(limits(256), 64), 21);
  assert.equal(fallbackMaxConnections(limits(100), 64), 16, "never below 16");
  assert.equal(fallbackMaxConnections(limits(1_048_576), 64), 4096, "never above 4096");
  assert.equal(fallbackMaxConnections(undefined), 4096, "no /proc: the plain default");
});

Deno.test("tcp listeners: a bind failure names the listener, the address and the keys", () => {
  const err = listenerStartError(
    "TCP fallback",
    "::",
    443,
    "listen.address, listen.port",
    new Deno.errors.AddrInUse("Address already in use (os error 98)"),
  );
  assert.ok(err instanceof ListenerStartError);
  assert.equal(
    err.message,
    "cannot start the TCP fallback on [::]:443 (listen.address, listen.port): " +
      "the address is already in use",
  );
  assert.match(
    listenerStartError("admin listener", "192.0.2.1", 1, "k", new Deno.errors.AddrNotAvailable("x"))
      .message,
    /on 192\.0\.2\.1:1 \(k\): no such local address$/,
  );
});

Deno.test("tcp listeners: the admin listener on a port in use throws a ListenerStartError", () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    assert.throws(
      () =>
        startAdminListener({
          hostname: "127.0.0.1",
          port: taken.addr.port,
          handler: () => new Response("ok"),
          limits: { maxConnections: 1, headerTimeoutMs: 1000, idleTimeoutMs: 1000 },
        }),
      (e: unknown) =>
        e instanceof ListenerStartError && e.listener === "admin listener" &&
        e.address === `127.0.0.1:${taken.addr.port}`,
    );
  } finally {
    taken.close();
  }
});
