import assert from "node:assert/strict";
import {
  raiseDescriptorBuffer,
  raiseReceiveBuffer,
  type ReceiveBufferOps,
  resizeDescriptorBuffer,
  socketInodes,
  socketLinkInode,
  WANTED_RECEIVE_BUFFER,
} from "./udp_buffer.ts";

const UDP =
  `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
 4816: 0100007F:20FB 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 80809 2 0000000002a1d065 17
 6695: 0100007F:9C5C 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 82443 2 0000000094805677 5
 6696: 0200007F:20FB 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 82444 2 0000000094805678 0
`;

Deno.test("#35.7: /proc/net/udp: the inodes of the sockets on a port; /proc/self/fd links to sockets", () => {
  assert.deepEqual(socketInodes(UDP, 8443), ["80809", "82444"]);
  assert.deepEqual(socketInodes(UDP, 40028), ["82443"]);
  assert.deepEqual(socketInodes(UDP, 9), []);
  assert.equal(socketLinkInode("socket:[80809]"), "80809");
  assert.equal(socketLinkInode("pipe:[80809]"), undefined);
  assert.equal(socketLinkInode("/dev/null"), undefined);
});

/**
 * Linux as the fake sees it: `SO_RCVBUF` sets twice min(value, rmem_max),
 * `SO_RCVBUFFORCE` twice the value, and only with CAP_NET_ADMIN.
 */
function kernel(opts: { buffer: number; rmemMax: number; capNetAdmin: boolean }) {
  const calls: string[] = [];
  const state = { buffer: opts.buffer };
  const ops: ReceiveBufferOps = {
    get: () => state.buffer,
    set(_fd, option, bytes) {
      calls.push(option);
      if (option === "SO_RCVBUF") state.buffer = 2 * Math.min(bytes, opts.rmemMax);
      else if (!opts.capNetAdmin) return "setsockopt(SO_RCVBUFFORCE) failed: EPERM (1)";
      else state.buffer = 2 * bytes;
      return undefined;
    },
  };
  return { ops, calls };
}

const MIB = 1024 * 1024;

Deno.test("#35.7: SO_RCVBUF is enough when rmem_max allows it; SO_RCVBUFFORCE is not tried", () => {
  const k = kernel({ buffer: 212992, rmemMax: 4 * MIB, capNetAdmin: true });
  const r = raiseDescriptorBuffer(3, 7 * MIB, k.ops);
  assert.deepEqual(r, { wanted: 7 * MIB, before: 212992, bytes: 8 * MIB, via: "SO_RCVBUF" });
  assert.deepEqual(k.calls, ["SO_RCVBUF"]);
});

Deno.test("#35.7: rmem_max caps SO_RCVBUF: SO_RCVBUFFORCE (CAP_NET_ADMIN) gets the size", () => {
  const k = kernel({ buffer: 212992, rmemMax: 212992, capNetAdmin: true });
  const r = raiseDescriptorBuffer(3, 7 * MIB, k.ops);
  assert.deepEqual(r, { wanted: 7 * MIB, before: 212992, bytes: 14 * MIB, via: "SO_RCVBUFFORCE" });
  assert.deepEqual(k.calls, ["SO_RCVBUF", "SO_RCVBUFFORCE"]);
});

Deno.test("#35.7: without CAP_NET_ADMIN the buffer gets what rmem_max allows, and the problem names both causes", () => {
  const k = kernel({ buffer: 212992, rmemMax: 212992, capNetAdmin: false });
  const r = raiseDescriptorBuffer(3, 7 * MIB, k.ops);
  assert.equal(r.bytes, 425984);
  assert.equal(r.via, "SO_RCVBUF");
  assert.match(
    r.problem!,
    /SO_RCVBUF gave 425984 bytes \(the kernel caps it at twice net\.core\.rmem_max\)/,
  );
  assert.match(r.problem!, /SO_RCVBUFFORCE\) failed: EPERM/);
});

Deno.test("#35.7: a buffer already as large is left alone (never lowered)", () => {
  const k = kernel({ buffer: 16 * MIB, rmemMax: 212992, capNetAdmin: true });
  const r = raiseDescriptorBuffer(3, 7 * MIB, k.ops);
  assert.deepEqual(r, { wanted: 7 * MIB, before: 16 * MIB, bytes: 16 * MIB });
  assert.deepEqual(k.calls, []);
});

Deno.test("#35.7: a descriptor getsockopt cannot read is a problem, not a crash", () => {
  const r = raiseDescriptorBuffer(3, 7 * MIB, {
    get: () => ({ error: "getsockopt(SO_RCVBUF) failed: EBADF (9)" }),
    set: () => assert.fail("nothing to set"),
  });
  assert.deepEqual(r, { wanted: 7 * MIB, problem: "getsockopt(SO_RCVBUF) failed: EBADF (9)" });
});

Deno.test("#35.7: a raised buffer is lowered to a size and raised back (for floods)", () => {
  const k = kernel({ buffer: 212992, rmemMax: 212992, capNetAdmin: true });
  assert.equal(raiseDescriptorBuffer(3, 7 * MIB, k.ops).bytes, 14 * MIB);
  assert.equal(resizeDescriptorBuffer(3, 212992, k.ops), 212992);
  // Raised back as at startup: asked for what startup asked for, it gets what startup got.
  assert.equal(resizeDescriptorBuffer(3, 7 * MIB, k.ops), 14 * MIB);
  assert.deepEqual(k.calls, [
    "SO_RCVBUF",
    "SO_RCVBUFFORCE",
    "SO_RCVBUF",
    "SO_RCVBUF",
    "SO_RCVBUFFORCE",
  ]);
});

Deno.test("#35.7: this machine: a QUIC endpoint's socket is found by its port and raised through FFI", () => {
  if (Deno.build.os !== "linux") return;
  const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
  try {
    const r = raiseReceiveBuffer(endpoint.addr.port, WANTED_RECEIVE_BUFFER);
    assert.ok(r.before !== undefined && r.bytes !== undefined, JSON.stringify(r));
    // Raised, or below what was asked only with the cause given.
    if (r.bytes < WANTED_RECEIVE_BUFFER) assert.ok(r.problem, JSON.stringify(r));
    else assert.equal(r.problem, undefined);
    // Asking again reads the same size back and changes nothing.
    const again = raiseReceiveBuffer(endpoint.addr.port, WANTED_RECEIVE_BUFFER);
    assert.equal(again.before, r.bytes);
    // 0 only reads it.
    assert.deepEqual(raiseReceiveBuffer(endpoint.addr.port, 0), {
      wanted: 0,
      before: r.bytes,
      bytes: r.bytes,
    });
  } finally {
    endpoint.close();
  }
  // No socket on the port: the cause, no exception.
  const gone = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const port = (gone.addr as Deno.NetAddr).port;
  gone.close();
  const closed = raiseReceiveBuffer(port, WANTED_RECEIVE_BUFFER);
  assert.match(closed.problem!, /no UDP socket on port|not among this process/);
});
