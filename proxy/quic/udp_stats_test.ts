import assert from "node:assert/strict";
import {
  parseSnmp6RcvbufErrors,
  parseSnmpRcvbufErrors,
  parseSocketDrops,
  readReceiveBufferSysctl,
  readUdpStats,
  receiveBufferReport,
  receiveBufferWarning,
  WANTED_RECEIVE_BUFFER,
} from "./udp_stats.ts";

const SNMP = `Ip: Forwarding DefaultTTL
Ip: 1 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 63666 1344 279 192929 278 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 9 0 0 0 0
`;

const UDP =
  `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
 4816: 0100007F:20FB 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 80809 2 0000000002a1d065 17
 6695: 0100007F:9C5C 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 82443 2 0000000094805677 5
`;

const UDP6 =
  `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
15930: 00000000000000000000000000000000:20FB 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 80821 2 00000000ca41de0d 3
`;

Deno.test("/proc/net/snmp: RcvbufErrors of the Udp table, not UdpLite's", () => {
  assert.equal(parseSnmpRcvbufErrors(SNMP), 278);
  assert.equal(parseSnmpRcvbufErrors("Ip: a\nIp: 1\n"), undefined);
  assert.equal(parseSnmp6RcvbufErrors("Udp6InDatagrams 1\nUdp6RcvbufErrors  \t 42\n"), 42);
  assert.equal(parseSnmp6RcvbufErrors(""), undefined);
});

Deno.test("/proc/net/udp{,6}: the drops column of the sockets on our port (0x20FB = 8443)", () => {
  assert.equal(parseSocketDrops(UDP, 8443), 17);
  assert.equal(parseSocketDrops(UDP6, 8443), 3);
  assert.equal(parseSocketDrops(UDP, 40028), 5);
  assert.equal(parseSocketDrops(UDP, 9), undefined);
  assert.equal(parseSocketDrops("no header\n", 8443), undefined);
});

Deno.test("#35.7: the startup warning only when the buffer could not be raised, with the cause and the exact sysctl", () => {
  const failed = {
    wanted: WANTED_RECEIVE_BUFFER,
    before: 212992,
    bytes: 425984,
    via: "SO_RCVBUF" as const,
    problem: "setsockopt(SO_RCVBUFFORCE) failed: EPERM (1)",
  };
  const warning = receiveBufferWarning(failed, { rmemMax: 212992 });
  assert.match(warning!, /is 416 KiB, not the 7168 KiB asked for/);
  assert.match(warning!, /EPERM/);
  assert.match(warning!, /sysctl -w net\.core\.rmem_max=7340032 /);
  assert.match(warning!, /60-spooky\.conf/);
  assert.match(warning!, /CAP_NET_ADMIN/);
  // rmem_max already higher is kept, never lowered.
  assert.match(receiveBufferWarning(failed, { rmemMax: 16 << 20 })!, /rmem_max=16777216 /);
  // Raised: no warning; nothing asked: none either.
  const raised = { wanted: WANTED_RECEIVE_BUFFER, before: 212992, bytes: 14680064 };
  assert.equal(receiveBufferWarning(raised, { rmemMax: 212992 }), undefined);
  assert.equal(receiveBufferWarning({ wanted: 0, problem: "x" }, {}), undefined);
});

Deno.test("#35.7: the startup line reports the size obtained and how", () => {
  assert.equal(
    receiveBufferReport({
      wanted: WANTED_RECEIVE_BUFFER,
      before: 212992,
      bytes: 14680064,
      via: "SO_RCVBUFFORCE",
    }),
    "the QUIC socket's UDP receive buffer is 14336 KiB " +
      "(asked for 7168 KiB; raised from 208 KiB with SO_RCVBUFFORCE)",
  );
  assert.match(
    receiveBufferReport({ wanted: WANTED_RECEIVE_BUFFER, problem: "no FFI" }),
    /is unknown \(asked for 7168 KiB; not raised\)/,
  );
  assert.match(
    receiveBufferReport({ wanted: 0, before: 212992, bytes: 212992 }),
    /is 208 KiB \(the kernel's default: limits\.udp_receive_buffer is 0\)/,
  );
});

Deno.test("this machine's /proc: a real UDP socket's port is found with its drop count", () => {
  const { rmemDefault } = readReceiveBufferSysctl();
  if (rmemDefault === undefined) return; // not Linux
  const socket = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  try {
    const stats = readUdpStats((socket.addr as Deno.NetAddr).port);
    assert.equal(stats.socketDrops, 0);
    assert.ok((stats.rcvbufErrors ?? -1) >= 0);
  } finally {
    socket.close();
  }
});
