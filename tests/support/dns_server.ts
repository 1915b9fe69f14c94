/**
 * A DNS server on loopback UDP for tests that need a resolver they control
 * (hostname backends): it answers A and AAAA questions from a table the test
 * changes at will, with the TTL the test gives, and can be told to fail
 * (`SERVFAIL`) or to stay silent (the client times out). The wire format is
 * the minimum of RFC 1035 §4.1: the header, the question echoed, answers
 * naming the question by a compression pointer.
 *
 * @example
 * ```ts
 * const dns = startDnsServer();
 * dns.set("api.internal", { a: ["127.0.0.1"], ttl: 5 });
 * await Deno.resolveDns("api.internal", "A", { nameServer: { ipAddr: "127.0.0.1", port: dns.port } });
 * dns.close();
 * ```
 *
 * @module
 */

/** What the server answers for one name. */
export interface DnsAnswer {
  /** IPv4 addresses (A records). */
  a?: string[];
  /** IPv6 addresses (AAAA records). */
  aaaa?: string[];
  /** TTL of every record, in seconds (default 300). */
  ttl?: number;
}

/** How the server treats every question: answer from the table, fail, or stay silent. */
export type DnsMode = "answer" | "servfail" | "silent";

/** A running test DNS server. */
export interface TestDnsServer {
  /** UDP port on 127.0.0.1. */
  readonly port: number;
  /** `127.0.0.1:<port>`, as `dns.servers` takes it. */
  readonly address: string;
  /** Sets (or, with `null`, removes: NXDOMAIN) the answer for `name`. */
  set(name: string, answer: DnsAnswer | null): void;
  /** Answer, fail every question with SERVFAIL, or drop every question. */
  mode(mode: DnsMode): void;
  /** Questions received so far, as `name type` (`api.internal A`). */
  readonly questions: string[];
  /** Stops the server. */
  close(): void;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;
const CLASS_IN = 1;
const RCODE_SERVFAIL = 2;
const RCODE_NXDOMAIN = 3;

/** A parsed question: its name (lowercase), type, and where the question section ends. */
interface Question {
  id: number;
  flags: number;
  name: string;
  type: number;
  end: number;
}

/** Starts a DNS server on 127.0.0.1 (a free UDP port). */
export function startDnsServer(): TestDnsServer {
  const socket = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
  const table = new Map<string, DnsAnswer>();
  const questions: string[] = [];
  let mode = "answer" as DnsMode;
  let open = true;
  (async () => {
    try {
      for await (const [packet, from] of socket) {
        const q = parseQuestion(packet);
        if (q === null) continue;
        questions.push(
          `${q.name} ${q.type === TYPE_A ? "A" : q.type === TYPE_AAAA ? "AAAA" : q.type}`,
        );
        if (mode === "silent") continue;
        const reply = mode === "servfail"
          ? encodeReply(packet, q, RCODE_SERVFAIL, [], 0)
          : answerFrom(packet, q, table.get(q.name));
        await socket.send(reply, from).catch(() => {});
      }
    } catch {
      // closed
    }
  })();
  const port = (socket.addr as Deno.NetAddr).port;
  return {
    port,
    address: `127.0.0.1:${port}`,
    set: (name, answer) => {
      if (answer === null) table.delete(name.toLowerCase());
      else table.set(name.toLowerCase(), answer);
    },
    mode: (m) => void (mode = m),
    questions,
    close: () => {
      if (!open) return;
      open = false;
      socket.close();
    },
  };
}

/** The reply to `q` from the table: its records of the asked type, or NXDOMAIN when unknown. */
function answerFrom(packet: Uint8Array, q: Question, answer: DnsAnswer | undefined): Uint8Array {
  if (answer === undefined) return encodeReply(packet, q, RCODE_NXDOMAIN, [], 0);
  const rdata = q.type === TYPE_A
    ? (answer.a ?? []).map(ipv4Bytes)
    : q.type === TYPE_AAAA
    ? (answer.aaaa ?? []).map(ipv6Bytes)
    : [];
  return encodeReply(packet, q, 0, rdata, answer.ttl ?? 300);
}

/** Parses the header and the first question of a query; `null` when it is not one. */
function parseQuestion(packet: Uint8Array): Question | null {
  if (packet.length < 12) return null;
  const view = new DataView(packet.buffer, packet.byteOffset, packet.byteLength);
  if (view.getUint16(4) < 1) return null;
  const labels: string[] = [];
  let at = 12;
  while (at < packet.length && packet[at] !== 0) {
    const len = packet[at];
    if (len > 63 || at + 1 + len > packet.length) return null;
    labels.push(new TextDecoder().decode(packet.subarray(at + 1, at + 1 + len)));
    at += 1 + len;
  }
  if (at + 5 > packet.length) return null;
  return {
    id: view.getUint16(0),
    flags: view.getUint16(2),
    name: labels.join(".").toLowerCase(),
    type: view.getUint16(at + 1),
    end: at + 5,
  };
}

/** A response: header, the question as asked, then one answer record per `rdata`. */
function encodeReply(
  packet: Uint8Array,
  q: Question,
  rcode: number,
  rdata: Uint8Array[],
  ttl: number,
): Uint8Array {
  const question = packet.subarray(12, q.end);
  const size = 12 + question.length + rdata.reduce((n, r) => n + 12 + r.length, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint16(0, q.id);
  // QR, the query's opcode and RD, AA, RA, and the rcode.
  view.setUint16(2, 0x8000 | (q.flags & 0x7900) | 0x0400 | 0x0080 | rcode);
  view.setUint16(4, 1);
  view.setUint16(6, rdata.length);
  out.set(question, 12);
  let at = 12 + question.length;
  for (const r of rdata) {
    view.setUint16(at, 0xc00c); // the question's name
    view.setUint16(at + 2, r.length === 4 ? TYPE_A : TYPE_AAAA);
    view.setUint16(at + 4, CLASS_IN);
    view.setUint32(at + 6, ttl);
    view.setUint16(at + 10, r.length);
    out.set(r, at + 12);
    at += 12 + r.length;
  }
  return out;
}

function ipv4Bytes(ip: string): Uint8Array {
  return new Uint8Array(ip.split(".").map(Number));
}

function ipv6Bytes(ip: string): Uint8Array {
  const [head, tail] = ip.includes("::") ? ip.split("::") : [ip, undefined];
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = parseInt(g, 16);
    out[2 * i] = n >> 8;
    out[2 * i + 1] = n & 0xff;
  });
  return out;
}
