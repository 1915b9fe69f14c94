/**
 * Access control of the admin listener, as one Hono middleware that runs
 * before every route, in this order:
 *
 * 1. **Address** (`admin.allow`): the TCP peer's address must be in one of
 *    the CIDRs, before anything of the request is read (a credential
 *    included); otherwise 403 `forbidden`, on every path (`/health` and
 *    `/metrics` too). Without `admin.allow` every peer passes.
 * 2. **Credential**: a call under `/admin/` needs `Authorization: Bearer`
 *    with a token of `admin.tokens` or `admin.token`; none, or an unknown
 *    one, is 401 with `WWW-Authenticate: Bearer`. Paths outside `/admin/`
 *    (`/health`, `/metrics`) need none. Without any token configured (a
 *    loopback listener only: the configuration refuses others) every call
 *    is the `admin` role's, as before roles existed.
 * 3. **Role** (`roles.ts`): a role too low for the call is 403.
 *
 * Every mutating call (any method but GET and HEAD under `/admin/`) and
 * every refused call is written to the audit log (`audit.ts`) when there
 * is one, and every decision is counted for `/metrics`
 * (`spooky_admin_requests_total{role,result}`). Refusals are logged at
 * debug level, with the source and the reason, never a token.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * const counts = new AdminCounts();
 * const app = new Hono();
 * app.use("*", adminGuard({ access: () => adminAccessOf(undefined, []), counts }));
 * ```
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { Context, MiddlewareHandler } from "hono";
import { bearerToken } from "../../shared/bearer.ts";
import { cidrMatcher } from "../../shared/cidr.ts";
import { ADMIN_ROLES } from "../config/schema.ts";
import type { AdminConfig, AdminRole } from "../config/types.ts";
import type { AuditEntry, AuditSink } from "./audit.ts";
import { type AdminToken, AdminTokenSet, requiredRole, roleAllows, tokenDigest } from "./roles.ts";

const log = getLogger(["proxy", "admin"]);

/** Who may call the admin API, for one configuration. */
export interface AdminAccess {
  /** No token configured: every call is the `admin` role's (a loopback listener). */
  readonly open: boolean;
  /** The tokens, `admin.token` among them. */
  readonly tokens: AdminTokenSet;
  /** Whether a peer address may call at all (`admin.allow`); `null`: any may. */
  readonly allow: ((ip: string) => boolean) | null;
}

/** The access of `admin` (`admin.token`, `admin.allow`) and the tokens read from `admin.tokens`. */
export function adminAccessOf(
  admin: Pick<AdminConfig, "token" | "allow"> | undefined,
  tokens: readonly AdminToken[],
): AdminAccess {
  const all = [...tokens];
  if (admin?.token !== undefined) {
    all.push({ id: "admin.token", role: "admin", digest: tokenDigest(admin.token) });
  }
  return {
    open: all.length === 0,
    tokens: new AdminTokenSet(all),
    allow: admin?.allow === undefined ? null : cidrMatcher(admin.allow),
  };
}

/**
 * The access of whatever configuration `current` returns, computed again
 * only when it changes (a reload). A configuration without `admin` (a
 * reload that removed it: the listener runs on until a restart) keeps the
 * access in effect, so the listener never opens up.
 */
export function adminAccessFollowing(
  current: () => { admin: AdminConfig | undefined; tokens: readonly AdminToken[] },
): () => AdminAccess {
  let admin: AdminConfig | undefined;
  let tokens: readonly AdminToken[] | undefined;
  let access: AdminAccess | undefined;
  return () => {
    const now = current();
    if (
      access !== undefined &&
      (now.admin === undefined || (now.admin === admin && now.tokens === tokens))
    ) {
      return access;
    }
    admin = now.admin;
    tokens = now.tokens;
    access = adminAccessOf(now.admin, now.tokens);
    return access;
  };
}

/** Why a call was let through or refused. */
export type AdminResult = "allowed" | "address_refused" | "unauthenticated" | "forbidden";

const RESULTS: readonly AdminResult[] = [
  "allowed",
  "address_refused",
  "unauthenticated",
  "forbidden",
];

/** Admin API decisions by role (`none`: no role known) and result. */
export class AdminCounts {
  readonly #counts = new Map<string, number>();

  /** Counts one decision. */
  count(role: AdminRole | null, result: AdminResult): void {
    const key = `${role ?? "none"} ${result}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** Every series: each role with `allowed` and `forbidden`, `none` with the refusals before a role. */
  snapshot(): Array<{ role: string; result: AdminResult; count: number }> {
    const out: Array<{ role: string; result: AdminResult; count: number }> = [];
    for (const role of ["none", ...ADMIN_ROLES]) {
      for (const result of RESULTS) {
        const possible = role === "none"
          ? result === "address_refused" || result === "unauthenticated"
          : result === "allowed" || result === "forbidden";
        if (possible) out.push({ role, result, count: this.#counts.get(`${role} ${result}`) ?? 0 });
      }
    }
    return out;
  }
}

/** What {@link adminGuard} needs. */
export interface AdminGuardDeps {
  /** Who may call now (reloads change it). */
  access(): AdminAccess;
  /** The audit log, when `admin.audit_log` is set. */
  audit?: AuditSink;
  /** Where decisions are counted. */
  counts: AdminCounts;
}

/** The caller, once known. */
interface Caller {
  role: AdminRole | null;
  tokenId: string | null;
}

/** The middleware (see the module documentation). */
export function adminGuard(deps: AdminGuardDeps): MiddlewareHandler {
  return async (c, next) => {
    const method = c.req.method;
    const path = c.req.path;
    const source = peerAddress(c);
    const access = deps.access();
    const refuse = (caller: Caller, result: AdminResult, status: 401 | 403, message: string) => {
      deps.counts.count(caller.role, result);
      log.debug("admin {method} {path} from {source} refused: {result}", {
        method,
        path,
        source,
        result,
      });
      deps.audit?.write(entry(method, path, source, caller, result, status));
      if (status === 401) c.header("www-authenticate", 'Bearer realm="spooky-admin"');
      return c.json({ error: status === 401 ? "unauthorized" : "forbidden", message }, status);
    };
    const nobody: Caller = { role: null, tokenId: null };
    if (access.allow !== null && (source === null || !access.allow(source))) {
      return refuse(nobody, "address_refused", 403, "this address may not use the admin API");
    }
    const needed = requiredRole(method, path);
    if (needed === null) return await next();
    const caller = identify(c, access);
    if (caller === null) {
      return refuse(nobody, "unauthenticated", 401, "a valid admin bearer token is required");
    }
    if (!roleAllows(caller.role!, needed)) {
      return refuse(
        caller,
        "forbidden",
        403,
        `role ${caller.role} may not do this (needs ${needed})`,
      );
    }
    deps.counts.count(caller.role, "allowed");
    await next();
    if (method !== "GET" && method !== "HEAD") {
      deps.audit?.write(entry(method, path, source, caller, "allowed", c.res.status));
    }
  };
}

/** The caller by its bearer token; `null`: none or unknown. Open access is the `admin` role. */
function identify(c: Context, access: AdminAccess): Caller | null {
  if (access.open) return { role: "admin", tokenId: null };
  const token = bearerToken(c.req.header("authorization"));
  const found = token === null ? null : access.tokens.find(token);
  return found === null ? null : { role: found.role, tokenId: found.id };
}

/** The TCP peer's address (`Deno.serve`'s handler info, Hono's `env`); `null` when unknown. */
function peerAddress(c: Context): string | null {
  const info = c.env as { remoteAddr?: { hostname?: string } } | undefined;
  return info?.remoteAddr?.hostname ?? null;
}

/** The audit line of a call. */
function entry(
  method: string,
  path: string,
  source: string | null,
  caller: Caller,
  result: AdminResult,
  status: number,
): AuditEntry {
  return {
    role: caller.role,
    token_id: caller.tokenId,
    source: source ?? "unknown",
    ...action(method, path),
    result,
    status,
  };
}

/** What a call asks, and of what: `backend.disable` of `api-1`, `reload`, `read` of a path, … */
export function action(method: string, path: string): { action: string; target: string | null } {
  const backend = /^\/admin\/backends\/([^/]+)\/(enable|disable|weight)$/.exec(path);
  if (backend !== null && method !== "GET") {
    return { action: `backend.${backend[2]}`, target: decodeSegment(backend[1]) };
  }
  if (method === "POST" && path === "/admin/reload") return { action: "reload", target: null };
  if (method === "POST" && path === "/admin/drain") return { action: "drain", target: null };
  if (method === "GET" || method === "HEAD") return { action: "read", target: path };
  return { action: `${method} ${path}`, target: null };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
