/**
 * Test helpers: an app over an in-memory KV with a fixed clock.
 *
 * @module
 */
import { createApp, type PaymentsDeps } from "./app.ts";
import { createPaymentsService } from "./server.ts";

/** Fixed test time: 2026-06-15T12:00:00Z. */
export const TEST_NOW = new Date("2026-06-15T12:00:00.000Z");

/** Test bearer token. */
export const TEST_TOKEN = "test-token";

/** A valid test card. */
export const CARD = Object.freeze({
  number: "4111111111111111",
  expMonth: 12,
  expYear: 2030,
  cvc: "123",
  name: "Jo Tester",
});

/** A valid test bank account. */
export const BANK = Object.freeze({
  name: "Jo Tester",
  accountNumber: "000123456789",
  accountType: "PERSONAL_CHECKING",
  routingNumber: "011000015",
  phone: "5555550100",
});

/** A test harness. */
export interface Harness {
  /** The app. */
  app: ReturnType<typeof createApp>;
  /** The KV handle. */
  kv: Deno.Kv;
  /** Send a request; JSON-encodes non-string bodies and authenticates by default. */
  req(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
    // deno-lint-ignore no-explicit-any
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** Close the KV handle. */
  close(): void;
}

/** Build a harness over an open (in-memory) KV; `close()` closes it. */
export function harness(
  kv: Deno.Kv,
  opts: { basePaths?: string[]; now?: () => Date; deps?: Partial<PaymentsDeps> } = {},
): Harness {
  const now = opts.now ?? (() => TEST_NOW);
  const app = createApp({
    service: createPaymentsService({ kv, now }),
    tokens: [TEST_TOKEN, "second-token"],
    basePaths: opts.basePaths,
    now,
    ...opts.deps,
  });
  return {
    app,
    kv,
    async req(method, path, body, headers = {}) {
      const h: Record<string, string> = {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        ...headers,
      };
      for (const [k, v] of Object.entries(h)) if (v === "") delete h[k];
      const res = await app.request(path.startsWith("/") ? path : `/vendor/v4/${path}`, {
        method,
        headers: h,
        body: body === undefined
          ? undefined
          : typeof body === "string"
          ? body
          : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    close: () => kv.close(),
  };
}

/**
 * A view of `kv` whose commits all end as `commit()` says instead of
 * committing (a store failure such as `database is locked`, or a promise
 * that never settles); everything else is `kv` itself.
 */
export function failingCommits(kv: Deno.Kv, commit: () => Promise<never>): Deno.Kv {
  const view = Object.create(kv) as Deno.Kv;
  view.atomic = () => {
    const op = kv.atomic();
    op.commit = commit;
    return op;
  };
  return view;
}

/** A commit failing with `message`, as Deno KV fails it. */
export const rejectWith = (message: string) => () => Promise.reject(new TypeError(message));

/** How many keys `kv` holds under `prefix` (every key by default). */
export async function countKeys(kv: Deno.Kv, prefix: Deno.KvKey = []): Promise<number> {
  let n = 0;
  for await (const _ of kv.list({ prefix })) n++;
  return n;
}
